"""What the reference says a case's numbers are, under a convention (exact Fractions).

A :class:`Convention` is a preset (its junk rules) plus the four options that change a
number: ``ties`` (CONVENTIONS §4), ``ap_rule`` (§5), ``ap_at_k`` (§6), ``empty`` (§8).
:class:`ReferenceCache` evaluates a case under a convention with the project's reference
implementation (``rc.evaluate``'s building blocks), computing the per-query values once per
(case, k, ties, ap_rule, ap_at_k) and aggregating them under each empty-query policy.

:func:`bug_values` computes the numbers that the known bugs of CONVENTIONS §11 would give
(first query only, divided by k, 0-based ranks, ...): the harness uses them to *explain* a
deviation, never as a reference.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from retrieval_conformance.conformance.harness.cases import Case

OPTION_SECTIONS = {"ties": "§4", "ap_rule": "§5", "ap_at_k": "§6", "empty": "§8"}
OPTION_VALUES = {
    "ties": ("stable", "reverse", "optimistic", "pessimistic", "expected", "grouped"),
    "ap_rule": ("precision_sum", "trapezoid"),
    "ap_at_k": ("hits", "r", "min_k_r", "dcmh"),
    "empty": ("zero", "skip", "skip_no_hit"),
}
VALUE_MEANING = {
    ("ties", "stable"): "tied items in gallery order (a stable sort)",
    ("ties", "reverse"): "tied items in reverse gallery order (e.g. argsort(similarity)[::-1])",
    ("ties", "optimistic"): "relevant items first among tied items",
    ("ties", "pessimistic"): "relevant items last among tied items",
    ("ties", "expected"): "the exact expectation over random orders of tied items",
    ("ties", "grouped"): "a tie group enters at once: its items get the group's end rank (scikit-learn's thresholds)",
    ("ap_rule", "precision_sum"): "precision-sum (rectangle) AP, sum of i / r_i",
    ("ap_rule", "trapezoid"): "trapezoid AP (Oxford compute_ap / Market-1501 MATLAB)",
    ("ap_at_k", "hits"): "AP@k divided by the hits in the top k",
    ("ap_at_k", "r"): "AP@k divided by R, all relevant items",
    ("ap_at_k", "min_k_r"): "AP@k divided by min(k, R)",
    ("ap_at_k", "dcmh"): "AP@k over the first min(k, R) relevant items of the full ranking",
    ("empty", "zero"): "a query with no relevant item counts as 0",
    ("empty", "skip"): "a query with no relevant item is left out of the mean",
    ("empty", "skip_no_hit"): "a query with no relevant item in the top k is left out of the mean",
}


@dataclass(frozen=True)
class Convention:
    """A preset's junk rules plus the four number-changing options."""

    base: str
    ties: str
    ap_rule: str
    ap_at_k: str
    empty: str

    @classmethod
    def from_protocol(cls, protocol: str, **overrides) -> "Convention":
        from retrieval_conformance.reference.presets import get_preset

        p = get_preset(protocol)
        vals = {name: overrides.get(name) or getattr(p, name) for name in OPTION_VALUES}
        # the base only carries junk rules: presets without any share the plain "hashing" base
        return cls(base=protocol if p.junk else "hashing", **vals)

    def options(self) -> Dict[str, str]:
        return {name: getattr(self, name) for name in OPTION_VALUES}

    def label(self, dims: Sequence[str] = tuple(OPTION_VALUES)) -> str:
        return ", ".join(f"{n}={getattr(self, n)}" for n in dims)

    def with_(self, **changes) -> "Convention":
        return replace(self, **changes)

    def differences(self, other: "Convention", dims: Sequence[str] = tuple(OPTION_VALUES)) -> List[str]:
        return [n for n in dims if getattr(self, n) != getattr(other, n)]


def clause(option: str, value: str) -> str:
    """``CONVENTIONS §4 ties=stable`` and the like."""
    return f"CONVENTIONS {OPTION_SECTIONS[option]} {option}={value}"


