"""The validated evaluation problem, its options, and the per-query result every implementation returns.

This module is the contract between the front end (``evaluate``), which validates and
normalises user input once, and the interchangeable implementations (``reference``,
``numpy``, ``torch``, ``c``), which compute per-query metrics from it.  Aggregation over
queries (the empty-query policy) is shared code applied to :class:`PerQuery`.

Data flow::

    inputs -> distances (or scores) -> ranking under a tie policy -> relevance + junk
           -> per-query metric (PerQuery) -> aggregation over queries (Result)
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

import numpy as np
from retrieval_conformance.reference.contract.conventions import (  # noqa: F401  (re-exported)
    AP_AT_K_DENOMINATORS,
    AP_RULES,
    EMPTY_POLICIES,
    TIE_POLICIES,
)


@dataclass(frozen=True)
class Options:
    """Every convention that changes a number, resolved (a preset plus overrides).

    Attributes
    ----------
    ties : {"stable", "reverse", "optimistic", "pessimistic", "expected", "grouped"}
        How items at equal distance are ordered (spec §4).
    ap_rule : {"precision_sum", "trapezoid"}
        Rectangle (precision-sum) or trapezoid average precision (spec §5).
    k : int or None
        Cut-off for AP@k, P@k and R@k.  None means the whole gallery (mAP@ALL).  A Python
        int of any size; implementations compute with it clipped to the gallery
        (``reference/contract/cutoffs.py``).
    ap_at_k : {"hits", "r", "min_k_r", "dcmh"}
        What AP@k divides by (spec §6).  Irrelevant when ``k`` is None.
    empty : {"zero", "skip", "skip_no_hit", "nan", "error"}
        What a query with no relevant item does to the mean (spec §8).
    max_rank : int
        Length of the CMC curve; ``cmc[0]`` is Rank-1.  At most ``validation.MAX_RANK_LIMIT``.
    radius : int or float or None
        Hamming (or distance) radius for precision/recall within a radius; None: not computed.
    gain : {"linear", "exponential"}
        The gain of a relevance grade g in nDCG: g, or 2**g - 1 (spec §7 gain=linear).
        The same for binary relevance (grade 1 gains 1 either way).
    discount : {"log2", "trec_eval_9.0a3"}
        The rank discount of DCG: ``1 / log2(r + 1)`` (also trec_eval's since 9.0.4), or
        trec_eval 9.0a3's ``1`` at rank 1 and ``1 / log2(r)`` after it (spec §7 discount=log2).
    recall : {"fraction", "hit"}
        What ``recall_at_k`` means: H(k) / R (the IR sense), or 1 when a relevant item is in
        the top k (the metric-learning sense, the CMC hit rate) (spec §7 recall=fraction).
    """

    ties: str = "stable"
    ap_rule: str = "precision_sum"
    k: Optional[int] = None
    ap_at_k: str = "hits"
    empty: str = "zero"
    max_rank: int = 50
    radius: Optional[float] = None
    gain: str = "linear"
    recall: str = "fraction"
    discount: str = "log2"
    metrics: Optional[Tuple[str, ...]] = None


@dataclass
class Problem:
    """A validated evaluation problem.  All arrays are C-contiguous numpy arrays.

    Exactly one ranking input is set:

    * ``distances``: (Q, N) float32 or float64, finite; smaller is closer.  Similarity
      scores arrive here negated (negation is exact in floating point).
    * ``scores``: the same for an implementation that reads scores itself
      (``Implementation.reads_scores``): (Q, N) float32 or float64, finite, larger is closer;
      the ranking is that of ``distances = -scores``.
    * ``query_bits`` / ``db_bits``: (Q, B) and (N, B) uint8 in {0, 1}; the distance is the
      Hamming distance (±1 codes are mapped to bits, +1 -> 1, -1 -> 0, which keeps it).
      ``db_words`` may replace ``db_bits``: the same bits packed, (N, ceil(B/64)) uint64, bit b
      of a code in word b // 64 at bit b % 64, the bits past B zero (``codes.pack_words``);
      ``evaluate`` gives that, and no ``db_bits``, to an implementation that reads packed codes
      (``Implementation.reads_packed_codes``): 64-bit codes take 8 bytes per item instead of 64.

    Exactly one relevance input is set:

    * ``relevance``: (Q, N) bool; with graded relevance also ``grades``: (Q, N) int64 in
      0 .. ``validation.MAX_GRADE`` (``relevance = grades > 0``), which only nDCG reads
      (None: binary relevance, every relevant item has grade 1).
    * ``query_labels`` / ``db_labels``: single ids, int64 (Q,) and (N,): relevant iff equal;
      or multi-hot, uint8 (Q, L) and (N, L): relevant iff they share a label.

    Junk (removed from the ranking before anything is counted), any combination of:

    * ``junk``: (Q, N) bool.
    * ``query_cams`` / ``db_cams``: int64 (Q,) and (N,), with single-id labels: a gallery item
      with the query's id and the query's camera is junk (ReID protocol).
    * ``junk_ids``: gallery items whose id is in this tuple are junk for every query
      (Market-1501's id -1).

    ``finite``: True when ``distances`` / ``scores`` were checked for NaN and inf before this
    Problem was made (``build_problem`` does); an implementation may then skip its own check.
    A Problem made directly has False, and C checks every row.
    """

    n_queries: int
    n_gallery: int
    distances: Optional[np.ndarray] = None
    scores: Optional[np.ndarray] = None
    query_bits: Optional[np.ndarray] = None
    db_bits: Optional[np.ndarray] = None
    relevance: Optional[np.ndarray] = None
    grades: Optional[np.ndarray] = None
    query_labels: Optional[np.ndarray] = None
    db_labels: Optional[np.ndarray] = None
    junk: Optional[np.ndarray] = None
    query_cams: Optional[np.ndarray] = None
    db_cams: Optional[np.ndarray] = None
    junk_ids: Tuple[int, ...] = ()
    db_words: Optional[np.ndarray] = None
    finite: bool = False

    @property
    def multi_label(self) -> bool:
        return self.query_labels is not None and self.query_labels.ndim == 2

    @property
    def has_junk(self) -> bool:
        return self.junk is not None or self.query_cams is not None or bool(self.junk_ids)


@dataclass
class PerQuery:
    """Per-query metrics, the output of every implementation (float64 arrays of length Q).

    Queries with no relevant non-junk item (``n_relevant == 0``) carry 0 everywhere; the
    empty-query policy is applied afterwards, by :func:`aggregate`.

    Attributes
    ----------
    ap : AP (or AP@k under ``Options.ap_at_k``) by ``Options.ap_rule``.
    n_relevant : int64, R = relevant non-junk items in the whole gallery.
    hits_at_k : H_k, relevant items in the top k (expected value under ``ties="expected"``);
        with ``k=None`` it is R.
    precision_at_k, recall_at_k : P@k = H_k / k and R@k = H_k / R (0 when R = 0); with
        ``k=None``, k is the number of non-junk gallery items.
    cmc : (Q, max_rank), 1 where the first relevant item is within the top ``j+1``.
    inp : INP = G / r_G, the rank of the hardest match (spec §7).
    r_precision : P@R.
    ndcg : nDCG@k (nDCG of the whole ranking when k is None), spec §7 nDCG.
    rr : reciprocal rank of the first relevant item, 0 when it is beyond k (spec §7 MRR).
    ap_at_r : AP@R of metric learning, spec §7 MAP@R.
    precision_at_radius, recall_at_radius : within ``Options.radius`` (None when not asked).
    exact : reference only, the same quantities as lists of ``Fraction``.
    """

    ap: np.ndarray = field(metadata={"per_query": "value", "mean": "map"})
    n_relevant: np.ndarray = field(metadata={"per_query": "count"})
    hits_at_k: np.ndarray = field(metadata={"per_query": "value"})
    precision_at_k: np.ndarray = field(metadata={"per_query": "value", "mean": "precision_at_k", "mean_needs": "k"})
    recall_at_k: np.ndarray = field(metadata={"per_query": "value", "mean": "recall_at_k", "mean_needs": "k"})
    cmc: np.ndarray = field(metadata={"per_query": "curve"})
    inp: np.ndarray = field(metadata={"per_query": "value", "mean": "minp"})
    r_precision: np.ndarray = field(metadata={"per_query": "value", "mean": "r_precision"})
    ndcg: np.ndarray = field(metadata={"per_query": "value", "mean": "ndcg_at_k"})
    rr: np.ndarray = field(metadata={"per_query": "value", "mean": "mrr"})
    ap_at_r: np.ndarray = field(metadata={"per_query": "value", "mean": "map_at_r"})
    precision_at_radius: Optional[np.ndarray] = field(
        default=None, metadata={"per_query": "optional", "mean": "precision_at_radius", "mean_needs": "radius"}
    )
    recall_at_radius: Optional[np.ndarray] = field(
        default=None, metadata={"per_query": "optional", "mean": "recall_at_radius", "mean_needs": "radius"}
    )
    exact: Optional[Dict[str, List]] = None

    #: the fields the reference also gives exactly (``exact``), and every implementation computes
    FIELDS = ("ap", "hits_at_k", "precision_at_k", "recall_at_k", "cmc", "inp", "r_precision", "ndcg", "rr", "ap_at_r")

    @classmethod
    def concat(cls, parts: "List[PerQuery]") -> "PerQuery":
        """Stack the per-query values of consecutive query blocks."""
        if len(parts) == 1:
            return parts[0]
        arrays: Dict[str, Any] = {}  # keyword arguments of the constructor: arrays, or None where unset
        for name in ARRAY_FIELDS:
            values = [getattr(p, name) for p in parts]
            arrays[name] = None if values[0] is None else np.concatenate(values)
        exact = None
        exacts = [p.exact for p in parts if p.exact is not None]
        if len(exacts) == len(parts):
            exact = {key: [v for e in exacts for v in e[key]] for key in exacts[0]}
        return cls(exact=exact, **arrays)


#: every per-query array of :class:`PerQuery`, in order (what blocks are stacked by)
ARRAY_FIELDS = tuple(f.name for f in fields(PerQuery) if "per_query" in f.metadata)
#: the per-query values (one float64 per query) every implementation computes for every problem
VALUE_FIELDS = tuple(f.name for f in fields(PerQuery) if f.metadata.get("per_query") == "value")
#: the per-query values computed only when an option asks for them (None otherwise)
OPTIONAL_FIELDS = tuple(f.name for f in fields(PerQuery) if f.metadata.get("per_query") == "optional")
#: mean in :class:`Result` -> (its per-query field, the option without which it is None)
MEANS = {f.metadata["mean"]: (f.name, f.metadata.get("mean_needs")) for f in fields(PerQuery) if "mean" in f.metadata}


def zero_arrays(n_queries: int, options: "Options") -> Dict[str, np.ndarray]:
    """Zeroed arrays for every per-query field ``options`` asks for, to be filled by an
    implementation and passed to ``PerQuery(**arrays)``: float64 values, int64 ``n_relevant``,
    a (queries, max_rank) ``cmc``, the optional fields only when their option is set."""
    out = {name: np.zeros(n_queries, dtype=np.float64) for name in VALUE_FIELDS}
    out["n_relevant"] = np.zeros(n_queries, dtype=np.int64)
    out["cmc"] = np.zeros((n_queries, options.max_rank), dtype=np.float64)
    if options.radius is not None:
        out.update({name: np.zeros(n_queries, dtype=np.float64) for name in OPTIONAL_FIELDS})
    return out


@dataclass
class ExactResult:
    """Exact values (``fractions.Fraction``) of an aggregated result, from the reference."""

    map: Optional[Fraction]
    ap: List[Optional[Fraction]]
    precision_at_k: Optional[Fraction]
    recall_at_k: Optional[Fraction]
    cmc: List[Optional[Fraction]]  # None at every rank when no query is counted
    minp: Optional[Fraction]


class NotComputedError(AttributeError):
    """A metric of a :class:`Result` that its evaluation was not asked for (``metrics=``)."""


#: the attributes of :class:`Result` holding a metric -> the metric (``metrics=`` name) they show
_METRIC_ATTRIBUTES = {**{name: name for name in MEANS}, "cmc": "cmc", "ap": "map", "inp": "minp"}


@dataclass
class Result:
    """What :func:`retrieval_conformance.evaluate` returns.

    ``ap`` holds one value per query; a query left out of the mean by the empty-query policy
    holds NaN there, so ``np.nanmean(res.ap) == res.map``.  ``cmc[0]`` is Rank-1.

    ``computed``: the metrics computed (``metrics=`` of ``evaluate``), None for every one.
    Reading a metric that was not computed (``res.minp`` after ``metrics=["map"]``, and its
    per-query ``res.inp``) raises :class:`NotComputedError`, naming it.
    """

    map: float
    ap: np.ndarray
    precision_at_k: Optional[float]
    recall_at_k: Optional[float]
    cmc: np.ndarray
    minp: float
    inp: np.ndarray
    r_precision: float
    ndcg_at_k: float
    mrr: float
    map_at_r: float
    counted: np.ndarray
    protocol: str
    implementation: str
    options: Options
    per_query: PerQuery
    precision_at_radius: Optional[float] = None
    recall_at_radius: Optional[float] = None
    exact: Optional[ExactResult] = None
    extras: Dict[str, Any] = field(default_factory=dict)
    computed: Optional[FrozenSet[str]] = None

    def __getattribute__(self, name: str) -> Any:
        metric = _METRIC_ATTRIBUTES.get(name)
        if metric is not None:
            computed = object.__getattribute__(self, "computed")
            if computed is not None and metric not in computed:
                shown = "" if metric == name else f" (per query, of {metric!r})"
                raise NotComputedError(
                    f"Result.{name}: not computed{shown}; this evaluation computed only metrics="
                    f"{sorted(computed)}; add {metric!r} to metrics= (or leave metrics=None for every metric)"
                )
        return object.__getattribute__(self, name)

    def has(self, metric: str) -> bool:
        """Whether the metric ``metric`` (a canonical ``metrics=`` name: ``"map"``, ``"cmc"``, ...) was computed."""
        return self.computed is None or metric in self.computed

    @property
    def n_counted(self) -> int:
        return int(self.counted.sum())

    def __repr__(self) -> str:
        # a summary of bounded length: the per-query arrays are one attribute away
        shown = {name: getattr(self, name) for name in ("map", "minp", "ndcg_at_k") if self.has(name)}
        if self.has("cmc"):
            shown["rank1"] = float(self.cmc[0]) if self.cmc.size else None
        o = self.options
        values = "".join(f"{name}={value!r}, " for name, value in shown.items())
        subset = "" if self.computed is None else f"metrics={sorted(self.computed)!r}, "
        return (
            f"Result(protocol={self.protocol!r}, implementation={self.implementation!r}, "
            f"queries={self.counted.shape[0]}, counted={self.n_counted}, {values}{subset}k={o.k!r}, "
            f"ties={o.ties!r}, ap_rule={o.ap_rule!r}; per query: .ap, .inp, .counted, .per_query)"
        )

    def per_query_table(self, query_ids: Optional[Sequence[object]] = None) -> List[Dict[str, object]]:
        """One plain-Python row per query (what ``trec_eval -q`` prints), for text, JSON or CSV.

        ``query_ids``: one id per query (default ``0 .. Q-1``).  Each row holds the query id,
        ``counted`` (whether the empty-query policy keeps it in the means), ``n_relevant``
        and the per-query values behind every mean: ``ap``, ``precision_at_k``,
        ``recall_at_k``, ``rank1`` (the first CMC column), ``inp``, ``r_precision``, ``ndcg``,
        ``rr`` and ``ap_at_r`` (those of the metrics computed); AP is
        NaN (``None`` in JSON terms) for a query the policy leaves out.
        """
        n = self.counted.shape[0]
        ids = list(range(n)) if query_ids is None else list(query_ids)
        if len(ids) != n:
            raise ValueError(f"query_ids: expected {n} ids (one per query), got {len(ids)}")
        pq = self.per_query
        columns = {
            "ap": self.ap if self.has("map") else None,
            "precision_at_k": pq.precision_at_k,
            "recall_at_k": pq.recall_at_k,
            "rank1": pq.cmc[:, 0] if pq.cmc is not None and pq.cmc.size else None,
            "inp": pq.inp,
            "r_precision": pq.r_precision,
            "ndcg": pq.ndcg,
            "rr": pq.rr,
            "ap_at_r": pq.ap_at_r,
        }
        rows = []
        for q in range(n):
            row: Dict[str, object] = {
                "query": ids[q],
                "counted": bool(self.counted[q]),
                "n_relevant": int(pq.n_relevant[q]),
            }
            for name, values in columns.items():
                if values is not None:
                    row[name] = None if np.isnan(values[q]) else float(values[q])
            rows.append(row)
        return rows

    def summary(self) -> Dict[str, object]:
        """Plain-Python summary for reports and ``--json``, with the specification version it
        follows: the metrics computed (every one, unless ``metrics=`` chose some)."""
        from retrieval_conformance.reference.contract.spec import SPEC_VERSION

        out: Dict[str, object] = {
            "spec_version": SPEC_VERSION,
            "protocol": self.protocol,
            "implementation": self.implementation,
            "options": self.options.__dict__,
            "queries": int(self.counted.shape[0]),
            "queries_counted": self.n_counted,
        }
        for name in (
            "map",
            "precision_at_k",
            "recall_at_k",
            "cmc",
            "minp",
            "r_precision",
            "ndcg_at_k",
            "mrr",
            "map_at_r",
        ):
            if not self.has(name):
                continue
            if name == "cmc":
                out["rank1"] = float(self.cmc[0]) if self.cmc.size else None
                out["cmc"] = [float(v) for v in self.cmc]
            else:
                out[name] = getattr(self, name)
        for name in ("precision_at_radius", "recall_at_radius"):
            if self.has(name) and getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.computed is not None:
            out["metrics"] = [name for name in MEANS if name in self.computed] + ["cmc"] * ("cmc" in self.computed)
        if self.has("map") and self.exact is not None and self.exact.map is not None:
            out["map_exact"] = str(self.exact.map)
        return out


class ResultsAtK(dict):
    """Results of one evaluation at several cut-offs: ``{k: Result}`` in the order asked for."""

    def summary(self) -> Dict[str, object]:
        """``{"k=5": Result.summary(), ...}`` for reports and JSON."""
        return {f"k={k}": result.summary() for k, result in self.items()}

    def table(self) -> List[Dict[str, object]]:
        """One row per cut-off: k, mAP@k, P@k, R@k (those computed)."""
        names = ("map", "precision_at_k", "recall_at_k")
        return [{"k": k, **{name: getattr(r, name) for name in names if r.has(name)}} for k, r in self.items()]
