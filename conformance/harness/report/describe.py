"""Describing a candidate: the nearest preset, what differs from it or from the protocol, and why.

``identify`` names the nearest preset and the options (and known bugs) that differ from it;
``check`` names, per deviation, the parts of the best candidate (``components``) without which
the input's values are not reproduced, each with its clause and a sentence.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

from retrieval_conformance.conformance.harness.candidates.bugs import BUG_SECTION, Bug
from retrieval_conformance.conformance.harness.candidates.candidate import (
    Candidate,
    meaning,
    option_clause,
)
from retrieval_conformance.conformance.harness.session import Session


def nearest_preset(session: Session, cand: Candidate, dims: Sequence[str]) -> Tuple[str, List[str], List[str]]:
    """(nearest preset, the options where ``cand`` differs from it, other presets equally near)."""
    option_dims = [d for d in dims if d != "cmc_length"]
    names = list(session.adapter.candidate_presets)
    if session.protocol in names:  # the protocol asked about first among equals
        names.remove(session.protocol)
        names.insert(0, session.protocol)
    scored = []
    for name in names:
        pc = Candidate(session.adapter.preset_convention(name))
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
    return [("option", d) for d in cand.differences(session.protocol_candidate, option_dims)] + [
        ("bug", b) for b in cand.bugs
    ]


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
    return what.clause.format(ap_at_k=session.convention.ap_at_k, empty=session.convention.empty)


def cause_of(cand: Candidate, comp: Tuple[str, object]) -> str:
    """What the function does instead, as a clause: ``spec §4 ties=unstable``, ``spec §11 percent``."""
    kind, what = comp
    if kind == "option":
        return option_clause(what, cand.option(what))
    assert isinstance(what, Bug)
    return f"spec {BUG_SECTION} {what.id}"


def why_of(session: Session, cand: Candidate, comp: Tuple[str, object]) -> str:
    kind, what = comp
    if kind == "option":
        value, proto = cand.option(what), getattr(session.convention, what)
        return (
            f"your values equal the reference under {what}={value}: {meaning(what, value)} "
            f"(the protocol says {proto}: {meaning(what, proto)})"
        )
    return what.what
