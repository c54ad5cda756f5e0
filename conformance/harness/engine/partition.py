"""What the catalogue explains where nothing explains every input: one family of inputs set apart.

A function with one behaviour outside the catalogue (the precision at k where a cut-off cuts the
list) may follow a catalogued description everywhere else (reversed ties on whole lists).  When
no candidate reproduces every input, :func:`partition` sets apart the inputs of one family
(``FAMILY_SPLITS``: a cut-off inside the list, tied distances, ...) and eliminates the staged
candidates on the others.  The family whose removal leaves the most inputs explained is kept:
its candidate is named on every input it reproduces, and "cause unknown" is confined to the
inputs it does not (smallest first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.candidates.candidate import Candidate


def _no_relevant(session, ev) -> bool:
    rel, junk = session.cache.effective(ev.case, session.convention.base)
    return bool(any(not (rel[q] & ~junk[q]).any() for q in range(ev.case.n_queries)))


#: the families of inputs a behaviour outside the catalogue is set apart on: (name, ev -> bool)
FAMILY_SPLITS: Tuple[Tuple[str, Callable], ...] = (
    ("a cut-off k inside the list", lambda s, ev: ev.case.k is not None and ev.case.k < ev.case.n_gallery),
    ("a cut-off k beyond the gallery", lambda s, ev: ev.case.k is not None and ev.case.k > ev.case.n_gallery),
    ("a cut-off k", lambda s, ev: ev.case.k is not None),
    ("tied distances", lambda s, ev: ev.case.has_ties()),
    ("a query without a relevant item", _no_relevant),
    ("a one-item gallery", lambda s, ev: ev.case.n_gallery == 1),
    ("more than one query", lambda s, ev: ev.case.n_queries > 1),
    ("a grade above 1", lambda s, ev: ev.case.grades is not None and bool((ev.case.grades > 1).any())),
)


@dataclass
class Partition:
    """The inputs outside one family, explained by ``candidate``; the family's own inputs are not."""

    family: str
    candidate: Candidate
    stage: int  # what the candidate assumes (number of bugs, or an unstable order)
    explained: List  # the evaluations it reproduces
    unexplained: List  # those it does not, smallest first
    alternatives: List[Candidate]

    def reproduces(self, eliminator, ev) -> bool:
        return eliminator.consistent(self.candidate, ev)[0]

    @property
    def smallest(self):
        return self.unexplained[0]


def _size(ev) -> Tuple:
    case = ev.case
    return (case.n_queries * case.n_gallery, case.n_gallery, case.n_queries, case.k or 0)


def partition(session, evidence: Sequence, stages: Sequence[List[Candidate]], order: Callable) -> Optional[Partition]:
    """The family of inputs whose removal lets a catalogued candidate reproduce the most inputs
    (None: no family does, or nothing would be left to explain)."""
    elim = session.eliminator
    best: Optional[Partition] = None
    for name, member in FAMILY_SPLITS:
        inside = [ev for ev in evidence if member(session, ev)]
        outside = [ev for ev in evidence if not member(session, ev)]
        if not inside or not outside or (best is not None and len(outside) <= len(best.explained)):
            continue
        for n_stage, stage in enumerate(stages):
            kept = [c for c, _ in elim.survivors(stage, outside)]
            if not kept:
                continue
            kept.sort(key=order)
            cand = kept[0]
            unexplained = sorted((ev for ev in inside if not elim.consistent(cand, ev)[0]), key=_size)
            explained = [ev for ev in evidence if elim.consistent(cand, ev)[0]]
            if unexplained:
                best = Partition(name, cand, n_stage, explained, unexplained, kept[1:])
            break
    return best


def unexplained_text(p: Partition) -> str:
    ev = p.smallest
    return (
        f"no known convention or bug reproduces its values on {len(p.unexplained)} input(s) with {p.family}; "
        f"smallest: {ev.case.name} ({ev.case.describe()})"
    )


def counts(p: Partition) -> str:
    return f"{len(p.explained)} of {len(p.explained) + len(p.unexplained)} inputs"
