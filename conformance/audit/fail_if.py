"""``--fail-if``: conditions on an audit that fail a CI job.

Grammar (one condition; several are given as several options or joined by ``;``)::

    condition := quantity operator number ["%"]
    operator  := ">" | ">=" | "<" | "<=" | "==" | "!="
    quantity  := "tie_interval:" METRIC      the width of the metric's tie interval (optimistic - pessimistic)
               | FINDING                     the count of a finding (self_matches, duplicates, empty_queries, ties, ...)
               | FINDING ".share"            its share (of the queries, pairs or items it counts)
               | "reproduced"                how many candidates reproduce the reported numbers
               | METRIC                      the metric's value under the declared protocol

For a TREC run, METRIC is one of trec_eval's names (``map``, ``ndcg_cut_10``, ``P_10``...) and the
findings include ``duplicate_docnos``, ``unjudged_top_k``, ``qrels_only_topics``...

Metric values, widths and shares are fractions: ``tie_interval:map>0.005`` and
``tie_interval:map>0.5%`` both say "wider than half a point".  A finding the data cannot
have (self-matches of hashing codes) counts 0.

>>> parse("tie_interval:map>0.5%")
('tie_interval:map', '>', 0.005)
"""

from __future__ import annotations

import math
import operator
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from retrieval_conformance.conformance.audit.metrics import METRICS, metric
from retrieval_conformance.conformance.audit.trec.measures import EXAMPLE as EXAMPLE_MEASURES
from retrieval_conformance.conformance.audit.trec.measures import cutoff, measure

OPERATORS = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_CONDITION = re.compile(
    r"^\s*([A-Za-z0-9_@:.\-]+)\s*(>=|<=|==|!=|>|<)\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)"
    r"\s*(%?)\s*$"
)
FINDINGS = (
    "ties",
    "low_precision",
    "self_matches",
    "duplicates",
    "empty_queries",
    "ids_one_side",
    "junk",
    "id_minus_1",
    "id_0",
    "no_label",
    "single_item_classes",
    # a TREC run's (conformance/audit/trec/findings.py)
    "float32_ties",
    "duplicate_docnos",
    "run_only_topics",
    "qrels_only_topics",
    "no_relevant_topics",
    "unjudged_top_k",
    "float_grades",
)
EXAMPLE = "e.g. 'tie_interval:map>0.005', 'self_matches>0', 'empty_queries.share>0.01', 'map<0.5'"


def parse(
    condition: str, kind: Optional[str] = None, cutoffs: Optional[Sequence[Optional[int]]] = None
) -> Tuple[str, str, float]:
    """``"self_matches>0"`` -> ``("self_matches", ">", 0.0)``; a ``ValueError`` naming ``fail_if`` otherwise.

    ``kind``: ``"trec run"`` takes trec_eval's names only, ``"arrays"`` the array metrics only
    (None: either), so that a condition the audit cannot judge is refused before the work;
    ``cutoffs``: a TREC run's cut-offs (``--k``), which a measure at a cut-off must be among.
    """
    if not isinstance(condition, str):
        raise TypeError(f"fail_if: expected a condition string ({EXAMPLE}), got {type(condition).__name__}")
    m = _CONDITION.match(condition)
    if m is None:
        raise ValueError(f"fail_if: cannot read {condition!r}; write QUANTITY OPERATOR NUMBER, {EXAMPLE}")
    quantity, op, number, percent = m.groups()
    _check_quantity(quantity, condition, kind)
    if kind == "trec run" and cutoffs is not None:
        _check_cutoff(quantity, condition, cutoffs)
    return quantity, op, float(number) / (100 if percent else 1)


