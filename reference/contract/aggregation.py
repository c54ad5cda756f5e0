"""Stage 5 of the pipeline: aggregation over queries under an empty-query policy (spec §8).

Shared by every implementation, so they can differ only in their per-query numbers.  Means
are exact (rationals from the reference, the exact sum of the float64 values otherwise), so
they do not depend on the order of the queries or on the block size.

* ``zero``: a query with no relevant item (R = 0) counts, with 0 (seed 000, DPSH, DCMH).
* ``skip``: a query with R = 0 is left out of numerator and denominator (torchreid, fast-reid).
* ``skip_no_hit``: a query with no relevant item in the top k is left out (thuml/HashNet).
* ``nan``: such a query's values are NaN, and so is the mean.
* ``error``: such a query raises ``ValueError`` naming it.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from fractions import Fraction
from typing import Any, Dict, List, Optional, cast

import numpy as np
from retrieval_conformance.reference.contract.metric_names import per_query_fields
from retrieval_conformance.reference.contract.problem import ARRAY_FIELDS, MEANS, ExactResult, Options, PerQuery, Result


class NoQueryCountedWarning(UserWarning):
    """Every query was left out by the empty-query policy, so every mean is NaN."""


def empty_queries(pq: PerQuery, options: Options) -> np.ndarray:
    """Boolean mask of the queries the empty-query policy acts on."""
    if options.empty == "skip_no_hit":
        return pq.hits_at_k == 0
    return pq.n_relevant == 0


def _exact_mean(values: List[Fraction], counted: np.ndarray) -> Optional[Fraction]:
    chosen = [v for v, c in zip(values, counted) if c]
    return sum(chosen, Fraction(0)) / len(chosen) if chosen else None


def _exact_sum(values: List[float]) -> Fraction:
    """The exact sum of floats, from ``math.fsum`` (correctly rounded, so independent of the
    order): the rounded sum, then the rounded remainder, ... until nothing remains (each
    round removes at least 53 bits of the remainder)."""
    parts: List[float] = []
    while True:
        rest = math.fsum(values + [-p for p in parts])
        if rest == 0.0:
            return sum(map(Fraction, parts), Fraction(0))
        parts.append(rest)


def float_mean(values: np.ndarray) -> float:
    """Mean of float64 values, correctly rounded from their exact sum.

    A running float sum depends on the order of the values (and numpy's pairwise sum on how
    many there are), so a permutation of the queries, or another block size, could change the
    last bit of a mean.  The exact sum does not, and where the exact mean is a float64 this
    returns it (as the reference's exact rationals do).
    """
    n = values.shape[0]
    if n == 0:
        return float("nan")
    if not np.isfinite(values).all():
        return float(values.mean())  # NaN and inf propagate as they are
    if (values == np.floor(values)).all() and float(np.abs(values).max()) * n < 2.0**53:
        return float(Fraction(int(values.sum()), n))  # integers: the float sum is exact in any order
    try:
        return float(_exact_sum(values.tolist()) / n)
    except OverflowError:  # a sum beyond the float range: fsum cannot hold it
        return float(values.mean())


def _float_mean(values: np.ndarray, counted: np.ndarray) -> float:
    return float_mean(values[counted])


def _column_means(matrix: np.ndarray) -> np.ndarray:
    """:func:`float_mean` of every column of a (queries, columns) matrix, vectorised where the
    exact mean is cheap: a column of equal values (every column for one query, the CMC where
    every query has found its match) has that value as its mean, and a column of integers
    (0/1 under every concrete tie policy) has an exact integer sum."""
    q, width = matrix.shape
    out = np.full(width, np.nan)
    if q == 0:
        return out
    finite = np.isfinite(matrix).all(axis=0)
    constant = finite & (matrix == matrix[:1]).all(axis=0)
    out[constant] = matrix[0, constant]
    rest = finite & ~constant
    integral = rest & (matrix == np.floor(matrix)).all(axis=0) & (np.abs(matrix).max(axis=0) * q < 2.0**53)
    sums = matrix[:, integral].sum(axis=0)
    out[integral] = [float(Fraction(int(total), q)) for total in sums]
    for j in np.flatnonzero(~constant & ~integral):
        out[j] = float_mean(matrix[:, j])
    return out


def _flat_tail(values: np.ndarray, length: int) -> np.ndarray:
    """A CMC computed up to the gallery size, extended to ``length`` by its last value (the
    CMC is flat beyond the gallery, spec §7 cmc_length=max_rank)."""
    if values.shape[0] == 0 or values.shape[0] >= length:
        return values
    return np.concatenate([values, np.full(length - values.shape[0], values[-1])])


def aggregate(
    pq: PerQuery, options: Options, protocol: str, implementation: str, n_gallery: Optional[int] = None
) -> Result:
    """Turn per-query values into a :class:`Result` under ``options.empty``.

    ``n_gallery``: when given, CMC columns from the gallery size on are known to repeat the
    last one (§7 cmc_length=max_rank), so only the first ``n_gallery`` are averaged: a
    max_rank far beyond the gallery costs no exact arithmetic per column.

    With ``options.metrics``, only those metrics are averaged and shown: the other per-query
    fields are dropped (None), whatever an implementation left in them.
    """
    pq = only_requested(pq, options)
    computed = None if options.metrics is None else frozenset(options.metrics)

    def wanted(name: str) -> bool:
        return computed is None or name in computed

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
        warnings.warn(
            "no query is counted under empty=%r: every mean is NaN" % options.empty, NoQueryCountedWarning, stacklevel=3
        )
    poisoned = options.empty == "nan" and empty.any()

    def per_query(values: np.ndarray) -> np.ndarray:
        out = values.astype(np.float64, copy=True)
        out[~counted] = np.nan
        if options.empty == "nan":
            out[empty] = np.nan
        return out

    ap = per_query(pq.ap) if wanted("map") else None
    inp = per_query(pq.inp) if wanted("minp") else None
    # columns worth averaging: beyond the gallery every CMC row is flat
    limit = n_gallery if n_gallery is not None else options.max_rank
    width = 0 if pq.cmc is None else min(pq.cmc.shape[1], options.max_rank, limit)
    exact = None
    if pq.exact is not None and not poisoned:
        with_k = options.k is not None
        exact = ExactResult(
            map=_exact_mean(pq.exact["ap"], counted) if wanted("map") else None,
            ap=[v if c else None for v, c in zip(pq.exact["ap"], counted)] if wanted("map") else [],
            precision_at_k=_exact_mean(pq.exact["precision_at_k"], counted)
            if with_k and wanted("precision_at_k")
            else None,
            recall_at_k=_exact_mean(pq.exact["recall_at_k"], counted) if with_k and wanted("recall_at_k") else None,
            cmc=[_exact_mean([row[j] for row in pq.exact["cmc"]], counted) for j in range(width)],
            minp=_exact_mean(pq.exact["inp"], counted) if wanted("minp") else None,
        )
        if exact.cmc and width < options.max_rank:
            exact.cmc = exact.cmc + [exact.cmc[-1]] * (options.max_rank - width)

    def mean(name: str) -> float:
        if poisoned:
            return float("nan")
        if exact is not None and getattr(exact, name, None) is not None:
            return float(getattr(exact, name))
        field = MEANS[name][0]
        if pq.exact is not None and field in pq.exact and counted.any():
            return float(cast(Fraction, _exact_mean(pq.exact[field], counted)))  # the reference's other exact fields
        return _float_mean(getattr(pq, field), counted)

    if not wanted("cmc"):
        cmc = None
    elif poisoned or not counted.any():
        cmc = np.full(options.max_rank, np.nan)
    elif exact is not None:
        # some query is counted here, so every exact rank holds a value
        cmc = _flat_tail(np.array([float(cast(Fraction, v)) for v in exact.cmc[:width]]), options.max_rank)
    else:
        cmc = _flat_tail(_column_means(pq.cmc[counted][:, :width]), options.max_rank)
    # every mean of the table, None where its option is not set (P@k without k, ...)
    means: Dict[str, Any] = {
        name: mean(name) if wanted(name) and (needs is None or getattr(options, needs) is not None) else None
        for name, (_, needs) in MEANS.items()
    }
    return Result(
        **means,
        # None only where not computed: Result raises NotComputedError when such a field is read
        ap=cast(np.ndarray, ap),
        cmc=cast(np.ndarray, cmc),
        inp=cast(np.ndarray, inp),
        counted=counted,
        protocol=protocol,
        implementation=implementation,
        options=options,
        per_query=pq,
        exact=exact,
        computed=computed,
    )


def only_requested(pq: PerQuery, options: Options) -> PerQuery:
    """``pq`` with the per-query fields no metric of ``options.metrics`` needs set to None
    (and left out of its exact values); ``pq`` itself when every metric is asked for."""
    needed = per_query_fields(options.metrics)
    if needed is None:
        return pq
    dropped: Dict[str, Any] = {name: None for name in ARRAY_FIELDS if name not in needed}
    exact = None if pq.exact is None else {key: v for key, v in pq.exact.items() if key in needed}
    return dataclasses.replace(pq, exact=exact, **dropped)
