"""The known bugs of real evaluation code (spec §11) that a candidate may carry, each modelled exactly.

A :class:`Bug` says when its model applies and holds the parts of the model that belong to it
(the input as the buggy function sees it, the rank sum it uses, a scale, a rounding); the bugs
that change the cut-off or the mean are modelled in :mod:`.predict`, the nDCG and MRR ones in
:mod:`.rank_bugs`.  :func:`applicable_bugs` and :func:`bug_fits` say which bugs identification
searches for a function and a convention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np
from retrieval_conformance.conformance.harness.candidates.reference_values import Convention
from retrieval_conformance.conformance.harness.inputs.public import DEFAULT_CUTOFFS, Case, labels_from_relevance
from retrieval_conformance.reference.contract.conventions import AP_RULES, CONCRETE_POLICIES, TIE_POLICIES

#: the tie policies that give no single ranking (they average or group tied items)
NON_CONCRETE_POLICIES = tuple(t for t in TIE_POLICIES if t not in CONCRETE_POLICIES)


@dataclass(frozen=True)
class Bug:
    """A known bug of real evaluation code (spec §11), modelled exactly in :mod:`.predict`.

    ``requires`` says when the model applies: ``aggregate`` (a function returning one mean over
    several queries), ``codes`` (multi-hot labels are passed), ``k`` (a cut-off is passed),
    ``no-k`` (a full-gallery call without a cut-off), ``precision_sum``/``trapezoid`` (the AP
    rule it corrupts), ``concrete`` (a tie policy that gives one ranking), ``junk`` (the function
    is told about junk items).  ``metrics``: the per-query values it can corrupt (``ap``,
    ``ndcg``, ``rr``...; empty: any), so an adapter is only searched with the bugs of what it returns.

    Parts of the model that belong to one bug are on its entry: ``sees`` (the input as the buggy
    function sees it), ``rank_sum`` (the sum over the 1-based ranks of the relevant items it uses
    that replaces the precision sum; ``math.inf`` where it divides by zero), ``scale`` (the factor
    on every value).  The bugs that change the cut-off or the mean are modelled in :mod:`.predict`,
    the nDCG and MRR ones in :mod:`.rank_bugs`.
    """

    id: str
    clause: str
    what: str
    requires: Tuple[str, ...] = ()
    variant: str = ""
    replaces: Tuple[str, ...] = ()  # options the bug makes irrelevant (pinned to the protocol's value)
    sees: Optional[Callable[[Case], Case]] = field(default=None, compare=False, repr=False)
    rank_sum: Optional[Callable[[Sequence[int]], Any]] = field(default=None, compare=False, repr=False)
    scale: int = field(default=1, compare=False, repr=False)
    metrics: Tuple[str, ...] = ()
    decimals: Optional[int] = field(default=None, compare=False, repr=False)  # every value rounded so
    #: the input as the buggy function sees it under a concrete tie order (``sees`` with the order)
    sees_in_order: Optional[Callable[[Case, str], Case]] = field(default=None, compare=False, repr=False)
    #: the rarer reading of code that another bug also describes: named second where no input
    #: tells them apart (junk judged by relevance, beside junk kept as misses)
    rare: bool = field(default=False, compare=False, repr=False)

    @property
    def label(self) -> str:
        return f"{self.id}[{self.variant}]" if self.variant else self.id


def _descending(case: Case) -> Case:
    """The ranking sorted the wrong way: the largest distance first."""
    return replace(
        case, name=case.name + " (descending)", distances=case.distances.max() - case.distances, codes=None, golden=None
    )


def _exact_labels(case: Case) -> Case:
    """Relevant only when the label vectors are equal."""
    if case.codes is not None:
        ql, dl = case.codes[2], case.codes[3]
    else:
        ql, dl = labels_from_relevance(case.relevance)
    same = (np.asarray(ql)[:, None, :] == np.asarray(dl)[None, :, :]).all(-1)
    return replace(case, name=case.name + " (exact labels)", relevance=case.relevance & same, codes=None, golden=None)


def _junk_kept(case: Case) -> Case:
    """Junk left in the ranking as items that are not relevant."""
    if case.junk is None or not case.junk.any():
        return case
    return replace(
        case, name=case.name + " (junk kept)", relevance=case.relevance & ~case.junk, junk=None, codes=None, golden=None
    )


def _nothing_removed(case: Case) -> Case:
    """Junk left in the ranking and judged as any item: by its relevance (for ReID, its identity:
    the query's own camera views are matches, distractors misses)."""
    if case.junk is None or not case.junk.any():
        return case
    return replace(case, name=case.name + " (nothing removed)", junk=None, codes=None, golden=None)


def _first_item_dropped(case: Case, ties: str) -> Case:
    """Each query's first ranked item (under the concrete tie order ``ties``) left out, as junk is:
    the code drops rank 1 as the query itself (``topk(k + 1)[:, 1:]`` on a query set that is not
    the gallery)."""
    junk = np.zeros_like(case.relevance) if case.junk is None else case.junk.copy()
    for q in range(case.n_queries):
        kept = np.flatnonzero(~junk[q])
        if kept.size == 0:
            continue
        d = case.distances[q, kept]
        tied = kept[d == d.min()]  # in gallery order
        rel = case.relevance[q, tied]
        if ties == "reverse":
            first = tied[-1]
        elif ties in ("optimistic", "pessimistic") and rel.any() != rel.all():
            first = tied[np.flatnonzero(rel if ties == "optimistic" else ~rel)[0]]
        else:
            first = tied[0]
        junk[q, first] = True
    return replace(case, name=case.name + " (first item dropped)", junk=junk, codes=None, golden=None)


def _grades_binarised(case: Case) -> Case:
    """Every grade above 0 read as 1: relevance kept as a set of relevant items."""
    if case.grades is None or not (case.grades > 1).any():
        return case
    return replace(case, name=case.name + " (grades binarised)", grades=None, codes=None, golden=None)


#: the roundings modelled: 5 decimals is BEIR's (a value below about 0.4 moves by more than the
#: default tolerance, atol 1e-6 + rtol 1e-5); from 6 decimals on, rounding hides inside it
ROUNDED_DECIMALS = (2, 3, 4, 5)


def _zero_based_sum(ranks: Sequence[int]) -> Any:
    """The sum of i / (r_i - 1): the ``+ 1`` of 1-based ranks is missing."""
    total = Fraction(0)
    for i, r in enumerate(ranks, start=1):
        if r == 1:
            return math.inf
        total += Fraction(i, r - 1)
    return total


def _previous_hit_sum(ranks: Sequence[int]) -> Any:
    """The trapezoid whose left side is the precision at the previous hit (1 before the first)."""
    total = Fraction(0)
    old = Fraction(1)
    for i, r in enumerate(ranks, start=1):
        p = Fraction(i, r)
        total += (old + p) / 2
        old = p
    return total


#: the section of the specification that describes each known bug under its id (a test checks each resolves)
BUG_SECTION = "§11"


_FIRST_QUERY = "spec §8 mean over all queries"


_FIRST_WHAT = "only the first query{which} is evaluated (a stray `break` in the loop over queries, spec §11){how}"


def _first_query_bugs() -> List[Bug]:
    out = []
    for which, which_text in (
        ("first", ""),
        ("first-relevant", " with a relevant item"),
        ("first-hit", " with a relevant item in the top k"),
    ):
        for how, how_text in (
            ("divided", "; its AP is still divided by the number of queries"),
            ("own", "; the function returns that query's AP"),
        ):
            out.append(
                Bug(
                    "first-query-only",
                    _FIRST_QUERY,
                    _FIRST_WHAT.format(which=which_text, how=how_text),
                    ("aggregate",),
                    variant=f"{which},{how}",
                    replaces=("empty",),
                )
            )
    return out


BUGS: Tuple[Bug, ...] = tuple(_first_query_bugs()) + (
    Bug(
        "topk-ignored",
        "spec §6 the cut-off k",
        "the cut-off is ignored: every value is the full-gallery one (penghu-cs/UCCH#4)",
        ("k",),
        replaces=("ap_at_k",),
    ),
    Bug(
        "last-item-dropped",
        "spec §6 k=None (whole gallery)",
        "the last ranked item is dropped: the full-gallery value is AP@(N-1) (`gnd[0:-1]`, topk=-1 meant as "
        "'all', as DeepHash-pytorch's CalcTopMap with topK=-1; spec §11)",
        ("aggregate", "no-k"),
        metrics=("ap",),
    ),
    Bug(
        "first-item-dropped",
        "spec §1 smaller distance ranks first",
        "the first ranked item is dropped, as if it were the query itself (`topk(k + 1)[:, 1:]` of metric "
        "learning's leave-one-out, on a query set that is not the gallery): the ranking starts at the second "
        "item (tjddus9597/Proxy-Anchor-CVPR2020's Recall@K; spec §11)",
        ("concrete",),
        sees_in_order=_first_item_dropped,
        metrics=("hit", "recall", "rr"),
    ),
    *(
        Bug(
            "default-cutoff",
            "spec §6 k=None (whole gallery)",
            f"called without a cut-off it cuts at its own default k = {k} (a topk parameter defaulting to {k}, "
            f"or a top-{k} list cut in its code): the whole-gallery value is the value at k = {k}, e.g. AP@{k} or "
            f"MRR@{k} (spec §11 default-cutoff)",
            ("no-k",),
            variant=str(k),
        )
        for k in DEFAULT_CUTOFFS
    ),
    Bug(
        "divided-by-k",
        "spec §6 ap_at_k={ap_at_k}",
        "AP@k is divided by k (the sum of precisions at the hits in the top k over k; a topk defaulting to the "
        "gallery size divides the full AP by N)",
        (),
        replaces=("ap_at_k",),
        metrics=("ap",),
    ),
    Bug(
        "zero-based-ranks",
        "spec §5 ranks start at 1",
        "0-based ranks in i / r_i (the `+ 1` is missing; a relevant item at the top divides by zero)",
        ("precision_sum", "concrete"),
        rank_sum=_zero_based_sum,
        metrics=("ap",),
    ),
    Bug(
        "previous-hit-trapezoid",
        "spec §5 ap_rule=trapezoid (precision at the previous rank)",
        "the trapezoid's left side is the precision at the previous HIT, not at the previous RANK "
        "(seed 002 'One More Thing', layumi/Person_reID_baseline_pytorch#110)",
        ("trapezoid", "concrete"),
        rank_sum=_previous_hit_sum,
        metrics=("ap",),
    ),
    Bug(
        "ndcg-ideal-from-retrieved",
        "spec §7 nDCG",
        "the ideal DCG is taken from the grades of the retrieved top k only, not from every relevant item "
        "(a relevant item ranked beyond k costs nothing; spec §11)",
        ("concrete",),
        metrics=("ndcg",),
    ),
    Bug(
        "mrr-counting-junk",
        "spec §7 MRR",
        "junk items keep their rank positions when the first relevant item's rank is read (the reciprocal "
        "rank counts the junk ranked before it; spec §11)",
        ("concrete", "junk"),
        metrics=("rr",),
    ),
    Bug(
        "percent",
        "spec §8 fractions in [0, 1]",
        "every value is 100 x the reference: it returns percent",
        (),
        scale=100,
    ),
    *(
        Bug(
            "rounded",
            "spec §0 conformance",
            f"every value is rounded to {d} decimals (recommender toolkits round to 4 by default, BEIR to 5)",
            (),
            variant=str(d),
            decimals=d,
        )
        for d in ROUNDED_DECIMALS
    ),
    Bug(
        "empty-scores-one",
        "spec §8 empty={empty}",
        "a query without a relevant item scores 1 and counts in the mean (torchmetrics' "
        'empty_target_action="pos", learning-to-rank libraries)',
        (),
        replaces=("empty",),
    ),
    Bug(
        "cut-at-r",
        "spec §6 k=None (whole gallery)",
        "each query's list is cut at its own R, the number of its relevant items: the value is MAP@R "
        "(spec §7 MAP@R), not AP over the whole list",
        (),
        replaces=("ap_at_k", "ap_rule"),  # MAP@R sums precisions whatever the AP rule
        metrics=("ap",),
    ),
    Bug(
        "grades-binarised",
        "spec §7 nDCG",
        "every grade above 0 gains 1: relevance is read as a set of relevant items (sentence-transformers' "
        "InformationRetrievalEvaluator, RecBole's NDCG; spec §11)",
        (),
        replaces=("gain",),
        sees=_grades_binarised,
        metrics=("ndcg",),
    ),
    Bug(
        "junk-kept",
        "spec §3 junk is removed before ranking",
        "junk items are not removed: each one is ranked and counted as a wrong prediction",
        ("junk",),
        sees=_junk_kept,
        metrics=("ap", "ndcg", "ap_at_r", "r_precision", "recall"),
    ),  # MRR: mrr-counting-junk
    Bug(
        "junk-judged-by-relevance",
        "spec §3 junk is removed before ranking",
        "junk items are not removed: each one is ranked and judged by its relevance alone (a gallery view "
        "of the query's identity from its own camera counts as a match, a distractor as a miss; "
        "vehicle ReID code that sets remove = False)",
        ("junk",),
        sees=_nothing_removed,
        metrics=("ap", "ndcg", "ap_at_r", "r_precision", "recall"),
        rare=True,
    ),
    Bug(
        "descending",
        "spec §1 smaller distance ranks first",
        "the ranking is sorted the wrong way (largest distance first: a similarity sorted ascending or a "
        "distance sorted descending)",
        (),
        sees=_descending,
    ),
    Bug(
        "exact-label-match",
        "spec §2 relevant = sharing a label",
        "an item is relevant only when its label vector equals the query's (==), not when they share a label",
        ("codes",),
        sees=_exact_labels,
        metrics=("ap",),
    ),
)


def bug(bug_id: str, variant: str = "") -> Bug:
    for b in BUGS:
        if b.id == bug_id and (not variant or b.variant == variant):
            return b
    raise KeyError(bug_id)


def applicable_bugs(
    aggregate: bool, codes: bool, any_k: bool, any_no_k: bool, metric: str = "ap", junk: bool = False
) -> List[Bug]:
    have = {
        "aggregate": aggregate,
        "codes": codes,
        "k": any_k,
        "no-k": any_no_k,
        "concrete": True,
        "junk": junk,
        **{rule: True for rule in AP_RULES},
    }
    return [b for b in BUGS if all(have[r] for r in b.requires) and (not b.metrics or metric in b.metrics)]


def bug_fits(b: Bug, conv: Convention) -> bool:
    """Whether bug ``b`` can be combined with convention ``conv``."""
    if any(rule in b.requires and conv.ap_rule != rule for rule in AP_RULES):
        return False
    if "concrete" in b.requires and conv.ties in NON_CONCRETE_POLICIES:
        return False
    return True