def _check_cutoff(quantity: str, condition: str, cutoffs: Sequence[Optional[int]]) -> None:
    """A TREC measure at a cut-off the audit does not evaluate has no value: refused before the work."""
    name = quantity.split(":", 1)[1] if quantity.startswith("tie_interval:") else quantity
    if name.endswith(".share") or name in FINDINGS or name == "reproduced":
        return
    trec = measure(name, "fail_if").name
    at = cutoff(trec)
    if at is not None and at not in cutoffs:
        given = ",".join(str(c) for c in cutoffs if c is not None) or "none"
        raise ValueError(
            f"fail_if: {name!r} in {condition!r} is trec_eval's {trec}, at cut-off {at}, which this audit does "
            f"not evaluate (--k: {given}); add {at} to --k"
        )


def _check_quantity(quantity: str, condition: str, kind: Optional[str]) -> None:
    if quantity.startswith("tie_interval:"):
        name = quantity.split(":", 1)[1]
        if not _known(name, kind):
            (measure if kind == "trec run" else metric)(name, "fail_if")
        return
    name = quantity[: -len(".share")] if quantity.endswith(".share") else quantity
    if name in FINDINGS or quantity == "reproduced":
        return
    if not _known(quantity, kind):
        raise ValueError(
            f"fail_if: unknown quantity {quantity!r} in {condition!r}; expected tie_interval:METRIC, "
            f"reproduced, a metric ({', '.join(METRICS)}; for a TREC run trec_eval's names, "
            f"{EXAMPLE_MEASURES}) or a finding ({', '.join(FINDINGS)}, each with .share)"
        )


def _known(name: str, kind: Optional[str] = None) -> bool:
    """Whether ``name`` is an array metric or a TREC measure (``kind``: of a TREC run or of arrays only)."""
    lookups = {None: (metric, measure), "trec run": (measure,), "arrays": (metric,)}[kind]
    for lookup in lookups:
        try:
            lookup(name, "fail_if")
            return True
        except ValueError:
            pass
    return False


def _name(report: Dict[str, Any], name: str) -> str:
    """The report's name of a metric: trec_eval's for a run (``mrr`` is ``recip_rank``), the array audit's otherwise."""
    return (measure if report["data"]["kind"] == "trec run" else metric)(name, "fail_if").name


def conditions(given: Union[None, str, Iterable[str]]) -> List[str]:
    if given is None:
        return []
    items = [given] if isinstance(given, str) else list(given)
    return [part.strip() for item in items for part in str(item).split(";") if part.strip()]


def quantity_value(report: Dict[str, Any], quantity: str) -> Optional[float]:
    """The value of ``quantity`` in a JSON report (None: the audit has no such number)."""
    if quantity.startswith("tie_interval:"):
        name = _name(report, quantity.split(":", 1)[1])
        iv = report["tie_intervals"].get(name)
        return None if iv is None else iv["width"]
    if quantity == "reproduced":
        rep = report["reproduced"]
        return float(rep["n_matches"]) if rep.get("reported") else None
    share = quantity.endswith(".share")
    name = quantity[: -len(".share")] if share else quantity
    if name in FINDINGS:
        found = [f for f in report["findings"] if f["kind"] == name]
        if not found:
            return 0.0
        value = found[0]["share"] if share else found[0]["count"]
        return None if value is None else float(value)
    name = _name(report, quantity)
    # the declared protocol with its overrides: the declared row of an axis that holds the others
    row = next(r for r in report["conventions"] if r["axis"] == "ties" and r["declared"])
    return (row["values"] or {}).get(name) if row["values"] else None


def failures(report: Dict[str, Any], given: Union[None, str, Iterable[str]]) -> List[str]:
    """The conditions the audit meets, each as ``"self_matches>0: self_matches is 12"``."""
    out = []
    for text in conditions(given):
        quantity, op, limit = parse(text)
        value = quantity_value(report, quantity)
        if value is None or math.isnan(value):  # NaN compares false to everything: it would pass silently
            what = "no value" if value is None else "NaN, not a value,"
            out.append(
                f"{text}: the audit has {what} for {quantity} (no reported numbers, or no query "
                "counted), which fails the condition"
            )
        elif OPERATORS[op](value, limit):
            out.append(f"{text}: {quantity} is {value:.6g}")
    return out
