"""trec_eval's measure families, per query, as its doubles (``trec_eval -m FAMILY``).

Each family is a function of one query's ranking as trec_eval sees it (:class:`Ranking`), its
parameters (cut-offs, recall fractions, coefficients) and trec_eval's version, returning the
values it prints for that query in its order.  The arithmetic follows each family's C file of
trec_eval 9.0.8 and 10.0 (spec §13 trec_eval, "Printed values"); where the two versions compute
differently it is said at the family.  :mod:`.measure_sets` names the families, their defaults
and how each is averaged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from retrieval_conformance.reference.protocols.trec import doubles

#: trec_eval's relevance of a retrieved document not in the qrels, and of one in the qrels with a
#: negative grade (in the pool, unjudged): ``RELVALUE_NONPOOL``, ``RELVALUE_UNJUDGED``
NONPOOL = -1
UNJUDGED = -2
#: ``MIN_GEO_MEAN``: the least value whose log the geometric means add
MIN_GEO_MEAN = 0.00001
#: what C's 0.0 / 0.0 gives on x86-64: a NaN with its sign bit set
C_NAN = float("-nan")


def c_div(a: float, b: float) -> float:
    """C's ``a / b`` in doubles: infinite or NaN where Python raises on a zero divisor."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return C_NAN
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


Values = List[Tuple[str, float]]


@dataclass
class Ranking:
    """One query as trec_eval's ``form_res_rels.c`` prepares it.

    ``rels``: the relevance of each retrieved document in rank order (a grade >= 0, or
    :data:`NONPOOL` / :data:`UNJUDGED`); ``levels``: how many documents of the qrels hold each
    grade >= 0; ``level``: the least relevant grade (``-l``)."""

    rels: List[int]
    levels: Dict[int, int]
    level: int
    num_rel: int = field(init=False)
    num_ret: int = field(init=False)
    num_rel_ret: int = field(init=False)

    def __post_init__(self) -> None:
        self.num_rel = sum(n for grade, n in self.levels.items() if grade >= self.level)
        self.num_ret = len(self.rels)
        self.num_rel_ret = sum(1 for r in self.rels if r >= self.level)

    @classmethod
    def of(cls, grades: Sequence[Optional[int]], judged: Mapping[str, int], level: int) -> "Ranking":
        rels = [NONPOOL if g is None else UNJUDGED if g < 0 else int(g) for g in grades]
        levels: Dict[int, int] = {}
        for grade in judged.values():
            if grade >= 0:
                levels[int(grade)] = levels.get(int(grade), 0) + 1
        return cls(rels, levels, level)

    def relevant(self, i: int) -> bool:
        return self.rels[i] >= self.level


def _cut_name(family: str, k) -> str:
    return f"{family}_{k:.2f}" if isinstance(k, float) else f"{family}_{k}"


def _at_cutoffs(q: Ranking, cutoffs: Sequence[int], value: Callable[[int, int], float]) -> List[float]:
    """``value(hits in the top k, k)`` at each cut-off (trec_eval walks the cut-offs ascending)."""
    hits = [0]
    for r in q.rels:
        hits.append(hits[-1] + (r >= q.level))
    return [value(hits[min(k, q.num_ret)], k) for k in cutoffs]


# ------------------------------------------------------------------------------- single values
def num_ret(q: Ranking, params, version) -> Values:
    return [("num_ret", q.num_ret)]


def num_rel(q: Ranking, params, version) -> Values:
    return [("num_rel", q.num_rel)]


def num_rel_ret(q: Ranking, params, version) -> Values:
    return [("num_rel_ret", q.num_rel_ret)]


def num_nonrel_judged_ret(q: Ranking, params, version) -> Values:
    """Retrieved documents judged below the relevance level (``m_num_nonrel_judged_ret.c``)."""
    return [("num_nonrel_judged_ret", sum(1 for r in q.rels if 0 <= r < q.level))]


def map_(q: Ranking, params, version) -> Values:
    return [("map", doubles.average_precision(q.rels, q.level, q.num_rel)[None])]


