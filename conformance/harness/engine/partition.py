"""What the catalogue explains where nothing explains every input: one family of inputs set apart.

A function with one behaviour outside the catalogue (the precision at k where a cut-off cuts the
list) may follow a catalogued description everywhere else (reversed ties on whole lists).  When
no candidate reproduces every input, :func:`partition` sets apart the inputs of one family
(``FAMILY_SPLITS``: a cut-off inside the list, tied distances, ...) and eliminates the staged
candidates on the others.  The family whose candidate assumes least, then leaves the most inputs
explained, is kept:
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
    """The family of inputs whose removal lets a catalogued candidate reproduce every other input:
    the one whose candidate assumes least (its stage: known bugs, an unstable order), then the
    one leaving the most inputs explained (None: no family does, or nothing would be left to
    explain).  Assuming least first, as elimination does, keeps the choice where more inputs of
    the same kinds are added (``check`` runs more than ``--identify``): a candidate with one more
    bug can fit a larger remainder by chance."""
    elim = session.eliminator
    best: Optional[Partition] = None
    for name, member in FAMILY_SPLITS:
        inside = [ev for ev in evidence if member(session, ev)]
        outside = [ev for ev in evidence if not member(session, ev)]
        if not inside or not outside:
            continue
        for n_stage, stage in enumerate(stages):
            if best is not None and n_stage > best.stage:
                break  # it would assume more than the family kept
            kept = [c for c, _ in elim.survivors(stage, outside)]
            if not kept:
                continue
            kept.sort(key=order)
            cand = kept[0]
            unexplained = sorted((ev for ev in inside if not elim.consistent(cand, ev)[0]), key=_size)
            explained = [ev for ev in evidence if elim.consistent(cand, ev)[0]]
            better = best is None or (n_stage, -len(explained)) < (best.stage, -len(best.explained))
            if unexplained and better:
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
