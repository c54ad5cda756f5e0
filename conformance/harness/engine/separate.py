"""Separation: before a verdict, inputs on which the nearest alternatives predict other values are run.

"Matches X" must mean that what else the function might compute was ruled out where it differs.
The generated families hold short galleries (at most 24 items), so a cut-off a function applies on
its own (``topk=10``, ``map_at_k=[100]``, ``topk=1000``) never binds on them, and neither do GLDv2's
cut at 100 and its min(R, 100).  This module holds

* :func:`long_cases`: a few dedicated inputs longer than the cut-offs real code defaults to
  (:data:`~..candidates.bugs.DEFAULT_CUTOFFS`: 10, 20, 50, 100, 1000) with relevant items beyond each,
  one query with more than 100 relevant items, and a one-item gallery asked for k > 1 (the only
  long inputs: everything else stays small, so a check stays fast);
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
from typing import Iterable, List, Sequence, Tuple

import numpy as np
from retrieval_conformance.conformance.harness.candidates.bugs import Bug, bug_fits
from retrieval_conformance.conformance.harness.candidates.candidate import Candidate
from retrieval_conformance.conformance.harness.candidates.reference_values import OPTION_VALUES
from retrieval_conformance.conformance.harness.engine.eliminate import _distinguishable
from retrieval_conformance.conformance.harness.inputs.case import Case, fingerprint

CHECK_ID = "k/long-lists"
CHECK_CLAUSE = "spec §6 k=None (whole gallery)"
CHECK_TITLE = (
    "ranked lists longer than the cut-offs real code defaults to (10, 20, 50, 100, 1000), with relevant "
    "items beyond each (a default topk, GLDv2's cut at 100 and min(R, 100))"
)
CHALLENGE_BUDGET = 12  # further calls the challenge may make per analysis


def _ranked_case(name: str, n_gallery: int, relevant_ranks: Sequence[Sequence[int]], seed: int, k=None) -> Case:
    """A case whose query q ranks its relevant items at the 1-based ``relevant_ranks[q]`` (no ties).

    Distances are a permutation of 0..N-1 per query, so the gallery order is not the ranking."""
    rng = np.random.default_rng(seed)
    n_q = len(relevant_ranks)
    dist = np.empty((n_q, n_gallery), dtype=np.float64)
    rel = np.zeros((n_q, n_gallery), dtype=bool)
    for q, ranks in enumerate(relevant_ranks):
        perm = rng.permutation(n_gallery)  # perm[r - 1] is the item ranked r
        dist[q, perm] = np.arange(n_gallery)
        rel[q, perm[np.asarray(ranks, dtype=np.int64) - 1]] = True
    return Case(name=name, distances=dist, relevance=rel, k=k, family=CHECK_ID)


@lru_cache(maxsize=1)
def long_cases() -> Tuple[Case, ...]:
    """The dedicated long inputs (built once)."""
    many = [r for r in range(1, 131) if r % 6 != 0]  # 109 relevant items among 130: R > 100
    return (
        _ranked_case(
            f"{CHECK_ID}#past-10-20-50",
            60,
            [[1, 4, 9, 12, 18, 23, 37, 49, 52, 58], [2, 11, 15, 21, 44, 51, 60]],
            seed=10,
        ),
        _ranked_case(f"{CHECK_ID}#past-100", 130, [many, [3, 50, 99, 101, 120]], seed=100),
        _ranked_case(f"{CHECK_ID}#past-1000", 1030, [[1, 7, 15, 40, 90, 300, 999, 1001, 1015, 1030]], seed=1000),
    )


@lru_cache(maxsize=1)
def edge_cases() -> Tuple[Case, ...]:
    """Small inputs at the edges of the usual domain: a one-item gallery asked for k = 4."""
    one = np.zeros((3, 1))
    return (
        Case(
            name="size/one-item-k4",
            distances=one,
            relevance=np.array([[True], [False], [True]]),
            k=4,
            family="size/single-item",
        ),
    )


def separation_pool(session) -> Iterable[Case]:
    """The inputs the challenge searches: long cases, then edge cases (the usual generated inputs
    are the split search's, :func:`~.analysis.split_pool`)."""
    yield from long_cases()
    yield from edge_cases()


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
        for v in OPTION_VALUES.get(d, ()):
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
    for case in separation_pool(session):
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