def gm_map(q: Ranking, params, version) -> Values:
    """``log(max(AP, MIN_GEO_MEAN))``; the mean is ``exp`` of the mean log (``m_gm_map.c``)."""
    return [("gm_map", math.log(max(map_(q, params, version)[0][1], MIN_GEO_MEAN)))]


def bpref(q: Ranking, params, version) -> Values:
    nonrel = sum(n for grade, n in q.levels.items() if grade < q.level)
    return [("bpref", doubles.bpref(q.rels, q.level, q.num_rel, nonrel))]


def gm_bpref(q: Ranking, params, version) -> Values:
    return [("gm_bpref", math.log(max(bpref(q, params, version)[0][1], MIN_GEO_MEAN)))]


def rprec(q: Ranking, params, version) -> Values:
    if not q.num_rel:
        return [("Rprec", 0.0)]
    hits = sum(1 for r in q.rels[: q.num_rel] if r >= q.level)
    return [("Rprec", float(hits) / float(q.num_rel))]


def recip_rank(q: Ranking, params, version) -> Values:
    first = next((i for i in range(q.num_ret) if q.relevant(i)), None)
    return [("recip_rank", 0.0 if first is None else 1.0 / float(first + 1))]


def set_P(q: Ranking, params, version) -> Values:
    return [("set_P", float(q.num_rel_ret) / float(q.num_ret) if q.num_ret else 0.0)]


def set_recall(q: Ranking, params, version) -> Values:
    return [("set_recall", float(q.num_rel_ret) / float(q.num_rel) if q.num_rel else 0.0)]


def set_relative_P(q: Ranking, params, version) -> Values:
    if not (q.num_ret and q.num_rel):
        return [("set_relative_P", 0.0)]
    return [("set_relative_P", float(q.num_rel_ret) / float(min(q.num_ret, q.num_rel)))]


def set_map(q: Ranking, params, version) -> Values:
    if not (q.num_ret and q.num_rel):
        return [("set_map", 0.0)]
    hits = float(q.num_rel_ret)
    return [("set_map", (hits * hits) / (float(q.num_ret) * float(q.num_rel)))]


def set_F(q: Ranking, params, version) -> Values:
    """``(beta + 1) P R / (beta P + R)`` over the retrieved set (``m_set_F.c``; beta = params[0])."""
    if not q.num_rel_ret:
        return [("set_F", 0.0)]
    p = float(q.num_rel_ret) / float(q.num_ret)
    r = float(q.num_rel_ret) / float(q.num_rel)
    beta = float(params[0])
    return [("set_F", (beta + 1.0) * p * r / (beta * p + r))]


def utility(q: Ranking, params, version) -> Values:
    """``a·relret + b·nonrelret + c·relnotret + d·(the rest of the collection)`` (``m_utility.c``;
    trec_eval's collection size is 0 unless ``-N`` is given, as here)."""
    a, b, c, d = (float(p) for p in params)
    rest = 0 + q.num_rel_ret - q.num_ret - q.num_rel
    value = a * q.num_rel_ret + b * (q.num_ret - q.num_rel_ret) + c * (q.num_rel - q.num_rel_ret) + d * rest
    return [("utility", value)]


def _dcg_parts(q: Ranking, params) -> Tuple[float, float]:
    # named parameters (not grades) are no gains: trec_eval's gain_init.c skips them
    gains = {g: float(v) for g, v in params.items() if isinstance(g, int)} if isinstance(params, dict) else None
    judged = {str(i): grade for i, grade in enumerate(g for g, n in q.levels.items() for _ in range(n))}
    return doubles.dcg_and_ideal([r if r >= 0 else None for r in q.rels], judged, gains)


def ndcg(q: Ranking, params, version) -> Values:
    dcg, ideal = _dcg_parts(q, params)
    return [("ndcg", dcg / ideal if ideal > 0.0 else 0.0)]


def dcg(q: Ranking, params, version) -> Values:
    """``dcg`` (trec_eval 10.0): the DCG of ``ndcg`` before it is normalised."""
    return [("dcg", _dcg_parts(q, params)[0])]


