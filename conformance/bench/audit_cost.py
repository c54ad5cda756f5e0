"""The audit's cost as a multiple of one ``evaluate``: a Market-1501-sized ReID run and a
CIFAR-10-sized hashing run (the workloads of :mod:`.workloads`), each audited with its own
declared mAP as the reported number (so the reported-number search runs too).

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
AUDITED = (("market1501", "Market-1501-sized ReID run"), ("cifar10-1000", "CIFAR-10-sized hashing run, mAP@1000"))


def measure(name: str, scale: str = "smoke", implementation: str = "auto") -> Dict[str, Any]:
    """Seconds of one ``evaluate`` and of one ``audit`` of workload ``name`` at ``scale``."""
    import retrieval_conformance as rc
    from retrieval_conformance.conformance.bench.workloads import build

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
        audit = rc.audit(**data, protocol=kwargs.get("protocol", "hashing"), k=kwargs.get("k"),
                         implementation=implementation, reported={"map": f"{result.map:.4f}"})
        seconds = time.perf_counter() - start
    finally:
        workload.cleanup()
    return {"workload": name, "scale": scale, "shape": list(audit.shape), "evaluate_s": one, "audit_s": seconds,
            "ratio": seconds / one, "evaluations": audit.evaluations, "implementation": result.implementation,
            "reproduced": audit.reproduced["n_matches"]}


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m retrieval_conformance.conformance.bench.audit_cost",
                                description="the audit's cost as a multiple of one evaluate")
    p.add_argument("--scale", choices=("smoke", "full"), default="smoke")
    p.add_argument("--implementation", default="auto")
    p.add_argument("--json", help="also write the measurements here")
    args = p.parse_args(argv)
    rows = []
    for name, what in AUDITED:
        row = measure(name, args.scale, args.implementation)
        rows.append(row)
        q, n = row["shape"]
        print(f"{what} ({q:,} x {n:,}, {row['implementation']}): evaluate {row['evaluate_s']:.3f} s, audit "
              f"{row['audit_s']:.2f} s = {row['ratio']:.0f}x ({row['evaluations']} evaluations)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
