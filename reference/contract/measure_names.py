"""trec_eval's and ir_measures' names of measures, read as one vocabulary (owned by :mod:`.metric_names`).

People bring the names of the tools they already use: trec_eval's (``P_10``, ``ndcg_cut_10``,
``map``, ``map_cut_10``, ``recip_rank``, ``recall_100``, ``Rprec``, ``success_10``, ``bpref``)
and ir_measures' (``P@10``, ``nDCG@10``, ``AP``, ``AP@10``, ``R@100``, ``RR``, ``Success@10``,
``P(rel=2)@10``, ``Judged@10``, ``Bpref``).  :func:`parse_measure` reads either into a
:class:`Measure`: the metric (a field of ``Result``, ``rankN``, or a measure that needs the
judgments of a TREC run), its cut-off and its relevance level; :func:`trec_name` writes it back
in trec_eval's spelling, the names ``evaluate_run`` reports.  Case does not matter.

>>> parse_measure("nDCG@10")
Measure(metric='ndcg_at_k', cutoff=10, level=None)
>>> trec_name(parse_measure("P(rel=2)@10"))
'P_10'
"""

from __future__ import annotations

import re
from typing import Dict, NamedTuple, Optional, Tuple

__all__ = ["JUDGED_ONLY", "Measure", "parse_measure", "trec_name"]


class Measure(NamedTuple):
    """One measure: ``metric`` (a ``Result`` field, ``rankN``, or one of ``JUDGED_ONLY``), the
    cut-off it names (None: none) and the least relevant grade it names (``P(rel=2)``; None: the
    evaluation's)."""

    metric: str
    cutoff: Optional[int] = None
    level: Optional[int] = None


#: measures computed from the qrels themselves (judged non-relevant documents, the pool): a TREC run's
JUDGED_ONLY = ("bpref", "Judged", "R_cap")
#: one row per measure: metric -> (trec_eval without a cut-off, trec_eval's stem before ``_k``,
#: ir_measures' name); None where that tool has no such spelling
FAMILIES: Dict[str, Tuple[Optional[str], Optional[str], Optional[str]]] = {
    "map": ("map", "map_cut", "AP"),
    "precision_at_k": (None, "P", "P"),
    "recall_at_k": (None, "recall", "R"),
    "ndcg_at_k": ("ndcg", "ndcg_cut", "nDCG"),
    "mrr": ("recip_rank", None, "RR"),
    "r_precision": ("Rprec", None, "Rprec"),
    "rank": (None, "success", "Success"),  # the CMC at k: a relevant document in the top k
    "bpref": ("bpref", None, "Bpref"),
    "Judged": (None, "Judged", "Judged"),
    "R_cap": (None, "R_cap", None),
}
_TREC_CUT = re.compile(r"^([a-z][a-z_]*?)_(\d+)$")
_IR = re.compile(r"^([a-z]+)(?:\(rel=(\d+)\))?(?:@(\d+))?$")


def _lookup(column: int, spelling: str) -> Optional[str]:
    """The metric whose ``column`` spelling is ``spelling`` (lower case), or None."""
    for metric, names in FAMILIES.items():
        name = names[column]
        if name is not None and name.lower() == spelling:
            return metric
    return None


def parse_measure(name: str) -> Optional[Measure]:
    """The measure a trec_eval or ir_measures name means, or None when it is neither's.

    A cut-off of 0 is no cut-off; ``rank`` comes back as ``rankN`` (the CMC at N).
    """
    key = name.strip().lower()
    measure: Optional[Measure] = None
    match = _TREC_CUT.match(key)
    if match and _lookup(1, match.group(1)):
        measure = Measure(_lookup(1, match.group(1)) or "", int(match.group(2)))
    elif _lookup(0, key):
        measure = Measure(_lookup(0, key) or "")
    else:
        match = _IR.match(key)
        if match and _lookup(2, match.group(1)):
            level, cutoff = match.group(2), match.group(3)
            measure = Measure(
                _lookup(2, match.group(1)) or "",
                int(cutoff) if cutoff is not None else None,
                int(level) if level is not None else None,
            )
    if measure is None or measure.cutoff == 0:
        return None if measure is None else measure._replace(cutoff=None)
    if measure.metric == "rank":
        return None if measure.cutoff is None else Measure(f"rank{measure.cutoff}")
    return measure


def trec_name(measure: Measure) -> Optional[str]:
    """trec_eval's name of ``measure`` (``P_10``, ``ndcg_cut_10``, ``map``), or None where it has none
    (``RR@10``, ``P`` without a cut-off).  The relevance level is not part of trec_eval's names."""
    if measure.metric.startswith("rank") and measure.metric[4:].isdigit():
        return f"success_{measure.metric[4:]}"
    plain, stem, _ = FAMILIES[measure.metric]
    if measure.cutoff is None:
        return plain
    return None if stem is None else f"{stem}_{measure.cutoff}"
