"""The Hamming pass against its physical anchor, on CIFAR-10-sized codes, one thread each.

Every evaluation of hashing codes makes one pass over the gallery per query: XOR, popcount,
the label test and a count per distance.  The anchor (``rc_bench_hamming_histograms`` in
``csrc/rc_bench.c``) is a bare C loop doing only that work, the floor for any implementation
on this machine, in the instruction set of the pass it is set against: AVX-512, AVX2, or scalar
code.  Timed against it, round by round (interleaved, so a busy machine slows all alike), are:

* ``pass``: the library's own pass (``rc_codes_pass`` of ``csrc/rc_codes.c``, in AVX-512 from
  ``csrc/rc_codes_avx512.c`` or in AVX2 from ``csrc/rc_codes_avx2.c`` where the CPU has them: the
  function ``rc.evaluate`` runs) alone,
  as the ``hashing`` protocol runs it (stable ties: the counting sort of the relevant items in
  the same pass), through ``rc_bench_codes_pass``;
* ``pass, histogram only``: the same pass as the expected / grouped / optimistic / pessimistic
  tie policies run it (counts per distance, no counting sort);
* ``evaluate``: ``rc.evaluate(..., implementation="c")`` on one thread, inputs as users give them
  (±1 float codes, multi-hot labels): packing, the pass, the ranks and every metric.

Each kernel's counts per distance (all and relevant items, per query) must equal the anchor's;
the report gives the median seconds, the nanoseconds per (query, item) pair, the median of the
per-round ratios to the anchor and the load average before and after.  Each instruction set of
the pass that the CPU has (:func:`pass_paths`: AVX-512, then AVX2 with AVX-512 masked off, as on
an AVX2-only CPU) is timed against its own anchor.  :func:`hashing_pass_figures` returns one
path's figures as a dict, :func:`figures` every path's as the section ``hashing-pass`` of the
feature benchmarks (``retrieval-conformance bench features``), :func:`report` as text.  Run:
``python -m retrieval_conformance.conformance.bench.hashing_pass [smoke|full] [rounds]``.
"""

from __future__ import annotations

import ctypes
import inspect
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import retrieval_conformance as rc
from retrieval_conformance.conformance.bench.hashing import cifar10
from retrieval_conformance.conformance.bench.threads import thread_environment
from retrieval_conformance.implementations.c import library as c_library
from retrieval_conformance.reference.contract.codes import pack_words

#: the median pass may take at most this many times the anchor (the target the report checks)
PASS_TARGET = 1.5

_i64, _p = ctypes.c_int64, ctypes.c_void_p


def _bench_functions() -> Tuple[Any, Any]:
    """The two benchmark entry points of the C library, typed."""
    lib = c_library._require()
    anchor, real_pass = lib.rc_bench_hamming_histograms, lib.rc_bench_codes_pass
    anchor.restype = real_pass.restype = _i64
    anchor.argtypes = [_p] * 4 + [_i64] * 4 + [_p]
    real_pass.argtypes = [_p] * 4 + [_i64] * 5 + [_p]
    return anchor, real_pass


def packed_inputs(arrays: Dict[str, np.ndarray]) -> Dict[str, Any]:
    """The workload's codes (bit = code > 0) and labels packed into one uint64 word per item."""
    bits = int(arrays["db_codes"].shape[1])
    if bits > 64 or arrays["db_labels"].shape[1] > 64:
        raise ValueError(
            f"arrays: the anchor takes codes and labels of at most 64 bits, got {bits} bits and "
            f"{arrays['db_labels'].shape[1]} labels"
        )
    words = {
        name: np.ascontiguousarray(pack_words((arrays[name] > 0).astype(np.uint8))[:, 0])
        for name in ("query_codes", "db_codes", "query_labels", "db_labels")
    }
    return {
        "words": words,
        "bits": bits,
        "queries": int(words["query_codes"].size),
        "gallery": int(words["db_codes"].size),
    }


#: bits of the C library's feature mask the pass and the anchor read (RC_FEATURE_* in rc_core.h)
POPCNT_FEATURE, AVX2_FEATURE, AVX512_FEATURE = 1, 8, 16


def instruction_set(features: Optional[int] = None) -> str:
    """What the anchor and the pass run with ``features`` (default: the usable ones): AVX-512
    where they hold it (F, DQ, BW, VL, VPOPCNTDQ, BMI2), else AVX2 (with hardware popcount),
    else scalar code with hardware popcount, else plain C."""
    if features is None:
        features = c_library.usable_features()
    if features & AVX512_FEATURE:
        return "AVX-512"
    if features & AVX2_FEATURE and features & POPCNT_FEATURE:
        return "AVX2"
    return "scalar, hardware popcount" if features & POPCNT_FEATURE else "scalar, plain C"


