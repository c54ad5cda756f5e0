"""Gallery shards: per-query statistics of one shard (pass 1) and its counts (pass 2).

The dask implementation (:mod:`.backend`) cuts the gallery into contiguous shards (items
``lo:hi``, with their global offset ``lo``) and runs, for each chunk of queries, two passes over
every shard; this module holds what those passes compute on the workers (numpy, and pass 2's
counts in C where the library is built: :mod:`..c.shards`; no dask), :mod:`.merge` what the
client does with their results.

What the metrics of one query depend on (spec §4, §5, §7):

* its relevant non-junk items: distance, global gallery index, grade;
* the rank of each relevant item, or, under the policies that work on tie groups, each relevant
  group's ``c`` (non-junk items at a smaller distance) and ``n`` (non-junk items at its
  distance); a group's ``m`` (relevant items) and ``h`` (relevant items before it) follow from
  the relevant items alone;
* ``N'`` (non-junk items), and with a radius the counts of items and relevant items within it;
* under ``ties="grouped"`` with a cut-off ``k``: whether the k-th and (k+1)-th smallest
  non-junk distances are equal (a cut-off inside a tie group, an error).

**Pass 1** (:func:`shard_statistics`): each shard returns, per query, its relevant non-junk
items (key, global index, grade), its ``N'``, its radius counts, and under ``grouped`` with
``k`` its ``k + 1`` smallest non-junk keys.  The client concatenates the shards' items and
sorts them per query under the tie policy (:func:`.merge.merge_statistics`).

**Pass 2** (:func:`shard_counts`): each shard gets the sorted relevant items back (for the
index orders) or the distinct distances of the relevant groups (the other policies, plus the
k-th smallest distance where ``grouped`` needs it) and returns integer counts: items ahead of
each relevant item under ``stable``/``reverse`` (ties broken by global index), or items below
and at each distance.

**Exactness**: every statistic is an integer count over disjoint sets of items (the shards
partition the gallery), so the sums over shards are the counts of the whole gallery: the rank
of a relevant item is ``1 +`` the items ahead of it, a group's ``c`` and ``n`` are sums of
counts.  Distances are compared as integer keys that preserve their order and ties (-0.0 ties
with 0.0).  The client then computes the metrics with the numpy implementation's own kernels
(``vector.concrete.item_metrics``, ``vector.concrete.group_metrics``,
``vector.expected.expected_metrics``) from the ranks, or from :class:`.merge.CountedTieGroups`
(the relevant groups, with the counts above), in the order the numpy implementation feeds them:
the same operations on the same numbers, hence the numpy implementation's bits.  These are C's
bits too on every problem the tests draw; the one difference found is C's own: INP under
``ties="expected"`` on ``support/fixtures.py``'s medium float problem (6 of 40 queries, last bit,
within the specification's 1e-12), where numpy and C already disagree.

One caveat, beyond any gallery tested: under ``expected``, P@k, R@k and R-precision divide
``h n`` by ``n k`` (``n R``) for the tie group that holds position k (R); when that group holds
no relevant item the shards do not learn its size and :class:`.merge.CountedTieGroups` reports
``n = 1``.  Both give the correctly rounded ``h / k`` while ``n k < 2**53`` (every gallery
below 2**26 items); beyond that the one-machine value itself is not exactly rounded.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union, cast

import numpy as np
from retrieval_conformance.implementations.c import shards as c_shards
from retrieval_conformance.implementations.numpy_backend import NumpyOps, NumpySource
from retrieval_conformance.implementations.vector.blocks import BLOCK_BYTES, float32_order_key
from retrieval_conformance.reference.contract.conventions import INDEX_ORDERS
from retrieval_conformance.reference.contract.problem import Options, Problem
from retrieval_conformance.reference.contract.query_blocks import block_rows
from retrieval_conformance.reference.contract.registry import PreparedGallery

#: the per-query arrays with a gallery axis (sliced by rows and by the shard's columns)
MATRIX_FIELDS = ("distances", "relevance", "grades", "junk")
#: the gallery arrays (sliced by the shard's rows)
GALLERY_FIELDS = tuple(f.name for f in fields(Problem) if f.name.startswith("db_"))
_FLIP64 = np.int64(0x7FFFFFFFFFFFFFFF)
#: up to this many distinct point keys per row, pass 2 counts with one comparison pass per key
#: (a few times faster than a binary search per item)
SCAN_KEYS = 64
_TIE_BITS = 31  # a gallery has fewer than 2**31 items


# -- shards -----------------------------------------------------------------------------------------


def shard_bounds(n_gallery: int, shards: Union[int, Sequence[int]]) -> List[Tuple[int, int]]:
    """``[(lo, hi), ...]``: ``shards`` contiguous ranges of nearly equal sizes (at most one per
    item), or ranges of the given sizes (positive, summing to the gallery size)."""
    if isinstance(shards, (int, np.integer)):
        count = max(1, min(int(shards), n_gallery))
        sizes = [n_gallery // count + (i < n_gallery % count) for i in range(count)]
    else:
        sizes = [int(s) for s in shards]
        if any(s < 1 for s in sizes) or sum(sizes) != n_gallery:
            raise ValueError(
                f"gallery_shards: sizes {sizes} must be positive and sum to the gallery's {n_gallery} items"
            )
    stops = np.cumsum(sizes).tolist()
    return [(stop - size, stop) for size, stop in zip(sizes, stops)]


def gallery_part(problem: Problem, lo: int, hi: int) -> Dict[str, np.ndarray]:
    """The gallery arrays of items ``lo:hi`` (contiguous copies; absent arrays left out)."""
    return {
        name: np.ascontiguousarray(getattr(problem, name)[lo:hi])
        for name in GALLERY_FIELDS
        if getattr(problem, name) is not None
    }


def query_part(problem: Problem, start: int, stop: int, lo: int, hi: int) -> Problem:
    """Queries ``start:stop`` against items ``lo:hi``: the matrices sliced both ways (only those
    bytes are read, from a memory map too), the other per-query arrays by rows, the gallery
    arrays left out (they travel as shards)."""
    changes: Dict[str, Any] = {"n_queries": stop - start, "n_gallery": hi - lo}  # replace()'s arguments
    for f in fields(Problem):
        value = getattr(problem, f.name)
        if f.name in GALLERY_FIELDS:
            changes[f.name] = None
        elif f.name in MATRIX_FIELDS and value is not None:
            changes[f.name] = np.ascontiguousarray(value[start:stop, lo:hi])
        elif isinstance(value, np.ndarray):
            changes[f.name] = value[start:stop]
    return replace(problem, **changes)


# -- the worker's side -----------------------------------------------------------------------------
def order_keys(dist: np.ndarray) -> np.ndarray:
    """int64 keys of distances: equal keys <=> equal distances, in the same order (-0.0 = 0.0)."""
    if dist.dtype == np.float32:
        return float32_order_key(NumpyOps(), dist).astype(np.int64)
    if dist.dtype == np.float64:
        bits = np.ascontiguousarray(dist + 0.0).view(np.int64)
        return np.where(bits < 0, bits ^ _FLIP64, bits)
    return dist.astype(np.int64)  # Hamming distances


def _blocks(part: Problem, gallery: Dict[str, np.ndarray], need_relevance: bool = True):
    """(first row, distances, relevant non-junk, junk or None, grades or None) of sub-blocks of
    rows of one (chunk, shard) part, each under the numpy implementation's budget."""
    problem = replace(part, **gallery)  # type: ignore[arg-type]  # arrays by field name
    source = NumpySource(problem, PreparedGallery(problem))
    n_rows, n_items = problem.n_queries, problem.n_gallery
    step = block_rows(n_rows, n_items, budget=BLOCK_BYTES)
    for s in range(0, n_rows, step):
        e = min(n_rows, s + step)
        dist = source.distances(s, e)
        junk = source.junk(s, e)
        rel = grade = None
        if need_relevance:
            rel = source.relevance(s, e)
            grade = source.grades(s, e)
            if junk is not None:
                rel = rel & ~junk
        yield s, dist, rel, junk, grade


