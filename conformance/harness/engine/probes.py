"""Probes: further calls that test a claim or a calling convention beyond the elimination.

* :func:`tie_challenge`: a declared tie order must also hold on large tie groups;
* :func:`minus_one_probe`: what ``topk=-1`` ("all" in DeepHash-pytorch's configs) means to the function;
* :func:`score_shift_note`: the same ranking with scores <= 0 must give the same values.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache
from typing import List, Optional, Tuple

import numpy as np
from retrieval_conformance.conformance.harness.candidates.bugs import bug
from retrieval_conformance.conformance.harness.candidates.candidate import Candidate
from retrieval_conformance.conformance.harness.candidates.predict import agreement, within
from retrieval_conformance.conformance.harness.inputs.case import Case
from retrieval_conformance.conformance.harness.inputs.public import FAMILIES, family, sample_cases
from retrieval_conformance.conformance.harness.session import Evaluation, Session
from retrieval_conformance.reference.contract.conventions import CONCRETE_POLICIES

TIE_CHALLENGE = 8  # inputs with large tie groups a declared tie order must also reproduce
LARGE_TIE_GROUP = 16  # sort implementations switch algorithm around here (numba, numpy's introsort)


def run_extra(session: Session, case) -> Optional[Evaluation]:
    """Run one more input unless the session gave up; None when it was not run or was skipped."""
    if session.aborted():
        return None
    ev = session.run_case(case)
    return None if ev.skipped is not None else ev


def tie_challenge(session: Session, survivors: List[Candidate]) -> List[Evaluation]:
    """A declared tie order (reverse, stable...) is claimed only after it also holds on large tie
    groups: sorts that reverse or keep small groups often do something else from 16 items on."""
    if not any(c.conv.ties in CONCRETE_POLICIES for c in survivors):
        return []
    if len(session.adapter.tie_candidates) < 2:
        return []  # the ranked list is given: no ties to order
    caps = session.adapter.capabilities(True)
    declared = next(c for c in survivors if c.conv.ties in CONCRETE_POLICIES)
    out: List[Evaluation] = []
    ours = large_group_cases()
    for case in (*ours, *sample_cases(family("ties/tie-heavy"), caps, 60, seed=11)):
        if len(out) >= TIE_CHALLENGE:
            break
        # a cut-off only on our own cut case (Case compares arrays: identity, not ==)
        cut_ok = caps.k and any(case is c for c in ours)
        if case.n_gallery < LARGE_TIE_GROUP or (case.k is not None and not cut_ok):
            continue
        if max(np.unique(row, return_counts=True)[1].max() for row in case.distances) < LARGE_TIE_GROUP:
            continue
        if not _order_shows(session, declared, case):
            continue
        ev = run_extra(session, case)
        if ev is not None and ev.any_read:
            out.append(ev)
    return out


@lru_cache(maxsize=1)
def large_group_cases() -> Tuple[Case, ...]:
    """Inputs whose first item is not relevant, then a tie group of 33 items.

    * every third item of the group relevant, so that an order inside the group shows on every
      value, also where a relevant item ranked first would make each value infinite (0-based ranks);
    * cut at k = 2, eight queries, each its own shuffle, whose one relevant item in the group is
      the first of it in gallery order: a stable sort hits on every query, another order misses
      on some, so that a hit rate or Recall@k shows the order (the whole list holds every hit);
    * the same with the group's last item relevant: a reverse order hits where the first case
      misses, so that stable, reverse, optimistic and pessimistic each give their own pair
      (a sort that reverses large groups is not taken for relevant-last).

    Rows are shuffled: sorts keep an already ordered group in place, whatever their tie order."""
    rng = np.random.default_rng(5)
    n = 40
    row = np.full(n, 2.0)
    row[0], row[1:34] = 0.0, 1.0
    spread = np.zeros((2, n), dtype=bool)
    spread[0, 1:34:3] = True
    spread[1, 2:34:3] = True
    spread[1, 36] = True
    perm = rng.permutation(n)
    whole = Case(
        name="ties/large-group#0",
        distances=np.tile(row[perm], (2, 1)),
        relevance=spread[:, perm],
        k=None,
        family="ties/tie-heavy",
    )
    rows = np.array([row[rng.permutation(n)] for _ in range(8)])
    first = np.zeros(rows.shape, dtype=bool)
    for q, r in enumerate(rows):
        first[q, np.flatnonzero(r == 1.0)[0]] = True
        first[q, np.flatnonzero(r == 2.0)[0]] = True  # one more, past the group
    cut = Case(name="ties/large-group#1", distances=rows, relevance=first, k=2, family="ties/tie-heavy")
    last = np.zeros(rows.shape, dtype=bool)
    for q, r in enumerate(rows):
        last[q, np.flatnonzero(r == 1.0)[-1]] = True
        last[q, np.flatnonzero(r == 2.0)[0]] = True
    cut_last = Case(name="ties/large-group#2", distances=rows, relevance=last, k=2, family="ties/tie-heavy")
    return whole, cut, cut_last


def _order_shows(session: Session, declared: Candidate, case) -> bool:
    """Whether ``declared``'s values on ``case`` can show another order: not when each is
    infinite (0-based ranks divide by zero wherever a relevant item comes first, in any order)."""
    for call in session.calls(case):
        pred = session.predictor.predict(declared, case, call)
        for key, v in (pred or {}).items():
            if key != "cmc_lengths" and isinstance(v, tuple) and not (math.isinf(v[0]) and math.isinf(v[1])):
                return True
    return False


def minus_one_probe(session: Session, best: Candidate, limit: int = 6) -> Optional[str]:
    """A function whose topk is required is given topk = N for the whole gallery; labs often pass
    -1 for "all" (DeepHash-pytorch's configs do).  Call it so on full-gallery inputs and say what
    -1 means to it, when that is not the whole gallery."""
    ad = session.adapter
    if not ad.required_topk:
        return None
    drop = Candidate(
        best.conv,
        best.cmc_length,
        tuple(b for b in best.bugs if b.id != "last-item-dropped") + (bug("last-item-dropped"),),
    )
    tried = dropped = full = 0
    for ev in session.observed:
        if tried >= limit:
            break
        if ev.case.k is not None or not ev.all_read or ev.case.n_gallery < 2 or not ev.calls:
            continue
        call = ev.calls[0]
        if call.k_passed != ev.case.n_gallery:
            continue
        tried += 1
        minus = replace(call, args=call.args[:4] + (-1,), k_passed=-1, without_k=True, note="topk=-1")
        out = session.call(minus)
        if not out.ok:
            continue
        try:
            reading = ad.read(out.value, minus)
        except Exception:
            continue
        p = session.predictor
        is_full = agreement(p.predict(best, ev.case, call), reading, session.atol, session.rtol)[0]
        is_drop = agreement(p.predict(drop, ev.case, minus), reading, session.atol, session.rtol)[0]
        full += is_full
        dropped += is_drop and not is_full
        if not is_drop:
            return None
    if dropped:
        return (
            "with topk=-1, the spelling of 'all' that DeepHash-pytorch's configs use, it drops the last ranked "
            f"item (`gnd[0:-1]`): mAP@ALL computed that way is mAP@(N-1) (checked on {tried} inputs; "
            "spec §6, §11)"
        )
    return None


def same_value(a: float, b: float, atol: float, rtol: float) -> bool:
    """Whether two returned values are the same within tolerance; NaN is the same as NaN and an
    infinity as the same infinity (a function returning NaN for an empty query does so whatever
    the scores are: that is no change)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return within(a, (b, b), atol, rtol)


def score_shift_note(session: Session, per_family: int) -> Optional[str]:
    """Metamorphic probe for score adapters: the same ranking with scores <= 0 must give the
    same values (torchmetrics >= 1.7.4 drops relevant items with a score <= 0)."""
    caps = session.adapter.capabilities(True)
    if not caps.scores:
        return None
    changed = 0
    main = session.adapter.main_field
    for case in sample_cases(next(f for f in FAMILIES if f.needs_scores), caps, per_family, seed=0):
        neg, pos = session.run_case(case), session.run_case(replace(case, non_positive_scores=False))
        if (
            neg.all_read
            and pos.all_read
            and neg.readings
            and any(
                not same_value(a.values[main], b.values[main], session.atol, session.rtol)
                for a, b in zip(neg.readings, pos.readings)
            )
        ):
            changed += 1
    if changed:
        return (
            f"with every score <= 0 (same ranking) its values change on {changed} of {per_family} inputs: "
            "relevant items with a score <= 0 count as not relevant (torchmetrics >= 1.7.4, "
            "Lightning-AI/torchmetrics#3104); spec §2"
        )
    return None
