"""The block loop and the sort-key packer that the numpy and torch implementations share.

A backend supplies two things: an ``ops`` object (its array operations: ``NumpyOps`` in
``numpy_backend``, ``TorchOps`` in ``torch_backend``) and a *source* that builds a block's
distances, relevance and junk on its device.  Everything else is here and in the modules
it calls; Python loops run over blocks of queries only, never over queries.

Per block of ``B`` queries (one ``(B, N)`` int64 array stays under 16 MB, so no ``Q x N``
array ever exists):

1. the source gives distances (float32, float64, or integer Hamming distances), relevance
   and junk (spec §3 junk is removed before ranking: junk takes no rank and is never
   relevant);
2. :func:`sorted_block` sorts each row by ``(distance, tie key)`` with junk last, giving:

   * ``key_s`` (B, N): each row ascending; equal values <=> equal distances (one tie group,
     spec §4 tie group).  Junk items carry a sentinel above every distance, so they
     sit at the end of the row as one pseudo-group with no relevant item.  Only the
     policies that work on tie groups read it (None for ``stable`` and ``reverse``);
   * ``rel_s`` (B, N) bool: relevance in the same order; ``stable`` ties are in gallery
     order, ``reverse`` ties in reversed gallery order, the other policies use only
     per-group counts, so any order inside a group does;
   * ``grade_s`` (B, N) int64: with graded relevance, the grades in the same order
     (:func:`sort_block`; None for binary relevance);
3. :func:`block_metrics` computes the per-query values (``n_kept`` = N' non-junk items per
   query): :mod:`.concrete` for concrete orders and ``grouped``,
   :mod:`.expected` for ``expected``; nDCG, RR, AP@R and the hit rate of
   ``recall="hit"`` in both via :mod:`.rank_metrics`.

Floating point (spec §0 conformance; bit for bit where the exact value is a float64,
1e-12 otherwise): a ratio of two integers is one float64 division of exact integers, hence
correctly rounded; sums (AP) are carried in double-double (:mod:`.double_double`)
and rounded once.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional, Protocol, cast

import numpy as np
from retrieval_conformance.implementations.vector.concrete import ranked_metrics
from retrieval_conformance.implementations.vector.double_double import safe_div
from retrieval_conformance.implementations.vector.expected import expected_metrics
from retrieval_conformance.implementations.vector.rank_metrics import GRADE_BITS, item_gains
from retrieval_conformance.implementations.vector.tie_groups import TieGroups
from retrieval_conformance.reference.contract.conventions import INDEX_ORDERS
from retrieval_conformance.reference.contract.problem import Options, PerQuery, Problem, zero_arrays
from retrieval_conformance.reference.contract.query_blocks import block_rows
from retrieval_conformance.reference.contract.registry import PreparedGallery, gallery_store

#: bytes one (block x N) int64 sort-key array may take (the budget of ``block_rows``); a block
#: has a few such temporaries (16 MB: as fast as larger blocks here, and the peak extra memory
#: stays near 30-60 MB)
BLOCK_BYTES = 16 * 1024 * 1024
#: above every order-mapped finite float32 (+inf maps to 0x7F800000)
SENTINEL32 = 0x7FFFFFFF


# -- the sort key ---------------------------------------------------------------------------------
def float32_order_key(ops, d):
    """Order-preserving int32 image of finite float32 values; -0.0 and 0.0 map to 0.

    ``d + 0.0`` turns -0.0 into +0.0 (spec §1 float distances: equal floats tie);
    non-negative floats keep their bits, negative ones have their magnitude bits flipped,
    so a larger magnitude maps lower (``-1 - magnitude bits``).
    """
    b = ops.bits_i32(d + 0.0)
    return ops.where(b < 0, b ^ 0x7FFFFFFF, b)


def sorted_block(ops, dist, rel, junk, ties: str, hamming_top: Optional[int] = None):
    """(key_s, rel_s): rows sorted by (distance, tie key), junk last (see the module docstring
    and :func:`sort_block`)."""
    key_s, rel_s, _ = sort_block(ops, dist, rel, junk, ties, hamming_top)
    return key_s, rel_s


def sort_block(ops, dist, rel, junk, ties: str, hamming_top: Optional[int] = None, grade=None):
    """(key_s, rel_s, grade_s): rows sorted by (distance, tie key), junk last.

    float32 and integer (Hamming) distances: one integer per item packs
    ``(order-mapped distance, tie key, relevance bit)`` (most significant first) and the
    rows are sorted by value.  The tie key is the gallery index for ``stable`` and
    ``N - 1 - index`` for ``reverse`` (spec §4 ties=stable, §4 ties=reverse), which
    makes every key unique; the other policies need only per-group counts, so their key is
    (distance, relevance) and equal keys are equal values.  Sorting values, never a
    permutation, leaves nothing to how a sort (or a device) orders equal keys.  Junk items
    get a distance above every real one (``hamming_top`` = code length + 1 for Hamming).

    float64 distances: a stable sort on the row in tie-key order (reversed for
    ``reverse``), and the relevance gathered along.

    ``grade``: the int64 relevance grades (graded relevance, 0 for junk; None for binary),
    returned in the sorted order as ``grade_s`` (None without grades): the index orders read
    each position's gallery index off its unique key, the other policies pack the grade
    between the tie key and the relevance bit (``GRADE_BITS`` bits), so that equal keys still
    carry equal values (the order inside a tie group is then by grade, which only
    ``optimistic`` and ``pessimistic`` read, and rearrange: ``vector.rank_metrics``).
    """
    n = dist.shape[1]
    reverse = ties == "reverse"
    dtype = ops.dtype_name(dist)
    if dtype == "float64":
        d = dist + 0.0  # -0.0 + 0.0 = +0.0
        if junk is not None:
            d = ops.where(junk, math.inf, d)
        if reverse:
            d, rel = ops.flip(d, 1), ops.flip(rel, 1)
            grade = None if grade is None else ops.flip(grade, 1)
        key_s, idx = ops.stable_sort(d)
        return key_s, ops.take_rows(rel, idx), None if grade is None else ops.take_rows(grade, idx)
    tie_bits = int(n - 1).bit_length() if ties in INDEX_ORDERS else 0
    grade_bits = GRADE_BITS if grade is not None and ties not in INDEX_ORDERS else 0
    shift = tie_bits + grade_bits + 1
    if dtype == "float32":
        kind, sentinel = "i64", SENTINEL32  # a signed 32-bit image: int64 holds it shifted
        key = ops.astype(float32_order_key(ops, dist), kind)
    else:
        sentinel = int(cast(int, hamming_top))  # the integer distances are Hamming distances
        kind = ops.key_kind(sentinel.bit_length() + shift)
        key = ops.astype(dist, kind)
    if junk is not None:
        key[junk] = sentinel
    key <<= shift
    if tie_bits:
        tie = ops.arange(n)
        if reverse:
            tie = (n - 1) - tie
        key |= ops.astype(tie, kind)[None, :] << 1
    if grade_bits:
        key |= ops.astype(grade, kind) << 1
    key |= rel
    key = ops.sort_values(key)
    rel_s = ops.low_bit(key)
    grade_s = None
    if grade_bits:
        grade_s = ops.astype((key >> 1) & (2**GRADE_BITS - 1), "i64")
    elif grade is not None:  # an index order: the unique key holds each position's gallery index
        tie = ops.astype((key >> 1) & (2**tie_bits - 1), "i64")
        grade_s = ops.take_rows(grade, (n - 1) - tie if reverse else tie)
    return (None if ties in INDEX_ORDERS else key >> shift), rel_s, grade_s


# -- one block --------------------------------------------------------------------------------------
def block_metrics(ops, key_s, rel_s, n_kept, options: Options, row0: int = 0, grade_s=None) -> Dict[str, object]:
    """Per-query metrics of one sorted block (see the module docstring for the inputs).

    Returns a dict of device arrays: ap, n_relevant, hits_at_k, precision_at_k,
    recall_at_k (the hit rate under ``recall="hit"``), cmc (B, max_rank), inp, r_precision,
    ndcg, rr, ap_at_r.  ``row0`` is the index of the block's first query (for the error
    message of ``grouped``); ``grade_s`` the grades in sorted order (None: binary relevance).
    """
    R = ops.sum(rel_s, 1)
    if options.ties in INDEX_ORDERS:
        out = ranked_metrics(ops, rel_s, None, R, n_kept, options, row0, grade_s)
    else:
        groups = TieGroups(ops, key_s, rel_s)
        if options.ties == "expected":
            gains = None
            if grade_s is not None:
                gains = item_gains(ops, grade_s.reshape(-1)[groups.rel_flat], options.gain)
            out = expected_metrics(ops, groups, R, n_kept, options, gains)
        else:
            out = ranked_metrics(ops, rel_s, groups, R, n_kept, options, row0, grade_s)
    return finish_metrics(out, R, options)


def finish_metrics(out: Dict[str, object], R, options: Options) -> Dict[str, object]:
    """The per-query values of the metric kernels' dict: the hit rate made R@k under
    ``recall="hit"`` (spec §7 recall=hit), ``n_relevant`` = R added."""
    hit = out.pop("hit")
    if options.recall == "hit":
        out["recall_at_k"] = hit
    out["n_relevant"] = R
    return out


def radius_values(ops, within, rel, R):
    """precision/recall within a radius (spec §7 precision within Hamming radius):
    ``within`` = non-junk with d <= radius (B, N), ``rel`` = relevant non-junk; 0 when R = 0."""
    return radius_from_counts(ops, ops.sum(within, 1), ops.sum(within & rel, 1), R)


def radius_from_counts(ops, n_within, rel_within, R):
    """precision/recall within a radius from the per-query counts of non-junk items within it
    (``n_within``) and of relevant ones (``rel_within``); 0 when R = 0."""
    has = R > 0
    precision = ops.where(has, safe_div(ops, rel_within, n_within), 0.0)
    recall = safe_div(ops, rel_within, R)
    return precision, recall


# -- the block loop ---------------------------------------------------------------------------------
class BlockSource(Protocol):
    """A backend's block builder: the inputs of queries ``s:e`` as arrays on its device."""

    def distances(self, s: int, e: int) -> Any: ...

    def relevance(self, s: int, e: int) -> Any: ...

    def grades(self, s: int, e: int) -> Any: ...

    def junk(self, s: int, e: int) -> Any: ...


