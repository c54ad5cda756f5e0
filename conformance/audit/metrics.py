"""The headline metrics an audit reports, and how each is read from a ``Result``.

One table of names: the audit's tables, reported numbers (``--reported map=0.6026``) and
``--fail-if`` conditions all use these names.  ``source`` is the per-query field of
``PerQuery`` whose mean the metric is (the harness's name for it, which says which known bugs
can corrupt it); Rank-k reads column k - 1 of the CMC.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
from retrieval_conformance.reference.contract.measure_names import parse_measure


@dataclass(frozen=True)
class Metric:
    name: str
    title: str
    source: str  # the per-query field of PerQuery (cmc: the CMC row)
    rank: int = 0  # Rank-k: k
    needs_k: bool = False

    def label(self, k: Optional[int]) -> str:
        at = "" if k is None or self.rank or self.name in ("minp", "map_at_r", "r_precision") else f"@{k}"
        return f"{self.title}{at}"

    def value(self, result) -> Optional[float]:
        """The mean over counted queries (None where no query is counted)."""
        if self.rank:
            return float(result.cmc[self.rank - 1]) if result.cmc.shape[0] >= self.rank else None
        attribute = {
            "ap": "map",
            "inp": "minp",
            "ndcg": "ndcg_at_k",
            "rr": "mrr",
            "ap_at_r": "map_at_r",
            "r_precision": "r_precision",
            "precision_at_k": "precision_at_k",
            "recall_at_k": "recall_at_k",
        }[self.source]
        value = getattr(result, attribute)
        return None if value is None or not np.isfinite(value) else float(value)

    def per_query(self, per_query) -> np.ndarray:
        """Per-query values before the empty-query policy (float64, one per query)."""
        if self.rank:
            return np.asarray(per_query.cmc[:, self.rank - 1], dtype=np.float64)
        return np.asarray(getattr(per_query, self.source), dtype=np.float64)


METRICS: Dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("map", "mAP", "ap"),
        Metric("rank1", "Rank-1", "cmc", rank=1),
        Metric("rank5", "Rank-5", "cmc", rank=5),
        Metric("rank10", "Rank-10", "cmc", rank=10),
        Metric("minp", "mINP", "inp"),
        Metric("ndcg", "nDCG", "ndcg"),
        Metric("mrr", "MRR", "rr"),
        Metric("map_at_r", "MAP@R", "ap_at_r"),
        Metric("r_precision", "R-precision", "r_precision"),
        Metric("precision_at_k", "P", "precision_at_k", needs_k=True),
        Metric("recall_at_k", "R", "recall_at_k", needs_k=True),
    )
}
#: spellings a reported number may use for a metric (case-insensitive)
ALIASES = {
    "mAP": "map",
    "rank-1": "rank1",
    "r1": "rank1",
    "top1": "rank1",
    "rank-5": "rank5",
    "r5": "rank5",
    "rank-10": "rank10",
    "r10": "rank10",
    "inp": "minp",
    "ndcg@k": "ndcg",
    "p@k": "precision_at_k",
    "precision": "precision_at_k",
    "recall": "recall_at_k",
    "r@k": "recall_at_k",
    "map@r": "map_at_r",
}


#: the audit's metric of each field of ``Result`` that trec_eval's and ir_measures' names name
_FROM_MEASURE = {
    "map": "map",
    "precision_at_k": "precision_at_k",
    "recall_at_k": "recall_at_k",
    "ndcg_at_k": "ndcg",
    "mrr": "mrr",
    "r_precision": "r_precision",
}


def metric(name: str, where: str = "metric", k: Optional[int] = None) -> Metric:
    """The metric named ``name`` (``map``, ``rank1``, ``mAP@100``, ``P_10``, ``nDCG@10``...); a
    ``ValueError`` naming ``where``.  A trec_eval or ir_measures name with a cut-off must name the
    audit's cut-off ``k``."""
    measure = parse_measure(name)
    if measure is not None and measure.metric in _FROM_MEASURE and measure.level is None:
        if measure.cutoff is not None and measure.cutoff != k:
            raise ValueError(
                f"{where}: {name.strip()!r} is at cut-off {measure.cutoff}, but the audit's cut-off is "
                f"{'none' if k is None else k}; set the audit's cut-off k to {measure.cutoff}"
            )
        return METRICS[_FROM_MEASURE[measure.metric]]
    if measure is not None and measure.metric.startswith("rank") and measure.metric in METRICS:
        return METRICS[measure.metric]
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key.startswith("map@") and key[4:].isdigit():
        key = "map"
    for alias, target in ALIASES.items():
        if key == alias.lower():
            key = target
    if key not in METRICS:
        raise ValueError(f"{where}: unknown metric {name!r}; expected one of {sorted(METRICS)}")
    return METRICS[key]


def headline(k: Optional[int], n_gallery: int) -> List[Metric]:
    """The metrics the audit tables (Rank-k only where the gallery has k items, P@k and R@k with k)."""
    return [m for m in METRICS.values() if (not m.needs_k or k is not None) and m.rank <= n_gallery]


def interval(values: Tuple[Optional[float], ...]) -> Optional[Tuple[float, float]]:
    finite = [v for v in values if v is not None]
    return (min(finite), max(finite)) if finite else None
