"""Section 1 of an audit: every headline metric under every preset and along each convention axis.

Rows are evaluations of the user's data by the fast implementations (``rc.evaluate``): one per
preset (each at the user's cut-off, its own options otherwise) and one per value of each
convention axis with the declared protocol's other options held (spec §4 ties, §5 AP rule,
§6 AP@k denominator, §8 empty-query policy, and the junk rules of §9's ReID presets).  The
empty-query policies only change the mean, so they are aggregated from one evaluation.

The tie policies bound each other: every concrete order lies between ``pessimistic`` and
``optimistic`` (spec §4), so ``[pessimistic, optimistic]`` is the part of a number that tie
order alone can move; ``stable``, ``reverse``, ``expected`` and ``grouped`` are shown inside it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np
from retrieval_conformance.conformance.audit.inputs import Evaluator
from retrieval_conformance.conformance.audit.metrics import Metric
from retrieval_conformance.reference.contract.conventions import (
    AP_AT_K_DENOMINATORS,
    AP_RULES,
    DISCOUNTS,
    EMPTY_POLICIES_WITH_A_MEAN,
    GAINS,
    RECALL_SENSES,
    TIE_POLICIES,
)
from retrieval_conformance.reference.contract.presets import PRESETS, get_preset

#: the order a tie interval lists its policies in (the extremes first)
TIE_ORDER = ("pessimistic", "optimistic", "stable", "reverse", "expected", "grouped")
#: the junk rules of the presets, each with a preset that applies exactly it
JUNK_RULES = {"none": "hashing", "same_id_cam": "reid", "same_id_cam+minus_one": "reid-matlab"}
#: the options the declared protocol holds while one axis varies
HELD = ("ties", "ap_rule", "ap_at_k", "empty", "gain", "discount", "recall")
#: how many queries the per-query tables list
MOVERS = 10


def declared_options(protocol: str, k: Optional[int], overrides: Dict[str, str]) -> Dict[str, Any]:
    """The options the user declared: the preset's, with their overrides, at their cut-off."""
    p = get_preset(protocol)
    out = {name: overrides.get(name) or getattr(p, name) for name in HELD}
    out["k"] = k
    return out


def junk_rule(protocol: str) -> str:
    return "+".join(get_preset(protocol).junk) or "none"


def _values(result, metrics: List[Metric]) -> Dict[str, Optional[float]]:
    return {m.name: m.value(result) for m in metrics}


def _row(
    axis: str, value: str, options: Dict[str, Any], result, metrics: List[Metric], declared: bool
) -> Dict[str, Any]:
    if isinstance(result, str):
        return {"axis": axis, "value": value, "options": options, "declared": declared, "values": None, "error": result}
    return {
        "axis": axis,
        "value": value,
        "options": options,
        "declared": declared,
        "values": _values(result, metrics),
        "error": None,
    }


def convention_rows(
    ev: Evaluator,
    protocol: str,
    declared: Dict[str, Any],
    metrics: List[Metric],
    camera_rules: bool,
    graded: bool = False,
) -> List[Dict[str, Any]]:
    """Every preset, then each axis with the declared protocol's other options held (nDCG's gain
    only with graded relevance, Recall@k's sense only with a cut-off)."""
    k = declared["k"]
    held = {name: declared[name] for name in HELD}
    rows = []
    for name, preset in PRESETS.items():
        if "same_id_cam" in preset.junk and not camera_rules:
            continue  # a camera junk rule needs single ids with cameras (or an explicit junk mask)
        result = ev.run(name, k=k)
        options = {n: getattr(preset, n) for n in held}
        rows.append(_row("preset", name, dict(options, junk=junk_rule(name)), result, metrics, name == protocol))
    axes = {"ties": TIE_POLICIES, "ap_rule": AP_RULES}
    if k is not None:
        axes["ap_at_k"] = AP_AT_K_DENOMINATORS
    axes["discount"] = DISCOUNTS
    if graded:
        axes["gain"] = GAINS
    if k is not None:
        axes["recall"] = RECALL_SENSES
    for axis, values in axes.items():
        for value in values:
            options = dict(held, **{axis: value})
            result = ev.run(protocol, k=k, **options)
            rows.append(_row(axis, value, options, result, metrics, value == declared[axis]))
    for value in EMPTY_POLICIES_WITH_A_MEAN:  # aggregated again from one evaluation
        result = ev.run(protocol, k=k, **dict(held, empty=value))
        rows.append(_row("empty", value, dict(held, empty=value), result, metrics, value == declared["empty"]))
    if camera_rules:
        for rule, preset in JUNK_RULES.items():
            result = ev.run(preset, k=k, **held)
            rows.append(_row("junk", rule, dict(held, junk=rule), result, metrics, rule == junk_rule(protocol)))
    return rows


def tie_intervals(rows: List[Dict[str, Any]], metrics: List[Metric]) -> Dict[str, Dict[str, Any]]:
    """Per metric: every tie policy's value and the interval ``[pessimistic, optimistic]``."""
    by_policy = {r["value"]: r for r in rows if r["axis"] == "ties"}
    out = {}
    for m in metrics:
        values = {t: (by_policy[t]["values"] or {}).get(m.name) for t in TIE_ORDER}
        lo, hi = values["pessimistic"], values["optimistic"]
        out[m.name] = {
            "values": values,
            "low": lo,
            "high": hi,
            "width": None if lo is None or hi is None else hi - lo,
            "errors": {t: by_policy[t]["error"] for t in TIE_ORDER if by_policy[t]["error"]},
        }
    return out


def tie_movers(ev: Evaluator, protocol: str, declared: Dict[str, Any], metric: Metric) -> Dict[str, Any]:
    """The queries whose value tie order moves most, and why (per-query pessimistic vs optimistic)."""
    held = {name: declared[name] for name in HELD}
    k = declared["k"]
    low = ev.run(protocol, k=k, **dict(held, ties="pessimistic"))
    high = ev.run(protocol, k=k, **dict(held, ties="optimistic"))
    lo, hi = metric.per_query(low.per_query), metric.per_query(high.per_query)
    spread = hi - lo
    moved = np.flatnonzero(spread > 0)
    order = moved[np.argsort(-spread[moved], kind="stable")][:MOVERS]
    straddles = (low.per_query.hits_at_k != high.per_query.hits_at_k) if k is not None else np.zeros(lo.size, bool)
    rows = []
    for q in order:
        why = (
            f"a tie group straddles the cut-off k={k}: which of its items fall inside depends on the order"
            if straddles[q]
            else "relevant and non-relevant items share a distance"
        )
        rows.append(
            {
                "query": int(q),
                "pessimistic": float(lo[q]),
                "optimistic": float(hi[q]),
                "spread": float(spread[q]),
                "why": why,
            }
        )
    return {
        "metric": metric.name,
        "moved": int(moved.size),
        "queries": int(lo.size),
        "spread": [float(s) for s in spread],
        "top": rows,
        "straddling": int(straddles.sum()),
    }
