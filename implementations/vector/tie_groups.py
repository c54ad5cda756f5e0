"""Tie groups of a sorted block of queries (spec §4 tie group), without one record per group.

A tie group has ``c`` items before it (``h`` of them relevant), ``n`` items and ``m``
relevant ones; it covers ranks ``c + 1 .. c + n``.  The policies other than ``stable`` and
``reverse`` need only these counts, never an order inside a group.
"""

from __future__ import annotations

from retrieval_conformance.implementations.vector.double_double import dd_rowsum


class TieGroups:
    """Tie groups of a sorted block (``key_s``, ``rel_s``: (B, N), rows ascending).

    ``gid`` numbers the groups of the whole block in row-major order (a non-decreasing
    flat array), so a group's extent is two ``searchsorted`` calls and the relevant items
    before any position another two.  Only the groups that hold relevant items (few) are
    listed explicitly: ``rows, c, n, m, h`` (row-major, closest first), ``ordinal`` = index
    of the group among its row's relevant groups.  ``table_size``: the largest rank the
    per-rank tables (harmonic sums, discounts) must reach (here N; a group list made from counts
    may hold less: the tables' values do not depend on their length).
    """

    def __init__(self, ops, key_s, rel_s):
        B, N = rel_s.shape
        self.ops, self.B, self.N = ops, B, N
        self.table_size = N
        start = ops.full((B, N), True, "bool")
        start[:, 1:] = key_s[:, 1:] != key_s[:, :-1]
        self.gid = ops.cumsum_i32(start.reshape(-1))  # flat, non-decreasing (B*N < 2**31)
        self.rel_flat = ops.nonzero(rel_s.reshape(-1))[0]  # sorted flat positions
        g_items = self.gid[self.rel_flat]
        n_items = g_items.shape[0]
        new = ops.full((n_items,), True, "bool")
        if n_items > 1:
            new[1:] = g_items[1:] != g_items[:-1]
        first = ops.nonzero(new)[0]  # first relevant item of each relevant group
        gids = g_items[first]
        self.rows = self.rel_flat[first] // N
        lo = ops.searchsorted(self.gid, gids, right=False)
        hi = ops.searchsorted(self.gid, gids, right=True)
        self.c = lo - self.rows * N
        self.n = hi - lo
        self.m = ops.concat([first[1:], ops.full((1,), n_items, "i64")]) - first
        counts = ops.bincount(self.rel_flat // N, B)  # R per row
        item_start = ops.cumsum(counts, 0) - counts
        self.h = first - item_start[self.rows]
        gcounts = ops.bincount(self.rows, B)
        self.ordinal = ops.arange(first.shape[0]) - (ops.cumsum(gcounts, 0) - gcounts)[self.rows]

    @property
    def end(self):
        """The end rank ``c + n`` of each relevant group."""
        return self.c + self.n

    def group_at(self, rows, cols):
        """(c, n, m, h) of the groups holding positions (rows, cols), one per entry."""
        ops, N = self.ops, self.N
        base = rows * N
        g = self.gid[base + cols]
        lo = ops.searchsorted(self.gid, g, right=False)
        hi = ops.searchsorted(self.gid, g, right=True)
        row0 = ops.searchsorted(self.rel_flat, base, right=False)
        h = ops.searchsorted(self.rel_flat, lo, right=False) - row0
        m = ops.searchsorted(self.rel_flat, hi, right=False) - row0 - h
        return lo - base, hi - lo, m, h

    def rel_sum(self, values, mask):
        """Per-row sums of non-negative double-doubles given per relevant group, where mask."""
        ops = self.ops
        width = ops.max_int(self.ordinal) + 1
        hi = ops.zeros((self.B, width), "f64")
        lo = ops.zeros((self.B, width), "f64")
        hi[self.rows, self.ordinal] = ops.where(mask, values[0], 0.0)
        lo[self.rows, self.ordinal] = ops.where(mask, values[1], 0.0)
        return dd_rowsum(ops, (hi, lo))

    def relevant_items(self, where: str):
        """(rows, ranks, group index) of every relevant item in ranked order, from the group
        counts: ``first`` puts a group's m relevant items on its first m positions
        (optimistic), ``last`` on its last m (pessimistic), ``end`` gives them all the
        group's end rank (grouped)."""
        ops = self.ops
        idx = ops.repeat(ops.arange(self.m.shape[0]), self.m)
        first_item = ops.cumsum(self.m, 0) - self.m
        offset = ops.arange(idx.shape[0]) - first_item[idx]
        if where == "first":
            ranks = self.c[idx] + 1 + offset
        elif where == "last":
            ranks = self.end[idx] - self.m[idx] + 1 + offset
        else:
            ranks = self.end[idx]
        return self.rows[idx], ranks, idx
