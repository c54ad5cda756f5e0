"""Cut-offs beyond the gallery: clipped to it before any fixed-width integer sees them.

``k`` and ``max_rank`` arrive as Python ints of any size (validation never narrows them:
``np.uint64(2**64 - 1)`` or ``10**30`` stay what they are).  Every value they control is
settled once they reach the gallery size N (spec §6 "k at or beyond the gallery",
§7 "cmc_length=max_rank"):

* ``k >= N``: the top k holds every non-junk item, so AP@k is full AP under every
  denominator, H(k) = R and R@k = 1; only P@k = H(k)/k still reads k.
* ``K >= N``: CMC@K = CMC@N, since the first relevant item (if any) sits within the
  N' <= N non-junk items.

So implementations compute with both clipped to N (their int64 and float arithmetic never
sees a number beyond the gallery, whatever the caller passed), and the two things that
still depend on the original values are restored here, once, for every implementation:
P@k exactly as R/k, and the CMC's flat tail.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from fractions import Fraction
from typing import Callable, Optional

import numpy as np
from retrieval_conformance.reference.contract.problem import Options, PerQuery


def clip_to_gallery(options: Options, n_gallery: int) -> Options:
    """``options`` with ``k`` and ``max_rank`` clipped to ``n_gallery`` (the same object when
    neither changes, so ordinary calls are untouched).

    The comparison is of Python ints, before any conversion to a fixed-width type.
    """
    if n_gallery < 1:
        return options  # nothing is ranked; implementations return zeros
    k = options.k
    if k is not None and k > n_gallery:
        k = n_gallery
    max_rank = min(options.max_rank, n_gallery)
    if k == options.k and max_rank == options.max_rank:
        return options
    return replace(options, k=k, max_rank=max_rank)


def restore_precision(pq: PerQuery, k: Optional[int], n_gallery: int) -> PerQuery:
    """P@k = R / k for a ``k`` beyond the gallery (computed with k clipped to N).

    H(k) = R there, so P@k is the exact ratio of two integers, rounded once to float64 (what
    every implementation returns for a k within int64): the same bits everywhere, for any k.
    """
    if k is None or k <= n_gallery:
        return pq
    values, inverse = np.unique(pq.n_relevant, return_inverse=True)
    ratios = np.array([float(Fraction(int(r), k)) for r in values], dtype=np.float64)
    exact = pq.exact
    if exact is not None:
        exact = dict(exact, precision_at_k=[Fraction(int(r), k) for r in pq.n_relevant])
    return replace(pq, precision_at_k=ratios[inverse.reshape(-1)], exact=exact)


def pad_cmc(pq: PerQuery, max_rank: int) -> PerQuery:
    """Per-query CMC rows extended to ``max_rank`` columns by repeating their last column
    (computed up to the gallery size, beyond which the CMC is flat)."""
    width = pq.cmc.shape[1]
    if width == 0 or width >= max_rank:
        return pq
    tail = np.repeat(pq.cmc[:, -1:], max_rank - width, axis=1)
    exact = pq.exact
    if exact is not None:
        rows = [list(row) + [row[-1]] * (max_rank - width) for row in exact["cmc"]]
        exact = dict(exact, cmc=rows)
    return replace(pq, cmc=np.concatenate([pq.cmc, tail], axis=1), exact=exact)


def within_gallery(compute: Callable[..., PerQuery]) -> Callable[..., PerQuery]:
    """Decorator for ``Implementation.compute(problem, options, ...)``: the wrapped code sees
    ``k`` and ``max_rank`` clipped to the gallery, and the caller gets the values of the
    options it passed (P@k with its k, CMC rows of its max_rank columns).

    ``evaluate`` does the same around every implementation (registered extra ones included),
    so there the decorator finds nothing to clip; it protects direct callers of an
    implementation from wrapped or overflowing integers.
    """

    @functools.wraps(compute)
    def wrapper(self, problem, options: Options, *args, **kwargs) -> PerQuery:
        return compute_within_gallery(functools.partial(compute, self), problem, options, *args, **kwargs)

    return wrapper


def compute_within_gallery(compute: Callable[..., PerQuery], problem, options: Options, *args, **kwargs) -> PerQuery:
    """``compute(problem, clipped options, ...)``, then P@k and the CMC tail for the options given."""
    inner = clip_to_gallery(options, problem.n_gallery)
    pq = compute(problem, inner, *args, **kwargs)
    if inner is options:
        return pq
    return pad_cmc(restore_precision(pq, options.k, problem.n_gallery), options.max_rank)
