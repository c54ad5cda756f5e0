"""Elimination field by field, then one candidate or a composite.

Real evaluators compute their fields with different code (mAP through scikit-learn's grouped-ties
AP, CMC through ``np.argsort``), so one convention for the whole function can fail where each
field has a simple description.  Each returned field is identified on its own values
(:func:`eliminate_field`: the staged candidates of :mod:`..candidates.candidate`, the split search and the
tie challenge, all comparing that field only), then :func:`combine` keeps one candidate where one
reproduces every field, and otherwise the product of each field's nearest survivor, choosing
what a field's values cannot tell (the AP rule of a CMC) as the main field does.

The work grows with the number of fields, never with the product of their candidate spaces:
F fields cost F eliminations over the same candidate lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.candidates.candidate import Candidate
from retrieval_conformance.conformance.harness.engine.composite import Composite, field_of
from retrieval_conformance.conformance.harness.engine.eliminate import Eliminator, drop_dominated
from retrieval_conformance.conformance.harness.inputs.public import fingerprint


@dataclass
class FieldResult:
    """What survived for one field: ``survivors`` best first, ``stage`` = what they assume."""

    survivors: List[Candidate]
    stage: int
    undecided: List[Candidate] = field(default_factory=list)


@dataclass
class Search:
    """What one analysis shares between its fields: the inputs run so far and the budget left."""

    evidence: List
    run: Callable  # case -> Evaluation or None
    pool: Callable  # () -> iterable of cases for the split search
    calls_of: Callable  # case -> the adapter's calls
    challenge: Callable  # survivors -> evaluations with large tie groups
    budget: int
    #: (eliminator, survivors, evidence) -> evaluations of inputs on which the nearest alternatives
    #: of the best survivor predict other values (:func:`.separate.challenge`)
    separate: Optional[Callable] = None
    n_split: int = 0
    _ran: Dict = field(default_factory=dict)
    _challenged: Optional[List] = None

    def run_once(self, case):
        """Run ``case`` unless an earlier field's search ran it already."""
        key = fingerprint(case)
        if key not in self._ran:
            self._ran[key] = self.run(case)
        return self._ran[key]

    def challenge_once(self, survivors: List[Candidate]) -> List:
        if self._challenged is None:
            added = self.challenge(survivors)
            if not added:
                return []
            self._challenged = added
            self.evidence += added
            self.n_split += len(added)
        return self._challenged


def returned_fields(evidence: Sequence, main: str) -> List[str]:
    """The fields the function returned on any input, the main field first."""
    seen: List[str] = []
    for ev in evidence:
        for reading in ev.readings:
            if reading is None:
                continue
            for key in reading.values:
                if field_of(key) not in seen:
                    seen.append(field_of(key))
    if main in seen:
        seen.remove(main)
    return [main] + seen


def eliminate_field(
    elim: Eliminator, stages: Sequence[List[Candidate]], search: Search, order: Callable, split: bool = True
) -> Optional[FieldResult]:
    """The first stage with a survivor on ``elim``'s fields; split and tie-challenged when ``split``."""
    for n_stage, stage in enumerate(stages):
        kept = elim.survivors(stage, search.evidence)
        if not kept:
            continue
        survivors = sorted(drop_dominated([c for c, _ in kept]), key=order)
        undecided: List[Candidate] = []
        if split and len(survivors) > 1:
            survivors, added, undecided = elim.split(
                survivors, search.pool(), search.calls_of, search.run_once, search.budget
            )
            known = {id(e) for e in search.evidence}
            search.evidence += [ev for ev in added if id(ev) not in known]
            search.n_split += len(added)
            search.budget -= len(added)
            if not survivors:
                continue  # an input chosen to split them ruled them all out: assume more
            survivors = sorted(drop_dominated(survivors), key=order)
        if split:
            added = search.challenge_once(survivors)
            survivors = [c for c in survivors if all(elim.consistent(c, ev)[0] for ev in added)]
            if not survivors:
                continue  # a declared tie order that held on small tie groups broke on large ones
            if search.separate is not None:
                added = search.separate(elim, survivors, search.evidence)
                known = {id(e) for e in search.evidence}
                search.evidence += [ev for ev in added if id(ev) not in known]
                search.n_split += len(added)
                survivors = [c for c in survivors if all(elim.consistent(c, ev)[0] for ev in added)]
                if not survivors:
                    continue  # an input where the nearest alternative differs ruled the best out: assume more
        return FieldResult(survivors, n_stage, undecided)
    return None


def identify_fields(
    base: Eliminator,
    fields: Sequence[str],
    stages: Sequence[List[Candidate]],
    search: Search,
    order: Callable,
    split: bool = True,
) -> Dict[str, Optional[FieldResult]]:
    """Each field's result; re-checked on every input a later field's search added."""
    if len(fields) == 1:
        return {fields[0]: eliminate_field(base, stages, search, order, split)}
    results: Dict[str, Optional[FieldResult]] = {}
    for f in fields:
        results[f] = eliminate_field(base.only([f]), stages, search, order, split)
    for f in fields:  # inputs run for a later field may rule out an earlier field's survivors
        res, elim = results[f], base.only([f])
        if res is None:
            continue
        kept = [c for c in res.survivors if elim.survivors([c], search.evidence)]
        if kept:
            res.survivors = kept
        else:
            results[f] = eliminate_field(elim, stages, search, order, split=False)
    return results


def combine(
    results: Dict[str, Optional[FieldResult]],
    fields: Sequence[str],
    order_near: Callable,
    fits: Optional[Callable[[Candidate, str], bool]] = None,
    unshown: Optional[Callable[[Candidate, str], Candidate]] = None,
) -> Tuple[List[Candidate], Optional[Composite]]:
    """(survivors shared by every field, best first; or [] and the composite of each field's nearest).

    ``order_near(reference)`` sorts candidates by preference, nearest ``reference`` first.
    ``fits(candidate, field)``: whether it reproduces that field on every input (a main survivor
    that does is one description of the whole function, even where the field's own search kept a
    more specific one: one unstable sort behind mAP and CMC is not "CMC: ties=stable").
    ``unshown(candidate, field)``: the candidate with every option the field's values cannot show
    set back to the protocol's (the AP rule of a CMC is no difference of the CMC).
    """
    main = results[fields[0]]
    assert main is not None

    def shared_by(c: Candidate, f: str) -> bool:
        return c in results[f].survivors or (fits is not None and fits(c, f))

    shared = [c for c in main.survivors if all(shared_by(c, f) for f in fields[1:])]
    if shared:
        return shared, None
    best = main.survivors[0]
    parts = [(fields[0], best)]
    for f in fields[1:]:
        if shared_by(best, f):
            parts.append((f, best))
            continue
        cand = sorted(results[f].survivors, key=order_near(best))[0]
        parts.append((f, unshown(cand, f) if unshown is not None else cand))
    return [], Composite(tuple(parts))
