"""``evaluate_landmark``: ranked lists and ground truth evaluated under a landmark protocol.

The inputs are paired and checked by :mod:`.inputs`; each protocol's per-query value comes from
its module (:mod:`.oxford`, :mod:`.revisitop`, :mod:`.gldv2`); this module takes the means (exact
where the protocol is exact) and returns a :class:`LandmarkResult`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from retrieval_conformance.reference.protocols.landmark.cpp_float import format_cpp_float
from retrieval_conformance.reference.protocols.landmark.gldv2 import GLDV2_K, gldv2_ap_at_k
from retrieval_conformance.reference.protocols.landmark.inputs import (
    check_cutoffs,
    check_k,
    check_names,
    gldv2_solution,
    oxford_gt,
    pair_inputs,
    roxford_gt,
)
from retrieval_conformance.reference.protocols.landmark.oxford import oxford_ap
from retrieval_conformance.reference.protocols.landmark.revisitop import (
    corrected_precision_at_k,
    revisitop_ap,
    revisitop_positions,
    revisitop_precision_at_k,
    roxford_split,
)

__all__ = ["LANDMARK_PROTOCOLS", "LandmarkResult", "evaluate_landmark"]

LANDMARK_PROTOCOLS = ("oxford", "roxford-easy", "roxford-medium", "roxford-hard", "gldv2")
ROXFORD_KAPPAS = (1, 5, 10)


@dataclass
class LandmarkResult:
    """What :func:`evaluate_landmark` returns.

    Attributes
    ----------
    protocol : str
    queries : list
        Query keys (mapping input) or indices (sequence input), in result order.
    ap : ndarray of float64
        Per-query AP; NaN where the query is left out (roxford / gldv2 without positives)
        or where ``compute_ap`` prints ``-nan`` (oxford).
    map : float
        Mean over counted queries (NaN when none is counted; oxford: NaN if any AP is NaN).
    counted : ndarray of bool
        Queries in the mean.
    ap_exact : list of Fraction or None
        Exact per-query values (roxford, gldv2); None for left-out queries and for oxford,
        whose float32 value *is* the protocol.
    map_exact : Fraction or None
    printed : list of str or None
        oxford only: what ``compute_ap`` prints for each query.
    k : int, tuple of int, or None
        gldv2: the cut-off; roxford: the mP@k cut-offs.
    mp_at_k, mp_at_k_exact : dict
        roxford: revisitop's mP@k (quirk, :func:`revisitop_precision_at_k`) per k; NaN /
        None when ``strict_revisitop=False`` and a counted query had no positive ranked.
    mp_at_k_corrected, mp_at_k_corrected_exact : dict
        roxford: P@k with denominator k (:func:`corrected_precision_at_k`), per k.
    precision_at_k, precision_at_k_corrected : dict of lists
        roxford: per-query exact values per k (None where left out / undefined).
    """

    protocol: str
    queries: List[Any]
    ap: np.ndarray
    map: float
    counted: np.ndarray
    ap_exact: List[Optional[Fraction]]
    map_exact: Optional[Fraction]
    printed: Optional[List[str]] = None
    k: Union[int, Tuple[int, ...], None] = None
    mp_at_k: Dict[int, float] = field(default_factory=dict)
    mp_at_k_exact: Dict[int, Optional[Fraction]] = field(default_factory=dict)
    mp_at_k_corrected: Dict[int, float] = field(default_factory=dict)
    mp_at_k_corrected_exact: Dict[int, Optional[Fraction]] = field(default_factory=dict)
    precision_at_k: Dict[int, List[Optional[Fraction]]] = field(default_factory=dict)
    precision_at_k_corrected: Dict[int, List[Optional[Fraction]]] = field(default_factory=dict)

    @property
    def n_counted(self) -> int:
        return int(self.counted.sum())

    def summary(self) -> Dict[str, Any]:
        """Plain-Python summary (JSON-serialisable)."""
        out: Dict[str, Any] = {
            "protocol": self.protocol,
            "queries": len(self.queries),
            "queries_counted": self.n_counted,
            "map": self.map,
        }
        if self.map_exact is not None:
            out["map_exact"] = str(self.map_exact)
        if self.k is not None:
            out["k"] = list(self.k) if isinstance(self.k, tuple) else self.k
        if self.mp_at_k:
            out["mp_at_k"] = {str(k): v for k, v in self.mp_at_k.items()}
            out["mp_at_k_corrected"] = {str(k): v for k, v in self.mp_at_k_corrected.items()}
        return out


def _mean(values: List[Fraction]) -> Optional[Fraction]:
    return sum(values, Fraction(0)) / len(values) if values else None


def _as_float(value: Optional[Fraction]) -> float:
    return math.nan if value is None else float(value)


def _exact_result(protocol: str, keys: List[Any], exact: List[Optional[Fraction]], **fields: Any) -> LandmarkResult:
    """A result from exact per-query values; None marks a query left out of the mean."""
    counted = np.array([e is not None for e in exact], dtype=bool)
    m = _mean([e for e in exact if e is not None])
    return LandmarkResult(
        protocol=protocol,
        queries=keys,
        ap=np.array([_as_float(e) for e in exact], dtype=np.float64),
        map=_as_float(m),
        counted=counted,
        ap_exact=exact,
        map_exact=m,
        **fields,
    )


def evaluate_landmark(
    ranked_lists: Any,
    ground_truth: Any,
    protocol: str = "oxford",
    k: Union[int, Sequence[int], None] = None,
    *,
    strict_revisitop: bool = True,
) -> LandmarkResult:
    """Evaluate ranked lists under a landmark-retrieval protocol.

    Parameters
    ----------
    ranked_lists : mapping query -> sequence, or sequence of sequences
        One ranked list (best first) of database names or indices per query.  A 2-D array
        is read row by row (rows = queries; revisitop's ``ranks`` is the transpose).
    ground_truth : mapping query -> gt, or sequence of gt (aligned with ``ranked_lists``)
        ``oxford``: mappings with ``good`` / ``ok`` / ``junk`` lists (or
        ``readers.GroundTruthQuery``); ``roxford-*``: mappings with ``easy``, ``hard`` and
        optionally ``junk`` (revisitop's ``gnd`` entries); ``gldv2``: the list of relevant
        index images.
    protocol : {"oxford", "roxford-easy", "roxford-medium", "roxford-hard", "gldv2"}
    k : int or sequence of int, optional
        ``gldv2``: the cut-off (default 100).  ``roxford-*``: the mP@k cut-offs (default
        1, 5, 10).  ``oxford``: must be None (the protocol has no cut-off).
    strict_revisitop : bool
        roxford only.  True (default) reproduces revisitop: a counted query with no positive
        in its ranked list makes mP@k raise ``ValueError`` (naming the query).  False
        records None for that query's quirk value and NaN for the quirk mean, and still
        computes everything else.

    Returns
    -------
    LandmarkResult

    Notes
    -----
    * ``oxford``: AP per query by :func:`oxford_ap` (float32, the protocol's own digits);
      ``printed`` holds ``compute_ap``'s output; mAP = (Σ AP) / Q over all queries in float64.
    * ``roxford-*``: AP by :func:`revisitop_ap` over :func:`revisitop_positions`; queries
      without positives are left out (their AP is NaN); mAP and mP@k are means over the
      counted queries, exact.
    * ``gldv2``: :func:`gldv2_ap_at_k` with k = 100; a query whose solution is empty is left
      out; with mapping input, a query of the ground truth that has no ranked list counts
      as AP 0 (the Kaggle metric divides by the number of solution queries), and a ranked
      list for a query absent from the ground truth is an error.
    """
    if protocol not in LANDMARK_PROTOCOLS:
        raise ValueError(f"protocol must be one of {LANDMARK_PROTOCOLS}, got {protocol!r}")
    keys, lists, gts = pair_inputs(ranked_lists, ground_truth, protocol)
    if not keys:
        raise ValueError("ground_truth holds no query")
    if protocol == "oxford":
        if k is not None:
            raise ValueError("k: the oxford protocol (compute_ap) has no cut-off; pass k=None")
        return _evaluate_oxford(keys, lists, gts)
    if protocol == "gldv2":
        return _evaluate_gldv2(keys, lists, gts, GLDV2_K if k is None else check_k(k, "k"))
    return _evaluate_roxford(protocol, keys, lists, gts, check_cutoffs(k, ROXFORD_KAPPAS), strict_revisitop)


def _evaluate_oxford(keys: List[Any], lists: List[Any], gts: List[Any]) -> LandmarkResult:
    """oxford: float32 AP and printed text per query; mAP NaN if one AP is."""
    values, printed = [], []
    for q, ranked, gt in zip(keys, lists, gts):
        good, ok, junk = oxford_gt(gt, q)
        ranked = check_names(ranked, f"ranked_lists[{q!r}]", sequence=True)
        v = oxford_ap(ranked, good, ok, junk)
        values.append(v)
        printed.append(format_cpp_float(v))
    n = len(keys)
    ap = np.asarray(values, dtype=np.float64)
    mean = math.nan if np.isnan(ap).any() else math.fsum(values) / n
    return LandmarkResult(
        protocol="oxford",
        queries=keys,
        ap=ap,
        map=mean,
        counted=np.ones(n, dtype=bool),
        ap_exact=[None] * n,
        map_exact=None,
        printed=printed,
    )


def _evaluate_gldv2(keys: List[Any], lists: List[Any], gts: List[Any], k: int) -> LandmarkResult:
    """gldv2: exact AP@k per query; empty solutions are left out."""
    exact: List[Optional[Fraction]] = []
    for q, ranked, gt in zip(keys, lists, gts):
        sol = gldv2_solution(gt, q)
        if not sol:
            exact.append(None)  # left out
            continue
        preds = [] if ranked is None else ranked  # no ranked list: AP 0, still counted
        exact.append(gldv2_ap_at_k(check_names(preds, f"ranked_lists[{q!r}]", sequence=True), sol, k))
    return _exact_result("gldv2", keys, exact, k=k)


def _evaluate_roxford(
    protocol: str, keys: List[Any], lists: List[Any], gts: List[Any], kappas: Tuple[int, ...], strict_revisitop: bool
) -> LandmarkResult:
    """roxford-*: exact AP, revisitop's mP@k and the corrected one."""
    difficulty = protocol.split("-", 1)[1]
    aps: List[Optional[Fraction]] = []
    quirk: Dict[int, List[Optional[Fraction]]] = {kv: [] for kv in kappas}
    fixed: Dict[int, List[Optional[Fraction]]] = {kv: [] for kv in kappas}
    quirk_undefined = False
    for q, ranked, gt in zip(keys, lists, gts):
        positives, junk = roxford_split(roxford_gt(gt, q), difficulty)
        if not positives:
            aps.append(None)
            for kv in kappas:
                quirk[kv].append(None)
                fixed[kv].append(None)
            continue
        ranked = check_names(ranked, f"ranked_lists[{q!r}]", sequence=True)
        positions = revisitop_positions(ranked, positives, junk)
        aps.append(revisitop_ap(positions, len(positives)))
        for kv in kappas:
            fixed[kv].append(corrected_precision_at_k(positions, kv))
            if positions:
                quirk[kv].append(revisitop_precision_at_k(positions, kv))
            elif strict_revisitop:
                raise ValueError(
                    f"query {q!r}: none of its {len(positives)} positives is in its ranked "
                    f"list, and revisitop's mP@k (max() of an empty array) raises there; "
                    "pass strict_revisitop=False to get NaN for that mP@k and the corrected "
                    "mP@k anyway"
                )
            else:
                quirk[kv].append(None)
                quirk_undefined = True
    res = _exact_result(protocol, keys, aps, k=kappas, precision_at_k=quirk, precision_at_k_corrected=fixed)
    for kv in kappas:
        cq = [v for v, c in zip(quirk[kv], res.counted) if c]
        qm = None if (quirk_undefined or not cq) else _mean(cq)
        fm = _mean([v for v, c in zip(fixed[kv], res.counted) if c])
        res.mp_at_k_exact[kv] = qm
        res.mp_at_k[kv] = _as_float(qm)
        res.mp_at_k_corrected_exact[kv] = fm
        res.mp_at_k_corrected[kv] = _as_float(fm)
    return res
