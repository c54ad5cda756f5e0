"""What ``metrics=`` saves: the evaluation of only the metrics asked for, timed against baselines.

    python -m retrieval_conformance.conformance.bench.metrics_subset [--scale smoke|full] [--rounds N] [--json]

Two cases, each timed in interleaved rounds (every candidate once per round, in a fixed order),
with the load average printed before and after, and ratios against a baseline timed in the
same run (the median of the per-round ratios):

* ``scores-map100``: mAP@100 of 1,000 x 50,000 float32 similarity scores rounded to three
  decimals, about 250 relevant items per query (0.5%): C on one thread with
  ``metrics=["map"]`` and with every metric, against numpy's per-query ``argpartition`` top k
  then a sort of the k (``peers.numpy_map``), the way a numpy script computes mAP@k.
* ``cifar10-all``: mAP@ALL of CIFAR-10-sized 64-bit hashing (1,000 x 54,000 codes,
  ``hashing.cifar10``): C on one thread with ``metrics=["map"]`` and with every metric,
  against seed 000's per-query loop (``baselines.calc_top_map``: a label product, a Hamming
  product, a stable argsort per query), its BLAS held to one thread (``threadpoolctl``: one
  core against one core).  At full scale the loop runs over the first :data:`LOOP_QUERIES`
  queries and its time is scaled to all of them (queries are independent and cost alike: each
  sorts the whole database), so that a round takes seconds, not a minute.  Where the CPU has
  AVX-512, C's mAP-only run is timed a second time in each round with AVX-512 masked off (the
  AVX2 pass and AP sums of an AVX2-only CPU), against the same loop.

The C runs go through ``rc.evaluate`` (validation, packing and aggregation included).  Every
round checks that mAP-only and every-metric C give the same bits, and (CIFAR-10, where the
loop's stable ties are the preset's) that the loop's mAP agrees within 1e-12.

``smoke`` (the default) runs in seconds on small inputs; ``full`` takes about a minute on one
core.  :func:`figures` returns the numbers as a dict (what the benchmark page reads).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np
from retrieval_conformance.conformance.bench.anchor import load_average
from retrieval_conformance.conformance.bench.baselines import calc_top_map
from retrieval_conformance.conformance.bench.hashing import cifar10
from retrieval_conformance.conformance.bench.peers import numpy_map
from retrieval_conformance.conformance.bench.scores import scores_with_relevance
from retrieval_conformance.conformance.bench.workload import SEEDS
from threadpoolctl import threadpool_limits

#: the registered name of C on one thread (the comparisons are one core against one core)
ONE_THREAD = "c-one-thread"
#: queries of the CIFAR-10 loop at full scale (its time is scaled to every query)
LOOP_QUERIES = 100
#: (queries, gallery, cut-off, relevant share) of the float case per scale
SCORES_SIZES = {"full": (1000, 50_000, 100, 0.005), "smoke": (40, 8000, 20, 0.005)}


@contextlib.contextmanager
def _one_thread_c():
    """C on one thread registered as :data:`ONE_THREAD` for the duration (and no longer: the
    registry is the process's, and evaluate's callers list its names)."""
    from retrieval_conformance.implementations.c.backend import CImplementation
    from retrieval_conformance.reference.contract import registry

    added = ONE_THREAD not in registry.names()
    if added:
        registry.register(ONE_THREAD, lambda: CImplementation(num_threads=1))
    try:
        yield ONE_THREAD
    finally:
        if added:
            registry.unregister(ONE_THREAD)


def _timed(run: Callable[[], Any]):
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


def interleaved_rounds(
    candidates: Dict[str, Callable[[], Any]], rounds: int, check: Optional[Callable[[Dict[str, Any]], None]] = None
) -> Dict[str, List[float]]:
    """Times of every candidate, round by round, in the dict's order, after one untimed run of
    each (loading the C library and first-call costs are not what is measured); ``check`` sees
    each round's outputs."""
    for run in candidates.values():
        run()
    times: Dict[str, List[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        outputs = {}
        for name, run in candidates.items():
            seconds, outputs[name] = _timed(run)
            times[name].append(seconds)
        if check is not None:
            check(outputs)
    return times


def _ratio(times: Dict[str, List[float]], slow: str, fast: str) -> float:
    """The median over rounds of slow / fast (the two were timed in the same round)."""
    return float(statistics.median(s / f for s, f in zip(times[slow], times[fast])))


def _summary(times: Dict[str, List[float]]) -> Dict[str, float]:
    return {name: float(statistics.median(series)) for name, series in times.items()}


def _same_bits(a, b) -> None:
    if np.asarray(a.ap).tobytes() != np.asarray(b.ap).tobytes() or a.map != b.map:
        raise AssertionError("metrics=['map'] changed the bits of the per-query AP")


def scores_case(scale: str, rounds: int) -> Dict[str, Any]:
    """mAP@k of float scores: C (one thread) mAP-only and every metric, numpy argpartition top k
    (inside :func:`_one_thread_c`, as :func:`figures` calls it)."""
    import retrieval_conformance as rc

    n_q, n_g, k, share = SCORES_SIZES[scale]
    scores, relevance = scores_with_relevance(n_q, n_g, SEEDS["scores-map"], share=share)
    c = dict(scores=scores, relevance=relevance, k=k, implementation=ONE_THREAD)
    candidates = {
        "numpy_argpartition": lambda: numpy_map(scores, relevance, k=k),
        "c_map_only": lambda: rc.evaluate(**c, metrics=["map"]),
        "c_all_metrics": lambda: rc.evaluate(**c),
    }

    def check(out):
        _same_bits(out["c_map_only"], out["c_all_metrics"])

    times = interleaved_rounds(candidates, rounds, check)
    return {
        "workload": f"{n_q:,} x {n_g:,} float32 scores (3 decimals), ~{share:.1%} relevant, mAP@{k}",
        "seconds": _summary(times),
        "map_only_vs_numpy_argpartition": _ratio(times, "numpy_argpartition", "c_map_only"),
        "all_metrics_vs_numpy_argpartition": _ratio(times, "numpy_argpartition", "c_all_metrics"),
        "map_only_vs_all_metrics": _ratio(times, "c_all_metrics", "c_map_only"),
        "target_vs_numpy": 6.0,
    }


def _avx2_path() -> Optional[int]:
    """The feature mask of the AVX2 path (AVX-512 masked off) where the CPU has both, else None
    (the default path is then the best the CPU has, and timed already)."""
    from retrieval_conformance.conformance.bench.hashing_pass import pass_paths

    paths = dict(pass_paths())
    return paths["AVX2"] if "AVX-512" in paths and "AVX2" in paths else None


def cifar10_case(scale: str, rounds: int) -> Dict[str, Any]:
    """CIFAR-10 hashing mAP@ALL: C (one thread) mAP-only and every metric, seed 000's per-query
    loop; and C's mAP-only on the AVX2 path where the CPU has AVX-512 too."""
    import retrieval_conformance as rc
    from retrieval_conformance.implementations.c import library as c_library

    workload = cifar10(scale, None, "cifar10-all")
    a = workload.arrays
    n_q, n_db = a["query_codes"].shape[0], a["db_codes"].shape[0]
    looped = min(n_q, LOOP_QUERIES) if scale == "full" else n_q
    c = dict(a, protocol="hashing", k=None, implementation=ONE_THREAD)
    candidates = {
        "seed000_loop": lambda: calc_top_map(
            a["query_codes"][:looped], a["db_codes"], a["query_labels"][:looped], a["db_labels"], n_db
        ),
        "c_map_only": lambda: rc.evaluate(**c, metrics=["map"]),
        "c_all_metrics": lambda: rc.evaluate(**c),
    }
    avx2 = _avx2_path()
    if avx2 is not None:

        def map_only_avx2():
            with c_library.limited_features(avx2):
                return rc.evaluate(**c, metrics=["map"])

        candidates["c_map_only_avx2"] = map_only_avx2

    def check(out):
        _same_bits(out["c_map_only"], out["c_all_metrics"])
        if "c_map_only_avx2" in out:
            _same_bits(out["c_map_only"], out["c_map_only_avx2"])
        loop_ap, c_ap = out["seed000_loop"].ap, out["c_map_only"].ap[:looped]
        worst = int(np.abs(loop_ap - c_ap).argmax())
        if abs(loop_ap[worst] - c_ap[worst]) > 1e-12:
            raise AssertionError(f"seed 000's loop and C disagree on the AP of query {worst}")

    times = interleaved_rounds(candidates, rounds, check)
    times["seed000_loop"] = [t * n_q / looped for t in times["seed000_loop"]]
    if avx2 is not None:
        extra = {"map_only_avx2_vs_seed000_loop": _ratio(times, "seed000_loop", "c_map_only_avx2")}
    else:
        extra = {}
    return {
        "workload": workload.title,
        "loop_queries_timed": looped,
        "seconds": _summary(times),
        "map_only_vs_seed000_loop": _ratio(times, "seed000_loop", "c_map_only"),
        "all_metrics_vs_seed000_loop": _ratio(times, "seed000_loop", "c_all_metrics"),
        "map_only_vs_all_metrics": _ratio(times, "c_all_metrics", "c_map_only"),
        "target_vs_loop": 60.0,
        **extra,
    }


def measure(scale: str = "smoke", rounds: int = 3) -> Dict[str, Any]:
    """Both cases at ``scale`` (``smoke`` or ``full``), ``rounds`` interleaved rounds each: the
    median seconds per candidate, the ratios, and the load average before and after."""
    if scale not in SCORES_SIZES:
        raise ValueError(f"scale: expected 'smoke' or 'full', got {scale!r}")
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise ValueError(f"rounds: expected a positive integer, got {rounds!r}")
    out: Dict[str, Any] = {"scale": scale, "rounds": rounds, "threads": 1, "loadavg_before": load_average()}
    # one core against one core: the loop's matrix products run on numpy's BLAS, whose own
    # threads would otherwise take the second core
    with _one_thread_c(), threadpool_limits(limits=1):
        out["scores_map_at_k"] = scores_case(scale, rounds)
        out["cifar10_map_all"] = cifar10_case(scale, rounds)
    out["loadavg_after"] = load_average()
    return out


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def figures(scale: str = "full", rounds: int = 3) -> Dict[str, Dict[str, Any]]:
    """The benchmark page's figures (``bench features``): :func:`measure`'s ratios with their targets."""
    m = measure(scale, rounds)
    s, c = m["scores_map_at_k"], m["cifar10_map_all"]
    ss, cs = s["seconds"], c["seconds"]
    one = f"one C thread, median of {rounds} interleaved rounds"
    out = {
        "mAP@100 of float scores, mAP only, against argpartition": {
            "value": s["map_only_vs_numpy_argpartition"],
            "unit": "x argpartition",
            "target": f">= {s['target_vs_numpy']:g}x",
            "baseline": {"name": "numpy argpartition top k", "value": ss["numpy_argpartition"] * 1000, "unit": "ms"},
            "note": f"{s['workload']}; C {_ms(ss['c_map_only'])}, {one}",
        },
        "mAP@100 of float scores, every metric, against argpartition": {
            "value": s["all_metrics_vs_numpy_argpartition"],
            "unit": "x argpartition",
            "baseline": {"name": "numpy argpartition top k", "value": ss["numpy_argpartition"] * 1000, "unit": "ms"},
            "note": f"C {_ms(ss['c_all_metrics'])}",
        },
        "CIFAR-10 mAP@ALL, mAP only, against seed 000's loop": {
            "value": c["map_only_vs_seed000_loop"],
            "unit": "x the loop",
            "target": f">= {c['target_vs_loop']:g}x",
            "baseline": {"name": "seed 000's per-query loop", "value": cs["seed000_loop"] * 1000, "unit": "ms"},
            "note": f"{c['workload']}; C {_ms(cs['c_map_only'])}, {one}; the loop timed on "
            f"{c['loop_queries_timed']} queries and scaled, its BLAS on one thread",
        },
        "CIFAR-10 mAP@ALL, every metric, against seed 000's loop": {
            "value": c["all_metrics_vs_seed000_loop"],
            "unit": "x the loop",
            "baseline": {"name": "seed 000's per-query loop", "value": cs["seed000_loop"] * 1000, "unit": "ms"},
            "note": f"C {_ms(cs['c_all_metrics'])}",
        },
    }
    if "map_only_avx2_vs_seed000_loop" in c:
        out["CIFAR-10 mAP@ALL, mAP only, AVX2 path, against seed 000's loop"] = {
            "value": c["map_only_avx2_vs_seed000_loop"],
            "unit": "x the loop",
            "target": f">= {c['target_vs_loop']:g}x",
            "baseline": {"name": "seed 000's per-query loop", "value": cs["seed000_loop"] * 1000, "unit": "ms"},
            "note": f"C {_ms(cs['c_map_only_avx2'])} with AVX-512 masked off (the AVX2 pass and AP sums, "
            "as on an AVX2-only CPU), one C thread",
        }
    return out


def _text(result: Dict[str, Any]) -> str:
    lines = [
        f"metrics= benchmark ({result['scale']} scale, {result['rounds']} interleaved rounds, C on "
        f"{result['threads']} thread); load average before {result['loadavg_before']}"
    ]
    for key in ("scores_map_at_k", "cifar10_map_all"):
        case = result[key]
        lines.append(f"  {case['workload']}")
        lines.append("    median seconds: " + ", ".join(f"{n} {s:.4f}" for n, s in case["seconds"].items()))
        lines.append(
            "    "
            + ", ".join(f"{n} {v:.1f}x" for n, v in case.items() if n.endswith(("_loop", "_argpartition", "_metrics")))
        )
    lines.append(f"  load average after {result['loadavg_after']}")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m retrieval_conformance.conformance.bench.metrics_subset",
        description="time metrics=['map'] against every metric and the baselines",
    )
    parser.add_argument(
        "--scale",
        choices=tuple(SCORES_SIZES),
        default="smoke",
        help="smoke (seconds, the default) or full (about a minute on one core)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds: expected a positive integer, got {args.rounds}")
    result = measure(args.scale, args.rounds)
    print(json.dumps(result, indent=2) if args.json else _text(result))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
