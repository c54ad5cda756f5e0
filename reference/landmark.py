"""Landmark-retrieval protocols: Oxford/Paris ``compute_ap``, Revisited Oxford/Paris, GLDv2.

These protocols start from ranked lists of database items (names or indices), not from
distances, and their ground truth is given as sets: so they live beside, not inside, the
distance-based :func:`retrieval_conformance.evaluate`.

Protocols (CONVENTIONS §3, §5, §6, §9)
--------------------------------------
``oxford``
    The VGG ``compute_ap.cpp`` tool of Oxford5k/Paris6k, reproduced to the printed digit by
    :func:`oxford_ap`: positives = set(good ∪ ok), junk skipped, trapezoid AP in float32.
    mAP = mean of the per-query values (NaN if a query has no positive at all).
``roxford-easy``, ``roxford-medium``, ``roxford-hard``
    Revisited Oxford/Paris (revisitop / cirtorch ``compute_map``): Easy = positives easy,
    junk = junk ∪ hard; Medium = positives easy ∪ hard (concatenated, not de-duplicated),
    junk = junk; Hard = positives hard, junk = junk ∪ easy.  Trapezoid AP with exact
    fractions; a query without positives is left out of the mean.  mP@k for k = 1, 5, 10
    both as revisitop computes it (the quirk, :func:`revisitop_precision_at_k`) and
    corrected (:func:`corrected_precision_at_k`).
``gldv2``
    Google Landmarks v2 retrieval, mAP@100 (Kaggle): precision-sum AP@k divided by
    min(k, R), duplicates in a prediction list skipped (they still use their position),
    queries without relevant item left out.

Entry point: :func:`evaluate_landmark`.
"""
from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, Hashable, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = [
    "LANDMARK_PROTOCOLS",
    "LandmarkResult",
    "corrected_precision_at_k",
    "evaluate_landmark",
    "format_cpp_float",
    "gldv2_ap_at_k",
    "normalize_cpp_float_text",
    "oxford_ap",
    "oxford_ap_exact",
    "oxford_ap_float64",
    "revisitop_ap",
    "revisitop_positions",
    "revisitop_precision_at_k",
    "roxford_split",
]

LANDMARK_PROTOCOLS = ("oxford", "roxford-easy", "roxford-medium", "roxford-hard", "gldv2")
ROXFORD_KAPPAS = (1, 5, 10)
GLDV2_K = 100

_F32 = np.float32
_NEG_NAN = math.copysign(math.nan, -1.0)  # the NaN x86 SSE produces for 0.0f / 0.0f


# --------------------------------------------------------------------------- printing
def format_cpp_float(value: Union[float, np.floating]) -> str:
    """Text that ``std::cout << (float)value`` prints with default stream settings.

    A C++ ``float`` goes through ``printf("%.6g")`` as a double: 6 significant digits,
    trailing zeros and a trailing point removed, exponent form when the exponent is < -4
    or >= 6, with at least two exponent digits (``6.96767e-05``; MSVC's old runtime printed
    three, ``6.96767e-005``, see :func:`normalize_cpp_float_text`).  NaN prints as glibc
    does: ``-nan`` when its sign bit is set (the NaN x86 produces for 0/0, and what
    :func:`oxford_ap` returns), ``nan`` otherwise; infinities as ``inf`` / ``-inf``.

    Parameters
    ----------
    value : float
        Rounded to float32 first (that is what a ``float`` variable holds).

    Examples
    --------
    >>> format_cpp_float(0.02376021)
    '0.0237602'
    >>> format_cpp_float(1.0), format_cpp_float(6.967670e-05)
    ('1', '6.96767e-05')
    """
    v = float(value)
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    # CPython's %g and glibc's %g both round the exact binary value correctly (ties to
    # even), so they agree digit for digit on every finite double.
    return "%g" % float(_F32(v))


_WIN_EXPONENT = re.compile(r"e([+-])0(\d\d)$")


