"""Section 1 of a run's audit: every measure under every setting, tie intervals, per-topic movers.

Rows are evaluations of the run (:class:`~.evaluator.TrecEvaluator`): the trec_eval versions the
project models (``tool``), then one axis at a time with the declared setting's other options
held: the order of tied documents (:mod:`.orders`), the nDCG discount and, with graded
qrels, the gains (spec §7: linear, exponential, and a declared gain map), ``-J``
(``judged_only``), ``-M`` (``depth``), and where the data makes them matter, the precision the
scores are compared in (trec_eval 9.0.8 stores them as C ``float``), the reading of grades that
are not integers, and ``-c`` (``complete``).  The tie orders bound each other: every order of
tied documents lies between ``pessimistic`` and ``optimistic``, so ``[pessimistic, optimistic]``
is the part of a number that tie order alone can move.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np
from retrieval_conformance.conformance.audit.movers import widest_moves
from retrieval_conformance.conformance.audit.trec.evaluator import Setting, TrecEvaluator
from retrieval_conformance.conformance.audit.trec.orders import TIE_ORDERS
from retrieval_conformance.reference.contract.conventions import DISCOUNTS, GAINS
from retrieval_conformance.reference.readers.trec import SCORE_DTYPES

#: the trec_eval versions the project models, each as the options that make it
TOOLS = {
    "trec_eval 10.0": {"score_dtype": "float64", "discount": "log2"},
    "trec_eval 9.0.8": {"score_dtype": "float32", "discount": "log2"},
    "trec_eval 9.0a3": {"score_dtype": "float32", "discount": "trec_eval_9.0a3"},
}
#: depths (-M) tried besides the declared one, where the run is deeper
DEPTHS = (1000, 100)
#: how many topics the per-topic tables list
LISTED = 10


def axes(ev: TrecEvaluator, declared: Setting) -> Dict[str, Tuple]:
    """The axes the table varies: the ones that can change a number on this run."""
    data = ev.data
    out: Dict[str, Tuple] = {"ties": TIE_ORDERS, "discount": DISCOUNTS}
    graded = any(
        isinstance(g, int) and g > 1 for docs in data.qrels(declared.float_grades).values() for g in docs.values()
    )
    if declared.gain != "linear" or graded:  # with grades 0 and 1 only, both gains are the grades
        out["gain"] = GAINS + (("map",) if declared.gain == "map" else ())
    out["judged_only"] = (False, True)
    deepest = max((len(d) for d in data.run.values()), default=0)
    depths = [None] + [d for d in DEPTHS if d < deepest]
    if declared.depth not in depths:
        depths.insert(1, declared.depth)
    if len(depths) > 1:
        out["depth"] = tuple(depths)
    if float32_ties(data.run):
        out["score_dtype"] = SCORE_DTYPES
    if data.float_grade_count():
        out["float_grades"] = ("exact", "truncate")
    if ev.run(declared).left_out["qrels_only"]:
        out["complete"] = (False, True)
    return out


def float32_ties(run: Mapping[str, Mapping[str, float]]) -> int:
    """Documents whose score ties another of its topic in float32 but not in float64."""
    n = 0
    for docs in run.values():
        s = np.fromiter(docs.values(), dtype=np.float64, count=len(docs))
        n += np.unique(s).size - np.unique(s.astype(np.float32)).size
    return int(n)


def tool_setting(declared: Setting, tool: str, float_grades: bool) -> Setting:
    """The declared setting as a trec_eval version computes it (trec_eval reads a grade with ``atol``)."""
    return declared.with_(
        ties="trec_eval", float_grades="truncate" if float_grades else declared.float_grades, **TOOLS[tool]
    )


def _row(
    axis: str, value: Any, setting: Setting, names: Sequence[str], ev: TrecEvaluator, declared: bool
) -> Dict[str, Any]:
    means = ev.run(setting).means
    return {
        "axis": axis,
        "value": str(value),
        "options": setting.options(),
        "declared": declared,
        "values": {n: means[n] for n in names},
        "error": None,
    }


def convention_rows(
    ev: TrecEvaluator, declared: Setting, names: Sequence[str], varied: Dict[str, Tuple]
) -> List[Dict[str, Any]]:
    floats = "float_grades" in varied
    rows = [
        _row(
            "tool",
            tool,
            tool_setting(declared, tool, floats),
            names,
            ev,
            tool_setting(declared, tool, floats) == declared,
        )
        for tool in TOOLS
    ]
    for axis, values in varied.items():
        for value in values:
            rows.append(_row(axis, value, declared.with_(**{axis: value}), names, ev, value == getattr(declared, axis)))
    return rows


def tie_intervals(rows: List[Dict[str, Any]], names: Sequence[str]) -> Dict[str, Dict[str, Any]]:
    """Per measure: every tie order's value and the interval ``[pessimistic, optimistic]``."""
    by_order = {r["value"]: r["values"] for r in rows if r["axis"] == "ties"}
    out = {}
    for name in names:
        values = {t: by_order[t][name] for t in TIE_ORDERS}
        lo, hi = values["pessimistic"], values["optimistic"]
        out[name] = {"values": values, "low": lo, "high": hi, "width": hi - lo, "errors": {}}
    return out


