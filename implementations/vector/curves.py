"""Per-query curves in numpy, from integer counts (the fast path of ``rc.curves``).

Every value is a ratio of integers below 2**53, divided once in float64, so it is the correctly
rounded exact value, as the reference's Fraction converted to float.

* Precision within radius r (codes): per-distance counts of items and relevant items
  (``np.bincount``, no sort), accumulated over distance; float distances compare per radius.
* Interpolated precision and P@N under a gallery order (``stable``, ``reverse``): the rows
  sorted by the shared sort key (``vector.blocks``), then only the ranks of the relevant items
  (:class:`_RelevantRanks`).
* The other policies on codes: the tie groups from per-distance counts, no sort
  (:class:`_GroupCounts`); on float distances: the sorted rows, and at every depth k the hits
  H(k) as a ratio ``num / den`` (:class:`_DepthCounts`): ``optimistic`` / ``pessimistic`` from
  the tie group's counts; ``expected`` ``(b*s + t*g) / (s*k)`` (b relevant before the group,
  s its size, g its relevant items, t its positions taken); ``grouped`` only at group ends.
* The interpolated precision at level r is the largest precision from the first depth whose
  recall reaches r on (rounding is monotone, so the maximum of rounded values is the rounded
  maximum).  That depth is found exactly: the first depth with ``H(k) >= ceil(r R)``, and
  under ``expected`` inside its tie group ``t = ceil((r R - b) s / g)`` in integers.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Optional, Tuple, Union

import numpy as np
from retrieval_conformance.implementations.numpy_backend import NumpyOps, NumpySource
from retrieval_conformance.implementations.vector.blocks import sort_block
from retrieval_conformance.reference.contract.conventions import INDEX_ORDERS
from retrieval_conformance.reference.contract.curves import CurveRequest, CurveValues
from retrieval_conformance.reference.contract.problem import Problem
from retrieval_conformance.reference.contract.registry import PreparedGallery

#: items of one (block, gallery) int64 array: 4 Mi, 32 MiB (a dozen such arrays live at once)
BLOCK_ITEMS = 2**22
#: the largest integer every float64 holds: numerators and denominators must stay below it
EXACT_INT = 2**53


def per_query_curves(problem: Problem, request: CurveRequest) -> CurveValues:
    """Per-query values of ``request.kind`` for every query of ``problem``, block by block."""
    Q, N = problem.n_queries, problem.n_gallery
    if N * N >= EXACT_INT:
        raise ValueError(f"gallery: curves are computed exactly for at most {math.isqrt(EXACT_INT)} items, got {N}")
    width = (
        len(request.radii)
        if request.kind == "pr_radius"
        else (len(request.levels) if request.kind == "pr_interpolated" else len(request.ns))
    )
    precision = np.zeros((Q, width))
    recall: Optional[np.ndarray] = np.zeros((Q, width)) if request.kind == "pr_radius" else None
    n_relevant = np.zeros(Q, dtype=np.int64)
    src = NumpySource(problem, PreparedGallery(problem))
    top = None if problem.query_bits is None else problem.query_bits.shape[1] + 1
    step = max(1, BLOCK_ITEMS // N)
    for s in range(0, Q, step):
        e = min(Q, s + step)
        dist, rel, junk = src.distances(s, e), src.relevance(s, e), src.junk(s, e)
        if junk is not None:
            rel = rel & ~junk
        R = rel.sum(axis=1, dtype=np.int64)
        n_relevant[s:e] = R
        if request.kind == "pr_radius":
            assert recall is not None  # made for pr_radius above
            precision[s:e], recall[s:e] = _radius_block(dist, rel, junk, request.radii, top, R)
            continue
        kept = np.full(e - s, N, dtype=np.int64) if junk is None else N - junk.sum(axis=1, dtype=np.int64)
        depth: Union[_GroupCounts, _RelevantRanks, _DepthCounts]
        if top is not None and request.ties not in INDEX_ORDERS:
            depth = _GroupCounts(*_distance_counts(dist, rel, junk, top), kept, request.ties)
        else:
            key_s, rel_s, _ = sort_block(NumpyOps(), dist, rel.astype(np.uint8), junk, request.ties, top)
            if request.ties in INDEX_ORDERS:
                depth = _RelevantRanks(rel_s)
            else:
                depth = _DepthCounts(key_s, rel_s, kept, request.ties)
        if request.kind == "pr_interpolated":
            precision[s:e] = depth.interpolated(R, request.levels)
        else:
            precision[s:e] = depth.precision_at(request.ns, s)
    return CurveValues(n_relevant, precision, recall)


def _distance_counts(dist, rel, junk, top) -> Tuple[np.ndarray, np.ndarray]:
    """Items and relevant items at each Hamming distance 0 .. top - 1 (junk left out): (b, top) each."""
    b = dist.shape[0]
    d = dist.astype(np.int64)
    if junk is not None:
        d[junk] = top  # a column of its own, dropped
    flat = d + (top + 1) * np.arange(b, dtype=np.int64)[:, None]
    items = np.bincount(flat.ravel(), minlength=b * (top + 1)).reshape(b, top + 1)[:, :top]
    hits = np.bincount(flat[rel], minlength=b * (top + 1)).reshape(b, top + 1)[:, :top]
    return items, hits


def _radius_block(dist, rel, junk, radii, top, R) -> Tuple[np.ndarray, np.ndarray]:
    """(precision, recall) within each radius for a block of queries."""
    b = dist.shape[0]
    if top is not None:  # Hamming distances 0 .. bits: counts per distance, then cumulative
        items, hits = (c.cumsum(axis=1) for c in _distance_counts(dist, rel, junk, top))
        # the last distance within r (distances are integers 0 .. bits); below 0 nothing is
        column = np.array([min(math.floor(r), top - 1) for r in radii], dtype=np.int64)
        within = np.where(column >= 0, items[:, np.maximum(column, 0)], 0)
        rel_within = np.where(column >= 0, hits[:, np.maximum(column, 0)], 0)
    else:
        within = np.empty((b, len(radii)), dtype=np.int64)
        rel_within = np.empty_like(within)
        kept = ~junk if junk is not None else np.ones(dist.shape, dtype=bool)
        for j, r in enumerate(radii):
            inside = (dist <= np.float64(r)) & kept  # compared in float64, as the reference
            within[:, j] = inside.sum(axis=1)
            rel_within[:, j] = (inside & rel).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(within > 0, rel_within / np.maximum(within, 1), 0.0)
        recall = np.where(R[:, None] > 0, rel_within / np.maximum(R, 1)[:, None], 0.0)
    return precision, recall


class _DepthCounts:
    """H(k) = num / den at every depth k of rows of float distances sorted by (distance,
    relevance), under the policies that read tie groups (positions past the kept items excluded)."""

    def __init__(self, key_s, rel_s, kept, ties: str):
        b, n = rel_s.shape
        self.ties, self.kept = ties, kept
        rel_s = rel_s.astype(np.int64)
        k = np.arange(1, n + 1, dtype=np.int64)[None, :]
        prefix = np.zeros((b, n + 1), dtype=np.int64)
        np.cumsum(rel_s, axis=1, out=prefix[:, 1:])
        # tie groups: first and last position of each position's group
        new = np.ones((b, n), dtype=bool)
        new[:, 1:] = key_s[:, 1:] != key_s[:, :-1]
        last = np.ones((b, n), dtype=bool)
        last[:, :-1] = new[:, 1:]
        pos = np.arange(n, dtype=np.int64)[None, :]
        first = np.maximum.accumulate(np.where(new, pos, 0), axis=1)
        end = np.minimum.accumulate(np.where(last, pos, n)[:, ::-1], axis=1)[:, ::-1]
        size = end - first + 1
        before = np.take_along_axis(prefix, first, axis=1)
        g = np.take_along_axis(prefix, end + 1, axis=1) - before
        t = pos - first + 1
        self.before_hits, self.size, self.group_hits, self.first = before, size, g, first
        self.group_end_hits = before + g
        self.is_end = last
        if ties == "optimistic":
            self.num, self.den = before + np.minimum(t, g), np.broadcast_to(k, (b, n))
        elif ties == "pessimistic":
            self.num, self.den = before + np.maximum(0, t - (size - g)), np.broadcast_to(k, (b, n))
        elif ties == "expected":
            self.num, self.den = before * size + t * g, size * k
        else:  # grouped: hits only at the end of a group
            self.num, self.den = self.group_end_hits, np.broadcast_to(k, (b, n))
        self.inside = pos_inside = np.arange(n)[None, :] < kept[:, None]
        if ties == "grouped":
            pos_inside = pos_inside & last
        self.precision = np.where(pos_inside, self.num / self.den, -1.0)

    def interpolated(self, R: np.ndarray, levels) -> np.ndarray:
        """``max {P@k : H(k) >= r R}`` at each level, per row (0 for a row without relevant items)."""
        b, n = self.precision.shape
        best = np.maximum.accumulate(self.precision[:, ::-1], axis=1)[:, ::-1]
        # hits sorted within rows, rows apart: one searchsorted over the flattened rows
        hits = self.group_end_hits if self.ties in ("expected", "grouped") else self.num
        offset = (n + 1) * np.arange(b, dtype=np.int64)
        flat = (np.where(self.inside, hits, R[:, None]) + offset[:, None]).ravel()
        out = np.zeros((b, len(levels)))
        for j, level in enumerate(levels):
            need = np.array([-((-level.numerator * int(r)) // level.denominator) for r in R], dtype=np.int64)
            p = np.searchsorted(flat, offset + need, side="left") - n * np.arange(b)
            if self.ties == "expected":
                p = self._expected_depth(p, R, level)
            rows = np.flatnonzero(R > 0)
            out[rows, j] = best[rows, p[rows]]
        return out

    def _expected_depth(self, start, R, level: Fraction) -> np.ndarray:
        """First depth with E[H(k)] >= level * R, given the first position of its tie group."""
        out = start.copy()
        for row in np.flatnonzero(R > 0):
            p = int(start[row])
            before, size, g = (int(a[row, p]) for a in (self.before_hits, self.size, self.group_hits))
            target = level * int(R[row]) - before
            if target > 0:  # t = ceil(target * s / g) positions of the group are needed
                t = math.ceil(target * size / g)
                out[row] = int(self.first[row, p]) + t - 1
        return out

    def precision_at(self, ns, row0: int) -> np.ndarray:
        """``H(min(N, N')) / N`` for each N, per row."""
        b = self.num.shape[0]
        out = np.zeros((b, len(ns)))
        rows = np.arange(b)
        depths = [np.minimum(self.kept, n) for n in ns]
        if self.ties == "grouped":
            self._check_group_ends(ns, depths, row0)
        for j, (n, depth) in enumerate(zip(ns, depths)):
            p = np.maximum(depth - 1, 0)
            num, den = self.num[rows, p], self.den[rows, p]
            # H / N = num / (den / depth * N): Python integers, one correctly rounded division
            scale = den // np.maximum(depth, 1)
            out[:, j] = [int(a) / (int(c) * n) if d > 0 else 0.0 for a, c, d in zip(num, scale, depth)]
        return out

    def _check_group_ends(self, ns, depths, row0: int) -> None:
        """Under ``grouped`` an N inside a tie group is an error, named for the first query."""
        rows = np.arange(self.num.shape[0])
        cut = np.array([(d > 0) & (d < self.kept) & ~self.is_end[rows, np.maximum(d - 1, 0)] for d in depths])
        if not cut.any():
            return
        row = int(np.flatnonzero(cut.any(axis=0))[0])
        j = int(np.flatnonzero(cut[:, row])[0])
        p = int(depths[j][row]) - 1
        first = int(self.first[row, p])
        end = first + int(self.size[row, p]) - 1
        raise ValueError(
            f"n: N={ns[j]} falls inside a tie group (ranks {first + 1}..{end + 1}) of query {row0 + row}; "
            "under ties='grouped' a list length inside a tie group has no meaning. Use "
            "ties='expected', or an N at a tie-group boundary"
        )


class _GroupCounts:
    """The tie groups of Hamming distances from their counts alone (no sort), for the policies
    that need no gallery order.

    Within a group the precision at its relevant items rises under ``optimistic`` and
    ``pessimistic`` (``(b + i) / (c + i)`` with c >= b), so a group's best point is its last
    relevant item, as under ``grouped`` its end; under ``expected`` E[H(k)] / k is monotone over
    the group, so its best is at one of its two ends.
    """

    def __init__(self, n, g, kept, ties: str):
        self.n, self.g, self.kept, self.ties = n, g, kept, ties
        self.before = np.cumsum(n, axis=1) - n
        self.rb = np.cumsum(g, axis=1) - g
        filled = n > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            # optimistic: the group's last relevant item (its end when it holds none: a real point)
            last = self.before + (np.where(g > 0, g, n) if ties == "optimistic" else n)
            value = (self.rb + g) / np.where(filled, last, 1)
            if ties == "expected":
                first = (self.rb * n + g) / np.where(filled, n * (self.before + 1), 1)
                value = np.maximum(value, first)
        value = np.where(filled, value, -1.0)
        self.best = np.maximum.accumulate(value[:, ::-1], axis=1)[:, ::-1]  # over this group and later
        self.after = np.concatenate([self.best[:, 1:], np.full((n.shape[0], 1), -1.0)], axis=1)

    def interpolated(self, R: np.ndarray, levels) -> np.ndarray:
        out = np.zeros((R.shape[0], len(levels)))
        ends = self.rb + self.g
        rows = np.flatnonzero(R > 0)
        for j, level in enumerate(levels):
            need = np.array([-((-level.numerator * int(r)) // level.denominator) for r in R], dtype=np.int64)
            group = (ends < need[:, None]).sum(axis=1)  # the first group reaching the level
            out[rows, j] = self.best[rows, group[rows]]
            if self.ties != "expected":
                continue
            for row in rows[need[rows] > 0]:  # the first position t of the group that reaches it
                d = int(group[row])
                rb, size, g, before = (int(a[row, d]) for a in (self.rb, self.n, self.g, self.before))
                t = math.ceil((level * int(R[row]) - rb) * size / g)
                at = (rb * size + t * g) / (size * (before + t))
                out[row, j] = max(at, (rb + g) / (before + size), float(self.after[row, d]))
        return out

    def precision_at(self, ns, row0: int) -> np.ndarray:
        rows = np.arange(self.n.shape[0])
        ends = self.before + self.n
        out = np.zeros((rows.shape[0], len(ns)))
        found = []
        for n in ns:
            depth = np.minimum(self.kept, n)
            group = np.minimum((ends < depth[:, None]).sum(axis=1), self.n.shape[1] - 1)
            found.append((depth, group))
        if self.ties == "grouped":
            self._check_group_ends(ns, found, row0)
        for j, (n, (depth, group)) in enumerate(zip(ns, found)):
            rb, size, g, before = (a[rows, group] for a in (self.rb, self.n, self.g, self.before))
            t = depth - before
            scale = np.ones_like(t)
            if self.ties == "optimistic":
                num = rb + np.minimum(t, g)
            elif self.ties == "pessimistic":
                num = rb + np.maximum(0, t - (size - g))
            elif self.ties == "grouped":
                num = rb + g
            else:
                num, scale = rb * size + t * g, size
            out[:, j] = [int(a) / (int(c) * n) if d > 0 else 0.0 for a, c, d in zip(num, scale, depth)]
        return out

    def _check_group_ends(self, ns, found, row0: int) -> None:
        rows = np.arange(self.n.shape[0])
        cut = np.array(
            [(d > 0) & (d < self.kept) & (self.before[rows, grp] + self.n[rows, grp] != d) for d, grp in found]
        )
        if not cut.any():
            return
        row = int(np.flatnonzero(cut.any(axis=0))[0])
        j = int(np.flatnonzero(cut[:, row])[0])
        d = int(found[j][1][row])
        first, end = int(self.before[row, d]), int(self.before[row, d] + self.n[row, d])
        raise ValueError(
            f"n: N={ns[j]} falls inside a tie group (ranks {first + 1}..{end}) of query {row0 + row}; "
            "under ties='grouped' a list length inside a tie group has no meaning. Use "
            "ties='expected', or an N at a tie-group boundary"
        )


class _RelevantRanks:
    """The ranks of the relevant items of rows sorted in a gallery order (``stable``,
    ``reverse``): only they are read, flattened row after row.

    The interpolated precision at level r is the largest ``h / rank_h`` from the
    ``ceil(r R)``-th relevant item on (``np.maximum.reduceat`` over each row's slice); H(N)
    counts the relevant ranks up to N (one ``searchsorted`` over the rows, set apart).
    """

    def __init__(self, rel_s):
        b, self.width = rel_s.shape
        rows, pos = np.nonzero(rel_s)
        self.R = np.bincount(rows, minlength=b).astype(np.int64)
        self.start = np.cumsum(self.R) - self.R
        hit = np.arange(rows.shape[0], dtype=np.int64) - self.start[rows] + 1
        # a sentinel past the end: reduceat takes indices below the array's length
        self.precision = np.append(hit / (pos + 1), -1.0)
        self.flat_rank = pos + 1 + (self.width + 1) * rows

    def interpolated(self, R: np.ndarray, levels) -> np.ndarray:
        out = np.zeros((R.shape[0], len(levels)))
        rows = np.flatnonzero(R > 0)
        if rows.size == 0:
            return out
        for j, level in enumerate(levels):
            need = np.array(
                [max(1, -((-level.numerator * int(R[r])) // level.denominator)) for r in rows], dtype=np.int64
            )
            bounds = np.empty(2 * rows.size, dtype=np.int64)
            bounds[0::2] = self.start[rows] + need - 1
            bounds[1::2] = self.start[rows] + R[rows]
            out[rows, j] = np.maximum.reduceat(self.precision, bounds)[0::2]
        return out

    def precision_at(self, ns, row0: int) -> np.ndarray:
        b = self.R.shape[0]
        offset = (self.width + 1) * np.arange(b, dtype=np.int64)
        out = np.zeros((b, len(ns)))
        for j, n in enumerate(ns):
            depth = min(n, self.width)  # ranks count the kept items only, so N' needs no clip here
            hits = np.searchsorted(self.flat_rank, offset + depth, side="right") - self.start
            out[:, j] = [int(h) / n for h in hits]
        return out