def ideal_dcg(q: Ranking, params, version) -> Values:
    """``ideal_dcg`` (trec_eval 10.0): the ideal ranking's DCG."""
    return [("ideal_dcg", _dcg_parts(q, params)[1])]


# ---------------------------------------------------------------------------- cut-off families
def precision(q: Ranking, cutoffs, version) -> Values:
    values = _at_cutoffs(q, cutoffs, lambda hits, k: float(hits) / float(k))
    return [(_cut_name("P", k), v) for k, v in zip(cutoffs, values)]


def recall(q: Ranking, cutoffs, version) -> Values:
    if not q.num_rel:
        return [(_cut_name("recall", k), 0.0) for k in cutoffs]
    values = _at_cutoffs(q, cutoffs, lambda hits, k: float(hits) / float(q.num_rel))
    return [(_cut_name("recall", k), v) for k, v in zip(cutoffs, values)]


def relative_P(q: Ranking, cutoffs, version) -> Values:
    """Hits in the top k over ``min(k, R)`` (``m_rel_P.c``)."""
    if not q.num_rel:
        return [(_cut_name("relative_P", k), 0.0) for k in cutoffs]
    values = _at_cutoffs(q, cutoffs, lambda hits, k: float(hits) / float(min(k, q.num_rel)))
    return [(_cut_name("relative_P", k), v) for k, v in zip(cutoffs, values)]


def success(q: Ranking, cutoffs, version) -> Values:
    values = _at_cutoffs(q, cutoffs, lambda hits, k: 1.0 if hits else 0.0)
    return [(_cut_name("success", k), v) for k, v in zip(cutoffs, values)]


def map_cut(q: Ranking, cutoffs, version) -> Values:
    ap = doubles.average_precision(q.rels, q.level, q.num_rel, cutoffs)
    return [(_cut_name("map_cut", k), ap[k]) for k in cutoffs]


def ndcg_cut(q: Ranking, cutoffs, version) -> Values:
    judged = {str(i): grade for i, grade in enumerate(g for g, n in q.levels.items() for _ in range(n))}
    grades = [r if r >= 0 else None for r in q.rels]
    return [(_cut_name("ndcg_cut", k), doubles.ndcg_cut(grades, judged, k)) for k in cutoffs]


def _recall_points(q: Ranking, fractions: Sequence[float], version: str) -> List[int]:
    """The recall fractions as counts of relevant documents: 10.0 rounds (``lround``), 9.0.8 and
    earlier add 0.9 and truncate, so the two versions can print different values."""
    if version.startswith("9"):
        return [int(f * q.num_rel + 0.9) for f in fractions]
    return [_lround(f * q.num_rel) for f in fractions]


def _lround(x: float) -> int:
    """C's ``lround`` of a number >= 0: halves away from zero (``floor(x + 0.5)`` can round up a
    number just below a half)."""
    whole = int(x)
    return whole + (1 if x - whole >= 0.5 else 0)


def _interpolated(q: Ranking, fractions: Sequence[float], version: str) -> List[float]:
    """Interpolated precision at each recall point: the best precision at or after it, walking
    the ranking backwards as ``m_iprec_at_recall.c`` and ``m_11pt_avg.c`` do."""
    cuts = _recall_points(q, fractions, version)
    out = [0.0] * len(cuts)
    current = len(cuts) - 1
    while current >= 0 and cuts[current] > q.num_rel_ret:
        current -= 1
    # 0/0 is C's NaN (negative on x86), which trec_eval prints as -nan
    best = float(q.num_rel_ret) / float(q.num_ret) if q.num_ret else C_NAN
    so_far = q.num_rel_ret
    i = q.num_ret
    while i > 0 and so_far > 0:
        precision_here = float(so_far) / float(i)
        if best < precision_here:
            best = precision_here
        if q.relevant(i - 1):
            while current >= 0 and so_far == cuts[current]:
                out[current] = best
                current -= 1
            so_far -= 1
        i -= 1
    while current >= 0:
        out[current] = best
        current -= 1
    return out


def iprec_at_recall(q: Ranking, fractions, version) -> Values:
    values = _interpolated(q, fractions, version)
    return [(_cut_name("iprec_at_recall", float(f)), v) for f, v in zip(fractions, values)]


