"""Outside the protocol's usual inputs: what a landmark AP function does with names real data holds.

The generated inputs of the ``oxford`` adapter never hold a name both positive and junk, a name
ranked twice, a positive listed twice or missing from the list, and (``gldv2``) junk.  Real ground
truth and real ranked lists do, and real code differs there (:mod:`..candidates.landmark_rules`).  The
function is called once on each of :data:`~..candidates.landmark_rules.EDGE_INPUTS`; every combination of the
behaviours is kept that reproduces every value (with the AP rule and cut-off identified on the
usual inputs), and per behaviour what survives is a fact about the function.

Where the protocol's specification defines the behaviour (``compute_ap.cpp``'s positive-also-junk
rule for ``oxford``, revisitop's for ``roxford-*``, GLDv2's repeated predictions), a function doing
otherwise deviates under that input's check id (``outside/...``), so a compute_ap-rule function
does not conform to ``roxford-medium`` nor a revisitop-rule one to ``oxford``; a behaviour the
protocol does not define (junk under GLDv2) is reported as a fact only.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.adapters.base import Call, WrongType
from retrieval_conformance.conformance.harness.candidates.landmark_rules import (
    BEHAVIOURS,
    EDGE_INPUTS,
    MEANING,
    PREVIOUS_HIT,
    PROTOCOL_RULES,
    EdgeInput,
    landmark_ap,
    protocol_clause,
)
from retrieval_conformance.conformance.harness.candidates.predict import output_scale, scaled, within
from retrieval_conformance.conformance.harness.report.known import cause_spellings
from retrieval_conformance.conformance.harness.report.results import (
    DEVIATE,
    PASS,
    SKIP,
    CheckResult,
    Deviation,
    Mismatch,
)
from retrieval_conformance.conformance.harness.report.snippet import function_import

CHECK_IDS = tuple(e.id for e in EDGE_INPUTS)
#: the family these inputs form, as reports name it
FAMILY = "outside the protocol"


class EdgeModel(NamedTuple):
    """What the edge inputs are judged under, from the candidate identified on the usual inputs:
    its AP rule (its known AP bug included) and what its bugs do to the returned number (percent,
    rounding: :func:`~..candidates.predict.output_scale`)."""

    ap_rule: str
    scale: Any = 1


@dataclass
class EdgeRun:
    """One edge input, what the function returned (None: it raised or returned no number)."""

    edge: EdgeInput
    call: Call
    value: Optional[float]
    error: str = ""


@dataclass
class Outside:
    """The edge inputs run and the behaviours that reproduce every value returned."""

    runs: List[EdgeRun] = field(default_factory=list)
    surviving: Dict[str, Tuple[str, ...]] = field(default_factory=dict)  # behaviour -> values that survive
    combos: List[Dict[str, str]] = field(default_factory=list)
    model: EdgeModel = EdgeModel("trapezoid")
    k: Optional[int] = None

    def predicted(self, run: EdgeRun, combo: Dict[str, str]):
        e = run.edge
        return landmark_ap(
            e.ranked,
            e.positives,
            e.junk,
            ap_rule=self.model.ap_rule,
            overlap=combo["overlap"],
            repeats=combo["repeats"],
            count=combo["count"],
            junk_rule=combo["junk"],
            k=self.k,
        )

    def facts(self) -> List[str]:
        """One line per behaviour the edge inputs decided, in words."""
        if not self.combos:
            shown = "; ".join(f"{r.edge.what}: {_value_text(r)}" for r in self.runs)
            return [f"{FAMILY}: no known landmark rule reproduces its values ({shown})"]
        out = []
        for name, values in self.surviving.items():
            if len(values) == 1:
                out.append(f"{FAMILY}: {MEANING[(name, values[0])]}")
            elif len(values) < len(BEHAVIOURS[name]):  # some ruled out, the rest equally consistent
                either = "; or ".join(MEANING[(name, v)] for v in values)
                out.append(f"{FAMILY}: equally consistent: {either} (no input tried tells them apart)")
        return out


def _value_text(run: EdgeRun) -> str:
    return f"{run.value:.6g}" if run.value is not None else (run.error or "no value")


def edge_model(cand) -> EdgeModel:
    """What the edge inputs are judged under: the candidate identified on the usual inputs, its
    known AP bug included (a previous-hit trapezoid is no plain trapezoid on any input), and the
    percent or rounding its number carries."""
    rule = PREVIOUS_HIT if any(b.id == PREVIOUS_HIT for b in cand.bugs) else cand.conv.ap_rule
    return EdgeModel(rule, output_scale(cand.bugs))


def run_edges(session, model: EdgeModel) -> Optional[Outside]:
    """Call the function on every edge input (the ``oxford`` adapter only; None for others).

    The calls go straight to the worker, not into ``session.observed``: these inputs have no
    distance matrix the candidates of :mod:`..candidates.predict` could be compared on.
    """
    if not session.adapter.outside_protocol_rules:
        return None
    cached = getattr(session, "_outside", None)
    if cached is not None and cached.model == model:
        return cached
    k = session.adapter.cutoff
    out = Outside(model=model, k=k)
    for e in EDGE_INPUTS:
        call = Call(
            (list(e.positives), list(e.junk), list(e.ranked)),
            {},
            ("positives", "junk", "ranked_list"),
            k,
            10,
            query=0,
            without_k=k is not None,
            note=e.what,
        )
        outcome = session.call(call)
        value, error = None, ""
        if outcome.ok:
            try:
                value = session.adapter.read(outcome.value, call).values["AP"]
            except WrongType as exc:
                error = f"wrong return type: {exc}"
        else:
            error = (outcome.error or outcome.kind).splitlines()[0][:160]
        out.runs.append(EdgeRun(e, call, value, error))
    names = list(BEHAVIOURS)
    for values in itertools.product(*(BEHAVIOURS[n] for n in names)):
        combo = dict(zip(names, values))
        if all(_agrees(out, r, combo, session.atol, session.rtol) for r in out.runs):
            out.combos.append(combo)
    out.surviving = {n: tuple(v for v in BEHAVIOURS[n] if any(c[n] == v for c in out.combos)) for n in names}
    session._outside = out
    return out


def _agrees(out: Outside, run: EdgeRun, combo: Dict[str, str], atol: float, rtol: float) -> bool:
    pred = out.predicted(run, combo)
    if run.value is None or pred is None:
        return run.value is None and pred is None  # raising where |P| = 0 leaves no value: fine
    return within(run.value, scaled((pred, pred), out.model.scale), atol, rtol)


def protocol_deviations(session, outside: Outside) -> Dict[str, Tuple[str, str]]:
    """check id -> (clause, what the function does) where the protocol defines the behaviour and
    no surviving combination has the protocol's value."""
    rules = PROTOCOL_RULES.get(session.protocol, {})
    out: Dict[str, Tuple[str, str]] = {}
    names = list(BEHAVIOURS)
    for run in outside.runs:
        name = run.edge.behaviour
        want = rules.get(name)
        if want is None:
            continue
        # this input conforms when the protocol's value of its behaviour reproduces it, whatever the others
        if any(
            _agrees(outside, run, dict(zip(names, values)), session.atol, session.rtol)
            for values in itertools.product(*((want,) if n == name else BEHAVIOURS[n] for n in names))
        ):
            continue
        does = outside.surviving.get(name, ())
        what = (
            "; ".join(MEANING[(name, v)] for v in does)
            if does
            else f"no known landmark rule reproduces its value ({_value_text(run)})"
        )
        out[run.edge.id] = (protocol_clause(session.protocol, name), what)
    return out


