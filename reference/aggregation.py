"""Stage 5 of the pipeline: aggregation over queries under an empty-query policy (CONVENTIONS §8).

Shared by every implementation, so they can differ only in their per-query numbers.

* ``zero``: a query with no relevant item (R = 0) counts, with 0 (seed 000, DPSH, DCMH).
* ``skip``: a query with R = 0 is left out of numerator and denominator (torchreid, fast-reid).
* ``skip_no_hit``: a query with no relevant item in the top k is left out (thuml/HashNet).
* ``nan``: such a query's values are NaN, and so is the mean.
* ``error``: such a query raises ``ValueError`` naming it.
"""
from __future__ import annotations

import warnings
from fractions import Fraction
from typing import List, Optional

import numpy as np
from retrieval_conformance.reference.problem import ExactResult, Options, PerQuery, Result


def empty_queries(pq: PerQuery, options: Options) -> np.ndarray:
    """Boolean mask of the queries the empty-query policy acts on."""
    if options.empty == "skip_no_hit":
        return pq.hits_at_k == 0
    return pq.n_relevant == 0


def _exact_mean(values: List[Fraction], counted: np.ndarray) -> Optional[Fraction]:
    chosen = [v for v, c in zip(values, counted) if c]
    return sum(chosen, Fraction(0)) / len(chosen) if chosen else None


def _float_mean(values: np.ndarray, counted: np.ndarray) -> float:
    chosen = values[counted]
    return float(chosen.mean(axis=0)) if chosen.shape[0] else float("nan")


def aggregate(pq: PerQuery, options: Options, protocol: str, implementation: str) -> Result:
    """Turn per-query values into a :class:`Result` under ``options.empty``."""
    empty = empty_queries(pq, options)
    if options.empty == "error" and empty.any():
        idx = np.flatnonzero(empty)
        raise ValueError(
            f"empty='error': {idx.size} quer{'y' if idx.size == 1 else 'ies'} with no relevant "
            f"(non-junk) gallery item, first at index {int(idx[0])}; choose empty='zero', "
            "'skip' or 'nan' to evaluate them"
        )
    counted = ~empty if options.empty in ("skip", "skip_no_hit") else np.ones_like(empty)
    if not counted.any():
        warnings.warn("no query is counted under empty=%r: every mean is NaN" % options.empty, stacklevel=3)
    poisoned = options.empty == "nan" and empty.any()

    def per_query(values: np.ndarray) -> np.ndarray:
        out = values.astype(np.float64, copy=True)
        out[~counted] = np.nan
        if options.empty == "nan":
            out[empty] = np.nan
        return out

    ap = per_query(pq.ap)
    inp = per_query(pq.inp)
    exact = None
    if pq.exact is not None and not poisoned:
        exact = ExactResult(
            map=_exact_mean(pq.exact["ap"], counted),
            ap=[v if c else None for v, c in zip(pq.exact["ap"], counted)],
            precision_at_k=_exact_mean(pq.exact["precision_at_k"], counted) if options.k is not None else None,
            recall_at_k=_exact_mean(pq.exact["recall_at_k"], counted) if options.k is not None else None,
            cmc=[
                _exact_mean([row[j] for row in pq.exact["cmc"]], counted) for j in range(options.max_rank)
            ],
            minp=_exact_mean(pq.exact["inp"], counted),
        )

    def mean(name: str) -> float:
        if poisoned:
            return float("nan")
        if exact is not None and getattr(exact, name, None) is not None:
            return float(getattr(exact, name))
        return _float_mean(getattr(pq, {"map": "ap", "minp": "inp"}.get(name, name)), counted)

    if poisoned:
        cmc = np.full(options.max_rank, np.nan)
    elif exact is not None and counted.any():
        cmc = np.array([float(v) for v in exact.cmc])
    else:
        cmc = pq.cmc[counted].mean(axis=0) if counted.any() else np.full(options.max_rank, np.nan)
    result = Result(
        map=mean("map"),
        ap=ap,
        precision_at_k=mean("precision_at_k") if options.k is not None else None,
        recall_at_k=mean("recall_at_k") if options.k is not None else None,
        cmc=cmc,
        minp=mean("minp"),
        inp=inp,
        r_precision=mean("r_precision"),
        counted=counted,
        protocol=protocol,
        implementation=implementation,
        options=options,
        per_query=pq,
        exact=exact,
    )
    if options.radius is not None:
        result.precision_at_radius = mean("precision_at_radius")
        result.recall_at_radius = mean("recall_at_radius")
    return result