def normalize_cpp_float_text(text: str) -> str:
    """Normalise a printed C++ float: strip whitespace, 3-digit MSVC exponents to 2 digits.

    ``"6.96767e-005"`` (old Windows runtime) -> ``"6.96767e-05"`` (glibc); other text is
    returned stripped and unchanged.
    """
    return _WIN_EXPONENT.sub(r"e\1\2", text.strip())


# --------------------------------------------------------------------------- helpers
def _check_names(value: Any, what: str, *, sequence: bool) -> List[Hashable]:
    """Validate a list of names (str, bytes, ints ...); a bare str is refused."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of names, not a single {type(value).__name__}")
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ValueError(f"{what} must be 1-D, got an array of shape {value.shape}")
        return value.tolist()
    if sequence and not isinstance(value, Sequence):
        raise TypeError(f"{what} must be a sequence (list, tuple, 1-D array) of names, "
                        f"got {type(value).__name__}")
    try:
        out = list(value)
    except TypeError:
        raise TypeError(
            f"{what} must be an iterable of names, got {type(value).__name__}") from None
    for item in out:
        try:
            hash(item)
        except TypeError:
            raise TypeError(f"{what} holds an unhashable item of type {type(item).__name__}; "
                            "names must be str, bytes or ints") from None
    return [x.item() if isinstance(x, np.generic) else x for x in out]


# --------------------------------------------------------------------------- oxford
def oxford_ap(ranked: Sequence[Hashable], good: Iterable[Hashable], ok: Iterable[Hashable],
              junk: Iterable[Hashable]) -> float:
    """AP of one query exactly as the VGG ``compute_ap.cpp`` computes and prints it.

    Trapezoid AP over the ranked list with junk removed, in the program's float32
    arithmetic.  With P = set(good ∪ ok) (de-duplicated), h_r the hits among the first r
    non-junk names, recall_r = h_r / |P| and precision_r = h_r / r (precision_0 = 1):

        AP = Σ_r (recall_r − recall_{r−1}) · (precision_{r−1} + precision_r) / 2

    evaluated with the C++ promotions: ``recall`` is a float quotient, ``precision`` a
    double quotient rounded to float, ``recall − old_recall`` and ``old_precision +
    precision`` are float operations, the halving, the product and the running sum are
    double, and the sum is rounded to float at every step.  So
    ``format_cpp_float(oxford_ap(...))`` equals the program's output, digit for digit.

    Edge cases, as the program: a junk name is skipped first, even when it is also a
    positive (it still counts in |P|, so AP < 1); a name ranked twice counts twice (AP > 1
    is possible); names compare exactly (``"a\\r"`` is not ``"a"``, ``""`` is a name); an
    empty P gives NaN (printed ``-nan``; the sign bit is set, as the x86 0/0 result) when
    any non-junk name is ranked, and 0 otherwise.

    Differences from exact arithmetic: the float32 value differs from the same loop in
    float64 (:func:`oxford_ap_float64`) and from the exact rational value
    (:func:`oxford_ap_exact`) by float32 rounding only.  Non-hits add an exact zero; each of
    the G hits rounds the running sum once (at most 2^-24 of it, relative) and its term
    (recall and precision roundings, which mostly cancel because the recall differences
    telescope).  So the error is at most about G · 2^-24 · max(AP, 1) and in practice far
    smaller, since the roundings partly cancel: below 2.1e-7 on all 605 real Oxford5k lists
    (Oxford5k/Paris6k queries have at most 221/289 positives), below 1e-6 on every
    generated case with AP <= 1 and up to 1,000 hits (CONVENTIONS §5 reports 6.5e-7), but
    6e-6 for a 5,000-item list with 2,500 hits, where the many similar additions round the
    same way.  Values above 1 (names ranked repeatedly) carry the same *relative* error.
    The printed six digits hide most of this, not all: a float64 port prints a different
    last digit on 10 of the 605 real lists, which is why the float32 value is the protocol.

    Parameters
    ----------
    ranked : sequence of names
        The ranked list, best first, as read (see ``readers.read_ranked_list``).
    good, ok, junk : iterables of names
        Ground-truth lists (duplicates allowed).

    Returns
    -------
    float
        The float32 result as a Python float (exactly representable in float32).
    """
    ranked = _check_names(ranked, "ranked", sequence=True)
    positives = set(_check_names(good, "good", sequence=False))
    positives.update(_check_names(ok, "ok", sequence=False))
    junk_set = set(_check_names(junk, "junk", sequence=False))

    if not positives:
        # recall = 0 / 0.0f is NaN at the first non-junk name and poisons the sum
        return _NEG_NAN if any(name not in junk_set for name in ranked) else 0.0

    n_pos = _F32(len(positives))  # (float)pos.size()
    ap = _F32(0.0)
    hits = 0
    rank = 0  # non-junk names before the current one (the C++ `j`)
    for name in ranked:
        if name in junk_set:
            continue
        if name in positives:
            hits += 1
            # A non-hit step leaves recall unchanged, so its trapezoid term is exactly
            # +0.0 and ap + 0.0 rounds back to ap: only hit steps change the sum.  The
            # previous rank's values are recomputed with the very same operations the
            # program used when it stored them.
            old_recall = _F32(hits - 1) / n_pos
            old_precision = _F32(1.0) if rank == 0 else _F32((hits - 1) / (rank + 0.0))
            recall = _F32(hits) / n_pos                      # float / float
            precision = _F32(hits / (rank + 1.0))            # double quotient -> float
            d_recall = recall - old_recall                   # float
            p_sum = old_precision + precision                # float
            ap = _F32(float(ap) + float(d_recall) * (float(p_sum) / 2.0))  # double, -> float
        rank += 1
    return float(ap)


def oxford_ap_float64(ranked: Sequence[Hashable], good: Iterable[Hashable],
                      ok: Iterable[Hashable], junk: Iterable[Hashable]) -> float:
    """The same loop as :func:`oxford_ap` with every variable a double (a "float64 port").

    Used to document how far float32 moves the result; NaN (sign bit set) and 0 as
    :func:`oxford_ap` for an empty positive set.
    """
    ranked = _check_names(ranked, "ranked", sequence=True)
    positives = set(_check_names(good, "good", sequence=False))
    positives.update(_check_names(ok, "ok", sequence=False))
    junk_set = set(_check_names(junk, "junk", sequence=False))
    if not positives:
        return _NEG_NAN if any(name not in junk_set for name in ranked) else 0.0
    n_pos = float(len(positives))
    ap, old_recall, old_precision, hits, rank = 0.0, 0.0, 1.0, 0, 0
    for name in ranked:
        if name in junk_set:
            continue
        if name in positives:
            hits += 1
        recall = hits / n_pos
        precision = hits / (rank + 1.0)
        ap += (recall - old_recall) * ((old_precision + precision) / 2.0)
        old_recall, old_precision = recall, precision
        rank += 1
    return ap


def oxford_ap_exact(ranked: Sequence[Hashable], good: Iterable[Hashable],
                    ok: Iterable[Hashable], junk: Iterable[Hashable]) -> Optional[Fraction]:
    """The exact rational value of the Oxford trapezoid AP (same semantics, no rounding).

        AP = (1/|P|) Σ_{hits at non-junk rank r, the i-th hit} ((i−1)/(r−1) + i/r) / 2

    with (i−1)/(r−1) := 1 at r = 1.  Returns None where the program gives NaN (empty P and
    something non-junk ranked), ``Fraction(0)`` when nothing non-junk is ranked.
    """
    ranked = _check_names(ranked, "ranked", sequence=True)
    positives = set(_check_names(good, "good", sequence=False))
    positives.update(_check_names(ok, "ok", sequence=False))
    junk_set = set(_check_names(junk, "junk", sequence=False))
    if not positives:
        return None if any(name not in junk_set for name in ranked) else Fraction(0)
    total = Fraction(0)
    hits = rank = 0
    for name in ranked:
        if name in junk_set:
            continue
        rank += 1
        if name in positives:
            hits += 1
            prev = Fraction(1) if rank == 1 else Fraction(hits - 1, rank - 1)
            total += (prev + Fraction(hits, rank)) / 2
    return total / len(positives)


# --------------------------------------------------------------------------- revisitop
def revisitop_positions(ranked: Sequence[Hashable], positives: Iterable[Hashable],
                        junk: Iterable[Hashable]) -> List[int]:
    """0-based positions of the positives after junk removal, as revisitop computes them.

    revisitop marks every ranked item that is in the positive list and every ranked item
    that is in the junk list (membership, like ``np.isin``), then moves each positive up
    by the number of junk items strictly before it.  An item that is both positive and
    junk is therefore kept as a positive, and it still shifts the later positives (two
    positives can share a position, and AP can exceed 1).  An item ranked twice is found
    twice.

    Returns
    -------
    list of int
        Non-decreasing positions, one per ranked occurrence of a positive.
    """
    ranked = _check_names(ranked, "ranked", sequence=True)
    pos_set = set(_check_names(positives, "positives", sequence=False))
    junk_set = set(_check_names(junk, "junk", sequence=False))
    junk_at = [i for i, name in enumerate(ranked) if name in junk_set]
    return [i - bisect_left(junk_at, i) for i, name in enumerate(ranked) if name in pos_set]


def _check_positions(positions: Sequence[int]) -> List[int]:
    out = []
    for p in positions:
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, np.integer)):
            raise TypeError(f"positions must be ints, got {type(p).__name__}")
        if p < 0:
            raise ValueError(f"positions must be >= 0 (0-based), got {p}")
        out.append(int(p))
    return out


def revisitop_ap(positions: Sequence[int], n_positives: int) -> Fraction:
    """revisitop / cirtorch ``compute_ap`` in exact arithmetic.

    With r_j the 0-based position of the j-th found positive (j = 0, 1, ...; after junk
    removal, see :func:`revisitop_positions`) and n the number of positives:

        AP = (1/n) Σ_j ( p0_j + (j+1)/(r_j+1) ) / 2,   p0_j = 1 if r_j = 0 else j / r_j

    the trapezoid between the precision at the previous rank and at this one.  n is the
    length of the positive LIST (revisitop does not de-duplicate: Medium concatenates easy
    and hard), so positives missing from the ranking simply lower AP.

    Parameters
    ----------
    positions : sequence of int
        0-based positions (non-decreasing).
    n_positives : int
        Must be >= 1 (revisitop gives NaN and leaves the query out before calling this).
    """
    pos = _check_positions(positions)
    if isinstance(n_positives, bool) or not isinstance(n_positives, (int, np.integer)):
        raise TypeError(f"n_positives must be an int, got {type(n_positives).__name__}")
    if n_positives < 1:
        raise ValueError(f"n_positives must be >= 1, got {n_positives} "
                         "(a query without positives is left out of the mean)")
    total = Fraction(0)
    for j, r in enumerate(pos):
        p0 = Fraction(1) if r == 0 else Fraction(j, r)
        total += (p0 + Fraction(j + 1, r + 1)) / 2
    return total / int(n_positives)


def revisitop_precision_at_k(positions: Sequence[int], k: int) -> Fraction:
    """revisitop's mP@k per query, quirk included.

    revisitop takes k_q = min(k, position of the LAST found positive) (1-based) and returns
    (found positives at position <= k_q) / k_q.  So two positives at ranks 1 and 2 give
    P@10 = 2/2 = 1, not 2/10: the value is precision at the last positive when that comes
    before k.  With no positive found in the ranking, revisitop's ``max()`` of an empty
    array raises ``ValueError``; this function raises ``ValueError`` too.

    See :func:`corrected_precision_at_k` for P@k.
    """
    pos = _check_positions(positions)
    k = _check_k(k, "k")
    if not pos:
        raise ValueError(
            "revisitop's mP@k is undefined when no positive is ranked: it takes "
            "max() of an empty array and raises (use corrected_precision_at_k for P@k)")
    one_based = [p + 1 for p in pos]
    kq = min(max(one_based), k)
    return Fraction(sum(1 for p in one_based if p <= kq), kq)


def corrected_precision_at_k(positions: Sequence[int], k: int) -> Fraction:
    """P@k after junk removal: (found positives at 1-based position <= k) / k.

    Same positions as revisitop (:func:`revisitop_positions`); only the denominator
    differs from :func:`revisitop_precision_at_k`: always k, and 0 when nothing is found.
    """
    pos = _check_positions(positions)
    k = _check_k(k, "k")
    return Fraction(sum(1 for p in pos if p + 1 <= k), k)


_ROXFORD_DIFFICULTY = ("easy", "medium", "hard")


def roxford_split(gt: Mapping, difficulty: str) -> Tuple[List[Hashable], List[Hashable]]:
    """Positive and junk lists of one revisitop query for a difficulty (CONVENTIONS §3).

    Easy: positives = easy, junk = junk + hard.  Medium: positives = easy + hard, junk =
    junk.  Hard: positives = hard, junk = junk + easy.  Lists are concatenated as revisitop
    does (no de-duplication).  ``junk`` may be missing (revisitop then uses an empty list).
    """
    if difficulty not in _ROXFORD_DIFFICULTY:
        raise ValueError(f"difficulty must be one of {_ROXFORD_DIFFICULTY}, got {difficulty!r}")
    if not isinstance(gt, Mapping):
        raise TypeError(f"ground truth must be a mapping with 'easy', 'hard', 'junk', "
                        f"got {type(gt).__name__}")
    for key in ("easy", "hard"):
        if key not in gt:
            raise ValueError(f"revisitop ground truth needs {key!r} (has {sorted(map(str, gt))})")
    easy = _check_names(gt["easy"], "easy", sequence=False)
    hard = _check_names(gt["hard"], "hard", sequence=False)
    junk = _check_names(gt.get("junk", []), "junk", sequence=False)
    if difficulty == "easy":
        return easy, junk + hard
    if difficulty == "medium":
        return easy + hard, junk
    return hard, junk + easy


# --------------------------------------------------------------------------- gldv2
def gldv2_ap_at_k(predictions: Sequence[Hashable], solution: Sequence[Hashable],
                  k: int = GLDV2_K) -> Fraction:
    """GLDv2 / Kaggle retrieval AP@k of one query, exact.

        AP@k = (1 / min(k, |solution|)) Σ_{i <= k, prediction i relevant and new} hits_i / i

    Only the first k predictions are read; a prediction already seen earlier in the list is
    skipped (it still occupies its position i).  |solution| is the length of the solution
    list as given.

    Raises
    ------
    ValueError
        When the solution is empty (GLDv2 leaves such queries out).
    """
    preds = _check_names(predictions, "predictions", sequence=True)
    sol_list = _check_names(solution, "solution", sequence=False)
    k = _check_k(k, "k")
    if not sol_list:
        raise ValueError("the solution is empty: GLDv2 leaves queries without relevant "
                         "index images out of the mean")
    sol = set(sol_list)
    seen = set()
    hits = 0
    total = Fraction(0)
    for i, name in enumerate(preds[:k], start=1):
        if name in seen:
            continue
        seen.add(name)
        if name in sol:
            hits += 1
            total += Fraction(hits, i)
    return total / min(k, len(sol_list))


# --------------------------------------------------------------------------- entry point
def _check_k(k: Any, what: str) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{what} must be a positive int, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"{what} must be >= 1, got {k}")
    return int(k)


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


def _pair_inputs(ranked_lists: Any, ground_truth: Any, protocol: str
                 ) -> Tuple[List[Any], List[Any], List[Any]]:
    """(query keys, ranked lists or None, gt) aligned, with clear errors."""
    if isinstance(ground_truth, Mapping):
        if not isinstance(ranked_lists, Mapping):
            raise TypeError("ground_truth is a mapping (query -> gt), so ranked_lists must be "
                            "a mapping too (query -> ranked list), got "
                            f"{type(ranked_lists).__name__}")
        keys = list(ground_truth)
        extra = [q for q in ranked_lists if q not in ground_truth]
        if extra:
            raise ValueError(f"ranked_lists has queries not in ground_truth: {extra[:5]!r}"
                             + (" ..." if len(extra) > 5 else ""))
        missing = [q for q in keys if q not in ranked_lists]
        if missing and protocol != "gldv2":
            raise ValueError(f"ranked_lists lacks queries of ground_truth: {missing[:5]!r}"
                             + (" ..." if len(missing) > 5 else ""))
        return keys, [ranked_lists.get(q) for q in keys], [ground_truth[q] for q in keys]
    if isinstance(ground_truth, (str, bytes)) or not isinstance(ground_truth, Sequence):
        raise TypeError("ground_truth must be a mapping (query -> gt) or a sequence with one "
                        f"entry per query, got {type(ground_truth).__name__}")
    if isinstance(ranked_lists, Mapping):
        raise TypeError("ranked_lists is a mapping but ground_truth is a sequence: "
                        "pass both as mappings keyed by query, or both as sequences")
    if isinstance(ranked_lists, np.ndarray):
        if ranked_lists.ndim != 2:
            raise ValueError("ranked_lists as an array must be 2-D (queries x ranked items), "
                             f"got shape {ranked_lists.shape}")
        ranked_lists = list(ranked_lists)
    if isinstance(ranked_lists, (str, bytes)) or not isinstance(ranked_lists, Sequence):
        raise TypeError("ranked_lists must be a mapping or a sequence of ranked lists, "
                        f"got {type(ranked_lists).__name__}")
    if len(ranked_lists) != len(ground_truth):
        raise ValueError(
            f"ranked_lists has {len(ranked_lists)} lists but ground_truth has "
            f"{len(ground_truth)} queries (one ranked list per query, rows = queries; "
            "revisitop's `ranks` array is (n_db, n_queries): pass ranks.T)")
    n = len(ground_truth)
    return list(range(n)), list(ranked_lists), list(ground_truth)


def _oxford_gt(gt: Any, q: Any) -> Tuple[list, list, list]:
    if hasattr(gt, "as_dict") and not isinstance(gt, Mapping):
        gt = gt.as_dict()
    if not isinstance(gt, Mapping):
        raise TypeError(f"ground_truth[{q!r}] must be a mapping with 'good', 'ok', 'junk' "
                        f"(or a readers.GroundTruthQuery), got {type(gt).__name__}")
    if "good" not in gt and "ok" not in gt:
        hint = (" (it looks like revisitop ground truth: use protocol='roxford-easy', "
                "'roxford-medium' or 'roxford-hard')" if "easy" in gt else "")
        raise ValueError(f"ground_truth[{q!r}] needs 'good' and/or 'ok' lists{hint}")
    return (gt.get("good", []), gt.get("ok", []), gt.get("junk", []))


def _mean(values: List[Fraction]) -> Optional[Fraction]:
    return sum(values, Fraction(0)) / len(values) if values else None


def _as_float(value: Optional[Fraction]) -> float:
    return math.nan if value is None else float(value)


def evaluate_landmark(ranked_lists: Any, ground_truth: Any, protocol: str = "oxford",
                      k: Union[int, Sequence[int], None] = None, *,
                      strict_revisitop: bool = True) -> LandmarkResult:
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
    keys, lists, gts = _pair_inputs(ranked_lists, ground_truth, protocol)
    if not keys:
        raise ValueError("ground_truth holds no query")
    n = len(keys)

    if protocol == "oxford":
        if k is not None:
            raise ValueError("k: the oxford protocol (compute_ap) has no cut-off; pass k=None")
        values, printed = [], []
        for q, ranked, gt in zip(keys, lists, gts):
            good, ok, junk = _oxford_gt(gt, q)
            ranked = _check_names(ranked, f"ranked_lists[{q!r}]", sequence=True)
            v = oxford_ap(ranked, good, ok, junk)
            values.append(v)
            printed.append(format_cpp_float(v))
        ap = np.asarray(values, dtype=np.float64)
        mean = math.nan if np.isnan(ap).any() else math.fsum(values) / n
        return LandmarkResult(protocol=protocol, queries=keys, ap=ap, map=mean,
                              counted=np.ones(n, dtype=bool), ap_exact=[None] * n,
                              map_exact=None, printed=printed)

    if protocol == "gldv2":
        kk = GLDV2_K if k is None else _check_k(k, "k")
        exact: List[Optional[Fraction]] = []
        for q, ranked, gt in zip(keys, lists, gts):
            if isinstance(gt, Mapping):
                raise TypeError(f"ground_truth[{q!r}] for gldv2 must be the list of relevant "
                                "index images, got a mapping")
            sol = _check_names(gt, f"ground_truth[{q!r}]", sequence=False)
            if not sol:
                exact.append(None)  # left out
                continue
            preds = [] if ranked is None else ranked
            exact.append(gldv2_ap_at_k(
                _check_names(preds, f"ranked_lists[{q!r}]", sequence=True), sol, kk))
        counted = np.array([e is not None for e in exact], dtype=bool)
        m = _mean([e for e in exact if e is not None])
        return LandmarkResult(protocol=protocol, queries=keys,
                              ap=np.array([_as_float(e) for e in exact], dtype=np.float64),
                              map=_as_float(m), counted=counted, ap_exact=exact, map_exact=m,
                              k=kk)

    # roxford-easy / -medium / -hard
    difficulty = protocol.split("-", 1)[1]
    if k is None:
        kappas: Tuple[int, ...] = ROXFORD_KAPPAS
    elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
        kappas = (_check_k(k, "k"),)
    else:
        if isinstance(k, (str, bytes)) or not isinstance(k, Iterable):
            raise TypeError(f"k must be an int or a sequence of ints, got {type(k).__name__}")
        kappas = tuple(_check_k(v, "k") for v in k)
        if not kappas:
            raise ValueError("k: give at least one cut-off for mP@k")
    aps: List[Optional[Fraction]] = []
    quirk: Dict[int, List[Optional[Fraction]]] = {kv: [] for kv in kappas}
    fixed: Dict[int, List[Optional[Fraction]]] = {kv: [] for kv in kappas}
    quirk_undefined = False
    for q, ranked, gt in zip(keys, lists, gts):
        if not isinstance(gt, Mapping):
            raise TypeError(f"ground_truth[{q!r}] must be a mapping with 'easy', 'hard' and "
                            f"'junk' (revisitop's gnd entry), got {type(gt).__name__}")
        positives, junk = roxford_split(gt, difficulty)
        if not positives:
            aps.append(None)
            for kv in kappas:
                quirk[kv].append(None)
                fixed[kv].append(None)
            continue
        ranked = _check_names(ranked, f"ranked_lists[{q!r}]", sequence=True)
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
                    "mP@k anyway")
            else:
                quirk[kv].append(None)
                quirk_undefined = True
    counted = np.array([a is not None for a in aps], dtype=bool)
    m = _mean([a for a in aps if a is not None])
    res = LandmarkResult(protocol=protocol, queries=keys,
                         ap=np.array([_as_float(a) for a in aps], dtype=np.float64),
                         map=_as_float(m), counted=counted, ap_exact=aps, map_exact=m,
                         k=kappas, precision_at_k=quirk, precision_at_k_corrected=fixed)
    for kv in kappas:
        cq = [v for v, c in zip(quirk[kv], counted) if c]
        qm = None if (quirk_undefined or not cq) else _mean(cq)
        fm = _mean([v for v, c in zip(fixed[kv], counted) if c])
        res.mp_at_k_exact[kv] = qm
        res.mp_at_k[kv] = _as_float(qm)
        res.mp_at_k_corrected_exact[kv] = fm
        res.mp_at_k_corrected[kv] = _as_float(fm)
    return res

