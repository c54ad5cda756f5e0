"""What the reference says a case's numbers are, under a convention (exact Fractions).

A :class:`Convention` is a preset (its junk rules) plus the options that change a number:
``ties`` (spec §4), ``ap_rule`` (§5), ``ap_at_k`` (§6), ``empty`` (§8), and for nDCG and
Recall@k ``gain``, ``discount`` and ``recall`` (§7).  An adapter says which of them its fields depend on
(``Adapter.options``); the others stay at the protocol's values.
:class:`ReferenceCache` evaluates a case under a convention with the project's reference
implementation (``rc.evaluate``'s building blocks), computing the per-query values once per
(case, k, ties, ap_rule, ap_at_k) and aggregating them under each empty-query policy.

What a *buggy* function computes is modelled in :mod:`.candidate` and :mod:`.predict`, on top
of these reference values.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from retrieval_conformance.conformance.harness.inputs.public import Case
from retrieval_conformance.implementations.vector.relevance_blocks import junk_block, relevance_block
from retrieval_conformance.reference.contract.conventions import (
    AP_AT_K_DENOMINATORS,
    AP_RULES,
    DISCOUNTS,
    EMPTY_POLICIES_WITH_A_MEAN,
    GAINS,
    OPTIONS,
    RECALL_SENSES,
    TIE_POLICIES,
    convention,
)
from retrieval_conformance.reference.contract.presets import PRESETS

#: the options a function is checked and identified on, and their values (the contract's, in its
#: order); an empty query is compared under the policies whose mean is a number (``nan`` makes
#: every mean NaN, ``error`` raises)
OPTION_VALUES = {
    "ties": TIE_POLICIES,
    "ap_rule": AP_RULES,
    "ap_at_k": AP_AT_K_DENOMINATORS,
    "empty": tuple(p for p in EMPTY_POLICIES_WITH_A_MEAN if p != "nan"),
    "gain": GAINS,
    "discount": DISCOUNTS,
    "recall": RECALL_SENSES,
}
OPTION_SECTIONS = {name: f"§{OPTIONS[name][0]}" for name in OPTION_VALUES}
#: the senses a function may have that the specification defines as a clause of its own rather than
#: as a value ``evaluate`` takes: identification searches them beside the option's values, and a
#: report cites their clause (BEIR's capped recall, H(k) / min(R, k))
CLAUSE_VALUES = {("recall", "capped"): "§7 R_cap"}
#: the values identification searches for each option: the contract's, then those clauses
SEARCH_VALUES = {name: vals + tuple(v for (o, v) in CLAUSE_VALUES if o == name) for name, vals in OPTION_VALUES.items()}
#: the base of every preset without junk rules (they share its reference problem)
PLAIN_BASE = "hashing"
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
    ("gain", "linear"): "nDCG gains g for grade g",
    ("gain", "exponential"): "nDCG gains 2**g - 1 for grade g (weighs high grades more)",
    ("discount", "log2"): "nDCG discounts rank r by 1 / log2(r + 1) (also trec_eval since 9.0.4)",
    ("discount", "trec_eval_9.0a3"): "nDCG leaves ranks 1 and 2 undiscounted, then 1 / log2(r) (trec_eval 9.0a3)",
    ("recall", "fraction"): "Recall@k is the share of all relevant items found in the top k",
    ("recall", "hit"): "Recall@k is 1 when some relevant item is in the top k (the hit rate of metric learning)",
    ("recall", "capped"): "Recall@k divides the hits in the top k by min(R, k), the most it can hold (BEIR's R_cap@k)",
}


@dataclass(frozen=True)
class Convention:
    """A preset's junk rules plus the number-changing options."""

    base: str
    ties: str
    ap_rule: str
    ap_at_k: str
    empty: str
    gain: str = "linear"
    recall: str = "fraction"
    discount: str = "log2"

    @classmethod
    def from_protocol(cls, protocol: str, **overrides) -> "Convention":
        from retrieval_conformance.reference.contract.presets import get_preset

        p = get_preset(protocol)
        vals = {name: overrides.get(name) or getattr(p, name) for name in OPTION_VALUES}
        # the base only carries junk rules: presets without any share the plain "hashing" base
        return cls(base=protocol if p.junk else PLAIN_BASE, **vals)

    def label(self, dims: Sequence[str] = tuple(OPTION_VALUES)) -> str:
        return ", ".join(f"{n}={getattr(self, n)}" for n in dims)

    def with_(self, **changes) -> "Convention":
        return replace(self, **changes)