def compute_in_blocks(
    ops,
    problem: Problem,
    options: Options,
    source: Callable[[Problem, PreparedGallery], BlockSource],
    block_bytes: Optional[int] = None,
    progress: Optional[Callable[[int, int], None]] = None,
    state: object = None,
) -> PerQuery:
    """Per-query metrics of ``problem``, block by block.

    ``source(problem, gallery)`` returns the backend's block builder, with ``distances(s, e)``,
    ``relevance(s, e)``, ``grades(s, e)`` (int64; None for binary relevance) and
    ``junk(s, e)`` (None when the problem has no junk) for queries
    ``s:e``, as arrays on its device; ``ops`` does everything else.  Results are copied back
    per block (``ops.to_numpy``) into float64/int64 numpy arrays.
    """
    Q, N = problem.n_queries, problem.n_gallery
    out = zero_arrays(Q, options)
    if Q == 0 or N == 0:
        return to_per_query(out)
    if N >= 2**31:
        raise ValueError(f"gallery: at most 2**31 - 1 items are supported, got {N}")
    src = source(problem, gallery_store(state, problem))
    # Hamming distances are <= the code length, so code length + 1 is above every one
    top = cast(np.ndarray, problem.query_bits).shape[1] + 1 if problem.distances is None else None
    step = block_rows(Q, N, budget=BLOCK_BYTES if block_bytes is None else block_bytes)
    names = list(out)  # the fields the options ask for
    with ops.no_grad():
        for s in range(0, Q, step):
            e = min(Q, s + step)
            dist = src.distances(s, e)
            rel = src.relevance(s, e)
            junk = src.junk(s, e)
            if junk is not None:
                rel = rel & ~junk
            grade = src.grades(s, e)
            if grade is not None and junk is not None:
                grade = ops.where(junk, 0, grade)
            key_s, rel_s, grade_s = sort_block(ops, dist, rel, junk, options.ties, top, grade)
            n_kept = ops.full((e - s,), N, "i64")
            if junk is not None:
                n_kept = n_kept - ops.sum(junk, 1)
            res = block_metrics(ops, key_s, rel_s, n_kept, options, row0=s, grade_s=grade_s)
            if options.radius is not None:
                within = ops.f64(dist) <= float(options.radius)
                if junk is not None:
                    within = within & ~junk
                res["precision_at_radius"], res["recall_at_radius"] = radius_values(ops, within, rel, res["n_relevant"])
            for name in names:
                out[name][s:e] = ops.to_numpy(res[name])
            if progress is not None:
                progress(e, Q)
    return to_per_query(out)


# -- assembling a PerQuery ----------------------------------------------------------------------------
def to_per_query(arrays: Dict[str, np.ndarray]) -> PerQuery:
    """The :class:`PerQuery` of the filled result arrays."""
    return PerQuery(**arrays)  # type: ignore[arg-type]  # arrays by field name
