"""``evaluate`` with the C implementation needs little memory beyond the gallery it is given.

C's per-thread arrays are sized by the query's relevant items (grown on demand), plus one byte
per item (the junk mask); codes are checked and packed a chunk of rows at a time, and C reads
the packed words.  Measured in a child process as ``VmHWM`` after a reset
(``/proc/self/clear_refs``) minus the resident size before the call, as
``conformance/bench/memory.py`` does (Linux only), with the discount table of nDCG (8 bytes per
rank, built once per process) built beforehand.  For 2,000,000 items: about 9 MiB for scores
and 23 MiB for 64-bit codes; the code before this test took 370 MiB for the codes (a byte per
bit, and whole-gallery boolean checks).  The bound also fails a change that touches any array
of a few bytes per item.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

#: gallery items of the measured call, and the bound on its peak extra memory (bytes)
N_ITEMS = 2_000_000
BOUND = 48 * 2**20

_CHILD = r"""
import json, sys
import numpy as np
import retrieval_conformance as rc
from retrieval_conformance.reference.contract.discounts import discount_table

kind, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
relevance = rng.random((2, n)) < 0.0005
discount_table(n)  # built once per process: not what this measures
if kind == "scores":
    inputs = dict(scores=rng.random((2, n), dtype=np.float32), relevance=relevance)
else:
    inputs = dict(query_codes=np.where(rng.random((2, 64)) < 0.5, 1, -1).astype(np.int8),
                  db_codes=np.where(rng.random((n, 64)) < 0.5, 1, -1).astype(np.int8),
                  query_labels=np.array([1, 2]), db_labels=rng.integers(0, 1000, n))

def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(key + ":"))

before = status("VmRSS")
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
rc.evaluate(**inputs, protocol="hashing", implementation="c")
print(json.dumps({"extra": status("VmHWM") - before}))
"""


@pytest.mark.parametrize("kind", ["scores", "codes"])
def test_peak_memory_does_not_follow_the_gallery(c_backend, kind):
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("needs Linux's /proc/self/clear_refs")
    env = dict(os.environ, RC_NUM_THREADS="2")
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(N_ITEMS)], capture_output=True, text=True, env=env, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    extra = json.loads(out.stdout.strip().splitlines()[-1])["extra"]
    assert extra < BOUND, f"{kind}: {extra / 2**20:.1f} MiB extra for {N_ITEMS:,} items (bound {BOUND / 2**20:.0f} MiB)"
