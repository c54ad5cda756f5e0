"""The audit's cost as a multiple of one ``evaluate``: a Market-1501-sized ReID run and a
CIFAR-10-sized hashing run (the workloads of :mod:`.workloads`), and a TREC-sized run (50 topics
x 1,000 documents with scores printed as ``%.3f``, graded qrels; :func:`trec_run`), each audited
with its own declared mAP as the reported number (so the reported-number search runs too).

::

    python -m retrieval_conformance.conformance.bench.audit_cost [--scale smoke|full] [--json OUT]

Prints one line per workload: one ``evaluate`` (the median of three), the audit (one run), the
ratio and the number of evaluations the audit made.  No timing is asserted anywhere; the
numbers are for the README's speed table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any, Dict, List, Optional

#: the workloads timed: (name in workloads.WORKLOAD_NAMES, what it stands for)
AUDITED = (
    ("market1501", "Market-1501-sized ReID run"),
    ("cifar10-1000", "CIFAR-10-sized hashing run, mAP@1000"),
    ("trec-run", "TREC-sized run and qrels, trec_eval's measures at k=10"),
)
#: topics and documents per topic of the TREC run at each scale
TREC_SIZES = {"smoke": (10, 100), "full": (50, 1000)}


def trec_run(scale: str = "smoke", seed: int = 28):
    """A TREC-style run and graded qrels: each topic ranks documents of a shared pool by a score
    printed with three decimals (so close documents tie), and a third of the pool is judged, the
    better-ranked documents more often relevant."""
    import numpy as np

    topics, depth = TREC_SIZES[scale]
    rng = np.random.default_rng(seed)
    run, qrels = {}, {}
    for t in range(topics):
        qid = str(401 + t)
        docs = rng.choice(3 * depth, depth, replace=False)
        scores = np.round(np.sort(rng.normal(size=depth))[::-1], 3)
        run[qid] = {f"D{d:06d}": float(s) for d, s in zip(docs, scores)}
        judged = rng.random(depth) < 1 / 3
        chance = 0.5 * np.exp(-np.arange(depth) / (depth / 5))
        grades = (rng.random(depth) < chance).astype(int) * rng.integers(1, 3, depth)
        qrels[qid] = {f"D{d:06d}": int(g) for d, g, j in zip(docs, grades, judged) if j}
        qrels[qid].update({f"U{t}-{i}": 1 for i in range(3)})  # relevant documents the run missed
    return run, qrels


def measure(name: str, scale: str = "smoke", implementation: str = "auto") -> Dict[str, Any]:
    """Seconds of one ``evaluate`` and of one ``audit`` of workload ``name`` at ``scale``."""
    import retrieval_conformance as rc
    from retrieval_conformance.conformance.bench.workloads import build

    if name == "trec-run":
        return _measure_run(scale, implementation)
    workload = build(name, scale)
    try:
        kwargs = workload.evaluate_kwargs(implementation=implementation)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            result = rc.evaluate(**kwargs)
            times.append(time.perf_counter() - start)
        one = statistics.median(times)
        data = {key: value for key, value in kwargs.items() if key not in ("protocol", "implementation", "k")}
        start = time.perf_counter()
        audit = rc.audit(
            **data,
            protocol=kwargs.get("protocol", "hashing"),
            k=kwargs.get("k"),
            implementation=implementation,
            reported={"map": f"{result.map:.4f}"},
        )
        seconds = time.perf_counter() - start
    finally:
        workload.cleanup()
    return {
        "workload": name,
        "scale": scale,
        "shape": list(audit.shape),
        "evaluate_s": one,
        "audit_s": seconds,
        "ratio": seconds / one,
        "evaluations": audit.evaluations,
        "implementation": result.implementation,
        "reproduced": audit.reproduced["n_matches"],
    }


def _measure_run(scale: str, implementation: str) -> Dict[str, Any]:
    import retrieval_conformance as rc

    run, qrels = trec_run(scale)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        result = rc.evaluate(run=run, qrels=qrels, k=10, implementation=implementation)
        times.append(time.perf_counter() - start)
    one = statistics.median(times)
    start = time.perf_counter()
    audit = rc.audit(
        run=run,
        qrels=qrels,
        k=10,
        implementation=implementation,
        reported={"map": f"{result.extras['trec_eval']['map']:.4f}"},
    )
    seconds = time.perf_counter() - start
    return {
        "workload": "trec-run",
        "scale": scale,
        "shape": list(audit.shape),
        "evaluate_s": one,
        "audit_s": seconds,
        "ratio": seconds / one,
        "evaluations": audit.evaluations,
        "implementation": result.implementation,
        "reproduced": audit.reproduced["n_matches"],
    }


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m retrieval_conformance.conformance.bench.audit_cost",
        description="the audit's cost as a multiple of one evaluate",
    )
    p.add_argument("--scale", choices=("smoke", "full"), default="smoke")
    p.add_argument("--implementation", default="auto")
    p.add_argument("--json", help="also write the measurements here")
    args = p.parse_args(argv)
    rows = []
    for name, what in AUDITED:
        row = measure(name, args.scale, args.implementation)
        rows.append(row)
        q, n = row["shape"]
        shape = f"{q:,} topics, {n:,} retrieved" if name == "trec-run" else f"{q:,} x {n:,}"
        print(
            f"{what} ({shape}, {row['implementation']}): evaluate {row['evaluate_s']:.3f} s, audit "
            f"{row['audit_s']:.2f} s = {row['ratio']:.0f}x ({row['evaluations']} evaluations)"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
