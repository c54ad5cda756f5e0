"""Curves at dataset scale: each curve of ``rc.curves`` timed against one ``rc.evaluate`` of the same data.

The CIFAR-10 hashing workload (1,000 x 54,000 64-bit codes at full scale).  Each round runs
``evaluate`` (the default implementation), then, for each implementation asked for, its own
``evaluate`` and every curve, interleaved, so a busy machine slows all alike; the report gives
the median of the rounds, each one's ratio to the default ``evaluate``, and the load average
(:func:`figures`: the same for the feature page, each curve against its own implementation's
``evaluate``).  Run:
``python -m retrieval_conformance.conformance.bench.curves [smoke|full] [c] [numpy]``.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any, Dict, List

import retrieval_conformance as rc
from retrieval_conformance.conformance.bench.hashing import cifar10
from retrieval_conformance.reference.contract.registry import unavailable_reason

#: the curves timed: (label, kind, options)
CURVES = (
    ("pr_interpolated ties=stable", "pr_interpolated", {"ties": "stable"}),
    ("pr_interpolated ties=expected", "pr_interpolated", {"ties": "expected"}),
    ("pr_radius 0..64", "pr_radius", {}),
    ("precision_at_n 100..1000", "precision_at_n", {"n": tuple(range(100, 1001, 100))}),
    ("cmc max_rank=100", "cmc", {"max_rank": 100}),
)


def curve_timings(scale: str = "full", rounds: int = 3, implementations=("c",)) -> Dict[str, float]:
    """Median seconds of ``evaluate`` and of each curve by each implementation over ``rounds``
    interleaved rounds."""
    work = cifar10(scale, None, "cifar10-all")
    arrays = work.arrays
    seconds: Dict[str, List[float]] = {"evaluate": []}
    for _ in range(rounds):
        start = time.perf_counter()
        rc.evaluate(**arrays, protocol=work.protocol, **work.options)
        seconds["evaluate"].append(time.perf_counter() - start)
        for implementation in implementations:
            start = time.perf_counter()
            rc.evaluate(**arrays, protocol=work.protocol, implementation=implementation, **work.options)
            seconds.setdefault(f"evaluate [{implementation}]", []).append(time.perf_counter() - start)
            for label, kind, options in CURVES:
                start = time.perf_counter()
                rc.curves(kind, **arrays, implementation=implementation, **options)
                seconds.setdefault(f"{label} [{implementation}]", []).append(time.perf_counter() - start)
    return {label: statistics.median(values) for label, values in seconds.items()}


def report(scale: str = "full", rounds: int = 3, implementations=("c",)) -> str:
    """The timings as a table, with the load average before and after."""
    before = os.getloadavg()
    medians = curve_timings(scale, rounds, implementations)
    after = os.getloadavg()
    base = medians["evaluate"]
    lines = [
        f"curves at CIFAR-10 scale ({scale}), median of {rounds} interleaved rounds; "
        f"load average {before[0]:.2f} before, {after[0]:.2f} after",
        f"{'what':42} {'seconds':>9} {'x evaluate':>11}",
    ]
    for label, value in medians.items():
        lines.append(f"{label:42} {value:9.3f} {value / base:11.2f}")
    return "\n".join(lines)


#: "about the time of one evaluate", read as at most twice the same implementation's evaluate
CURVE_TARGET = "<= 2"


def figures(scale: str = "full", rounds: int = 3, implementations=("c", "numpy")) -> Dict[str, Dict[str, Any]]:
    """The figures of the feature page (:mod:`.features`): each curve's median time as a multiple
    of its implementation's own ``evaluate`` of the same data, the evaluate's time as baseline."""
    out: Dict[str, Dict[str, Any]] = {}
    ready = []
    for implementation in implementations:
        reason = unavailable_reason(implementation)
        if reason is None:
            ready.append(implementation)
        else:  # said on the page rather than failing the other implementation's figures
            out[f"every curve [{implementation}]"] = {
                "value": None,
                "unit": "x evaluate",
                "note": f"not measured: {reason}",
            }
    medians = curve_timings(scale, rounds, tuple(ready))
    for implementation in ready:
        base = medians[f"evaluate [{implementation}]"]
        for label, _, _ in CURVES:
            seconds = medians[f"{label} [{implementation}]"]
            out[f"{label} [{implementation}]"] = {
                "value": seconds / base,
                "unit": "x evaluate",
                "target": CURVE_TARGET,
                "baseline": {"name": f"evaluate [{implementation}]", "value": base * 1e3, "unit": "ms"},
                "note": f"{seconds * 1e3:.4g} ms, median of {rounds} interleaved rounds",
            }
    return out


if __name__ == "__main__":  # pragma: no cover
    print(report(sys.argv[1] if len(sys.argv) > 1 else "full", implementations=tuple(sys.argv[2:]) or ("c",)))
