"""Why each deviation of ``check`` happened: the causes identification names, and the evidence.

A deviation is explained once every check ran, so all explanations rest on the same evidence:
the parts of what was identified that the deviating input needs (each with its clause and a
sentence), or "cause unknown" when no candidate reproduces every value.  A part that no check's
smallest input showed gets a result of its own (``identified/...``), on the smallest input that
rules out the same candidate without it.  :class:`Explanations` is the half of
:class:`~.checks.Checker` that does this.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import List, Tuple

from retrieval_conformance.conformance.harness.candidates.candidate import search_text
from retrieval_conformance.conformance.harness.candidates.predict import within
from retrieval_conformance.conformance.harness.engine.causes import (
    cause_label,
    clause_and_why,
    part_label,
    partial_causes,
    partition_causes,
    parts,
    remove,
    shown,
)
from retrieval_conformance.conformance.harness.engine.composite import Composite
from retrieval_conformance.conformance.harness.engine.evidence import decisive
from retrieval_conformance.conformance.harness.engine.findings import kind_text_of
from retrieval_conformance.conformance.harness.engine.impossible import CLAUSE as IMPOSSIBLE_CLAUSE
from retrieval_conformance.conformance.harness.engine.impossible import impossible_text
from retrieval_conformance.conformance.harness.engine.impossible import outside as outside_unit_interval
from retrieval_conformance.conformance.harness.engine.partition import unexplained_text
from retrieval_conformance.conformance.harness.report.describe import alternatives, cause_of, describe
from retrieval_conformance.conformance.harness.report.known import cause_spellings
from retrieval_conformance.conformance.harness.report.results import (
    DEVIATE,
    CheckResult,
    Deviation,
    Report,
    fmt_exact,
    fmt_float,
)
from retrieval_conformance.conformance.harness.report.snippet import make_snippet
from retrieval_conformance.conformance.harness.session import Evaluation

#: the kinds of mismatch where the function gave no value to compare
FAILING = ("raised", "timeout", "crashed", "wrong-type")
#: the head of a deviation no identified candidate explains: no clause is named without one
UNKNOWN = "cause unknown (no known convention or bug reproduces your values)"


class Explanations:
    """The explaining half of :class:`~.checks.Checker`: it reads the checker's session ``s``, its
    ``analysis()``, and fills the deviations it queued in ``_pending`` and the causes in ``_causes``."""

    def explain_pending(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        for res, ev, fam_clause in pending:
            self._causes, self._named = [], []
            clauses, why = self.explain(ev, fam_clause)
            res.deviation.clauses, res.deviation.explanations = clauses, why
            res.deviation.causes, res.deviation.named = self._causes, _unique(self._named)

    def explain(self, ev: Evaluation, fam_clause: str) -> Tuple[List[str], List[str]]:
        s = self.s
        clauses: List[str] = []
        why: List[str] = []
        kinds = {m.kind for m in ev.mismatches}
        case = ev.case
        user = s.user_value(ev)
        bug = (case.golden or {}).get("known_bug")
        if bug and isinstance(user, float) and within(user, (Fraction(bug["value"]),) * 2, s.atol, s.rtol):
            why.append(f"this is the documented bug of golden case {case.golden.get('id')}: {bug['what']}")
        failing = kinds & set(FAILING)
        if failing:
            clauses.append(f"adapter {s.adapter.name}: returns {s.adapter.metrics_text} for every valid input")
            m = next(m for m in ev.mismatches if m.kind in failing)
            why.append(
                {
                    "raised": f"the function raised {m.user}",
                    "timeout": f"the function did not return within {s.timeout:g} s",
                    "crashed": f"the function crashed the worker process ({m.user})",
                    "wrong-type": f"{m.user}",
                }[m.kind]
            )
            r = self.analysis().raising
            found = r.finding_of(str(m.user)) if m.kind == "raised" and len(r.findings) > 1 else None
            if found is not None:  # each exception type with its own trigger, never merged
                total = len(r.raised) + r.returned + len(r.allowed)
                if found.kind:
                    why.append(
                        f"it raises {found.type} exactly on the inputs with {found.kind_text} "
                        f"({len(found.records)} calls)"
                    )
                why += ["it also " + f.text(total) for f in r.findings if f is not found]
            elif m.kind == "raised" and r.kind:
                why.append(
                    f"it raises exactly on the inputs with {kind_text_of(r.kind, r.also)} ({len(r.raised)} calls), "
                    "and returns a value on every other input"
                )
            return clauses, why
        if case.non_positive_scores:
            ev2 = s.evaluate(replace(case, non_positive_scores=False, name=case.name + " (scores > 0)"))
            if ev2.skipped is None and not ev2.mismatches:
                return (
                    ["spec §2 relevance does not depend on the score"],
                    why
                    + [
                        "the same input with positive scores conforms: relevant items with a score <= 0 were "
                        "counted as not relevant (torchmetrics >= 1.7.4, Lightning-AI/torchmetrics#3104)"
                    ],
                )
        a = self.analysis()
        if a.nondeterministic:
            return (
                ["the same input gives the same value (determinism)"],
                why + ["not deterministic: " + a.nondeterministic],
            )
        v = a.verdict
        if "non-finite" in kinds:
            why.append("the function returned a non-finite value (NaN or inf) where the reference is a number")
        beyond = outside_unit_interval(ev, s.atol)
        if beyond is not None and not (v is not None and v.survivors and a.impossible is None):
            why.append(impossible_text(beyond))
        if v is None or not v.survivors:
            named = partial_causes(s, a, ev)  # the fields that are identified may explain this input
            if named is None:  # what explains every input outside one family may explain this one
                named = partition_causes(s, a, ev)
            if named is not None:
                self._named += named[2]
                return named[0], why + named[1]
            confined = (
                [
                    f"{unexplained_text(a.partition)}; every other input is reproduced by: "
                    f"{describe(s, a.partition.candidate, a.dims)[0]}"
                ]
                if a.partition is not None
                else []
            )
            return (
                [UNKNOWN],
                why
                + [
                    f"no candidate ({search_text(a.dims)}) reproduces every value the function "
                    f"returned (found by the {fam_clause} check); the values are below"
                ]
                + confined,
            )
        described = v.described
        # name the parts without which this input's values are not reproduced
        here = shown(s, described, a.dims, ev)
        for part in here:
            clause, reason = clause_and_why(s, described, part)
            clauses.append(clause)
            why.append(reason)
            names, comp = part  # the cause as the function's behaviour too, for --known-deviations
            cand = described.of(names[0]) if names is not None and isinstance(described, Composite) else described
            self._causes.append(cause_spellings(clause, cause_of(cand, comp)))
            self._named.append(cause_label(described, part))
        if not clauses:  # nothing identified differs from the protocol, yet this input deviates
            return (
                [UNKNOWN],
                why
                + [
                    "what was identified reproduces every value, yet differs nowhere from the "
                    "protocol on this input; the values are below"
                ],
            )
        rest = [p for p in parts(s, described, a.dims) if p not in here]
        together = (
            ("together with " + ", ".join(part_label(described, p) for p in rest) + " (shown on other inputs), ")
            if rest
            else ""
        )
        why[-1] += f" [{together}reproduces all {v.compared} values of the {v.inputs} inputs compared]"
        alts = alternatives(v.best, v.survivors[1:], a.dims)
        if alts:
            why.append("equally consistent with every input tried: " + "; ".join(alts))
        return _unique(clauses), why

    def _evidence(self, check_id: str, ev: Evaluation, clauses: List[str], why: List[str]) -> Deviation:
        s = self.s
        idx = 0
        if s.adapter.per_query:
            bad_q = {m.query for m in ev.mismatches}
            idx = next((i for i, c in enumerate(ev.calls) if c.query in bad_q), 0)
        call = ev.calls[min(idx, len(ev.calls) - 1)]
        outcome = ev.outcomes[min(idx, len(ev.outcomes) - 1)]
        m0 = ev.mismatches[0] if ev.mismatches else None
        if m0 is None:
            user_text = "?"
        else:
            user_text = fmt_float(m0.user) if m0.kind in ("value", "non-finite") else f"{m0.kind}: {m0.user}"
        main = s.adapter.main_field
        ref_val = ev.reference.get((main, call.query))
        snippet = make_snippet(
            s.func,
            s.target,
            s.adapter,
            call,
            s.arrays,
            s.protocol,
            {k: v for k, v in s.overrides.items() if v is not None},
            user_text.replace("\n", " ")[:120],
            fmt_exact(ref_val),
        )
        case_text = ev.case.describe() + (f"; {call.note}" if call.note else "")
        printed = outcome.stdout + getattr(outcome, "stderr", "")
        return Deviation(
            check_id,
            clauses,
            why,
            ev.mismatches,
            case_text,
            snippet,
            printed,
            outcome.traceback,
            size=ev.case.n_queries * ev.case.n_gallery,
        )

    def unshown_causes(self, report: Report) -> List[CheckResult]:
        """Every part of what was identified is reported: a part no check's smallest input showed
        (unstable ties from 17 tied items, beside percent on every input) gets its own result, on
        the smallest input that rules out the same candidate without it."""
        a = self.analysis()
        v = a.verdict
        out = self._impossible_result(report, a)
        if v is None or not v.survivors:
            return out
        named = {c for r in report.results if r.deviation for c in r.deviation.clauses}
        for part in parts(self.s, v.described, a.dims):
            clause, reason = clause_and_why(self.s, v.described, part)
            if clause in named:
                continue
            found = decisive(self.s, a.evidence, remove(self.s, v.described, [part]))
            if found is None:
                continue
            ev = found.ev
            ev.mismatches = ev.mismatches or self.s.compare(ev)
            kind, what = part[1]
            cid = f"identified/{what if kind == 'option' else what.id}"
            res = CheckResult(cid, "a cause shown only on inputs the elimination ran", clause, DEVIATE, examples=1)
            # every part this input needs is named: the values there may need more than this one
            here = shown(self.s, v.described, a.dims, ev)
            res.deviation = self._evidence(
                cid,
                ev,
                _unique([clause_and_why(self.s, v.described, p)[0] for p in here]),
                [clause_and_why(self.s, v.described, p)[1] for p in here],
            )
            res.deviation.named = _unique([cause_label(v.described, p) for p in here])
            res.deviation.explanations[-1] += (
                f" [shown on {ev.case.name}; together these reproduce all "
                f"{v.compared} values of the {v.inputs} inputs compared]"
            )
            named.add(clause)
            out.append(res)
        return out

    def _impossible_result(self, report: Report, a) -> List[CheckResult]:
        """A fraction outside [0, 1] that ``--identify`` names is named by ``check`` too, even when
        no check's smallest input is the one that gave it (one engine, one verdict)."""
        found = a.impossible
        if found is None:
            return []
        text = impossible_text(found)
        if any(r.deviation and text in r.deviation.explanations for r in report.results):
            return []
        ev = found.ev
        ev.mismatches = ev.mismatches or self.s.compare(ev)
        res = CheckResult(
            "identified/impossible-value", "a value no fraction can take", IMPOSSIBLE_CLAUSE, DEVIATE, examples=1
        )
        res.deviation = self._evidence(res.id, ev, [IMPOSSIBLE_CLAUSE], [text])
        return [res]


def _unique(items) -> List[str]:
    out: List[str] = []
    for i in items:
        if i not in out:
            out.append(i)
    return out
