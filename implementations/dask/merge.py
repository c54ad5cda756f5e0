"""The client's side of gallery shards: the shards' pass-1 statistics merged per query under the
tie policy, and the per-query metrics from the summed pass-2 counts (see :mod:`.shards` for the
passes and why the result is exact).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple, cast

import numpy as np
from retrieval_conformance.implementations.dask.shards import gallery_part, query_part, shard_counts, shard_statistics
from retrieval_conformance.implementations.numpy_backend import NumpyOps
from retrieval_conformance.implementations.vector.blocks import finish_metrics, radius_from_counts
from retrieval_conformance.implementations.vector.concrete import group_metrics, grouped_cutoff_error, item_metrics
from retrieval_conformance.implementations.vector.expected import expected_metrics, harmonic_table
from retrieval_conformance.implementations.vector.rank_metrics import discount_prefix, discounts, item_gains
from retrieval_conformance.implementations.vector.tie_groups import TieGroups
from retrieval_conformance.reference.contract.conventions import INDEX_ORDERS
from retrieval_conformance.reference.contract.problem import Options, Problem, zero_arrays


@dataclass
class MergedChunk:
    """The pass-1 statistics of one chunk of queries merged over the shards (see
    :func:`merge_statistics`): the relevant items sorted per query under the tie policy, and
    the points pass 2 asks each shard about."""

    n_rows: int
    n_gallery: int
    row0: int
    options: Options
    n_kept: np.ndarray
    n_within: np.ndarray
    rel_within: np.ndarray
    item_row: np.ndarray
    item_grade: Optional[np.ndarray]  # None: binary relevance
    points: Dict[str, np.ndarray]
    group_of_item: Optional[np.ndarray] = None  # the group policies: each item's point
    n_groups: int = 0
    cut_rows: Optional[np.ndarray] = None  # grouped with k: rows whose k-th and (k+1)-th keys tie

    @property
    def relevant(self) -> np.ndarray:
        return np.bincount(self.item_row, minlength=self.n_rows).astype(np.int64)


def _sum(stats: List[Dict[str, np.ndarray]], name: str) -> np.ndarray:
    return cast(np.ndarray, np.sum([s[name] for s in stats], axis=0, dtype=np.int64))  # arrays summed: an array


def merge_statistics(
    stats: List[Dict[str, np.ndarray]], options: Options, n_gallery: int, row0: int, graded: bool, float64: bool
) -> MergedChunk:
    """Pass-1 statistics of every shard (in shard order) merged: counts summed, relevant items
    sorted per query under the tie policy, pass 2's points chosen.

    ``graded``: graded relevance (the grades are kept); ``float64``: float64 distances, whose
    relevant items the numpy implementation keeps in gallery order inside a tie group (by grade
    otherwise): ``grouped`` sums their DCG terms in that order."""
    n_rows = stats[0]["n_kept"].shape[0]
    row, key, index, grade = (np.concatenate([s[name] for s in stats]) for name in ("row", "key", "index", "grade"))
    ties = options.ties
    if ties in INDEX_ORDERS:
        order = np.lexsort((-index if ties == "reverse" else index, key, row))
    else:
        order = np.lexsort((index if float64 else grade, key, row))
    row, key, index, grade = row[order], key[order], index[order], grade[order]
    merged = MergedChunk(
        n_rows=n_rows,
        n_gallery=n_gallery,
        row0=row0,
        options=options,
        n_kept=_sum(stats, "n_kept"),
        n_within=_sum(stats, "n_within"),
        rel_within=_sum(stats, "rel_within"),
        item_row=row,
        item_grade=grade if graded else None,
        points={"row": row, "key": key, "index": index},
    )
    if ties in INDEX_ORDERS:
        return merged
    new = np.ones(row.shape, bool)
    new[1:] = (row[1:] != row[:-1]) | (key[1:] != key[:-1])
    merged.group_of_item = np.cumsum(new) - 1
    merged.n_groups = int(new.sum())
    points_row, points_key = row[new], key[new]
    if ties == "grouped" and options.k is not None:
        merged.cut_rows, cut_keys = _tied_cutoffs(stats, merged.n_kept, options.k)
        # the cut-off points go after the groups, their own rows sorted: pass 2 wants points by row
        points_row, points_key = np.concatenate([points_row, merged.cut_rows]), np.concatenate([points_key, cut_keys])
    by_row = np.argsort(points_row, kind="stable")
    merged.points = {"row": points_row[by_row], "key": points_key[by_row], "order": by_row}
    return merged


def _tied_cutoffs(stats: List[Dict[str, np.ndarray]], n_kept: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
    """Rows (and their k-th smallest key) where the k-th and (k+1)-th smallest non-junk keys
    are equal: a cut-off inside a tie group (only rows with more than k non-junk items)."""
    rows = np.flatnonzero(n_kept > k)
    if rows.size == 0:
        return rows.astype(np.int64), np.zeros(0, np.int64)
    pooled = np.concatenate([s["smallest"][rows] for s in stats], axis=1)  # padding sorts last
    pooled = np.partition(pooled, [k - 1, k], axis=1)
    tied = pooled[:, k - 1] == pooled[:, k]
    return rows[tied].astype(np.int64), pooled[tied, k - 1]


class CountedTieGroups(TieGroups):
    """The relevant tie groups of a chunk from counts (what :class:`TieGroups` lists for a
    sorted block, without the block): ``rows, c, n, m, h, ordinal`` per group, ``rel_flat`` per
    relevant item.  Only :meth:`group_at` differs: at a position outside every relevant group it
    reports a stand-in group of one item (``c`` = the position, ``n = 1``, ``m = 0``, ``h`` =
    relevant items before), which gives the same values (module docstring)."""

    def __init__(self, ops, n_rows: int, n_gallery: int, rows, c, n, m):
        self.ops, self.B, self.N = ops, n_rows, n_gallery
        self.rows, self.c, self.n, self.m = rows, c, n, m
        groups_per_row = np.bincount(rows, minlength=n_rows).astype(np.int64)
        self.ordinal = np.arange(rows.shape[0], dtype=np.int64) - (np.cumsum(groups_per_row) - groups_per_row)[rows]
        before = np.cumsum(m) - m  # relevant items in the earlier groups of every row
        items_per_row = np.zeros(n_rows, np.int64)
        np.add.at(items_per_row, rows, m)
        self.h = before - (np.cumsum(items_per_row) - items_per_row)[rows]
        # each item's flat position in a (rows x N) block: row-major, inside its group
        group = np.repeat(np.arange(rows.shape[0], dtype=np.int64), m)
        self.rel_flat = rows[group] * n_gallery + c[group] + np.arange(group.shape[0]) - before[group]
        self.table_size = max(1, int((c + n).max())) if rows.size else 1

    def group_at(self, rows, cols):
        """(c, n, m, h) of the group holding positions (rows, cols): a relevant group, or the
        stand-in of the class docstring."""
        rows, cols = np.asarray(rows, np.int64), np.asarray(cols, np.int64)
        c, n = cols.copy(), np.ones(cols.shape, np.int64)
        m, h = np.zeros(cols.shape, np.int64), np.zeros(cols.shape, np.int64)
        if self.rows.size == 0:
            return c, n, m, h
        span = self.N + 1
        last = np.searchsorted(self.rows * span + self.c, rows * span + cols, "right") - 1  # last group starting <= col
        g = np.maximum(last, 0)
        same_row = (last >= 0) & (self.rows[g] == rows)
        inside = same_row & (cols < self.c[g] + self.n[g])
        c[inside], n[inside], m[inside], h[inside] = (
            self.c[g][inside],
            self.n[g][inside],
            self.m[g][inside],
            self.h[g][inside],
        )
        after = same_row & ~inside  # the whole group lies before the position
        h[after] = self.h[g][after] + self.m[g][after]
        return c, n, m, h


class TableOps(NumpyOps):
    """The numpy operations, with the per-rank tables (discounts, their prefix sums, harmonic
    sums) kept across chunks: each is built at twice the largest rank asked so far and read as a
    prefix (an entry of these tables does not depend on the table's length: a prefix scan's entry
    j reads entries <= j only), instead of being rebuilt for every chunk's largest rank.  Kept
    for the process, at most ``limit`` (the gallery size) long."""

    _tables: Dict[tuple, Tuple[int, object]] = {}
    _builders = {
        "discounts": lambda rule, size: discounts(NumpyOps(), size, rule),
        "discount_prefix": lambda rule, size: discount_prefix(NumpyOps(), size, rule),
        "harmonic": lambda size: harmonic_table(NumpyOps(), size),
    }

    def __init__(self, limit: int):
        self.limit = limit

    def cached(self, key, make):
        build = self._builders.get(key[0])
        if build is None:
            return super().cached(key, make)
        kind, n = key[:-1], int(key[-1])
        size, table = self._tables.get(kind, (0, None))
        if size < n:
            size = max(n, min(2 * size, self.limit))
            table = build(*kind[1:], size)
            self._tables[kind] = (size, table)
        if kind[0] == "discounts":
            return table[:n]
        return table[0][: n + 1], table[1][: n + 1]  # prefix tables hold entries 0..size


def chunk_metrics(merged: MergedChunk, counts: List[np.ndarray]) -> Dict[str, np.ndarray]:
    """The per-query arrays of one chunk (``zero_arrays`` names) from its merged pass-1
    statistics and every shard's pass-2 counts; raises the reference's error for a cut-off
    inside a tie group under ``grouped`` (its first row)."""
    ops, options = TableOps(merged.n_gallery), merged.options
    R, n_kept = merged.relevant, merged.n_kept
    grades = merged.item_grade
    if options.ties in INDEX_ORDERS:
        ranks = 1 + np.sum(counts, axis=0, dtype=np.int64) if counts else np.zeros(0, np.int64)
        table = max(1, int(ranks.max())) if ranks.size else 1
        res = item_metrics(ops, merged.item_row, ranks, None, R, n_kept, options, table, grades)
    else:
        res = _group_policy_metrics(ops, merged, counts, R, n_kept, grades)
    res = finish_metrics(res, R, options)
    if options.radius is not None:
        res["precision_at_radius"], res["recall_at_radius"] = radius_from_counts(
            ops, merged.n_within, merged.rel_within, R
        )
    out = zero_arrays(merged.n_rows, options)
    for name in out:
        out[name][...] = np.asarray(res[name])
    return out


def _group_policy_metrics(ops, merged: MergedChunk, counts: List[np.ndarray], R, n_kept, grades):
    """optimistic, pessimistic, expected or grouped, from the summed below/at counts."""
    options = merged.options
    total = cast(np.ndarray, np.sum(counts, axis=0, dtype=np.int64))  # arrays summed: an array
    below, at = np.zeros_like(total[0]), np.zeros_like(total[1])
    below[merged.points["order"]], at[merged.points["order"]] = total[0], total[1]  # back to group order
    g = merged.n_groups
    if merged.cut_rows is not None and merged.cut_rows.size:
        first = int(np.argmin(merged.cut_rows))  # the first failing query, as the one-machine path
        # cut rows exist only with a cut-off k
        raise grouped_cutoff_error(
            cast(int, options.k), merged.row0 + int(merged.cut_rows[first]), int(below[g + first]), int(at[g + first])
        )
    # the group policies set each item's group
    m = np.bincount(cast(np.ndarray, merged.group_of_item), minlength=g).astype(np.int64)
    rows = merged.item_row[np.cumsum(m) - m] if g else np.zeros(0, np.int64)
    groups = CountedTieGroups(ops, merged.n_rows, merged.n_gallery, rows, below[:g], at[:g] - below[:g], m)
    if options.ties == "expected":
        gains = None if grades is None else item_gains(ops, grades, options.gain)
        return expected_metrics(ops, groups, R, n_kept, options, gains)
    return group_metrics(ops, groups, R, n_kept, options, merged.row0, grades)


# -- both passes in this process (what the dask implementation distributes) ----------------------------
def points_for(merged: MergedChunk) -> Dict[str, np.ndarray]:
    """What pass 2 sends every shard (``order``, the client's bookkeeping, stays home)."""
    return {name: value for name, value in merged.points.items() if name != "order"}


def compute_chunk_in_process(
    problem: Problem, options: Options, bounds: List[Tuple[int, int]], start: int, stop: int
) -> Dict[str, np.ndarray]:
    """Queries ``start:stop`` of ``problem`` over the shards ``bounds``, both passes run here:
    the dask implementation's data flow without a cluster (tests, and a check of the merge)."""
    parts = [query_part(problem, start, stop, lo, hi) for lo, hi in bounds]
    shards = [gallery_part(problem, lo, hi) for lo, hi in bounds]
    stats = [shard_statistics(p, g, lo, options) for p, g, (lo, _) in zip(parts, shards, bounds)]
    merged = merge_statistics(stats, options, problem.n_gallery, start, problem.grades is not None, is_float64(problem))
    counts = [shard_counts(p, g, lo, options.ties, points_for(merged)) for p, g, (lo, _) in zip(parts, shards, bounds)]
    return chunk_metrics(merged, counts)


def is_float64(problem: Problem) -> bool:
    """Whether the problem's distances are float64 (sorted with gallery order inside ties)."""
    return problem.distances is not None and problem.distances.dtype == np.float64
