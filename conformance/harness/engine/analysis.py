"""What a function computes, by elimination over everything it returned (shared by ``check`` and
``identify``).

:func:`analyse`: findings first (raising, non-determinism, mutated inputs), then the candidates of
:mod:`..candidates.candidate` eliminated in stages on every evaluated input, field by field
(:mod:`.per_field`), split on further inputs where a field's survivors disagree
(:mod:`.eliminate`), a declared tie order challenged on large tie groups (:mod:`.probes`), and
the fields combined into one candidate or a :class:`~.composite.Composite`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.candidates.bugs import applicable_bugs
from retrieval_conformance.conformance.harness.candidates.candidate import (
    UNSTABLE,
    Candidate,
    cost,
    staged,
)
from retrieval_conformance.conformance.harness.engine import findings, separate
from retrieval_conformance.conformance.harness.engine.eliminate import Verdict, preference
from retrieval_conformance.conformance.harness.engine.impossible import impossible
from retrieval_conformance.conformance.harness.engine.partition import Partition, partition
from retrieval_conformance.conformance.harness.engine.per_field import Search, combine, identify_fields, returned_fields
from retrieval_conformance.conformance.harness.engine.probes import run_extra, tie_challenge
from retrieval_conformance.conformance.harness.inputs.public import FAMILIES, family_skip_reason, sample_cases
from retrieval_conformance.conformance.harness.session import Evaluation, Session

SPLIT_BUDGET = 40  # further calls the split search may make


@dataclass
class Analysis:
    verdict: Optional[Verdict]
    dims: List[str]
    raising: findings.Raising
    nondeterministic: Optional[str] = None
    mutated: Optional[str] = None
    evidence: List[Evaluation] = field(default_factory=list)
    adapter: str = ""
    unreadable: str = ""  # the first "wrong return type" error, if any
    fields: List[str] = field(default_factory=list)  # the fields it returned, the main one first
    per_field: Dict[str, List[Candidate]] = field(default_factory=dict)  # each field's survivors ([]: none)
    impossible: Optional[object] = None  # the smallest input with a fraction outside [0, 1] (engine.impossible)
    #: where nothing reproduces every input: what explains every input outside one family (engine.partition)
    partition: Optional[Partition] = None

    @property
    def uncheckable(self) -> Optional[str]:
        """Why no verdict can be given at all (exit status 2), or None."""
        r = self.raising
        if not self.evidence and self.unreadable:
            return (
                f"the function's return value could not be read on any input: {self.unreadable}; check the "
                f"adapter (--adapter {self.adapter}) and what the function returns"
            )
        if r.every_call:
            return (
                f"the function could not be called successfully on any input: it raised {r.error} on every "
                f"call (first input: {r.first_text()}); check the adapter (--adapter {self.adapter}) "
                "and --arrays, or the environment it needs"
            )
        if r.raised and r.environment:
            return (
                f"the function cannot run in this environment: {r.text()} -- an API it uses is missing or "
                "called with the wrong types here; nothing it would compute on those inputs can be compared"
            )
        if self.verdict is not None and self.verdict.survivors and self.verdict.compared == 0 and not r.raised:
            return "no value the function returned could be compared with the reference"
        return None


def split_pool(session: Session, seeds: Sequence[int] = range(7, 17), per_family: int = 3):
    """Generated inputs for the split search, family by family, seed after seed (lazily)."""
    caps = session.adapter.capabilities(True)
    fams = [f for f in FAMILIES if family_skip_reason(f, caps) is None and not f.needs_scores]
    for seed in seeds:
        for fam in fams:
            yield from sample_cases(fam, caps, per_family, seed=seed)


def analyse(session: Session, evs: Optional[Sequence[Evaluation]] = None, split: bool = True) -> Analysis:
    evs = list(session.observed if evs is None else evs)
    read = [ev for ev in evs if ev.any_read]
    # a cut-off can come up (now or in the split search) whenever the function takes one
    any_k = any(c.k is not None for ev in read for c in ev.calls) or (
        session.protocol_k and session.adapter.capabilities(True).k
    )
    dims = session.dims(any_k)
    out = Analysis(None, dims, findings.raising(session, evs), evidence=read, adapter=session.adapter.name)
    out.mutated = findings.mutations(evs)
    out.unreadable = next((o.error for ev in evs for o, rd in zip(ev.outcomes, ev.readings) if o.ok and rd is None), "")
    if not read:
        return out
    out.nondeterministic = findings.nondeterminism(session, read)
    if out.nondeterministic:
        return out
    convs, cmcs = session.candidate_space(any_k)
    any_no_k = any(c.k is None and (c.without_k or c.k_passed is None) for ev in read for c in ev.calls)
    bugs = applicable_bugs(
        session.adapter.aggregate_bugs,
        session.adapter.codes_input,
        any_k,
        any_no_k,
        session.adapter.main_metric,
        session.adapter.capabilities(True).junk,
    )
    order = preference(session.protocol_candidate, dims)
    stages = list(staged(convs, cmcs, bugs, session.convention, any_k=any_k))
    search = Search(
        list(read),
        lambda case: run_extra(session, case),
        lambda: split_pool(session),
        session.calls,
        lambda survivors: tie_challenge(session, survivors),
        SPLIT_BUDGET,
        separate=lambda elim, survivors, evidence: separate.challenge(
            session, survivors, evidence, bugs, dims, elim=elim, generated=lambda: split_pool(session)
        ),
    )
    fields = returned_fields(read, session.adapter.main_field)
    results = identify_fields(session.eliminator, fields, stages, search, order, split)
    evidence = search.evidence
    out.evidence = evidence
    out.fields = fields
    out.per_field = {f: (r.survivors if r is not None else []) for f, r in results.items()}
    if any(r is None for r in results.values()):
        out.verdict = Verdict([], -1, 0, len(evidence), search.n_split)
        out.raising = findings.raising(
            session, evs, lambda rec: expects_value(session, session.protocol_candidate, rec)
        )
        out.impossible = impossible(session, out)
        if not (len(fields) > 1 and any(out.per_field.values())):  # identified fields are named per field
            out.partition = partition(session, evidence, stages, order)
        return out
    shared, composite = combine(
        results,
        fields,
        lambda ref: nearness(ref, dims),
        fits=lambda c, f: bool(session.eliminator.only([f]).survivors([c], evidence)),
        unshown=lambda c, f: unshown_options(session, c, f, dims, evidence),
    )
    survivors = shared or results[fields[0]].survivors
    best = composite or survivors[0]
    compared = session.eliminator.survivors([best], evidence)
    undecided = [c for r in results.values() for c in r.undecided]
    out.verdict = Verdict(
        survivors,
        max(r.stage for r in results.values()),
        compared[0][1] if compared else 0,
        len(evidence),
        search.n_split,
        undecided,
        composite=composite,
    )
    out.raising = findings.raising(session, evs + evidence[len(read) :], lambda rec: expects_value(session, best, rec))
    out.impossible = impossible(session, out)
    return out


def nearness(ref: Candidate, dims: Sequence[str]) -> Callable[[Candidate], Tuple]:
    """Order of a field's survivors for a composite: fewest assumptions, then nearest ``ref`` (the
    main field's candidate), so what a field's values cannot tell is chosen as the main field does."""

    def key(c: Candidate) -> Tuple:
        return (
            cost(c),
            len(c.differences(ref, dims)) + len(set(c.bugs) ^ set(ref.bugs)),
            c.conv.ties == UNSTABLE,
            c.label(dims),
        )

    return key


def unshown_options(session: Session, cand: Candidate, field: str, dims: Sequence[str], evidence) -> Candidate:
    """``cand`` with each option that changes none of ``field``'s predictions on ``evidence`` set
    back to the protocol's: a field's part names only what its values show."""
    elim = session.eliminator.only([field])
    proto = session.protocol_candidate
    for d in dims:
        value = proto.option(d)
        if value is None or cand.option(d) == value:
            continue
        alt = (
            Candidate(cand.conv, value, cand.bugs)
            if d == "cmc_length"
            else Candidate(cand.conv.with_(**{d: value}), cand.cmc_length, cand.bugs)
        )
        if elim.same_predictions(cand, alt, evidence):
            cand = alt
    return cand


def expects_value(session: Session, cand: Candidate, rec) -> bool:
    """Whether ``cand`` expects a value from this call (raising where it has none is fine)."""
    pred = session.predictor.predict(cand, rec.ev.case, rec.call)
    return pred is not None and any(v is not None for key, v in pred.items() if key != "cmc_lengths")