@dataclass
class Expected:
    """The reference's numbers for one case under one convention.

    ``map``/``minp`` are None when no query is counted (the mean is undefined); ``ap`` holds
    None for a query left out of the mean.  ``error`` is set when the convention has no value
    for this case (``ties='grouped'`` with a cut-off inside a tie group).
    """

    map: Optional[Fraction] = None
    ap: Optional[List[Optional[Fraction]]] = None
    cmc: Optional[List[Optional[Fraction]]] = None
    minp: Optional[Fraction] = None
    n_relevant: Optional[np.ndarray] = None
    hits_at_k: Optional[np.ndarray] = None
    error: Optional[str] = None

    def metric(self, name: str, query: Optional[int] = None):
        if name == "mAP":
            return self.map
        if name == "mINP":
            return self.minp
        if name == "AP":
            return self.ap[query]
        if name.startswith("cmc["):
            j = int(name[4:-1])
            return self.cmc[j] if self.cmc is not None and j < len(self.cmc) else None
        raise KeyError(name)


class ReferenceCache:
    """Reference values per (case, k, max_rank, convention), computed once.

    Uses ``rc.build_problem``, ``rc.resolve_options``, the ``reference`` implementation and
    the shared aggregation, i.e. exactly what ``rc.evaluate(..., implementation="reference")``
    does, split so that one per-query computation serves every empty-query policy.
    """

    def __init__(self):
        self._problems: Dict[Tuple, object] = {}
        self._pq: Dict[Tuple, object] = {}
        self._keep: Dict[int, Case] = {}

    def problem(self, case: Case, base: str):
        from retrieval_conformance.reference.evaluate import build_problem
        from retrieval_conformance.reference.presets import get_preset

        preset = get_preset(base)
        cam = "same_id_cam" in preset.junk
        minus_one = "minus_one" in preset.junk
        key = (id(case), cam, minus_one)
        if key not in self._problems:
            self._keep[id(case)] = case
            self._problems[key] = build_problem(**case.reference_inputs(cam), junk_ids=(-1,) if minus_one else ())
        return self._problems[key]

    def effective(self, case: Case, base: str) -> Tuple[np.ndarray, np.ndarray]:
        """(relevance, junk) of the case as the protocol ``base`` sees them."""
        p = self.problem(case, base)
        return p.relevance_block(0, p.n_queries), p.junk_block(0, p.n_queries)

    def per_query(self, case: Case, conv: Convention, k: Optional[int], max_rank: int):
        from retrieval_conformance.implementations.registry import get
        from retrieval_conformance.reference.evaluate import resolve_options

        ap_at_k = conv.ap_at_k if k is not None else "hits"  # irrelevant without a cut-off
        key = (id(case), conv.base, k, max_rank, conv.ties, conv.ap_rule, ap_at_k)
        if key not in self._pq:
            problem = self.problem(case, conv.base)
            options = resolve_options(conv.base, k=k, max_rank=max_rank, ties=conv.ties, ap_rule=conv.ap_rule,
                                      ap_at_k=ap_at_k, empty="zero")
            try:
                self._pq[key] = (get("reference").compute(problem, options), options)
            except ValueError as exc:  # grouped ties with a cut-off inside a group
                self._pq[key] = (None, str(exc))
        return self._pq[key]

    def expected(self, case: Case, conv: Convention, k: Optional[int], max_rank: Optional[int] = None) -> Expected:
        from retrieval_conformance.reference.aggregation import aggregate

        max_rank = case.max_rank if max_rank is None else max_rank
        pq, options = self.per_query(case, conv, k, max_rank)
        if pq is None:
            return Expected(error=options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "no query is counted": the mean is undefined, reported as None
            res = aggregate(pq, replace(options, empty=conv.empty), conv.base, "reference")
        ex = res.exact
        return Expected(map=ex.map, ap=list(ex.ap), cmc=list(ex.cmc), minp=ex.minp,
                        n_relevant=pq.n_relevant, hits_at_k=pq.hits_at_k)

    def exact_ap(self, case: Case, conv: Convention, k: Optional[int], max_rank: int) -> Optional[List[Fraction]]:
        """Per-query AP with R = 0 queries at 0 (before any empty-query policy)."""
        pq, _ = self.per_query(case, conv, k, max_rank)
        return None if pq is None else list(pq.exact["ap"])

    def ranks(self, case: Case, conv: Convention) -> Optional[List[List[int]]]:
        """1-based ranks of the relevant non-junk items per query under a concrete tie policy."""
        from retrieval_conformance.reference.distances import query_distances
        from retrieval_conformance.reference.ranking import CONCRETE_POLICIES, ranked_relevance, tie_groups
        from retrieval_conformance.reference.relevance import query_junk, query_relevance

        if conv.ties not in CONCRETE_POLICIES:
            return None
        p = self.problem(case, conv.base)
        out = []
        for q in range(p.n_queries):
            groups = tie_groups(query_distances(p, q), query_relevance(p, q), query_junk(p, q))
            ranked = ranked_relevance(groups, conv.ties)
            out.append([i + 1 for i, rel in enumerate(ranked) if rel])
        return out


def mean_under(values: Sequence, counted: Sequence[bool]):
    chosen = [v for v, c in zip(values, counted) if c]
    if not chosen:
        return None
    return sum(chosen, Fraction(0)) / len(chosen)


def counted_mask(conv: Convention, n_relevant: np.ndarray, hits_at_k: np.ndarray) -> List[bool]:
    if conv.empty == "skip":
        return [int(r) > 0 for r in n_relevant]
    if conv.empty == "skip_no_hit":
        return [float(h) > 0 for h in hits_at_k]
    return [True] * len(n_relevant)


# -- the bugs of CONVENTIONS §11 as models (for explanations only) -------------------------

@dataclass(frozen=True)
class BugModel:
    id: str
    clause: str  # the clause the bug breaks (``{k}``, ``{protocol_*}`` filled in)
    what: str  # one sentence, ``{...}`` filled in from the case


BUG_MODELS: Tuple[BugModel, ...] = (
    BugModel("first-query-only", "CONVENTIONS §8 mean over all queries",
             "only the first query is evaluated: the loop stops after the first query it evaluates "
             "(a stray `break`, CONVENTIONS §11){divided}"),
    BugModel("topk-ignored", "CONVENTIONS §6 the cut-off k",
             "the cut-off is ignored: your value is the full-gallery mAP{unused} (penghu-cs/UCCH#4)"),
    BugModel("last-item-dropped", "CONVENTIONS §6 k=None (whole gallery)",
             "the last ranked item is dropped: your value is mAP@(N-1){at} (`gnd[0:-1]` with topk=-1 "
             "meaning 'all', CONVENTIONS §6, §11)"),
    BugModel("divided-by-k", "CONVENTIONS §6 ap_at_k={ap_at_k}",
             "AP@k is divided by k{here} instead of: {meaning}"),
    BugModel("zero-based-ranks", "CONVENTIONS §5 ranks start at 1",
             "0-based ranks in i / r_i (the `+ 1` is missing; a relevant item at the top divides by zero)"),
    BugModel("previous-hit-trapezoid", "CONVENTIONS §5 ap_rule=trapezoid (precision at the previous rank)",
             "the trapezoid's left side is the precision at the previous HIT, not at the previous RANK "
             "(seed 002 'One More Thing', layumi/Person_reID_baseline_pytorch#110)"),
    BugModel("percent", "CONVENTIONS §8 fractions in [0, 1]",
             "your value is 100 x the reference: it returns percent (as fast-reid does)"),
)


def bug_model(model_id: str) -> BugModel:
    for m in BUG_MODELS:
        if m.id == model_id:
            return m
    raise KeyError(model_id)


def _zero_based(ranks: List[int], R: int, k: Optional[int], ap_at_k: str):
    """(1/D) sum i / (r_i - 1); inf when some r_i = 1 is counted."""
    if R == 0:
        return Fraction(0)
    use = [r for r in ranks if k is None or r <= k]
    if not use:
        return Fraction(0)
    if any(r == 1 for r in use):
        return float("inf")
    s = sum((Fraction(i, r - 1) for i, r in enumerate(use, start=1)), Fraction(0))
    if k is None:
        return s / R
    denom = {"hits": len(use), "r": R, "min_k_r": min(k, R)}.get(ap_at_k)
    return None if denom is None else s / denom


def _previous_hit(ranks: List[int], R: int):
    if R == 0:
        return Fraction(0)
    total, old = Fraction(0), Fraction(1)
    for i, r in enumerate(ranks, start=1):
        p = Fraction(i, r)
        total += (old + p) / 2
        old = p
    return total / R


def bug_values(model: BugModel, case: Case, conv: Convention, k: Optional[int], cache: ReferenceCache,
               per_query: bool = False, called_without_k: bool = False) -> List[Tuple[object, Dict[str, str]]]:
    """The value(s) a function with bug ``model`` returns on ``case`` (empty if it does not apply).

    Returns ``[(value, details)]``: ``value`` is the mAP (or, with ``per_query``, the list of
    per-query APs); ``details`` fills the model's sentence.  Only the metric AP/mAP is modelled.
    """
    max_rank = case.max_rank
    base = cache.expected(case, conv, k, max_rank)
    if base.error:
        return []
    n_q = case.n_queries
    out: List[Tuple[object, Dict[str, str]]] = []
    if model.id == "first-query-only":
        if per_query or n_q < 2:
            return []
        ap = cache.exact_ap(case, conv, k, max_rank)
        # the loop may `continue` past queries without a relevant item (or without a hit in the
        # top k) before it reaches the `break`: the first query it evaluates is one of these
        firsts = [0]
        for cond in ([int(r) > 0 for r in base.n_relevant], [float(h) > 0 for h in base.hits_at_k]):
            if any(cond):
                firsts.append(cond.index(True))
        for q in dict.fromkeys(firsts):
            a = ap[q]
            label = "query 0" if q == 0 else f"query {q}, the first one with a relevant item"
            out.append((a / n_q, {"divided": f"; your value = AP of {label} ({a} = {float(a):.6g}) / "
                                             f"{n_q} queries = {a / n_q} = {float(a / n_q):.6g}",
                                  "generic": "; the sum is still divided by the number of queries"}))
            out.append((a, {"divided": f"; your value = AP of {label} ({a} = {float(a):.6g})",
                            "generic": "; it returns that query's AP"}))
        return out
    if model.id == "topk-ignored":
        if k is None:
            return []
        full = cache.expected(case, conv, None, max_rank)
        if full.error:
            return []
        val = full.ap if per_query else full.map
        return [(val, {"unused": f" (topk={k} unused)"})]
    if model.id == "last-item-dropped":
        if k is not None or not called_without_k:
            return []
        n = case.n_gallery
        if n <= 1:
            val = [Fraction(0)] * n_q if per_query else Fraction(0)
        else:
            short = cache.expected(case, conv.with_(ap_at_k="hits"), n - 1, max_rank)
            if short.error:
                return []
            val = short.ap if per_query else short.map
        return [(val, {"at": f", here mAP@{n - 1}"})]
    if model.id == "divided-by-k":
        if k is None:
            return []
        sums = cache.exact_ap(case, conv.with_(ap_at_k="r"), k, max_rank)
        if sums is None:
            return []
        per = [s * int(R) / k for s, R in zip(sums, base.n_relevant)]
        if per_query:
            return [(per, {"here": f" (here k={k})", "meaning": VALUE_MEANING[("ap_at_k", conv.ap_at_k)]})]
        val = mean_under(per, counted_mask(conv, base.n_relevant, base.hits_at_k))
        return [(val, {"here": f" (here k={k})", "meaning": VALUE_MEANING[("ap_at_k", conv.ap_at_k)]})]
    if model.id == "zero-based-ranks":
        if conv.ap_rule != "precision_sum":
            return []
        ranks = cache.ranks(case, conv)
        if ranks is None:
            return []
        per = [_zero_based(r, int(R), k, conv.ap_at_k) for r, R in zip(ranks, base.n_relevant)]
        if any(v is None for v in per):
            return []
        if per_query:
            return [(per, {})]
        if any(isinstance(v, float) for v in per):
            return [(float("inf"), {})]
        return [(mean_under(per, counted_mask(conv, base.n_relevant, base.hits_at_k)), {})]
    if model.id == "previous-hit-trapezoid":
        if conv.ap_rule != "trapezoid" or k is not None:
            return []
        ranks = cache.ranks(case, conv)
        if ranks is None:
            return []
        per = [_previous_hit(r, int(R)) for r, R in zip(ranks, base.n_relevant)]
        if per_query:
            return [(per, {})]
        return [(mean_under(per, counted_mask(conv, base.n_relevant, base.hits_at_k)), {})]
    if model.id == "percent":
        if per_query:
            return [([None if v is None else v * 100 for v in base.ap], {})]
        return [] if base.map is None else [(base.map * 100, {})]
    return out