def shard_statistics(
    part: Problem, gallery: Dict[str, np.ndarray], offset: int, options: Options
) -> Dict[str, np.ndarray]:
    """Pass 1 on one shard (the module docstring): per query row, the relevant non-junk items
    (``row``, ``key``, ``index`` = global gallery index, ``grade``; row-major), ``n_kept``, the
    radius counts, and under ``grouped`` with ``k`` the ``k + 1`` smallest non-junk keys
    (``smallest``, rows of ``width`` padded with ``int64`` max, the first ``n_kept`` real)."""
    n_rows, n_items = part.n_queries, part.n_gallery
    out: Dict[str, np.ndarray] = {
        "n_kept": np.zeros(n_rows, np.int64),
        "n_within": np.zeros(n_rows, np.int64),
        "rel_within": np.zeros(n_rows, np.int64),
    }
    items: List[Tuple[np.ndarray, ...]] = []
    width = min(options.k + 1, n_items) if options.ties == "grouped" and options.k is not None else 0
    problem = replace(part, **gallery)  # type: ignore[arg-type]  # arrays by field name
    if not width and options.radius is None and _by_id(problem):
        items.append(_items_by_id(problem, offset, out["n_kept"]))
        out["smallest"] = np.zeros((n_rows, 0), np.int64)
    else:
        _scan_statistics(part, gallery, offset, options, out, items, width)
    for j, name in enumerate(("row", "key", "index", "grade")):
        out[name] = np.concatenate([part[j] for part in items]).astype(np.int64) if items else np.zeros(0, np.int64)
    return out


