"""What a candidate predicts a function returns on an input: every field of every call, exactly.

A prediction is an interval ``(lo, hi)`` of exact values per field (a point when ``lo == hi``;
the ``unstable`` tie candidate spans the extreme tie orders), or ``None`` where the candidate
leaves the value undefined (no query is counted), which compares nothing.

Flow for one call: the case (possibly transformed by a bug: descending order, exact-label
relevance) -> the cut-off the function effectively uses (the call's k, or none when it ignores
k, or N - 1 when it drops the last item) -> per-query values from the exact reference under each
concrete tie order (:class:`Table`) -> per-query bugs (divided by k, 0-based ranks, previous-hit
trapezoid) -> envelope over tie orders -> the adapter's fields (mean under the empty-query
policy, the first query only, percent).
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from typing import Any, Collection, Dict, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.adapters.base import Call, Reading
from retrieval_conformance.conformance.harness.candidates import rank_bugs
from retrieval_conformance.conformance.harness.candidates.bugs import Bug
from retrieval_conformance.conformance.harness.candidates.candidate import UNSTABLE, Candidate
from retrieval_conformance.conformance.harness.candidates.reference_values import Convention, ReferenceCache
from retrieval_conformance.conformance.harness.candidates.tables import Interval, Table, _envelope, _point, _rank_sum
from retrieval_conformance.conformance.harness.engine.composite import Composite, field_of, predict_composite
from retrieval_conformance.conformance.harness.inputs.public import Case
from retrieval_conformance.reference.contract.conventions import CONCRETE_POLICIES

#: the orders an "unstable" sort's values lie between: every concrete tie policy
EXTREME_ORDERS = CONCRETE_POLICIES
#: per-query values besides AP, CMC and INP, by their name in a table: the reference's field
#: (``p1`` is ``cmc[0]``, precision at 1)
EXTRA = {"ndcg": "ndcg", "rr": "rr", "ap_at_r": "ap_at_r", "r_precision": "r_precision", "recall": "recall_at_k"}
#: the bugs modelled per query by :mod:`.rank_bugs`: id -> (the value it replaces, its model,
#: whether the hit in the top k is read from the same ranking: a value > 0 is a hit)
MODELS = {
    "ndcg-ideal-from-retrieved": ("ndcg", rank_bugs.ndcg_ideal_from_retrieved, False),
    "mrr-counting-junk": ("rr", rank_bugs.rr_counting_junk, True),
}


class Predictor:
    """Predictions of candidates on evaluated inputs, with everything computed once."""

    def __init__(
        self,
        cache: ReferenceCache,
        adapter_name: str,
        per_query: bool,
        fields: Optional[Dict[str, str]] = None,
        reads_cmc: bool = False,
    ):
        self.cache = cache
        self.adapter_name = adapter_name
        #: the function also returns a CMC curve and mINP (``Adapter.reads_cmc``)
        self.reads_cmc = reads_cmc
        self.per_query = per_query
        #: the adapter's fields -> the per-query value each is the mean of (``mAP`` -> ``ap``)
        self.fields = fields or {("AP" if per_query else "mAP"): "ap"}
        self._cases: Dict[Tuple[int, str], Case] = {}
        self._tables: Dict[Tuple, Optional[Table]] = {}
        self._kept_counts: Dict[Tuple[int, str], List[int]] = {}
        #: predictions per (candidate, input, call, CMC length): elimination asks the same ones
        #: round after round; the entry holds the case and call so that their ids stay theirs
        self._predictions: Dict[Tuple, Tuple[Any, Any, Optional[Dict[str, Any]]]] = {}

    # -- the input a buggy function effectively sees ----------------------------------------
    def _case(self, case: Case, cand: Candidate, ties: Optional[str] = None) -> Case:
        """The input as ``cand``'s bugs make the function see it; ``ties``: the concrete order that
        decides which item a bug finds first (default: the candidate's)."""
        out = case
        ties = ties or cand.conv.ties
        # what the function reads (its order, relevance, junk) first, then the item its ranking drops
        for b in sorted(cand.bugs, key=lambda b: b.sees_in_order is not None):
            if b.sees_in_order is not None:  # which item a tie order puts first is the bug's business
                base = cand.conv.base if out.ids is not None else None
                key = (id(out), b.id, base, ties)
                if key not in self._cases:
                    self._cases[key] = b.sees_in_order(self._explicit_junk(out, base) if base else out, ties)
                out = self._cases[key]
            if b.sees is not None:
                base = cand.conv.base if self._base_junk(b, out) else None
                key = (id(out), b.id, base)
                if key not in self._cases:
                    self._cases[key] = b.sees(self._explicit_junk(out, base) if base else out)
                out = self._cases[key]
        return out

    @staticmethod
    def _base_junk(b: Bug, case: Case) -> bool:
        """Whether the bug acts on junk that follows from ids and cameras (ReID-native inputs):
        which items are junk then depends on the candidate's protocol."""
        return "junk" in b.requires and case.ids is not None

    def _explicit_junk(self, case: Case, base: str) -> Case:
        """The case with the junk that ``base``'s rules give as an explicit mask (no ids)."""
        relevance, junk = self.cache.effective(case, base)
        return replace(case, relevance=relevance, junk=junk, ids=None, codes=None, golden=None)

    def _kept(self, case: Case, base: str) -> List[int]:
        """Non-junk gallery items per query (asked once per input, not per candidate)."""
        key = (id(case), base)
        if key not in self._kept_counts:
            _, junk = self.cache.effective(case, base)
            self._kept_counts[key] = [case.n_gallery - int(row.sum()) for row in junk]
        return self._kept_counts[key]

    # -- per-query values -----------------------------------------------------------------
    def _table(
        self, case: Case, conv: Convention, k: Optional[int], max_rank: int, cand: Candidate, k_div: Optional[int]
    ) -> Optional[Table]:
        rank_bug = next((b for b in cand.bugs if b.rank_sum is not None), None)
        divided = any(b.id == "divided-by-k" for b in cand.bugs)
        models = tuple(sorted(b.id for b in cand.bugs if b.id in MODELS))
        key = (id(case), conv, k, max_rank, rank_bug.id if rank_bug else None, k_div if divided else None, models)
        if key in self._tables:
            return self._tables[key]
        self._tables[key] = table = self._compute_table(
            case, conv, k, max_rank, rank_bug, k_div if divided else None, models
        )
        return table

    def _compute_table(self, case, conv, k, max_rank, rank_bug, k_div, models=()) -> Optional[Table]:
        n_q = case.n_queries
        if k is not None and k < 1:  # gnd[0:-1] of a one-item gallery: nothing is ranked
            zero = _point(Fraction(0))
            return Table(
                [zero] * n_q,
                [[zero] * max_rank for _ in range(n_q)],
                [zero] * n_q,
                [0] * n_q,
                [0.0] * n_q,
                {name: [zero] * n_q for name in (*EXTRA, "p1")},
            )
        pq, options = self.cache.per_query(case, conv.with_(ap_at_k="r") if k_div else conv, k, max_rank)
        if pq is None:
            return None  # this convention has no value here (grouped ties cut inside a group)
        ex = pq.exact
        R = [int(r) for r in pq.n_relevant]
        ap: List[Any] = list(ex["ap"])
        if k_div:
            # AP@k under "r" is (sum of precisions at the hits in the top k) / R
            ap = [a * r / k_div for a, r in zip(ap, R)]
        if rank_bug is not None:
            ranks = self.cache.ranks(case, conv)
            if ranks is None:
                return None
            new = [_rank_sum(rk, R[q], k, conv.ap_at_k, k_div, rank_bug) for q, rk in enumerate(ranks)]
            ap = new
        extra = {name: [_point(v) for v in ex[source]] for name, source in EXTRA.items()}
        if rank_bug is not None:  # MAP@R sums the same buggy terms, over the ranks up to R
            extra["ap_at_r"] = [_point(_rank_sum(rk, R[q], R[q], "r", None, rank_bug)) for q, rk in enumerate(ranks)]
        if conv.recall == "capped" and k is not None:
            # the reference gave H(k) / R: H(k) / min(R, k) is that times R / min(R, k)
            extra["recall"] = [_point(v * r / min(r, k)) if r else _point(v) for v, r in zip(ex["recall_at_k"], R)]
        extra["p1"] = [_point(row[0]) for row in ex["cmc"]]
        hits = [float(h) for h in pq.hits_at_k]
        for bug_id in models:
            name, model, decides_hit = MODELS[bug_id]
            values = model(self.cache, case, conv, k)
            if values is None:
                return None
            extra[name] = [_point(v) for v in values]
            if decides_hit:  # e.g. junk kept in the ranking: a hit behind junk is none (skip_no_hit, first-hit)
                hits = [float(v > 0) for v in values]
        return Table(
            [_point(a) for a in ap],
            [[_point(c) for c in row] for row in ex["cmc"]],
            [_point(v) for v in ex["inp"]],
            R,
            hits,
            extra,
        )

    def tables(self, cand: Candidate, case: Case, call: Call, max_rank: int) -> Optional[Table]:
        """The enveloped per-query values for ``call`` (None: the candidate has no value)."""
        given = case
        case = self._case(case, cand)
        k = call.k
        bug_ids = {b.id for b in cand.bugs}
        if "topk-ignored" in bug_ids:
            k = None
        no_k_passed = call.k is None and (call.without_k or call.k_passed is None)
        if "last-item-dropped" in bug_ids and no_k_passed:
            # no cut-off passed: the function's own "all" (topk=-1, gnd[0:-1]) stands
            k = case.n_gallery - 1
        default = next((int(b.variant) for b in cand.bugs if b.id == "default-cutoff"), None)
        if default is not None and no_k_passed:
            k = default  # no cut-off passed: the function's own default k stands
        k_div = None
        if "divided-by-k" in bug_ids:
            own = default if default is not None and no_k_passed else None
            k_div = call.k_passed if call.k_passed is not None else (call.k or own or case.n_gallery)
        tables = []
        for first, t in _orders(cand):
            seen = case if first == cand.conv.ties else self._case(given, cand, first)
            tab = self._table(seen, cand.conv.with_(ties=t), k, max_rank, cand, k_div)
            if tab is None:
                return None
            tables.append(tab)
        # the divisor counts the hits in the top k only under "hits" (divided-by-k divides by k)
        by_hits = k is not None and cand.conv.ap_at_k == "hits" and k_div is None
        rank_bug = any(b.rank_sum is not None for b in cand.bugs)
        return _envelope(tables, hits_denominator=by_hits, unbounded=rank_bug)

    # -- the adapter's fields ---------------------------------------------------------------
    def predict(
        self, cand: Candidate, case: Case, call: Call, cmc_len: Optional[int] = None
    ) -> Optional[Dict[str, Any]]:
        """Field -> interval (or None: undefined) for one call; None when the candidate has no value.

        ``cand`` may be a :class:`~..engine.composite.Composite`: each field under its own candidate.
        """
        key = (cand, id(case), id(call), cmc_len)
        hit = self._predictions.get(key)
        if hit is not None:
            return hit[2]
        pred = self._predict(cand, case, call, cmc_len)
        self._predictions[key] = (case, call, pred)
        return pred

    def _predict(self, cand: Candidate, case: Case, call: Call, cmc_len: Optional[int]) -> Optional[Dict[str, Any]]:
        if isinstance(cand, Composite):
            return predict_composite(self.predict, cand, case, call, cmc_len)
        max_rank = max(call.max_rank, cmc_len or 0)
        tab = self.tables(cand, case, call, max_rank)
        if tab is None:
            return None
        conv = cand.conv
        n_q = len(tab.ap)
        if any(b.id == "empty-scores-one" for b in cand.bugs):
            tab = _empty_scores_one(tab)
            counted = [True] * n_q
        elif conv.empty == "skip":
            counted = [r > 0 for r in tab.n_relevant]
        elif conv.empty == "skip_no_hit":
            if any(math.isnan(h) for h in tab.hits):
                return {}  # which queries count depends on the tie order: compare nothing
            counted = [h > 0 for h in tab.hits]
        else:
            counted = [True] * n_q
        if any(b.id == "cut-at-r" for b in cand.bugs):
            tab = Table(tab.extra["ap_at_r"], tab.cmc, tab.inp, tab.n_relevant, tab.hits, tab.extra)
        scale = output_scale(cand.bugs)
        if self.per_query:
            q = call.query
            return {
                name: _scale(tab.values(source)[q], scale) if counted[q] else None
                for name, source in self.fields.items()
            }
        first = next((b for b in cand.bugs if b.id == "first-query-only"), None)
        out: Dict[str, Any] = {}
        if first is not None:
            which, how = first.variant.split(",")
            if which == "first-hit" and any(math.isnan(h) for h in tab.hits):
                return {}  # which query has the first hit depends on the tie order: compare nothing
            cond = {
                "first": [True] * n_q,
                "first-relevant": [r > 0 for r in tab.n_relevant],
                "first-hit": [h > 0 for h in tab.hits],
            }[which]
            for name, source in self.fields.items():
                if not any(cond):  # the loop never reaches its `break`: nothing was added
                    out[name] = _point(Fraction(0))
                    continue
                lo, hi = tab.values(source)[cond.index(True)]
                out[name] = _scale((lo / n_q, hi / n_q) if how == "divided" else (lo, hi), scale)
            return out
        for name, source in self.fields.items():
            out[name] = _scale(_mean(tab.values(source), counted), scale)
        if self.reads_cmc:
            out["mINP"] = _scale(_mean(tab.inp, counted), scale)
            cmc = [_mean([row[j] for row in tab.cmc], counted) for j in range(max_rank)]
            out["cmc"] = None if any(c is None for c in cmc) else [_scale(c, scale) for c in cmc]
            n = case.n_gallery
            # the "gallery" rule: torchreid lowers max_rank to the gallery size, and each query's CMC
            # row is cut from its ranking after junk removal (rows of one length when they agree)
            kept = [c for c, q_counted in zip(self._kept(self._case(case, cand), conv.base), counted) if q_counted]
            gallery = {min(call.max_rank, n)} | ({min(call.max_rank, min(kept))} if kept else set())
            lengths = {"max_rank": {call.max_rank}, "gallery": gallery}
            out["cmc_lengths"] = (
                lengths[cand.cmc_length] if cand.cmc_length else lengths["max_rank"] | lengths["gallery"]
            )
        return out


def _orders(cand: Candidate) -> List[Tuple[str, str]]:
    """(the order that decides which item a bug finds first, the order of the ranking) per table
    of the envelope.  An unstable sort takes each extreme order; where a bug drops the first
    item, whether that item is relevant is its own extreme too (dropping a relevant item, then
    ranking the rest pessimistically, is the least a hit rate, recall or reciprocal rank can be)."""
    if cand.conv.ties != UNSTABLE:
        return [(cand.conv.ties, cand.conv.ties)]
    if any(b.sees_in_order is not None for b in cand.bugs):
        return [(first, t) for t in EXTREME_ORDERS for first in ("optimistic", "pessimistic")]
    return [(t, t) for t in EXTREME_ORDERS]


def _mean(values: Sequence[Interval], counted: Sequence[bool]) -> Optional[Interval]:
    chosen = [v for v, c in zip(values, counted) if c]
    if not chosen:
        return None
    n = len(chosen)
    return (sum((v[0] for v in chosen), Fraction(0)) / n, sum((v[1] for v in chosen), Fraction(0)) / n)


def output_scale(bugs) -> Any:
    """What the known bugs do to every returned number: a factor (percent), or (factor, decimals)
    when the number is rounded too (the ``scale`` of :func:`_scale`)."""
    scale = math.prod(b.scale for b in bugs)
    decimals = next((b.decimals for b in bugs if b.decimals is not None), None)
    return (scale, decimals) if decimals is not None else scale


def scaled(iv: Optional[Interval], scale) -> Optional[Interval]:
    """:func:`_scale` for the modules that compare a value outside this one's predictions."""
    return _scale(iv, scale)


def _scale(iv: Optional[Interval], scale) -> Optional[Interval]:
    """The interval times ``scale``; ``scale`` = (factor, decimals): then rounded to that many decimals
    (rounding is monotone, so the rounded ends bound every rounded value)."""
    decimals = None
    if isinstance(scale, tuple):
        scale, decimals = scale
    if iv is None or (scale == 1 and decimals is None):
        return iv
    lo, hi = iv[0] * scale, iv[1] * scale
    if decimals is not None:
        lo, hi = _round(lo, decimals, up=False), _round(hi, decimals, up=True)
    return (lo, hi)


#: how close to a half of the last decimal an exact value must lie for its float to round either way
HALF_TOLERANCE = Fraction(1, 10**9)


def _round(value, decimals: int, up: bool):
    """``value`` rounded to ``decimals`` as ``round(float, decimals)`` does, for the lower (``up``
    false) or upper end of an interval.  An exact value on a half (0.2875 to 3 decimals) is not a
    float: the function's float lies a hair below or above it, by its own order of operations, and
    rounds down or up; the interval keeps both."""
    if isinstance(value, float):  # inf where a bug divides by zero
        return value
    scaled = Fraction(value) * 10**decimals
    below = math.floor(scaled)
    if abs(scaled - below - Fraction(1, 2)) <= HALF_TOLERANCE:
        return Fraction(below + 1 if up else below, 10**decimals)
    return Fraction(round(scaled), 10**decimals)


def _empty_scores_one(tab: Table) -> Table:
    """Every value of a query without a relevant item is 1 (a perfect score)."""
    one = _point(Fraction(1))
    empty = [r == 0 for r in tab.n_relevant]

    def fix(values):
        return [one if e else v for v, e in zip(values, empty)]

    return Table(
        fix(tab.ap),
        [[one] * len(row) if e else row for row, e in zip(tab.cmc, empty)],
        fix(tab.inp),
        tab.n_relevant,
        tab.hits,
        {name: fix(values) for name, values in tab.extra.items()},
    )


# -- comparing a prediction with what the function returned ---------------------------------


def within(user: float, iv: Interval, atol: float, rtol: float) -> bool:
    lo, hi = iv
    if isinstance(lo, float) and math.isinf(lo) or isinstance(hi, float) and math.isinf(hi):
        if math.isinf(user):
            return True
        if lo == hi:
            return False
    if not math.isfinite(user):
        return False
    flo = float(lo) if not math.isinf(lo) else -math.inf
    fhi = float(hi) if not math.isinf(hi) else math.inf
    eps = atol + rtol * max(abs(flo) if math.isfinite(flo) else 0, abs(fhi) if math.isfinite(fhi) else 0)
    return flo - eps <= user <= fhi + eps


def agreement(
    pred: Optional[Dict[str, Any]],
    reading: Reading,
    atol: float,
    rtol: float,
    check_cmc_length: bool = True,
    fields: Optional[Collection[str]] = None,
) -> Tuple[bool, int]:
    """(agrees, number of values compared) of one call's reading with a prediction; ``fields``:
    compare only these returned fields (None: every field)."""
    values = reading.values if fields is None else {m: v for m, v in reading.values.items() if field_of(m) in fields}
    if pred is None:
        # the candidate has no value here (e.g. grouped ties cut inside a tie group): it cannot
        # reproduce a number the function returned
        return (not values), 0
    compared = 0
    for metric, value in values.items():
        if metric == "cmc":
            cmc = pred.get("cmc")
            if cmc is None:
                continue
            if check_cmc_length and len(value) not in pred["cmc_lengths"]:
                return False, compared + 1
            for j, v in enumerate(value[: len(cmc)]):
                compared += 1
                if not within(v, cmc[j], atol, rtol):
                    return False, compared
            continue
        iv = pred.get(metric)
        if iv is None:
            continue
        compared += 1
        if not within(value, iv, atol, rtol):
            return False, compared
    return True, compared