def eleven_point_average(q: Ranking, fractions, version) -> Values:
    """The interpolated precisions added in order of decreasing recall, over their number."""
    total = 0.0
    for value in reversed(_interpolated(q, fractions, version)):
        total += value
    return [("11pt_avg", total / float(len(fractions)))]


def rprec_mult(q: Ranking, fractions, version) -> Values:
    """Precision at ``int(f R + 0.9)`` documents for each multiple f of R (``m_Rprec_mult.c``)."""
    cuts = [int(f * q.num_rel + 0.9) for f in fractions]
    hits = [0]
    for r in q.rels:
        hits.append(hits[-1] + (r >= q.level))
    out = []
    for f, k in zip(fractions, cuts):
        if k > q.num_ret:
            value = float(q.num_rel_ret) / float(k)
        elif k == 0 or hits[k] == 0:
            value = 0.0  # trec_eval's backward walk stops at the first relevant document
        else:
            value = float(hits[k]) / float(k)
        out.append((_cut_name("Rprec_mult", float(f)), value))
    return out


# ------------------------------------------------------------------ judged-sample and pool measures
#: ``INFAP_EPSILON`` of ``m_infap.c``
INFAP_EPSILON = 0.00001


def inf_ap(q: Ranking, params, version) -> Values:
    """``infAP`` (``m_infap.c``): AP estimated from a judged sample of the pool."""
    value = 0.0
    nonrel = rel = unjudged = 0
    for j, r in enumerate(q.rels):
        if r == NONPOOL:
            continue
        if r == UNJUDGED:
            unjudged += 1
            continue
        if 0 <= r < q.level:
            nonrel += 1
            continue
        rel += 1
        if j == 0:
            value += 1.0
        else:
            fj = float(j)
            above = float(rel - 1 + nonrel + unjudged) / fj
            share = (rel - 1 + INFAP_EPSILON) / (rel - 1 + nonrel + 2 * INFAP_EPSILON)
            value += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * above * share
    return [("infAP", value / q.num_rel if q.num_rel else value)]


def bin_g(q: Ranking, params, version) -> Values:
    """``binG`` (``m_binG.c``): each relevant document over ``log2(2 + non-relevant before it)``."""
    total = 0.0
    hits = 0
    for i, r in enumerate(q.rels):
        if r >= q.level:
            hits += 1
            total += 1.0 / math.log2(float(3 + i - hits))
    return [("binG", total / float(q.num_rel) if hits else 0.0)]


def unjudged(q: Ranking, cutoffs, version) -> Values:
    """``unj_k`` (trec_eval 10.0, ``m_unjudged.c``): the top k's documents without a judgment, over k."""
    counts = [0]
    for r in q.rels:
        counts.append(counts[-1] + (r in (NONPOOL, UNJUDGED)))
    return [(_cut_name("unj", k), float(counts[min(k, q.num_ret)]) / float(k)) for k in cutoffs]


def rbp_resid(q: Ranking, params, version) -> Values:
    """``rbp_resid`` (trec_eval 10.0, ``m_rbp_resid.c``): the weight rank-biased precision leaves to
    unjudged documents; its running weight starts where ``m_rbp.c``'s does (1, read uninitialised)."""
    p = float(dict(params or {}).get("p", 0.9))
    total = 0.0
    weight = 1.0
    unjudged_seen = 0
    for r in q.rels:
        if r < 0:
            unjudged_seen += 1
            total += weight
        weight = weight * p
    return [("rbp_resid", weight + (1 - p) * total if unjudged_seen else 0.0)]


def relstring(q: Ranking, params, version) -> Values:
    """``relstring``: the grades of the first n documents (default 10) as characters, quoted: a digit,
    ``>`` above 9, ``-`` outside the pool, ``.`` judged negative (``m_relstring.c``)."""
    n = max(0, min(int(params[0]), q.num_ret))
    chars = "".join(">" if r > 9 else str(r) if r >= 0 else "-" if r == NONPOOL else "." for r in q.rels[:n])
    return [("relstring", f"'{chars}'")]