def _by_id(problem: Problem) -> bool:
    """Whether pass 1 can find the relevant items through the gallery sorted by id: single
    integer ids, float distances, junk only from cameras and junk ids."""
    ids = problem.query_labels
    return (
        problem.distances is not None
        and ids is not None
        and ids.ndim == 1
        and ids.dtype.kind in "iu"
        and problem.relevance is None
        and problem.grades is None
        and problem.junk is None
    )


def _items_by_id(problem: Problem, offset: int, n_kept: np.ndarray) -> Tuple[np.ndarray, ...]:
    """Pass 1's relevant non-junk items (row, key, global index, grade) and ``n_kept`` (filled)
    without a (queries x items) array: a query's relevant items are the gallery items of its id
    (a slice of the gallery sorted by id, in gallery order), its camera junk among them."""
    query_ids, db_ids = cast(np.ndarray, problem.query_labels), cast(np.ndarray, problem.db_labels)
    order = np.argsort(db_ids, kind="stable")  # an id's items in gallery order
    sorted_ids = db_ids[order]
    lo, hi = np.searchsorted(sorted_ids, query_ids, "left"), np.searchsorted(sorted_ids, query_ids, "right")
    size = hi - lo
    rows = np.repeat(np.arange(problem.n_queries, dtype=np.int64), size)
    first = np.cumsum(size) - size
    cols = order[np.arange(rows.shape[0], dtype=np.int64) - np.repeat(first - lo, size)]
    gallery_junk = np.isin(db_ids, np.asarray(problem.junk_ids)) if problem.junk_ids else None
    junk = np.zeros(rows.shape, bool) if gallery_junk is None else gallery_junk[cols]
    n_kept[:] = problem.n_gallery - (0 if gallery_junk is None else int(gallery_junk.sum()))
    if problem.query_cams is not None:  # same id and camera: junk (counted once with the junk ids)
        same_camera = problem.query_cams[rows] == cast(np.ndarray, problem.db_cams)[cols]
        n_kept -= np.bincount(rows[same_camera & ~junk], minlength=problem.n_queries)
        junk |= same_camera
    rows, cols = rows[~junk], cols[~junk]
    keys = order_keys(cast(np.ndarray, problem.distances)[rows, cols])
    return rows, keys, cols + offset, np.ones(rows.shape, np.int64)


def _scan_statistics(
    part: Problem,
    gallery: Dict[str, np.ndarray],
    offset: int,
    options: Options,
    out: Dict[str, np.ndarray],
    items: List[Tuple[np.ndarray, ...]],
    width: int,
) -> None:
    """Pass 1 from (queries x items) blocks: every other case (relevance matrices, multi-hot
    labels, codes, junk matrices, a radius, grouped with k)."""
    n_rows, n_items = part.n_queries, part.n_gallery
    smallest = np.full((n_rows, width), np.iinfo(np.int64).max, np.int64)
    for s, dist, rel, junk, grade in _blocks(part, gallery):
        e = s + dist.shape[0]
        out["n_kept"][s:e] = n_items - (0 if junk is None else junk.sum(1))
        rows, cols = np.nonzero(rel)
        items.append(
            (
                rows + s,
                order_keys(dist[rows, cols]),
                cols + offset,  # keys of the relevant items only
                np.ones(rows.shape, np.int64) if grade is None else grade[rows, cols],
            )
        )
        if options.radius is not None:
            within = dist.astype(np.float64) <= float(options.radius)
            if junk is not None:
                within &= ~junk
            out["n_within"][s:e] = within.sum(1)
            out["rel_within"][s:e] = (within & rel).sum(1)
        if width:
            key = order_keys(dist)
            kept = key if junk is None else np.where(junk, np.iinfo(np.int64).max, key)
            smallest[s:e] = np.sort(np.partition(kept, width - 1, axis=1)[:, :width], axis=1)
    out["smallest"] = smallest