def _defaults(rules: Dict[str, str]) -> Dict[str, str]:
    return {n: rules.get(n, BEHAVIOURS[n][0]) for n in BEHAVIOURS}


def check_results(session, model: EdgeModel, selected: Sequence[str]) -> List[CheckResult]:
    """The ``outside/...`` check results (skipped for adapters other than ``oxford``)."""
    results = []
    outside = run_edges(session, model) if any(cid in selected for cid in CHECK_IDS) else None
    bad = protocol_deviations(session, outside) if outside is not None else {}
    for e in EDGE_INPUTS:
        if e.id not in selected:
            continue
        res = CheckResult(e.id, f"{FAMILY}: {e.what}", "", PASS, examples=1)
        if outside is None:
            res.status, res.reason = SKIP, "only the oxford adapter's name lists can hold it"
            results.append(res)
            continue
        rules = PROTOCOL_RULES.get(session.protocol, {})
        if e.behaviour not in rules:
            res.note = "outside what the protocol defines: a fact about the function, not a deviation"
        res.clause = protocol_clause(session.protocol, e.behaviour) if e.behaviour in rules else FAMILY
        run = next(r for r in outside.runs if r.edge is e)
        if e.id in bad:
            clause, what = bad[e.id]
            res.status = DEVIATE
            want = outside.predicted(run, _defaults(rules))
            mism = Mismatch(
                "AP",
                "value" if run.value is not None else "raised",
                run.value if run.value is not None else run.error,
                want,
                0,
            )
            pos, junk, ranked = run.call.args
            imp, name = function_import(session.func, session.target)
            snippet = (
                f"{imp}\nprint({name}({pos!r}, {junk!r}, {ranked!r}))"
                f"  # yours: {_value_text(run)}; protocol {session.protocol}: {want}"
            )
            res.deviation = Deviation(
                e.id,
                [clause],
                [f"it follows another rule here: {what}"],
                [mism],
                f"one query, {e.what}: positives {list(pos)}, junk {list(junk)}, ranked {list(ranked)}",
                snippet,
                size=len(ranked),
            )
            res.deviation.causes = [cause_spellings(clause)]
        results.append(res)
    return results