def pass_paths() -> List[Tuple[str, int]]:
    """The pass's instruction sets on this CPU (within the usable features), best first, each
    with the feature mask that selects it: AVX-512, then AVX2 with AVX-512 masked off (the path
    of an AVX2-only CPU); the scalar pass where the CPU has neither."""
    usable = c_library.usable_features()
    paths = [(instruction_set(usable), usable)]
    if usable & AVX512_FEATURE and usable & AVX2_FEATURE and usable & POPCNT_FEATURE:
        paths.append(("AVX2", usable & ~AVX512_FEATURE))
    return paths


def _timed_histograms(function: Any, packed: Dict[str, Any], *extra: int) -> Tuple[float, np.ndarray]:
    """Seconds of one call of a benchmark entry point, and the (Q, 2 (B + 1)) counts it wrote."""
    words = packed["words"]
    hist = np.zeros((packed["queries"], 2 * packed["bits"] + 2), dtype=np.int64)
    # the CPU features the C code may use here (popcnt, AVX2, AVX-512), the anchor's as the pass's
    features = c_library.usable_features()
    args = [words[name].ctypes.data for name in ("query_codes", "db_codes", "query_labels", "db_labels")]
    start = time.perf_counter()
    status = function(*args, packed["queries"], packed["gallery"], packed["bits"], features, *extra, hist.ctypes.data)
    seconds = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"{function.__name__}: the C library refused the arguments (status {status})")
    return seconds, hist


def _evaluate_calls(work) -> Dict[str, Callable[[], Any]]:
    """``rc.evaluate`` with every metric, and with mAP alone where ``evaluate`` takes ``metrics=``."""
    calls: Dict[str, Callable[[], Any]] = {
        "evaluate": lambda: rc.evaluate(**work.arrays, protocol=work.protocol, implementation="c", **work.options)
    }
    if "metrics" in inspect.signature(rc.evaluate).parameters:
        calls["evaluate, mAP only"] = lambda: rc.evaluate(
            **work.arrays, protocol=work.protocol, implementation="c", metrics=["map"], **work.options
        )
    return calls


def hashing_pass_figures(scale: str = "full", rounds: int = 5, features: Optional[int] = None) -> Dict[str, Any]:
    """Median seconds of the anchor, the library's pass and ``rc.evaluate`` over ``rounds``
    interleaved rounds on one thread, with their ratios to the anchor; with ``features``, the
    C code held to that feature mask (one of :func:`pass_paths`) for the run.

    Returns
    -------
    dict
        ``workload`` (title), ``queries``, ``gallery``, ``rounds``, ``load_before`` and
        ``load_after`` (the 1, 5 and 15 minute load averages), ``seconds`` (label to median
        seconds), ``ns_per_pair`` (label to median nanoseconds per (query, item) pair),
        ``ratio_to_anchor`` (label to the median of the per-round ratios), ``pass_target``
        and ``pass_within_target`` (the pass's ratio at most :data:`PASS_TARGET`),
        ``same_counts`` (always True: differing counts raise) and ``instruction_set`` (what
        the anchor and the pass ran, :func:`instruction_set`).
    """
    if rounds < 1:
        raise ValueError(f"rounds: expected at least 1, got {rounds}")
    if features is not None:
        with c_library.limited_features(features):
            return hashing_pass_figures(scale, rounds)
    work = cifar10(scale, None, "cifar10-all")
    packed = packed_inputs(work.arrays)
    anchor, real_pass = _bench_functions()
    kernels = {"anchor": (anchor, ()), "pass": (real_pass, (1,)), "pass, histogram only": (real_pass, (0,))}
    calls = _evaluate_calls(work)
    seconds: Dict[str, List[float]] = {label: [] for label in [*kernels, *calls]}
    load_before = os.getloadavg()
    with thread_environment(1):
        for _ in range(rounds):
            counts = {}
            for label, (function, extra) in kernels.items():
                elapsed, counts[label] = _timed_histograms(function, packed, *extra)
                seconds[label].append(elapsed)
            for label, call in calls.items():
                start = time.perf_counter()
                call()
                seconds[label].append(time.perf_counter() - start)
            for label, hist in counts.items():
                if not np.array_equal(hist, counts["anchor"]):
                    raise RuntimeError(f"{label}: its counts per distance differ from the anchor's")
    load_after = os.getloadavg()
    pairs = packed["queries"] * packed["gallery"]
    medians = {label: statistics.median(values) for label, values in seconds.items()}
    ratios = {
        label: statistics.median(t / a for t, a in zip(values, seconds["anchor"])) for label, values in seconds.items()
    }
    return {
        "workload": work.title,
        "scale": scale,
        "queries": packed["queries"],
        "gallery": packed["gallery"],
        "rounds": rounds,
        "load_before": load_before,
        "load_after": load_after,
        "seconds": medians,
        "ns_per_pair": {label: 1e9 * value / pairs for label, value in medians.items()},
        "ratio_to_anchor": ratios,
        "pass_target": PASS_TARGET,
        "pass_within_target": ratios["pass"] <= PASS_TARGET,
        "same_counts": True,
        "instruction_set": instruction_set(),
    }


