"""Naming what a function computes: elimination over everything it returned, then a verdict.

:func:`analyse` is shared by ``check`` (to explain deviations) and ``identify`` (to name the
convention): findings first (raising, non-determinism, mutated inputs), then the candidates of
:mod:`.candidates` eliminated in stages on every evaluated input, then split on further inputs
where the survivors disagree (:mod:`.eliminate`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np
from retrieval_conformance.conformance.harness import findings
from retrieval_conformance.conformance.harness.candidates import (
    UNSTABLE,
    Bug,
    Candidate,
    applicable_bugs,
    meaning,
    option_clause,
    staged,
)
from retrieval_conformance.conformance.harness.cases import FAMILIES, family_skip_reason, golden_cases, sample_cases
from retrieval_conformance.conformance.harness.eliminate import Verdict, drop_dominated, preference
from retrieval_conformance.conformance.harness.report import Identification
from retrieval_conformance.conformance.harness.session import Evaluation, Session, preset_convention, presets_for

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

    @property
    def uncheckable(self) -> Optional[str]:
        """Why no verdict can be given at all (exit status 2), or None."""
        r = self.raising
        if not self.evidence and self.unreadable:
            return (f"the function's return value could not be read on any input: {self.unreadable}; check the "
                    f"adapter (--adapter {self.adapter}) and what the function returns")
        if r.every_call:
            return (f"the function could not be called successfully on any input: it raised {r.error} on every "
                    f"call (first input: {r.first_text()}); check the adapter (--adapter {self.adapter}) "
                    "and --arrays, or the environment it needs")
        if r.raised and r.environment:
            return (f"the function cannot run in this environment: {r.text()} -- an API it uses is missing or "
                    "called with the wrong types here; nothing it would compute on those inputs can be compared")
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
        session.protocol_k and session.adapter.capabilities(True).k)
    dims = session.dims(any_k)
    out = Analysis(None, dims, findings.raising(session, evs), evidence=read, adapter=session.adapter.name)
    out.mutated = findings.mutations(evs)
    out.unreadable = next((o.error for ev in evs for o, rd in zip(ev.outcomes, ev.readings)
                           if o.ok and rd is None), "")
    if not read:
        return out
    out.nondeterministic = findings.nondeterminism(session, read)
    if out.nondeterministic:
        return out
    convs, cmcs = session.candidate_space(any_k)
    aggregate = not session.adapter.per_query and session.adapter.name != "reid"
    any_no_k = any(c.k is None and (c.without_k or c.k_passed is None) for ev in read for c in ev.calls)
    bugs = applicable_bugs(aggregate, session.adapter.name == "hashing-codes", any_k, any_no_k)
    protocol = session.protocol_candidate
    order = preference(protocol, dims)
    evidence = list(read)
    n_split = 0
    budget = SPLIT_BUDGET
    for n_stage, stage in enumerate(staged(convs, cmcs, bugs, session.convention)):
        kept = session.eliminator.survivors(stage, evidence)
        if not kept:
            continue
        survivors = sorted(drop_dominated([c for c, _ in kept]), key=order)
        undecided: List[Candidate] = []
        if split and len(survivors) > 1:
            survivors, added, undecided = session.eliminator.split(
                survivors, split_pool(session), session.calls, lambda case: _run(session, case), budget)
            evidence += added
            n_split += len(added)
            budget -= len(added)
            if not survivors:
                continue  # an input chosen to split them ruled them all out: assume more
            survivors = sorted(drop_dominated(survivors), key=order)
        if split:
            added = _tie_challenge(session, survivors)
            evidence += added
            n_split += len(added)
            survivors = [c for c in survivors if all(session.eliminator.consistent(c, ev)[0] for ev in added)]
            if not survivors:
                continue  # a declared tie order that held on small tie groups broke on large ones
        compared = session.eliminator.survivors([survivors[0]], evidence)
        out.verdict = Verdict(survivors, n_stage, compared[0][1] if compared else 0, len(evidence), n_split,
                              undecided)
        out.evidence = evidence
        best = survivors[0]
        out.raising = findings.raising(session, evs + evidence[len(read):],
                                       lambda rec, best=best: _defined(session, best, rec))
        return out
    out.evidence = evidence
    out.verdict = Verdict([], -1, 0, len(evidence), n_split)
    out.raising = findings.raising(session, evs, lambda rec: _defined(session, session.protocol_candidate, rec))
    return out


def _defined(session: Session, cand: Candidate, rec) -> bool:
    """Whether ``cand`` expects a value from this call (raising where it has none is fine)."""
    pred = session.predictor.predict(cand, rec.ev.case, rec.call)
    return pred is not None and any(v is not None for key, v in pred.items() if key != "cmc_lengths")


def minus_one_probe(session: Session, best: Candidate, limit: int = 6) -> Optional[str]:
    """A function whose topk is required is given topk = N for the whole gallery; labs often pass
    -1 for "all" (DeepHash-pytorch's configs do).  Call it so on full-gallery inputs and say what
    -1 means to it, when that is not the whole gallery."""
    from dataclasses import replace

    from retrieval_conformance.conformance.harness.candidates import bug
    from retrieval_conformance.conformance.harness.predict import agreement

    ad = session.adapter
    if ad.name != "hashing-codes" or not getattr(ad, "takes_k", False) or getattr(ad, "k_default", True):
        return None
    drop = Candidate(best.conv, best.cmc_length, tuple(b for b in best.bugs if b.id != "last-item-dropped")
                     + (bug("last-item-dropped"),))
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
        return ("with topk=-1, the spelling of 'all' that DeepHash-pytorch's configs use, it drops the last ranked "
                f"item (`gnd[0:-1]`): mAP@ALL computed that way is mAP@(N-1) (checked on {tried} inputs; "
                "CONVENTIONS §6, §11)")
    return None


TIE_CHALLENGE = 8  # inputs with large tie groups a declared tie order must also reproduce
LARGE_TIE_GROUP = 16  # sort implementations switch algorithm around here (numba, numpy's introsort)


def _tie_challenge(session: Session, survivors: List[Candidate]) -> List[Evaluation]:
    """A declared tie order (reverse, stable...) is claimed only after it also holds on large tie
    groups: sorts that reverse or keep small groups often do something else from 16 items on."""
    from retrieval_conformance.conformance.harness.cases import family

    if not any(c.conv.ties in ("stable", "reverse", "optimistic", "pessimistic") for c in survivors):
        return []
    if session.adapter.name == "oxford":
        return []  # the ranked list is given: no ties to order
    caps = session.adapter.capabilities(True)
    out: List[Evaluation] = []
    for case in sample_cases(family("ties/tie-heavy"), caps, 60, seed=11):
        if len(out) >= TIE_CHALLENGE:
            break
        if case.n_gallery < LARGE_TIE_GROUP or case.k is not None:
            continue
        if max(np.unique(row, return_counts=True)[1].max() for row in case.distances) < LARGE_TIE_GROUP:
            continue
        ev = _run(session, case)
        if ev is not None and ev.any_read:
            out.append(ev)
    return out


def _run(session: Session, case) -> Optional[Evaluation]:
    if session.aborted():
        return None
    ev = session.run_case(case)
    return None if ev.skipped is not None else ev


# -- words ----------------------------------------------------------------------------------

def nearest_preset(session: Session, cand: Candidate, dims: Sequence[str]) -> Tuple[str, List[str], List[str]]:
    """(nearest preset, the options where ``cand`` differs from it, other presets equally near)."""
    option_dims = [d for d in dims if d != "cmc_length"]
    names = list(presets_for(session.adapter.name))
    if session.protocol in names:  # the protocol asked about first among equals
        names.remove(session.protocol)
        names.insert(0, session.protocol)
    scored = []
    for name in names:
        pc = Candidate(preset_convention(name, session.adapter.name))
        if cand.conv.base != pc.conv.base:
            continue  # ReID: the junk rules must agree too
        scored.append((len(cand.differences(pc, option_dims)), name, cand.differences(pc, option_dims)))
    if not scored:
        return session.protocol, [], []
    best = min(s[0] for s in scored)
    ties = [s for s in scored if s[0] == best]
    return ties[0][1], ties[0][2], [s[1] for s in ties[1:]]


def option_phrase(d: str, value: str) -> str:
    return f"{d}: {value} ({meaning(d, value)})"


def describe(session: Session, cand: Candidate, dims: Sequence[str]) -> Tuple[str, str, List[str], List[str]]:
    """("matches `reid` except ties: unstable (...)", preset, differences, equally near presets)."""
    preset, diffs, equal = nearest_preset(session, cand, dims)
    parts = [option_phrase(d, cand.option(d)) for d in diffs]
    bugs = [b.what for b in cand.bugs]
    if not parts and not bugs:
        text = f"matches `{preset}`"
    elif not parts:
        text = f"matches `{preset}` except: " + "; ".join(bugs)
    else:
        text = f"matches `{preset}` except " + "; ".join(parts) + ("; and: " + "; ".join(bugs) if bugs else "")
    return text, preset, diffs, equal


def alternatives(best: Candidate, others: Sequence[Candidate], dims: Sequence[str]) -> List[str]:
    """Each other survivor once, as what it changes relative to ``best``."""
    out: List[str] = []
    for c in others:
        parts = [f"{d}={c.option(d)}" for d in dims if c.option(d) != best.option(d) and c.option(d) is not None]
        parts += [f"bug: {b.label}" for b in c.bugs if b not in best.bugs]
        parts += [f"without bug {b.label}" for b in best.bugs if b not in c.bugs]
        text = ", ".join(parts)
        if text and text not in out:
            out.append(text)
    return out


def components(session: Session, cand: Candidate, dims: Sequence[str]) -> List[Tuple[str, object]]:
    """What ``cand`` changes relative to the protocol: ("option", name) and ("bug", Bug) items."""
    option_dims = [d for d in dims if d != "cmc_length"]
    return ([("option", d) for d in cand.differences(session.protocol_candidate, option_dims)]
            + [("bug", b) for b in cand.bugs])


def without(session: Session, cand: Candidate, comp: Tuple[str, object]) -> Candidate:
    kind, what = comp
    if kind == "option":
        return Candidate(cand.conv.with_(**{what: getattr(session.convention, what)}), cand.cmc_length, cand.bugs)
    return Candidate(cand.conv, cand.cmc_length, tuple(b for b in cand.bugs if b is not what))


def clause_of(session: Session, comp: Tuple[str, object]) -> str:
    kind, what = comp
    if kind == "option":
        return option_clause(what, getattr(session.convention, what))
    assert isinstance(what, Bug)
    return what.clause.format(ap_at_k=session.convention.ap_at_k)


def why_of(session: Session, cand: Candidate, comp: Tuple[str, object]) -> str:
    kind, what = comp
    if kind == "option":
        value, proto = cand.option(what), getattr(session.convention, what)
        return (f"your values equal the reference under {what}={value}: {meaning(what, value)} "
                f"(the protocol says {proto}: {meaning(what, proto)})")
    return what.what


# -- identify ---------------------------------------------------------------------------------

def identification_cases(session: Session, per_family: int) -> List:
    caps = session.adapter.capabilities(True)
    cases = list(golden_cases())
    for fam in FAMILIES:
        if family_skip_reason(fam, caps) is None and not fam.needs_scores:
            cases.extend(sample_cases(fam, caps, per_family, seed=0))
    return cases


def identify(session: Session, per_family: int = 5) -> Identification:
    """Run the function on a fixed set of inputs and name what it computes."""
    for case in identification_cases(session, per_family):
        if session.aborted():
            break
        session.run_case(case)
    analysis = analyse(session)
    ident = identification(session, analysis)
    if analysis.verdict is not None and analysis.verdict.best is not None and not ident.uncheckable:
        probe = minus_one_probe(session, analysis.verdict.best)
        if probe:  # a fact about how it must be called, not a deviation of what it computes
            ident.lines.insert(2, "  note: " + probe + "; pass topk = the gallery size for mAP@ALL")
            ident.notes.append("topk-minus-one")
    note = findings.timing(session.runner)
    if note:
        ident.lines.append("  note: " + note)
    score_note = score_shift_note(session, per_family)
    if score_note:
        ident.lines.append("  also: " + score_note)
        ident.matched = False
    return ident


def identification(session: Session, a: Analysis) -> Identification:
    """The verdict of an analysis, in words."""
    n_inputs = len(a.evidence)
    head = f"identify: {session.target} (adapter {session.adapter.name}), {n_inputs} inputs compared"
    r = a.raising
    if a.raising.raised:
        head += f", {len(r.raised)} call(s) raised"
    lines = [head]
    if a.uncheckable:
        return Identification(False, lines + ["  " + a.uncheckable], uncheckable=a.uncheckable, n_cases=n_inputs)
    if a.nondeterministic:
        return Identification(False, lines + ["  not deterministic: " + a.nondeterministic
                                               + "; no convention is named for a function whose value changes"],
                              nondeterministic=True, n_cases=n_inputs)
    extra: List[str] = []
    if r.raised:
        extra.append("  also: " + r.text())
    elif r.allowed:
        error = r.allowed[0].outcome.error.splitlines()[0][:200]
        extra.append(f"  note: it raises {error} on {len(r.allowed)} call(s) where the value is undefined "
                     "(a query or input the convention leaves out): allowed")
    if a.mutated:
        extra.append("  also: " + a.mutated)
    v = a.verdict
    if v is None or not v.survivors:
        lines.append("  no known convention or bug reproduces every value it returned (tie policy x AP rule x "
                     "AP@k denominator x empty-query policy x CMC length, with up to two known bugs)")
        lines += _first_differences(session, a)
        return Identification(False, lines + extra, n_cases=n_inputs)
    best = v.survivors[0]
    text, preset, diffs, equal = describe(session, best, a.dims)
    lines.append("  " + text)
    if best.cmc_length == "gallery":
        lines.append("  CMC length: each query's CMC is cut at min(max_rank, its gallery after junk removal), a "
                     "convention (torchreid, fast-reid, reid-strong-baseline), compared on the common prefix")
    if equal and not diffs:
        lines.append(f"  the same through this signature: {', '.join(f'`{p}`' for p in equal)}"
                     + (" (roxford's difficulties differ only in the positive and junk sets you pass)"
                        if session.adapter.name == "oxford" else ""))
    # an alternative under which the function raises where a value is due is not equally consistent
    due = len(r.raised)
    others = [c for c in v.survivors[1:]
              if sum(_defined(session, c, rec) for rec in r.raised + r.allowed) == due]
    alts = alternatives(best, others, a.dims)
    if alts:
        how = ("no input tried tells them apart" if not v.undecided
               else f"the split search stopped after {v.split_inputs} further inputs")
        lines.append(f"  equally consistent with: {'; '.join(alts)} ({how})")
    lines.append(f"  evidence: {v.compared} values on {v.inputs} inputs"
                 + (f", {v.split_inputs} of them chosen where the candidates disagree" if v.split_inputs else ""))
    if best.conv.ties == UNSTABLE:
        lines.append("  " + findings.platform_facts())
    differences = {d: best.option(d) for d in diffs}
    # identified: a described behaviour reproduces every value; an order that no tie policy gives
    # (a platform-dependent value), raising where a value is due, or mutated inputs are findings
    matched = best.conv.ties != UNSTABLE and not r.raised and not a.mutated
    return Identification(matched, lines + extra, conventions=v.survivors, preset=preset, differences=differences,
                          bug=best.bugs[0].id if best.bugs else None, n_cases=n_inputs)


def _first_differences(session: Session, a: Analysis) -> List[str]:
    for ev in a.evidence:
        mism = session.compare(ev)
        if mism:
            return [f"  first input where it differs from `{session.protocol}`: {ev.case.name} "
                    f"({ev.case.describe()}): " + "; ".join(m.text() for m in mism[:3])]
    return []


def score_shift_note(session: Session, per_family: int) -> Optional[str]:
    """Metamorphic probe for score adapters: the same ranking with scores <= 0 must give the
    same values (torchmetrics >= 1.7.4 drops relevant items with a score <= 0)."""
    from dataclasses import replace

    from retrieval_conformance.conformance.harness.predict import within

    caps = session.adapter.capabilities(True)
    if not caps.scores:
        return None
    changed = 0
    for case in sample_cases(next(f for f in FAMILIES if f.needs_scores), caps, per_family, seed=0):
        neg, pos = session.run_case(case), session.run_case(replace(case, non_positive_scores=False))
        if neg.all_read and pos.all_read and neg.readings and any(
                not within(a.values["AP"], (b.values["AP"], b.values["AP"]), session.atol, session.rtol)
                for a, b in zip(neg.readings, pos.readings)):
            changed += 1
    if changed:
        return (f"with every score <= 0 (same ranking) its values change on {changed} of {per_family} inputs: "
                "relevant items with a score <= 0 count as not relevant (torchmetrics >= 1.7.4, "
                "Lightning-AI/torchmetrics#3104); CONVENTIONS §2")
    return None