def identification_facts(session, best, ident, conventions: Dict[str, object]) -> None:
    """Add the edge inputs' facts to an identification of an ``oxford``-adapter function, and name
    the landmark preset whose rules they follow (roxford's and oxford's AP agree on usual inputs;
    ``conventions``: each landmark preset's convention on the usual inputs)."""
    out = run_edges(session, edge_model(best))
    if out is None:
        return
    ident.lines.extend("  " + f for f in out.facts())
    ident.name_rules = dict(out.surviving)
    follows = [
        p for p, rules in PROTOCOL_RULES.items() if any(all(c[n] == v for n, v in rules.items()) for c in out.combos)
    ]
    if ident.preset not in PROTOCOL_RULES:
        return
    old = ident.preset
    same = [p for p in follows if conventions[p] == conventions[old]]
    if old in same:  # the nearest preset first
        same.remove(old)
        same.insert(0, old)
    if not same:  # the usual inputs match the preset, its name rules do not: say both, never "matches" alone
        ident.matched = False
        ident.lines = [
            line.replace(f"  matches `{old}`", f"  on the usual inputs, matches `{old}`", 1)
            if line.startswith(f"  matches `{old}`")
            else line
            for line in ident.lines
        ]
        ident.lines.append(f"  also: {FAMILY}, it follows no landmark preset's rules (not `{old}`'s)")
        return
    ident.preset = same[0]
    for i, line in enumerate(ident.lines):
        if line.startswith(f"  matches `{old}`") and same[0] != old:
            ident.lines[i] = line.replace(f"`{old}`", f"`{same[0]}`", 1) + f" (not `{old}`: its rules differ below)"
        elif line.startswith("  the same through this signature:"):
            rest = [f"`{p}`" for p in same[1:]]
            ident.lines[i] = (
                (
                    f"  the same through this signature: {', '.join(rest)} (roxford's difficulties differ "
                    "only in the positive and junk sets you pass)"
                )
                if rest
                else ""
            )
    ident.lines = [line for line in ident.lines if line]