#: rounds of the feature benchmark's section, per scale
FIGURE_ROUNDS = {"full": 7, "smoke": 2}


def _path_figures(fig: Dict[str, Any], prefix: str) -> Dict[str, Dict[str, Any]]:
    """One path's figures (:func:`hashing_pass_figures`), their names after ``prefix``."""
    seconds, ns = fig["seconds"], fig["ns_per_pair"]
    anchor = {"name": f"{prefix}the anchor", "value": 1e3 * seconds["anchor"], "unit": "ms"}
    out: Dict[str, Dict[str, Any]] = {
        f"{prefix}anchor (bare XOR, popcount, count per distance)": {
            "value": 1e3 * seconds["anchor"],
            "unit": "ms",
            "note": f"{ns['anchor']:.2f} ns per (query, item) pair, {fig['queries']:,} x {fig['gallery']:,}; "
            f"{fig['instruction_set']}, as the pass",
        },
    }
    notes = {
        "pass": "the library's pass as the hashing protocol runs it (stable ties: counting sort)",
        "pass, histogram only": "as the expected / grouped / optimistic / pessimistic policies run it",
        "evaluate": "rc.evaluate(implementation='c'), every metric, inputs as given",
        "evaluate, mAP only": "rc.evaluate(implementation='c', metrics=['map'])",
    }
    for label in seconds:
        if label == "anchor":
            continue
        figure = {
            "value": fig["ratio_to_anchor"][label],
            "unit": "x the anchor",
            "baseline": anchor,
            "note": f"{1e3 * seconds[label]:.3g} ms, {ns[label]:.2f} ns per pair; {notes.get(label, '')}",
        }
        if label == "pass":
            figure["target"] = f"<= {PASS_TARGET}x"
        out[prefix + label] = figure
    return out


def figures(scale: str = "full") -> Dict[str, Dict[str, Any]]:
    """The section ``hashing-pass`` of the feature benchmarks: each kernel's median time as a
    multiple of the anchor's (the median of the per-round ratios), with its milliseconds, for
    every path of :func:`pass_paths`: the first (what ``rc.evaluate`` runs here) under plain
    names, the others after their instruction set (``"AVX2 path: pass"``), each against the
    anchor in its own instruction set."""
    if scale not in FIGURE_ROUNDS:
        raise ValueError(f"scale: expected one of {sorted(FIGURE_ROUNDS)}, got {scale!r}")
    out: Dict[str, Dict[str, Any]] = {}
    for n, (name, features) in enumerate(pass_paths()):
        fig = hashing_pass_figures(scale, FIGURE_ROUNDS[scale], features)
        out.update(_path_figures(fig, "" if n == 0 else f"{name} path: "))
    return out


def report(scale: str = "full", rounds: int = 5) -> str:
    """:func:`hashing_pass_figures` as a table, for every path of :func:`pass_paths`."""
    lines = []
    for _, features in pass_paths():
        fig = hashing_pass_figures(scale, rounds, features)
        lines += [
            f"Hamming pass against its anchor, one thread: {fig['workload']}",
            f"median of {fig['rounds']} interleaved rounds; load average {fig['load_before'][0]:.2f} before, "
            f"{fig['load_after'][0]:.2f} after; counts per distance equal to the anchor's; {fig['instruction_set']}",
            f"{'what':26} {'ms':>9} {'ns/pair':>8} {'x anchor':>9}",
        ]
        for label, value in fig["seconds"].items():
            lines.append(
                f"{label:26} {1e3 * value:9.3f} {fig['ns_per_pair'][label]:8.3f} {fig['ratio_to_anchor'][label]:9.2f}"
            )
        verdict = "within" if fig["pass_within_target"] else "NOT within"
        lines.append(f"the pass is {verdict} {fig['pass_target']}x of the anchor")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(report(sys.argv[1] if len(sys.argv) > 1 else "full", int(sys.argv[2]) if len(sys.argv) > 2 else 5))
