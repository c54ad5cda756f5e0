"""``identify``: run the function on a fixed set of inputs and name what it computes.

The golden cases and a fixed sample of every input family are run; :func:`~.engine.analysis.analyse`
eliminates the candidates; :func:`identification` puts the verdict into words (the nearest preset
and what differs, :mod:`.report.describe`), with the probes' notes (:mod:`.engine.probes`).
"""

from __future__ import annotations

from typing import List

from retrieval_conformance.conformance.harness.candidates.candidate import UNSTABLE, search_text
from retrieval_conformance.conformance.harness.candidates.reference_values import LANDMARK_CONVENTIONS
from retrieval_conformance.conformance.harness.engine import findings, outside, separate
from retrieval_conformance.conformance.harness.engine.analysis import Analysis, analyse, expects_value
from retrieval_conformance.conformance.harness.engine.causes import verdict_causes
from retrieval_conformance.conformance.harness.engine.composite import field_name
from retrieval_conformance.conformance.harness.engine.evidence import ruled_out_lines
from retrieval_conformance.conformance.harness.engine.impossible import impossible, impossible_text
from retrieval_conformance.conformance.harness.engine.partition import counts, unexplained_text
from retrieval_conformance.conformance.harness.engine.probes import minus_one_probe, score_shift_note
from retrieval_conformance.conformance.harness.inputs.public import (
    FAMILIES,
    family_skip_reason,
    golden_cases,
    sample_cases,
)
from retrieval_conformance.conformance.harness.report.describe import alternatives, describe
from retrieval_conformance.conformance.harness.report.results import Identification
from retrieval_conformance.conformance.harness.session import Session


def identification_cases(session: Session, per_family: int) -> List:
    caps = session.adapter.capabilities(True)
    cases = list(golden_cases())
    for fam in FAMILIES:
        if family_skip_reason(fam, caps) is None and not fam.needs_scores:
            cases.extend(sample_cases(fam, caps, per_family, seed=0))
    return cases + list(separate.long_cases())


def identify(session: Session, per_family: int = 5) -> Identification:
    """Run the function on a fixed set of inputs and name what it computes."""
    for case in identification_cases(session, per_family):
        if session.aborted():
            break
        session.run_case(case)
    analysis = analyse(session)
    ident = identification(session, analysis)
    ident.causes = verdict_causes(session, analysis)
    ident.raises = [(f.type, f.kind) for f in analysis.raising.findings]
    if analysis.verdict is not None and analysis.verdict.best is not None and not ident.uncheckable:
        outside.identification_facts(session, analysis.verdict.best, ident, LANDMARK_CONVENTIONS)
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
        return Identification(
            False,
            lines
            + [
                "  not deterministic: "
                + a.nondeterministic
                + "; no convention is named for a function whose value changes"
            ],
            nondeterministic=True,
            n_cases=n_inputs,
        )
    extra: List[str] = []
    if r.raised:
        extra.append("  also: " + r.text())
    elif r.allowed:
        error = r.allowed[0].outcome.error_line[:200]
        extra.append(
            f"  note: it raises {error} on {len(r.allowed)} call(s) where the value is undefined "
            "(a query or input the convention leaves out): allowed"
        )
    if a.mutated:
        extra.append("  also: " + a.mutated)
    v = a.verdict
    if v is None or not v.survivors:
        lines.append(f"  no known convention or bug reproduces every value it returned ({search_text(a.dims)})")
        lines += field_lines(session, a)
        lines += partition_lines(session, a)
        lines += _impossible_lines(session, a)
        lines += ruled_out_lines(session, a)
        return Identification(False, lines + extra, n_cases=n_inputs)
    best = v.survivors[0]
    text, preset, diffs, equal = describe(session, best, a.dims)
    per_field = {}
    if v.composite is not None:
        lines.append("  its fields follow different conventions (identified field by field):")
        for names, cand in v.composite.groups():
            part, _, part_diffs, _ = describe(session, cand, a.dims)
            lines.append(f"    {'/'.join(field_name(f) for f in names)}: {part}")
            per_field.update({f: {d: cand.option(d) for d in part_diffs} for f in names})
    else:
        lines.append("  " + text)
    cmc_cand = v.composite.of("cmc") if v.composite is not None else best
    if cmc_cand.cmc_length == "gallery":
        lines.append(
            "  CMC length: each query's CMC is cut at min(max_rank, its gallery after junk removal), a "
            "convention (torchreid, fast-reid, reid-strong-baseline), compared on the common prefix"
        )
    if equal and not diffs:
        lines.append(
            f"  the same through this signature: {', '.join(f'`{p}`' for p in equal)}"
            + (f" ({session.adapter.same_presets_note})" if session.adapter.same_presets_note else "")
        )
    # an alternative under which the function raises where a value is due is not equally consistent
    due = len(r.raised)
    others = [c for c in v.survivors[1:] if sum(expects_value(session, c, rec) for rec in r.raised + r.allowed) == due]
    # a composite's main field cannot tell the CMC length: that is the CMC's own part
    alts = alternatives(best, others, [d for d in a.dims if v.composite is None or d != "cmc_length"])
    if alts:
        how = (
            "no input tried tells them apart"
            if not v.undecided
            else f"the split search stopped after {v.split_inputs} further inputs"
        )
        lines.append(f"  equally consistent with: {'; '.join(alts)} ({how})")
    lines.append(
        f"  evidence: {v.compared} values on {v.inputs} inputs"
        + (f", {v.split_inputs} of them chosen where the candidates disagree" if v.split_inputs else "")
    )
    if best.conv.ties == UNSTABLE:
        lines.append("  " + findings.platform_facts())
    impossible_lines = _impossible_lines(session, a)
    lines += impossible_lines + ruled_out_lines(session, a)
    differences = {d: best.option(d) for d in diffs}
    # identified: a described behaviour reproduces every value; an order that no tie policy gives
    # (a platform-dependent value), raising where a value is due, or mutated inputs are findings
    parts = [c for _, c in v.composite.parts] if v.composite is not None else [best]
    matched = all(c.conv.ties != UNSTABLE for c in parts) and not r.raised and not a.mutated and not impossible_lines
    return Identification(
        matched,
        lines + extra,
        conventions=v.survivors,
        preset=preset,
        differences=differences,
        bug=best.bugs[0].id if best.bugs else None,
        n_cases=n_inputs,
        per_field=per_field,
        composite=v.composite,
    )


def field_lines(session: Session, a: Analysis) -> List[str]:
    """Per field, what was found, where some fields are identified and others are not."""
    if len(a.fields) < 2 or not any(a.per_field.values()):
        return []
    out = []
    for f in a.fields:
        found = a.per_field.get(f)
        text = describe(session, found[0], a.dims)[0] if found else "no known convention or bug reproduces its values"
        out.append(f"    {field_name(f)}: {text}")
    return out


def partition_lines(session: Session, a: Analysis) -> List[str]:
    """What explains every input outside one family, and where "cause unknown" is confined."""
    p = a.partition
    if p is None:
        return []
    out = [f"    on every input without {p.family} ({counts(p)}): {describe(session, p.candidate, a.dims)[0]}"]
    alts = alternatives(p.candidate, p.alternatives, a.dims)
    if alts:
        out.append(f"      equally consistent there with: {'; '.join(alts)}")
    return out + ["    " + unexplained_text(p)]


def _impossible_lines(session: Session, a: Analysis) -> List[str]:
    found = impossible(session, a)
    return ["  " + impossible_text(found)] if found is not None else []
