"""Evidence that convinces: for each ruled-out near candidate, the smallest input that ruled it out.

The near candidates of a verdict are the protocol, the preset it is described against, and what
was identified with one of its parts set back to the protocol's (each part's own "why not");
where nothing was identified, the protocol alone.  For each, :func:`decisive` finds the smallest
evaluated input on which its prediction disagrees with what the function returned, and
:func:`ruled_out_lines` prints both values and a runnable snippet.
"""

from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.candidates.candidate import UNSTABLE, Candidate
from retrieval_conformance.conformance.harness.candidates.predict import agreement, within
from retrieval_conformance.conformance.harness.engine.causes import Described, parts, remove
from retrieval_conformance.conformance.harness.engine.composite import Composite, field_name
from retrieval_conformance.conformance.harness.engine.eliminate import exact_value
from retrieval_conformance.conformance.harness.report.describe import nearest_preset
from retrieval_conformance.conformance.harness.report.results import fmt_exact, fmt_float
from retrieval_conformance.conformance.harness.report.snippet import make_snippet

MAX_NEAR = 4  # near candidates shown


class Decisive(NamedTuple):
    """One input on which a candidate and the function disagree, and the values that differ."""

    ev: Any
    call: Any
    field: str
    user: Any
    predicted: Any  # an interval, or None where the candidate has no value


def size(case) -> Tuple:
    """Smaller inputs first: queries x items, then items, then queries."""
    return (case.n_queries * case.n_gallery, case.n_gallery, case.n_queries, case.k or 0)


def _first_difference(pred, reading, atol: float, rtol: float) -> Tuple[str, Any, Any]:
    if pred is None:
        key = next(iter(reading.values))
        return key, reading.values[key], None
    for key, value in reading.values.items():
        if key == "cmc":
            cmc = pred.get("cmc") or []
            if "cmc_lengths" in pred and len(value) not in pred["cmc_lengths"]:
                return "CMC length", len(value), sorted(pred["cmc_lengths"])
            for j, (v, iv) in enumerate(zip(value, cmc)):
                if not within(v, iv, atol, rtol):
                    return f"cmc[{j}] (Rank-{j + 1})", v, iv
            continue
        iv = pred.get(key)
        if iv is not None and not within(value, iv, atol, rtol):
            return key, value, iv
    key = next(iter(reading.values))
    return key, reading.values[key], pred.get(key)


def decisive(session, evidence: Sequence, cand: Described) -> Optional[Decisive]:
    """The smallest evaluated input on which ``cand`` does not reproduce the function."""
    for ev in sorted(evidence, key=lambda e: size(e.case)):
        for call, reading in zip(ev.calls, ev.readings):
            if reading is None:
                continue
            cmc = reading.values.get("cmc")
            pred = session.predictor.predict(cand, ev.case, call, cmc_len=len(cmc) if cmc is not None else None)
            if not agreement(pred, reading, session.atol, session.rtol, session.eliminator.check_cmc_length)[0]:
                name, user, predicted = _first_difference(pred, reading, session.atol, session.rtol)
                return Decisive(ev, call, name, user, predicted)
    return None


def value_text(predicted) -> str:
    if predicted is None:
        return "no value (it counts no query here)"
    if isinstance(predicted, list):
        return " or ".join(str(v) for v in predicted)
    exact = exact_value(predicted)
    if exact is not None:
        return fmt_exact(exact)
    return f"a value between {fmt_exact(predicted[0])} and {fmt_exact(predicted[1])}"


def near_candidates(session, analysis) -> List[Tuple[str, Described]]:
    """(name, candidate): the protocol, then what was identified less one part, nearest first."""
    out: List[Tuple[str, Described]] = [(f"the protocol `{session.protocol}`", session.protocol_candidate)]
    v = analysis.verdict
    if v is None or not v.survivors:
        return out
    described = v.described
    preset = nearest_preset(session, v.best, analysis.dims)[0]
    if preset != session.protocol:  # the preset it is described against, when not the protocol
        out.append((f"the preset `{preset}`", Candidate(session.adapter.preset_convention(preset))))
    every = parts(session, described, analysis.dims)
    if len(every) < 2:
        return out  # one part: the protocol is that part set back
    for part in every:
        names, (kind, what) = part
        label = f"with {what}={getattr(session.convention, what)}" if kind == "option" else f"without bug {what.label}"
        where = f" for {'/'.join(field_name(f) for f in names)}" if names else ""
        near = remove(session, described, [part])
        if all(near != c for _, c in out):  # the same candidate reached twice is shown once
            out.append((f"the same {label}{where}", near))
    return out[:MAX_NEAR]


def _plain(session, cand: Described) -> Optional[dict]:
    """The options under which ``rc.evaluate`` computes ``cand`` (None: a bug, an unstable order or a
    composite, which the reference cannot be asked for)."""
    if isinstance(cand, Composite) or cand.bugs or cand.conv.ties == UNSTABLE:
        return None
    assert isinstance(cand, Candidate)
    dims = [d for d in session.dims(True) if d != "cmc_length"]
    return {d: cand.option(d) for d in cand.differences(session.protocol_candidate, dims)}


def ruled_out_lines(session, analysis, indent: str = "  ") -> List[str]:
    """Per ruled-out near candidate: the smallest decisive input, both values, a runnable snippet."""
    lines: List[str] = []
    for name, cand in near_candidates(session, analysis):
        found = decisive(session, analysis.evidence, cand)
        if found is None:
            continue
        ev, call = found.ev, found.call
        field = field_name(found.field)
        where = ev.case.describe() + (f"; {call.note}" if call.note else "")
        theirs = value_text(found.predicted)
        lines.append(
            f"{indent}ruled out {name}: on {ev.case.name} ({where}): {field}: yours "
            f"{fmt_float(found.user) if isinstance(found.user, float) else found.user}, it gives {theirs}"
        )
        overrides = {k: v for k, v in session.overrides.items() if v is not None}
        plain = _plain(session, cand)
        if plain is not None:
            overrides.update(plain)
        snippet = make_snippet(
            session.func,
            session.target,
            session.adapter,
            call,
            session.arrays,
            session.protocol,
            overrides,
            fmt_float(found.user) if isinstance(found.user, float) else str(found.user),
            theirs if plain is not None else f"{name}: {field} {theirs}",
            reference=plain is not None,
        )
        lines += [indent + "  " + ln for ln in snippet.rstrip("\n").splitlines()]
    return lines