def tie_groups(docs: Mapping[str, float], judged: Mapping[str, Any], level: int) -> List[Dict[str, Any]]:
    """A topic's score ties: each group of two or more documents with its size, relevant count and ranks."""
    scores = np.fromiter(docs.values(), dtype=np.float64, count=len(docs))
    relevant = np.array([(judged.get(d) is not None and judged[d] >= level) for d in docs], dtype=bool)
    order = np.argsort(-scores, kind="stable")
    values, starts, counts = np.unique(-scores[order], return_index=True, return_counts=True)
    out = []
    for v, start, n in zip(values, starts, counts):
        if n > 1:
            out.append(
                {
                    "score": float(-v),
                    "size": int(n),
                    "relevant": int(relevant[order[start : start + n]].sum()),
                    "first_rank": int(start) + 1,
                }
            )
    return out


def _tie_why(group: Dict[str, Any]) -> str:
    return (
        f"{group['size']} documents tie at score {group['score']:g} (ranks {group['first_rank']}-"
        f"{group['first_rank'] + group['size'] - 1}), {group['relevant']} of them relevant"
    )


def tie_movers(ev: TrecEvaluator, declared: Setting, main: str) -> Dict[str, Any]:
    """The topics whose ``main`` value tie order moves most, and the tie group that moves them."""
    base = ev.run(declared)
    qids = base.query_ids
    lo = ev.run(declared.with_(ties="pessimistic")).column(main, qids)
    hi = ev.run(declared.with_(ties="optimistic")).column(main, qids)
    spread = hi - lo
    moved = np.flatnonzero(spread > 0)
    order = moved[np.argsort(-spread[moved], kind="stable")][:LISTED]
    scores = ev.data.scores(declared.score_dtype)
    qrels = ev.data.qrels(declared.float_grades)
    straddling = 0
    k = ev.cutoffs[0] if ev.cutoffs else None
    if k is not None:
        p_lo = ev.run(declared.with_(ties="pessimistic")).column(f"P_{k}", qids)
        p_hi = ev.run(declared.with_(ties="optimistic")).column(f"P_{k}", qids)
        straddling = int((p_lo != p_hi).sum())
    rows = []
    for q in order:
        qid = qids[q]
        groups = [
            g for g in tie_groups(scores.get(qid, {}), qrels.get(qid, {}), ev.level) if 0 < g["relevant"] < g["size"]
        ]
        why = _tie_why(max(groups, key=lambda g: g["size"])) if groups else "relevant documents tie with others"
        rows.append(
            {
                "query": qid,
                "pessimistic": float(lo[q]),
                "optimistic": float(hi[q]),
                "spread": float(spread[q]),
                "why": why,
            }
        )
    return {
        "metric": main,
        "moved": int(moved.size),
        "queries": len(qids),
        "spread": [float(s) for s in spread],
        "top": rows,
        "straddling": straddling,
    }


def query_movers(ev: TrecEvaluator, declared: Setting, main: str, varied: Dict[str, Tuple]) -> Dict[str, Any]:
    """Per topic: the range of ``main`` along each axis that moves it, the widest axis as the reason."""
    base = ev.run(declared)
    qids = base.query_ids
    values = base.per_query[main]
    n_rel = np.asarray(base.per_query["num_rel"])
    rows_by_axis = {}
    for axis in ("ties", "judged_only", "depth", "score_dtype", "float_grades"):
        if axis in varied:
            rows = np.array([ev.run(declared.with_(**{axis: v})).column(main, qids) for v in varied[axis]])
            rows_by_axis[axis] = np.where(np.isfinite(rows), rows, values[None, :])
    moves = widest_moves(rows_by_axis, n_rel)
    top = [
        {"query": qids[q], **moves.describe(q, values), "why": _reason(ev, declared, moves.axis(q), base, int(q))}
        for q in moves.order
    ]
    empty = [qids[q] for q in np.flatnonzero(n_rel == 0)]
    return {
        "metric": main,
        "queries": len(qids),
        "moved_by_any": int(moves.moved.size),
        "declared_values": [float(v) for v in values[n_rel > 0]],
        "by_axis": moves.by_axis(),
        "top": top,
        "empty": empty[:LISTED],
        "n_empty": len(empty),
        "empty_why": ("no relevant document in the qrels: trec_eval evaluates the topic and counts 0 in every mean")
        if empty
        else "",
    }


def _reason(ev: TrecEvaluator, declared: Setting, axis: str, base, q: int) -> str:
    qid = base.query_ids[q]
    docs = ev.data.scores(declared.score_dtype).get(qid, {})
    judged = base.judged[q]
    if axis == "ties":
        groups = [g for g in tie_groups(docs, judged, ev.level) if 0 < g["relevant"] < g["size"]]
        return _tie_why(max(groups, key=lambda g: g["size"])) if groups else "relevant documents tie with others"
    if axis == "judged_only":
        unjudged = sum(1 for d in docs if judged.get(d, -1) < 0)
        return f"{unjudged} of its {len(docs)} retrieved documents are unjudged: -J drops them, the judged move up"
    if axis == "depth":
        return f"it retrieved {len(docs)} documents: -M keeps only the top ones"
    if axis == "score_dtype":
        return "scores that differ only beyond float32 tie in trec_eval 9.0.8"
    return "grades that are not integers: trec_eval reads them truncated (atol)"
