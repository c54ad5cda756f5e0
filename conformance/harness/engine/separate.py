"""Separation: before a verdict, inputs on which the nearest alternatives predict other values are run.

"Matches X" must mean that what else the function might compute was ruled out where it differs.
The generated families hold short galleries (at most 24 items), so a cut-off a function applies on
its own (``topk=10``, ``map_at_k=[100]``, ``topk=1000``) never binds on them, and neither do GLDv2's
cut at 100 and its min(R, 100).  This module holds

* :func:`long_cases` (from :mod:`..inputs.long_lists`): inputs longer than the cut-offs real code
  defaults to (10, 20, 50, 100, 1000) with relevant items, and first relevant items, beyond each,
  and :func:`edge_cases`: a one-item gallery asked for k > 1, means that a 5-decimal rounding moves;
* :func:`near_candidates`: the alternatives nearest the best survivor: one more known bug, or one
  option changed;
* :func:`challenge`: for those of them that still reproduce every value returned so far, the
  inputs of :func:`separation_pool` on which their exact predictions
  (:mod:`..candidates.predict`) differ from the best survivor's are run, until each is ruled out or the budget
  is spent.  :func:`~.analysis.analyse` calls it once the survivors of a stage are known; when the
  best is ruled out, elimination goes on to the next stage with the new evidence.

Inputs outside the protocol's usual domain (landmark names both positive and junk, ...) are the
business of :mod:`.outside`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Iterable, List, Sequence, Tuple

import numpy as np
from retrieval_conformance.conformance.harness.candidates.bugs import Bug, bug_fits
from retrieval_conformance.conformance.harness.candidates.candidate import Candidate
from retrieval_conformance.conformance.harness.candidates.reference_values import SEARCH_VALUES
from retrieval_conformance.conformance.harness.engine.eliminate import _distinguishable
from retrieval_conformance.conformance.harness.inputs.case import Case, fingerprint
from retrieval_conformance.conformance.harness.inputs.long_lists import LONG_LISTS, long_cases

CHECK_ID = LONG_LISTS
CHECK_CLAUSE = "spec §6 k=None (whole gallery)"
CHECK_TITLE = (
    "ranked lists longer than the cut-offs real code defaults to (10, 20, 50, 100, 1000), with relevant "
    "items and first relevant items beyond each (a default topk, an MRR of the top 100, GLDv2's cut at 100 "
    "and min(R, 100))"
)
CHALLENGE_BUDGET = 12  # further calls the challenge may make per analysis


def _sevenths(first: int, others: int, k) -> Case:
    """Seven queries over items at distances 0..7, one relevant item each: query 0's at rank
    ``first``, the others' at rank ``others``."""
    rel = np.zeros((7, 8), dtype=bool)
    rel[0, first - 1] = True
    rel[1:, others - 1] = True
    return Case(
        name=f"mean/sevenths-{first}-{others}" + (f"-k{k}" if k else ""),
        distances=np.tile(np.arange(8.0), (7, 1)),
        relevance=rel,
        k=k,
        family="mean/sevenths",
    )


@lru_cache(maxsize=1)
def edge_cases() -> Tuple[Case, ...]:
    """Small inputs at the edges of the usual domain: a one-item gallery asked for k = 4; and means
    over seven queries that come out small (1/7, 13/49), where rounding to 5 decimals moves a
    value by more than the default tolerance (BEIR rounds every measure so)."""
    one = np.zeros((3, 1))
    return (
        Case(
            name="size/one-item-k4",
            distances=one,
            relevance=np.array([[True], [False], [True]]),
            k=4,
            family="size/single-item",
        ),
        _sevenths(1, 8, 4),
        _sevenths(1, 7, None),
    )


def separation_pool(session, generated: Iterable[Case] = ()) -> Iterable[Case]:
    """The inputs the challenge searches: long cases, edge cases, then ``generated`` (the split
    search's families, :func:`~.analysis.split_pool`: an alternative with one more bug may differ
    only where a query's relevant items fall just so, as past the top k of the first query)."""
    yield from long_cases()
    yield from edge_cases()
    yield from generated


def near_candidates(session, best: Candidate, bugs: Sequence[Bug], dims: Sequence[str]) -> List[Candidate]:
    """The best survivor with one more applicable bug, or with one option changed."""
    out: List[Candidate] = []
    if len(best.bugs) < 2:
        have = {b.id for b in best.bugs}
        for b in bugs:
            if b.id not in have and bug_fits(b, best.conv):
                out.append(Candidate(best.conv, best.cmc_length, best.bugs + (b,)))
    for d in dims:
        if d == "cmc_length":
            continue
        # an unstable order contains the best's: never split (the tie candidates less it are the policies)
        for v in SEARCH_VALUES.get(d, ()):
            if v != best.option(d):
                out.append(Candidate(best.conv.with_(**{d: v}), best.cmc_length, best.bugs))
    return out


def challenge(
    session,
    survivors: List[Candidate],
    evidence: List,
    bugs: Sequence[Bug],
    dims: Sequence[str],
    budget: int = CHALLENGE_BUDGET,
    elim=None,
    generated: Callable[[], Iterable[Case]] = tuple,
) -> List:
    """Run inputs on which the nearest alternatives that still reproduce everything differ from the
    best survivor; returns the evaluations added (the caller filters its survivors with them)."""
    if not survivors or budget <= 0:
        return []
    best = survivors[0]
    elim = elim or session.eliminator  # the field's own eliminator when identified field by field
    near = [c for c in near_candidates(session, best, bugs, dims) if elim.survivors([c], evidence)]
    if not near:
        return []
    seen = {fingerprint(ev.case) for ev in evidence}
    added = []
    for case in separation_pool(session, generated()):
        if not near or budget <= 0:
            break
        if fingerprint(case) in seen:
            continue
        calls = session.calls(case)
        if not calls or (case.k is not None and not session.protocol_k):
            continue
        p_best = [session.predictor.predict(best, case, call) for call in calls]
        if not any(
            _distinguishable(p_best, [session.predictor.predict(c, case, call) for call in calls]) for c in near
        ):
            continue
        if session.aborted():
            break
        ev = session.run_case(case)
        budget -= 1
        seen.add(fingerprint(case))
        if ev.skipped is not None or not ev.any_read:
            continue
        added.append(ev)
        near = [c for c in near if elim.consistent(c, ev)[0]]
        if not elim.consistent(best, ev)[0]:
            break  # the best is ruled out: elimination starts again with this input
    return added