# the presets' families, by their junk rules: a preset with the camera junk rule is a ReID preset
# (its function gets cameras); the others are the hashing presets, which all define AP@k
REID_PRESETS = tuple(name for name, p in PRESETS.items() if "same_id_cam" in p.junk)
HASHING_PRESETS = tuple(name for name, p in PRESETS.items() if "same_id_cam" not in p.junk)
K_PROTOCOLS = HASHING_PRESETS
# landmark presets through the one-query oxford adapter: the ranked list is given (no ties), junk
# is removed, a query without a positive is left out; roxford's difficulties differ only in the
# positive and junk sets the caller passes
_TRAPEZOID = Convention(PLAIN_BASE, "stable", "trapezoid", "hits", "skip")
LANDMARK_CONVENTIONS = {
    "oxford": _TRAPEZOID,
    "roxford-easy": _TRAPEZOID,
    "roxford-medium": _TRAPEZOID,
    "roxford-hard": _TRAPEZOID,
    "gldv2": Convention.from_protocol("gldv2"),  # the preset itself: its function gets one query at a time
}
#: the presets of each kind an adapter's function can be identified among (``Adapter.preset_kinds``)
PRESET_KINDS = {
    "hashing": HASHING_PRESETS,
    "reid": REID_PRESETS,
    "landmark": tuple(LANDMARK_CONVENTIONS),
    # the presets that report these values (spec §9): nDCG, and metric learning's MAP@R
    "ndcg": ("sklearn-ndcg", "trec"),
    "metric-learning": ("pml",),
}


def clause(option: str, value: str) -> str:
    """``spec §4 ties=stable``: the clause of the conventions table, as reports cite it."""
    return f"spec {convention(option, value).clause}"


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
        from retrieval_conformance.reference.contract.evaluate import build_problem
        from retrieval_conformance.reference.contract.presets import get_preset

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
        return relevance_block(p, 0, p.n_queries), junk_block(p, 0, p.n_queries)

    def per_query(self, case: Case, conv: Convention, k: Optional[int], max_rank: int):
        from retrieval_conformance.reference.contract.protocol_options import resolve_options
        from retrieval_conformance.reference.contract.registry import get

        ap_at_k = conv.ap_at_k if k is not None else "hits"  # irrelevant without a cut-off
        # capped recall is the fraction's hits over another denominator (the predictor rescales it)
        recall = "fraction" if (("recall", conv.recall)) in CLAUSE_VALUES else conv.recall
        key = (
            id(case),
            conv.base,
            k,
            max_rank,
            conv.ties,
            conv.ap_rule,
            ap_at_k,
            conv.gain,
            recall,
            conv.discount,
        )
        if key not in self._pq:
            problem = self.problem(case, conv.base)
            options = resolve_options(
                conv.base,
                k=k,
                max_rank=max_rank,
                ties=conv.ties,
                ap_rule=conv.ap_rule,
                ap_at_k=ap_at_k,
                empty="zero",
                gain=conv.gain,
                recall=recall,
                discount=conv.discount,
            )
            try:
                self._pq[key] = (get("reference").compute(problem, options), options)
            except ValueError as exc:  # grouped ties with a cut-off inside a group
                self._pq[key] = (None, str(exc))
        return self._pq[key]

    def expected(self, case: Case, conv: Convention, k: Optional[int], max_rank: Optional[int] = None) -> Expected:
        from retrieval_conformance.reference.contract.aggregation import aggregate

        max_rank = case.max_rank if max_rank is None else max_rank
        pq, options = self.per_query(case, conv, k, max_rank)
        if pq is None:
            return Expected(error=options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "no query is counted": the mean is undefined, reported as None
            res = aggregate(pq, replace(options, empty=conv.empty), conv.base, "reference")
        ex = res.exact
        return Expected(
            map=ex.map, ap=list(ex.ap), cmc=list(ex.cmc), minp=ex.minp, n_relevant=pq.n_relevant, hits_at_k=pq.hits_at_k
        )

    def ranks(self, case: Case, conv: Convention) -> Optional[List[List[int]]]:
        """1-based ranks of the relevant non-junk items per query under a concrete tie policy."""
        from retrieval_conformance.reference.contract.conventions import CONCRETE_POLICIES
        from retrieval_conformance.reference.distances import query_distances
        from retrieval_conformance.reference.ranking import ranked_relevance, tie_groups
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
