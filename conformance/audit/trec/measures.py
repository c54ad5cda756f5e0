"""The measures an audit of a TREC run reports, by trec_eval's names.

``map``, ``Rprec``, ``recip_rank``, ``bpref`` and ``ndcg`` over the whole ranking, and at each
cut-off k ``P_k``, ``recall_k``, ``map_cut_k``, ``ndcg_cut_k`` and ``success_k`` (spec §13
trec_eval; :func:`retrieval_conformance.reference.protocols.trec.evaluation.evaluate_run` computes them).  A reported
number or a ``--fail-if`` condition may also spell them ``P@10``, ``ndcg@10``, ``P.10``,
``MRR`` or ``R-prec``; :func:`measure` gives the trec_eval name.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence

from retrieval_conformance.conformance.audit.metrics import Metric
from retrieval_conformance.reference.contract.metric_names import trec_spelling

#: the measures without a cut-off, in report order
WHOLE = ("map", "ndcg", "Rprec", "recip_rank", "bpref")
#: the measures at a cut-off k (``P_10``...), in report order
AT_K = ("ndcg_cut", "P", "recall", "map_cut", "success")
#: the measures whose value reads the nDCG discount (spec §7)
DISCOUNTED = ("ndcg", "ndcg_cut")
_WHOLE = {
    "map": "map",
    "ap": "map",
    "ndcg": "ndcg",
    "rprec": "Rprec",
    "r-prec": "Rprec",
    "r_prec": "Rprec",
    "r-precision": "Rprec",
    "recip_rank": "recip_rank",
    "mrr": "recip_rank",
    "rr": "recip_rank",
    "bpref": "bpref",
}
_AT = {
    "p": "P",
    "precision": "P",
    "recall": "recall",
    "r": "recall",
    "map_cut": "map_cut",
    "map": "map_cut",
    "ap": "map_cut",
    "ndcg_cut": "ndcg_cut",
    "ndcg": "ndcg_cut",
    "success": "success",
}
_CUT = re.compile(r"^([a-z_]+?)(?:_|\.|@)([0-9]+)$")
EXAMPLE = "map, ndcg, Rprec, recip_rank, bpref, or P_k, recall_k, map_cut_k, ndcg_cut_k, success_k (e.g. ndcg_cut_10)"


def _metric(name: str, k: Optional[int] = None) -> Metric:
    return Metric(name, name, "trec", needs_k=k is not None)


def measure(name: str, where: str = "reported") -> Metric:
    """The measure ``name`` names (``"ndcg@10"`` -> ``ndcg_cut_10``); a ``ValueError`` naming ``where``.

    trec_eval's and ir_measures' names are read by the one vocabulary of every entry point
    (:func:`~retrieval_conformance.reference.contract.metric_names.trec_measure`); the audit's
    tables add the spellings of papers (``P.10``, ``R-prec``, ``precision@10``).
    """
    trec = trec_spelling(str(name))
    if trec in WHOLE:
        return _metric(trec)
    if cutoff(trec) is not None and trec.rpartition("_")[0] in AT_K:
        return _metric(trec, cutoff(trec))
    key = str(name).strip().lower()
    if key in _WHOLE:
        return _metric(_WHOLE[key])
    m = _CUT.match(key)
    if m and m.group(1) in _AT and int(m.group(2)) >= 1:
        return _metric(f"{_AT[m.group(1)]}_{int(m.group(2))}", int(m.group(2)))
    raise ValueError(f"{where}: unknown TREC measure {name!r}; expected trec_eval's names: {EXAMPLE}")


def cutoff(name: str) -> Optional[int]:
    """The cut-off of a measure name (``P_10`` -> 10; ``map`` -> None)."""
    head, _, tail = name.rpartition("_")
    return int(tail) if head and tail.isdigit() else None


def measures(cutoffs: Sequence[int]) -> List[str]:
    """Every measure the audit tables, in report order."""
    return list(WHOLE) + [f"{m}_{k}" for k in cutoffs for m in AT_K]


def discounted(name: str) -> bool:
    return name == "ndcg" or name.startswith("ndcg_cut_")
