"""A lab's own evaluation function on the benchmark workloads, through the harness adapters.

:func:`benchmark_function` times the function (pytest-benchmark) on a standard workload,
called with exactly what its harness adapter passes, then checks its value against this
package's numpy implementation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

import numpy as np
from retrieval_conformance.conformance.bench.workloads import Workload, build


def as_case(workload: Workload):
    """The workload as a harness :class:`~retrieval_conformance.conformance.harness.inputs.case.Case`.

    The native form is kept (codes with labels, or ReID ids with cameras), so an adapter passes
    exactly what a lab passes.  Codes workloads get zero-stride placeholders for the (Q, N)
    distance and relevance matrices that the adapters do not read for them (no memory).
    """
    from retrieval_conformance.conformance.harness.inputs.public import Case

    a = workload.arrays
    shape = (workload.n_queries, workload.n_gallery)
    if workload.kind == "scores":
        raise ValueError(
            f"workload: {workload.name} has graded relevance, which no benchmark adapter passes "
            "yet; time it with rc.evaluate or the bench candidates"
        )
    if workload.kind == "codes":
        placeholder = np.broadcast_to(np.float64(0.0), shape)
        codes = (a["query_codes"], a["db_codes"], a["query_labels"], a["db_labels"])
        return Case(
            f"bench/{workload.name}",
            placeholder,
            np.broadcast_to(False, shape),
            None,
            workload.k,
            50,
            codes=codes,
            family="bench",
        )
    if "query_cams" in a:
        if workload.memory_mapped:
            raise ValueError(
                f"workload: {workload.name} is memory-mapped; adapters pass a whole in-memory matrix "
                "(use a workload that fits in memory, or rc.evaluate's streaming for this one)"
            )
        ids = (a["query_labels"], a["db_labels"], a["query_cams"], a["db_cams"])
        relevance = a["query_labels"][:, None] == a["db_labels"][None, :]
        return Case(f"bench/{workload.name}", a["distances"], relevance, None, None, 50, ids=ids, family="bench")
    return Case(f"bench/{workload.name}", a["distances"], a["relevance"], a["junk"], workload.k, 50, family="bench")


def adapter_calls(workload: Workload, adapter: str, func: Callable):
    """``(adapter, calls)``: the call(s) of ``func`` that express ``workload`` through harness
    adapter ``adapter`` (``hashing-codes``, ``reid``, ``distances-relevance``, ``oxford``, ...).

    Raises ``ValueError`` when the adapter cannot express the workload (the adapter's reason).
    """
    from retrieval_conformance.conformance.harness.adapters.base import Skip
    from retrieval_conformance.conformance.harness.adapters.registry import get_adapter

    ad = get_adapter(adapter, func)
    case = as_case(workload)
    junk = case.junk if case.junk is not None else np.broadcast_to(False, case.relevance.shape)
    try:
        calls = ad.calls(case, case.relevance, junk, "numpy")
    except Skip as exc:
        raise ValueError(f"adapter: {adapter} cannot express workload {workload.name}: {exc}") from None
    return ad, calls


@dataclass
class LabRun:
    """What :func:`benchmark_function` measured and read: the function's values and ours."""

    values: Dict[str, Any]
    expected: Dict[str, Any]
    differences: List[str]


def benchmark_function(
    benchmark,
    func: Callable,
    adapter: str,
    workload: str = "cifar10-1000",
    scale: str = "full",
    protocol: Optional[str] = None,
    rounds: Optional[int] = None,
    check: bool = True,
    atol: float = 1e-6,
    **overrides,
) -> LabRun:
    """Time a lab's own evaluation function on a standard workload (pytest-benchmark fixture).

    ``func`` is called with the arguments its harness ``adapter`` builds (the same signatures
    ``retrieval-conformance check`` uses), so the timing covers exactly what the lab's code
    does on a real-sized input.  After timing, its value is compared with this package's
    numpy implementation under ``protocol`` (default: the adapter's usual one) and
    ``overrides`` (``ties``, ``ap_rule``, ...); with ``check`` a difference larger than
    ``atol`` fails (run ``retrieval-conformance check`` to learn which convention differs).

    Example (a lab's ``test_speed.py``)::

        from retrieval_conformance.conformance.bench.adapters import benchmark_function
        from mylab.metrics import calc_map_k

        def test_calc_map_speed(benchmark):
            benchmark_function(benchmark, calc_map_k, "hashing-codes", "cifar10-1000")
    """
    from retrieval_conformance.conformance.harness.adapters.registry import DEFAULT_PROTOCOL

    w = build(workload, scale)
    try:
        ad, calls = adapter_calls(w, adapter, func)
        benchmark.group = f"lab: {w.group}"
        benchmark.extra_info.update(w.extra_info())
        benchmark.extra_info.update(
            {"candidate": getattr(func, "__name__", "function"), "role": "lab", "adapter": adapter}
        )

        def run():
            return [func(*c.args, **c.kwargs) for c in calls]

        from retrieval_conformance.conformance.bench.anchor import anchor_matrix, interleaved, make_anchor

        # interleaved with the anchor, so `retrieval-conformance bench gate` can apply the ratio gate
        outputs, times = interleaved(benchmark, run, make_anchor(anchor_matrix(w)), rounds or 3)
        benchmark.extra_info.update(times.extra_info())
        values: Dict[str, Any] = {}
        for call, out in zip(calls, outputs):
            reading = ad.read(out, call).values
            if call.query is None:
                values.update(reading)
            else:
                for key, v in reading.items():
                    values.setdefault(f"{key}[per query]", {})[call.query] = v
        import retrieval_conformance as rc

        protocol = protocol or DEFAULT_PROTOCOL.get(adapter, w.protocol)
        kw = w.evaluate_kwargs(implementation="numpy", protocol=protocol, **overrides)
        if protocol not in ("reid", "reid-matlab"):
            kw.pop("query_cams", None), kw.pop("db_cams", None)
        ours = rc.evaluate(**kw)
        expected = {"mAP": ours.map, "cmc": ours.cmc, "mINP": ours.minp}
        differences = []
        for key, v in values.items():
            if key.endswith("[per query]"):
                for q, ap in v.items():
                    if abs(ap - ours.per_query.ap[q]) > atol:
                        differences.append(f"AP of query {q}: yours {ap!r}, expected {ours.per_query.ap[q]!r}")
            elif key == "cmc":
                n = min(len(v), len(ours.cmc))
                bad = np.flatnonzero(np.abs(np.asarray(v[:n]) - ours.cmc[:n]) > atol)
                if bad.size:
                    j = int(bad[0])
                    differences.append(f"cmc[{j}] (Rank-{j + 1}): yours {v[j]!r}, expected {ours.cmc[j]!r}")
            elif key in expected and abs(v - expected[key]) > atol:
                differences.append(f"{key}: yours {v!r}, expected {expected[key]!r} (protocol {protocol!r})")
        benchmark.extra_info["map"] = values.get("mAP")
        if check and differences:
            raise AssertionError(
                f"{getattr(func, '__name__', 'function')} on {w.name} differs from the {protocol!r} protocol: "
                + "; ".join(differences[:5])
                + ". Run `retrieval-conformance check` to find which convention differs."
            )
        return LabRun(values, expected, differences)
    finally:
        w.cleanup()
