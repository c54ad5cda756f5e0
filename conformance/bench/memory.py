"""Peak extra memory of one benchmark candidate, measured in a child process.

Peak extra memory (:func:`measure_peak_memory`): a fresh Python process loads the saved
workload, resets the kernel's high-water mark (``/proc/self/clear_refs``), runs the candidate
once and reports ``VmHWM`` minus the resident size before the call, which counts C and numpy
allocations alike (tracemalloc would miss C mallocs).  Memory-mapped inputs make file pages
resident too, so for them the anonymous memory (``resident - shared`` from
``/proc/self/statm``, sampled every millisecond) is reported instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from typing import Any, Dict, Optional, Sequence

MiB = 2**20


def _status() -> Dict[str, int]:
    """Bytes of VmRSS, VmHWM, RssAnon, RssFile from /proc/self/status."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                out[key] = int(rest.split()[0]) * 1024
    return out


class _AnonSampler(threading.Thread):
    """Samples anonymous resident memory (resident - shared pages of /proc/self/statm)."""

    def __init__(self, interval: float = 0.001):
        super().__init__(daemon=True)
        self.interval = interval
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.peak = self.read()
        self.stop = threading.Event()

    def read(self) -> int:
        with open("/proc/self/statm") as fh:
            fields = fh.read().split()
        return (int(fields[1]) - int(fields[2])) * self.page

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, self.read())
            time.sleep(self.interval)


def _memory_child(argv: Sequence[str]) -> int:
    """Child process: load a saved workload, run one candidate once, print JSON."""
    import gc

    import numpy as np
    from retrieval_conformance.conformance.bench import candidates as C
    from retrieval_conformance.conformance.bench.workload import Workload

    directory, candidate, limit = argv
    w = Workload.load(directory)
    if limit != "all":
        w = w.subset(np.arange(min(int(limit), w.n_queries)))
    if candidate in C.IMPLEMENTATIONS:
        from retrieval_conformance.reference.contract import registry

        registry.get(candidate)  # load the library / import torch before measuring
    elif candidate in C.PEERS:
        from retrieval_conformance.conformance.bench import peers

        peers.load(candidate)  # import the peer's library before measuring
    run = C.make_runner(w, candidate)
    gc.collect()
    before = _status()
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset VmHWM to the current resident size (Linux >= 4.0)
        hwm_reset = True
    except OSError:
        hwm_reset = False
    sampler = _AnonSampler()
    anon_before = sampler.read()
    sampler.start()
    t0 = time.perf_counter()
    result = run()
    elapsed = time.perf_counter() - t0
    sampler.stop.set()
    sampler.join()
    sampler.peak = max(sampler.peak, sampler.read())
    after = _status()
    del result
    out = {
        "peak_hwm_extra_mib": (after["VmHWM"] - before["VmRSS"]) / MiB if hwm_reset else None,
        "peak_anon_extra_mib": (sampler.peak - anon_before) / MiB,
        "memory_mapped": bool(w.memory_mapped),
        "memory_queries": int(w.n_queries),
        "memory_run_seconds": elapsed,
    }
    print(json.dumps(out))
    return 0


def measure_peak_memory(
    directory: str, candidate: str, query_limit: Optional[int] = None, timeout: float = 3600.0
) -> Dict[str, Any]:
    """Peak extra memory of one run of ``candidate`` on the workload saved in ``directory``.

    Returns ``peak_extra_mib`` (what the summary shows: the high-water mark, or the sampled
    anonymous memory for memory-mapped inputs), the two raw measurements, and
    ``memory_queries`` (the queries run: all, or ``query_limit``).
    """
    cmd = [
        sys.executable,
        "-c",
        "import sys; from retrieval_conformance.conformance.bench.memory import _memory_child; "
        "sys.exit(_memory_child(sys.argv[1:]))",
        directory,
        candidate,
        "all" if query_limit is None else str(int(query_limit)),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        return {"peak_extra_mib": None, "memory_error": (proc.stderr or proc.stdout)[-2000:]}
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    if data["memory_mapped"] or data["peak_hwm_extra_mib"] is None:
        data["peak_extra_mib"] = data["peak_anon_extra_mib"]
        data["memory_method"] = "anonymous resident memory, sampled every 1 ms (file pages excluded)"
    else:
        data["peak_extra_mib"] = data["peak_hwm_extra_mib"]
        data["memory_method"] = "VmHWM after clear_refs minus VmRSS before"
    return data
