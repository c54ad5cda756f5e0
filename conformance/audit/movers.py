"""Per query: which queries a convention moves most, and why.

For every query, the range of its value over each convention axis of the table (tie policy,
AP rule, AP@k denominator, junk rule), read from the evaluations the table already made; the
axis with the widest range is the reason given, in the data's terms (a tie group across the
cut-off, the junk items the rule removes, the hits in the top k against all relevant items).
Queries without a relevant item do not move by themselves but move the mean: they are listed
apart, with what each empty-query policy makes of them.
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional

import numpy as np
from retrieval_conformance.conformance.audit.inputs import Evaluator
from retrieval_conformance.conformance.audit.metrics import Metric
from retrieval_conformance.conformance.audit.table import HELD, JUNK_RULES
from retrieval_conformance.reference.contract.conventions import (
    AP_AT_K_DENOMINATORS,
    AP_RULES,
    CONCRETE_POLICIES,
    TIE_POLICIES,
)

#: how many queries are listed
LISTED = 10


class Moves(NamedTuple):
    """How far each query moves along each axis: the queries that move, the widest first."""

    lows: Dict[str, np.ndarray]
    highs: Dict[str, np.ndarray]
    ranges: Dict[str, np.ndarray]
    cause: np.ndarray  # per query: the axis with the widest range
    moved: np.ndarray  # the queries with a relevant item that some axis moves
    n_rel: np.ndarray
    order: np.ndarray  # the LISTED widest of ``moved``, widest first (ties: query order)

    def axis(self, q: int) -> str:
        return str(self.cause[q])

    def describe(self, q: int, values: np.ndarray) -> Dict[str, Any]:
        """Query ``q``'s declared value and its range along its widest axis."""
        axis = self.axis(q)
        return {
            "declared": float(values[q]),
            "low": float(self.lows[axis][q]),
            "high": float(self.highs[axis][q]),
            "axis": axis,
        }

    def by_axis(self) -> Dict[str, int]:
        """axis -> how many queries with a relevant item it moves."""
        return {axis: int(((r > 0) & (self.n_rel > 0)).sum()) for axis, r in self.ranges.items()}


def widest_moves(rows_by_axis: Dict[str, np.ndarray], n_rel: np.ndarray) -> Moves:
    """From ``axis -> (settings, Q)`` per-query values: each query's range per axis and its widest axis."""
    lows = {axis: rows.min(0) for axis, rows in rows_by_axis.items()}
    highs = {axis: rows.max(0) for axis, rows in rows_by_axis.items()}
    ranges = {axis: highs[axis] - lows[axis] for axis in rows_by_axis}
    stacked = np.array(list(ranges.values()))
    widest = stacked.max(0)
    cause = np.array(list(ranges))[stacked.argmax(0)]
    moved = np.flatnonzero((widest > 0) & (n_rel > 0))
    order = moved[np.argsort(-widest[moved], kind="stable")][:LISTED]
    return Moves(lows, highs, ranges, cause, moved, n_rel, order)


def _per_query(ev: Evaluator, protocol: str, k: Optional[int], options: Dict[str, str]):
    result = ev.run(protocol, k=k, **options)
    return None if isinstance(result, str) else result


def query_movers(
    ev: Evaluator, protocol: str, declared: Dict[str, Any], metric: Metric, camera_rules: bool
) -> Dict[str, Any]:
    held = {name: declared[name] for name in HELD}
    k = declared["k"]
    base = _per_query(ev, protocol, k, held)
    n_rel = np.asarray(base.per_query.n_relevant)
    values = metric.per_query(base.per_query)
    axes: Dict[str, List] = {
        "ties": [(protocol, dict(held, ties=t)) for t in TIE_POLICIES if t in CONCRETE_POLICIES or t == "expected"],
        "ap_rule": [(protocol, dict(held, ap_rule=r)) for r in AP_RULES],
    }
    if k is not None:
        axes["ap_at_k"] = [(protocol, dict(held, ap_at_k=d)) for d in AP_AT_K_DENOMINATORS]
    if camera_rules:
        axes["junk"] = [(preset, held) for preset in JUNK_RULES.values()]
    rows_by_axis = {}
    for axis, runs in axes.items():
        got = [_per_query(ev, p, k, o) for p, o in runs]
        rows = np.array([metric.per_query(r.per_query) for r in got if r is not None])
        if axis == "junk":  # another junk rule changes which queries have a relevant item: compare where both do
            rows = np.where(np.isfinite(rows), rows, values[None, :])
        rows_by_axis[axis] = rows
    moves = widest_moves(rows_by_axis, n_rel)
    why = _reasons(ev, base, k)
    top = [{"query": int(q), **moves.describe(q, values), "why": why[moves.axis(q)](int(q))} for q in moves.order]
    empty = np.flatnonzero(n_rel == 0)
    return {
        "metric": metric.name,
        "queries": int(values.size),
        "moved_by_any": int(moves.moved.size),
        "declared_values": [float(v) for v in values[n_rel > 0]],
        "by_axis": moves.by_axis(),
        "top": top,
        "empty": [int(q) for q in empty[:LISTED]],
        "n_empty": int(empty.size),
        "empty_why": (
            "no relevant (non-junk) gallery item: 0 under empty='zero', left out under 'skip', "
            "NaN under 'nan', refused under 'error'"
        )
        if empty.size
        else "",
    }


def _reasons(ev: Evaluator, base, k: Optional[int]):
    """axis -> (query -> why it moves along that axis), in the data's terms."""
    pq = base.per_query
    data = ev.data
    a = data.arrays

    def junk_count(qi: int) -> Optional[int]:
        """Gallery items with query ``qi``'s id and camera (None without cameras)."""
        if not (data.single_ids and data.has_cams):
            return None
        q, g = np.asarray(a["query_labels"]).ravel(), np.asarray(a["db_labels"]).ravel()
        qc, gc = np.asarray(a["query_cams"]).ravel(), np.asarray(a["db_cams"]).ravel()
        return int(((g == q[qi]) & (gc == qc[qi])).sum())

    def ties(qi: int) -> str:
        return "relevant and non-relevant items share a distance" + (
            f" (a tie group may straddle the cut-off k={k})" if k is not None else ""
        )

    def junk(qi: int) -> str:
        n = junk_count(qi)
        if n is not None:
            return f"{n} gallery items share its id and camera: junk under the ReID rules, relevant without them"
        return "the junk rule changes which items count"

    def ap_rule(qi: int) -> str:
        return f"{int(pq.n_relevant[qi])} relevant items far apart: trapezoid and precision-sum AP differ"

    def ap_at_k(qi: int) -> str:
        return (
            f"{int(pq.hits_at_k[qi])} of its {int(pq.n_relevant[qi])} relevant items are in the top {k}: "
            "the AP@k denominators differ"
        )

    return {"ties": ties, "junk": junk, "ap_rule": ap_rule, "ap_at_k": ap_at_k}