def shard_counts(
    part: Problem,
    gallery: Dict[str, np.ndarray],
    offset: int,
    ties: str,
    points: Dict[str, np.ndarray],
    use_c: Optional[bool] = None,
) -> np.ndarray:
    """Pass 2 on one shard: for each point (``row``, ``key``[, ``index``]; sorted by row) the
    shard's non-junk items ahead of it under an index order ((P,) int64), or below and at its
    key under the other policies ((2, P) int64).

    ``use_c``: count in C (:mod:`..c.shards`, one pass per row; None: where it is built), or
    with the numpy loop below (False); both give the same integers."""
    index_order = ties in INDEX_ORDERS
    n_points = points["row"].shape[0]
    out = np.zeros(n_points if index_order else (2, n_points), np.int64)
    if n_points == 0:
        return out
    if use_c is None:
        use_c = c_shards.shard_kernel() is not None
    n_items = part.n_gallery
    for s, dist, _, junk, _ in _blocks(part, gallery, need_relevance=False):
        if use_c:
            starts = np.searchsorted(points["row"], np.arange(s, s + dist.shape[0] + 1))
            a, b = int(starts[0]), int(starts[-1])
            index = points["index"][a:b] if index_order else None
            out_a, out_b = (out[a:b], None) if index_order else (out[0, a:b], out[1, a:b])
            c_shards.count_block(
                dist, junk, offset, ties if index_order else None, starts - a, points["key"][a:b], index, out_a, out_b
            )
            continue
        key = order_keys(dist)
        for i in range(key.shape[0]):
            a, b = np.searchsorted(points["row"], [s + i, s + i + 1])
            if a == b:
                continue
            kept = None if junk is None else np.flatnonzero(~junk[i])
            keys = key[i] if kept is None else key[i][kept]
            if not index_order:
                out[:, a:b] = counts_at(keys, points["key"][a:b])
                continue
            local = np.arange(n_items, dtype=np.int64) if kept is None else kept
            x_local = points["index"][a:b] - offset  # may lie outside the shard
            reverse = ties == "reverse"
            tie = (n_items - 1 - local) if reverse else local
            bound = np.clip((n_items - 1 - x_local) if reverse else x_local, 0, n_items)
            out[a:b] = counts_at(keys, points["key"][a:b], tie, bound)
    return out


def counts_at(keys: np.ndarray, x: np.ndarray, tie: Optional[np.ndarray] = None, bound: Optional[np.ndarray] = None):
    """Counts of the items ``keys`` at the points ``x``: (below, at) each point's key (2, P), or,
    with the items' ``tie`` keys and the points' ``bound``, the items ahead of each point (P,): a
    smaller key, or the same key and ``tie < bound``.

    No sort of the items: with few distinct point keys, one vectorised comparison pass per key;
    with more, each item finds its place among them (one binary search) and the counts are prefix
    sums of those places."""
    distinct = np.unique(x)
    where = np.searchsorted(distinct, x)
    if distinct.size <= SCAN_KEYS:
        below = np.array([np.count_nonzero(keys < value) for value in distinct], np.int64)
        equal = [np.flatnonzero(keys == value) for value in distinct]
        tied = np.concatenate(equal)  # the items whose key is a point's, and that key's index
        tied_key = np.repeat(np.arange(distinct.size, dtype=np.int64), [e.size for e in equal])
    else:
        place = np.searchsorted(distinct, keys, "right")  # point keys <= the item's key
        below = np.cumsum(np.bincount(place, minlength=distinct.size + 1))[: distinct.size]
        found = np.flatnonzero(place > 0)
        tied = found[distinct[place[found] - 1] == keys[found]]
        tied_key = place[tied] - 1
    if tie is None:
        at = below + np.bincount(tied_key, minlength=distinct.size)
        return np.stack([below[where], at[where]])
    # the tied items ahead of a point: its key's index, then a tie key below its bound
    codes = np.sort((tied_key << _TIE_BITS) | tie[tied])
    first = np.searchsorted(codes, where << _TIE_BITS, "left")
    bound = cast(np.ndarray, bound)  # given with tie
    return below[where] + np.searchsorted(codes, (where << _TIE_BITS) | bound, "left") - first


# -- the client's side -------------------------------------------------------------------------------
