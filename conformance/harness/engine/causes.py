"""The causes ``check`` names for a deviation: the parts of what was identified, each shown.

What identification found (a :class:`~..candidates.candidate.Candidate`, or a
:class:`~.composite.Composite` with one per field) differs from the protocol in some parts: an
option value (``ties=grouped``) or a known bug, per field.  On one deviating input, :func:`shown`
keeps the parts without which that input's values are not reproduced, and only when the protocol
changed in exactly those parts reproduces them; otherwise every part is named (they are needed
together).  A clause is therefore named as broken only when a candidate differing from the
protocol in exactly the named parts reproduces the values.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

from retrieval_conformance.conformance.harness.candidates.candidate import Candidate
from retrieval_conformance.conformance.harness.engine.composite import Composite, field_name
from retrieval_conformance.conformance.harness.engine.partition import counts, unexplained_text
from retrieval_conformance.conformance.harness.report.describe import (
    cause_of,
    clause_of,
    components,
    describe,
    why_of,
    without,
)

Described = Union[Candidate, Composite]
#: one part: (the fields it concerns, or None for the whole function; ("option", name) or ("bug", Bug))
Part = Tuple[Optional[Tuple[str, ...]], Tuple[str, object]]


def parts(session, described: Described, dims: Sequence[str]) -> List[Part]:
    """Every part in which ``described`` differs from the protocol."""
    if isinstance(described, Composite):
        return [(tuple(names), comp) for names, cand in described.groups() for comp in components(session, cand, dims)]
    return [(None, comp) for comp in components(session, described, dims)]


def partial(session, analysis) -> Optional[Composite]:
    """Where some fields are identified and others are not: each identified field under its own
    candidate, the others under the protocol (None: nothing to name)."""
    found = analysis.per_field
    if len(analysis.fields) < 2 or not any(found.get(f) for f in analysis.fields):
        return None
    return Composite(tuple((f, found[f][0] if found.get(f) else session.protocol_candidate) for f in analysis.fields))


def partial_causes(session, analysis, ev) -> Optional[Tuple[List[str], List[str], List[str]]]:
    """(clauses, why, causes named) for an input the identified fields explain, where other fields
    are not identified: the parts it shows, when the protocol changed in exactly those parts
    reproduces it."""
    known = partial(session, analysis)
    if known is None or not session.eliminator.consistent(known, ev)[0]:
        return None
    here = shown(session, known, analysis.dims, ev)
    if not here:
        return None
    clauses: List[str] = []
    why: List[str] = []
    for part in here:
        clause, reason = clause_and_why(session, known, part)
        if clause not in clauses:
            clauses.append(clause)
        why.append(reason)
    unexplained = ", ".join(field_name(f) for f in analysis.fields if not analysis.per_field.get(f))
    why[-1] += f" [reproduces this input's values; {unexplained}: no known convention or bug reproduces its values]"
    return clauses, why, [cause_label(known, p) for p in here]


def partition_causes(session, analysis, ev) -> Optional[Tuple[List[str], List[str], List[str]]]:
    """(clauses, why, causes named) for an input reproduced by what explains every input outside
    one family (:mod:`.partition`), where nothing reproduces every input; None where it is not."""
    p = analysis.partition
    if p is None or not p.reproduces(session.eliminator, ev):
        return None
    here = shown(session, p.candidate, analysis.dims, ev)
    if not here:
        return None
    clauses: List[str] = []
    why: List[str] = []
    for part in here:
        clause, reason = clause_and_why(session, p.candidate, part)
        if clause not in clauses:
            clauses.append(clause)
        why.append(reason)
    why[-1] += (
        f" [reproduces this input's values and every input without {p.family} ({counts(p)}); {unexplained_text(p)}]"
    )
    return clauses, why, [cause_label(p.candidate, part) for part in here]


def remove(session, described: Described, removed: Sequence[Part]) -> Described:
    """``described`` with these parts set back to the protocol's."""
    for names, comp in removed:
        if names is None:
            described = without(session, described, comp)
        else:
            for f in names:
                described = described.replace(f, without(session, described.of(f), comp))
    return described


def shown(session, described: Described, dims: Sequence[str], ev) -> List[Part]:
    """The parts this input's values show: each one needed, and together enough."""
    every = parts(session, described, dims)
    needed = [p for p in every if not session.eliminator.consistent(remove(session, described, [p]), ev)[0]]
    if needed:
        rest = [p for p in every if p not in needed]
        if session.eliminator.consistent(remove(session, described, rest), ev)[0]:
            return needed
    return every


def clause_and_why(session, described: Described, part: Part) -> Tuple[str, str]:
    names, comp = part
    cand = described.of(names[0]) if names is not None and isinstance(described, Composite) else described
    why = why_of(session, cand, comp)
    if names is not None:
        why = f"{'/'.join(field_name(f) for f in names)}: {why}"
    return clause_of(session, comp), why


def cause_label(described: Described, part: Part) -> str:
    """What the function does instead in one part, as a clause (``spec §4 ties=reverse``), with the
    fields it concerns (``CMC: spec §4 ties=unstable``): the words ``check`` and ``identify`` share."""
    names, comp = part
    cand = described.of(names[0]) if names is not None and isinstance(described, Composite) else described
    text = cause_of(cand, comp)
    return f"{'/'.join(field_name(f) for f in names)}: {text}" if names is not None else text


def verdict_causes(session, analysis) -> List[str]:
    """Every cause the verdict names: the parts of what was identified, or, where nothing
    reproduces every value, of the identified fields (:func:`partial`) or of what explains every
    input outside one family (:mod:`.partition`)."""
    v = analysis.verdict
    if v is not None and v.survivors:
        described: Optional[Described] = v.described
    else:
        described = partial(session, analysis)
        if described is None and analysis.partition is not None:
            described = analysis.partition.candidate
    if described is None:
        return []
    return sorted({cause_label(described, p) for p in parts(session, described, analysis.dims)})


def part_label(described: Described, part: Part) -> str:
    """``ties=unstable``, ``bug percent``, with the fields it concerns (``CMC: ties=unstable``)."""
    names, (kind, what) = part
    cand = described.of(names[0]) if names is not None and isinstance(described, Composite) else described
    text = f"{what}={cand.option(what)}" if kind == "option" else f"bug {what.label}"
    return f"{'/'.join(field_name(f) for f in names)}: {text}" if names is not None else text


def identified_note(s, a) -> str:
    """What the elimination identified, as ``--identify`` words it (empty when it is the protocol)."""
    v = a.verdict
    if (v is None or not v.survivors) and a.partition is not None:
        p = a.partition
        return (
            f"identified on every input without {p.family} ({counts(p)}): "
            f"{describe(s, p.candidate, a.dims)[0]}; {unexplained_text(p)}"
        )
    if v is None or not v.survivors:
        return ""
    if v.composite is not None:
        return "identified: its fields follow different conventions (identified field by field): " + "; ".join(
            f"{'/'.join(field_name(f) for f in names)}: {describe(s, cand, a.dims)[0]}"
            for names, cand in v.composite.groups()
        )
    if not parts(s, v.best, a.dims):
        return ""
    return "identified: " + describe(s, v.best, a.dims)[0]
