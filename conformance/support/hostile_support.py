"""Shared by the hostile-file tests (``test_hostile_*.py``): running code in a fresh,
memory-capped interpreter, and skip markers for FIFOs and ``/dev/zero``.

Whatever could crash or hang the interpreter runs in a child process (with a timeout and a
memory cap), so that a regression fails the test instead of killing pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX
    resource = None

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
needs_dev_zero = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")

MEMORY_CAP = 3 << 30


def _cap_memory():  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def run_in_child(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter, memory capped: a crash or hang fails the test."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        preexec_fn=_cap_memory if resource is not None else None,
    )


# Loads each file and prints one line: LOADED (after touching everything, as printing the
# result would) or REFUSED with the error.
_PICKLE_LOADER = r"""
import pickle, sys
from retrieval_conformance.reference.readers import load_restricted_pickle, read_revisitop_gnd
mode, paths = sys.argv[1], sys.argv[2:]
for path in paths:
    try:
        if mode == "gnd":
            out = read_revisitop_gnd(path)
            text = repr(out["gnd"]) + str(out["gnd"][0].get("bbx"))
        else:
            out = load_restricted_pickle(path)
            text = repr(out)
        print("LOADED", len(text), flush=True)
    except (pickle.UnpicklingError, ValueError) as exc:
        print("REFUSED", type(exc).__name__, str(exc).replace("\n", " ")[:400], flush=True)
"""


def load_pickles_in_child(tmp_path: Path, cases: dict, mode: str = "load") -> dict:
    """{name: pickle bytes} -> {name: the child's line}; asserts the child did not crash."""
    paths = []
    for i, data in enumerate(cases.values()):
        path = tmp_path / f"case{i}.pkl"
        path.write_bytes(data)
        paths.append(str(path))
    proc = run_in_child(_PICKLE_LOADER, mode, *paths)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, (
        f"the reader crashed (status {proc.returncode}) after {len(lines)} of {len(cases)} cases: {proc.stderr[-2000:]}"
    )
    assert len(lines) == len(cases), proc.stdout
    return dict(zip(cases, lines))
