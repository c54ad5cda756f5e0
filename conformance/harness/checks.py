"""``check``: every golden case and every generated family against the protocol, then explanations.

Flow::

    golden cases ──┐
    hypothesis  ───┼─> Session.evaluate(case) ─> compare with the protocol's prediction
    families       │   (first deviation of a family: hypothesis shrinks it to the smallest input)
                   └─> after every check: identify.analyse(everything the function returned)
                       ─> each deviation names the causes that reproduce every value, or says none does

``check`` first runs what ``--identify`` runs too, so both eliminate on the same evidence.  A cause
is named only when a candidate reproducing every field of every input survives, and on a given
input only the parts of it that input needs, when the protocol changed in exactly those parts
reproduces it (:mod:`.engine.causes`); otherwise "cause unknown".  Every part is reported: one
no check's smallest input showed gets its own result (``identified/...``).
"""
from __future__ import annotations

import fnmatch
import time
from dataclasses import replace
from fractions import Fraction
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from retrieval_conformance.conformance.harness.candidates.candidate import UNSTABLE, search_text
from retrieval_conformance.conformance.harness.candidates.predict import within
from retrieval_conformance.conformance.harness.engine import findings, outside, separate
from retrieval_conformance.conformance.harness.engine.analysis import Analysis, analyse
from retrieval_conformance.conformance.harness.engine.causes import (
    clause_and_why,
    identified_note,
    part_label,
    partial_causes,
    parts,
    remove,
    shown,
)
from retrieval_conformance.conformance.harness.engine.composite import Composite
from retrieval_conformance.conformance.harness.engine.evidence import decisive
from retrieval_conformance.conformance.harness.engine.impossible import impossible_text
from retrieval_conformance.conformance.harness.engine.impossible import outside as outside_unit_interval
from retrieval_conformance.conformance.harness.engine.probes import minus_one_probe
from retrieval_conformance.conformance.harness.identify import identification_cases
from retrieval_conformance.conformance.harness.inputs.public import (
    FAMILIES,
    Case,
    Family,
    family_skip_reason,
    fingerprint,
    golden_cases,
    hypothesis_strategy,
)
from retrieval_conformance.conformance.harness.report.describe import alternatives, cause_of
from retrieval_conformance.conformance.harness.report.known import KnownDeviations, cause_spellings
from retrieval_conformance.conformance.harness.report.results import (
    DEVIATE,
    KNOWN,
    PASS,
    SKIP,
    CheckResult,
    Deviation,
    Mismatch,
    Report,
    fmt_exact,
    fmt_float,
)
from retrieval_conformance.conformance.harness.report.snippet import make_snippet
from retrieval_conformance.conformance.harness.session import Evaluation, Session

FAILING = ("raised", "timeout", "crashed", "wrong-type")
#: the head of a deviation no identified candidate explains: no clause is named without one
#: inputs per family of ``--identify``'s fixed sample that ``check`` also runs before explaining
IDENTIFY_PER_FAMILY = 3
UNKNOWN = "cause unknown (no known convention or bug reproduces your values)"


class FindingCheck(NamedTuple):
    """A check on the function's behaviour over every input it was called on so far."""

    id: str
    title: str
    clause: str
    finding: Callable[[Analysis], Optional[str]]  # what the analysis found (None: it conforms)


FINDING_CHECKS = (
    FindingCheck("call/deterministic", "the same input twice gives the same values",
                 "the same input gives the same value (determinism)", lambda a: a.nondeterministic),
    FindingCheck("call/inputs-unchanged", "the function does not modify its inputs", "inputs are read, not modified",
                 lambda a: a.mutated),
)


def every_check_id() -> List[str]:
    """Every check id, in the order they run (whatever the adapter: a check it cannot express is skipped)."""
    return ([c.name for c in golden_cases()] + [f.id for f in FAMILIES] + [separate.CHECK_ID]
            + list(outside.CHECK_IDS) + [f.id for f in FINDING_CHECKS])


class Checker:
    """Runs the checks of one :class:`Session` and explains its deviations."""

    def __init__(self, session: Session):
        self.s = session
        self.known = KnownDeviations.parse(session.known, every_check_id())
        self._causes: List[Tuple[str, ...]] = []
        self._pending: List[Tuple[CheckResult, Evaluation, str]] = []  # explained once everything ran
        self._analysis: Optional[Analysis] = None
        self._analysis_size = -1
        self._identified = False

    # -- the plan ---------------------------------------------------------------------------
    def plan(self) -> List[Tuple[str, Callable[[], CheckResult]]]:
        """Every check id (golden cases first, then the generated families) with its runner."""
        plan: List[Tuple[str, Callable[[], CheckResult]]] = []
        for case in golden_cases():
            plan.append((case.name, lambda c=case: self.check_golden(c)))
        for fam in FAMILIES:
            plan.append((fam.id, lambda f=fam: self.check_family(f)))
        plan.append((separate.CHECK_ID, self.check_long_lists))
        for cid in outside.CHECK_IDS:  # names real landmark data holds and generated inputs never do
            plan.append((cid, lambda c=cid: self.check_outside(c)))
        for finding in FINDING_CHECKS:  # about everything the function returned so far
            plan.append((finding.id, lambda f=finding: self.check_finding(f)))
        return [(cid, run) for cid, run in plan if self._selected(cid)]

    def _selected(self, check_id: str) -> bool:
        return not self.s.only or any(fnmatch.fnmatch(check_id, pat) for pat in self.s.only)

    def _is_known(self, res: CheckResult) -> bool:
        return self.known.accepts(res.id, res.deviation.causes if res.deviation else [])

    def run_one(self, cid: str, run: Optional[Callable[[], CheckResult]] = None, explain: bool = True
                ) -> CheckResult:
        """Run one check by id (explained at once unless ``explain=False``), known deviations applied."""
        if run is None:
            run = dict(self.plan())[cid]
        aborted = self.s.aborted()
        if aborted:
            return CheckResult(cid, "", "", SKIP, reason=aborted)
        res = run()
        if explain:
            self.explain_pending()
        return self._apply_known(res)

    def _apply_known(self, res: CheckResult) -> CheckResult:
        if res.status == DEVIATE and self._is_known(res):
            res.status = KNOWN
            res.reason = "; ".join(res.deviation.clauses)
        elif res.status == PASS and self.known.names_check(res.id):
            res.note = "listed as a known deviation but conforms now: remove it from the file"
        return res

    # -- one check --------------------------------------------------------------------------
    def check_golden(self, case: Case) -> CheckResult:
        start = time.perf_counter()
        cid = case.name
        clause_text = ", ".join((case.golden or {}).get("clauses", [])) or "spec §10 golden values"
        title = (case.golden or {}).get("source", "") or "seed example"
        ev = self.s.evaluate(case)
        res = CheckResult(cid, title, clause_text, PASS, examples=1)
        if ev.skipped is not None:
            res.status, res.reason = SKIP, ev.skipped
        elif ev.mismatches:
            self._deviate(res, ev, "spec §10 golden values")
        res.seconds = time.perf_counter() - start
        return res

    def check_family(self, fam: Family) -> CheckResult:
        try:
            from hypothesis import HealthCheck, Phase, find, settings
            from hypothesis.errors import NoSuchExample, Unsatisfiable
        except ImportError as exc:  # pragma: no cover - hypothesis is a dependency
            return CheckResult(fam.id, fam.purpose, fam.clause, SKIP,
                               reason=f"hypothesis is not installed ({exc}): pip install hypothesis")
        s = self.s
        start = time.perf_counter()
        res = CheckResult(fam.id, fam.purpose, fam.clause, PASS)
        caps = s.adapter.capabilities(s.protocol_k)
        reason = family_skip_reason(fam, caps)
        if reason is not None:
            res.status, res.reason = SKIP, reason
            return res
        state: Dict[str, Any] = {"n": 0, "expressed": 0, "skip": None, "hang": None, "found": 0, "best": None}
        seen: Dict[Tuple, bool] = {}

        def deviates(case: Case) -> bool:
            key = fingerprint(case)
            if key in seen:  # hypothesis replays inputs: answer consistently
                return seen[key]
            if state["hang"] is not None or s.aborted():
                return False
            if state["found"] and state["n"] >= state["found"] + s.shrink_budget:
                seen[key] = False  # shrink budget spent: keep the smallest input found so far
                return False
            ev = s.evaluate(case)
            state["n"] += 1
            result = False
            if ev.skipped is not None:
                state["skip"] = ev.skipped
            else:
                state["expressed"] += 1
                if ev.hung:
                    state["hang"] = ev  # not shrunk: every further try could cost a time limit
                elif ev.deviates:
                    result = True
                    if not state["found"]:
                        state["found"] = state["n"]
                    if state["best"] is None or _size(case) < _size(state["best"]):
                        state["best"] = case
            seen[key] = result
            return result

        cfg = settings(max_examples=s.max_examples, derandomize=s.derandomize, database=None,
                       deadline=None, suppress_health_check=list(HealthCheck),
                       phases=(Phase.generate, Phase.shrink), report_multiple_bugs=False)
        found = None
        try:
            found = find(hypothesis_strategy(fam, caps), deviates, settings=cfg)
        except (NoSuchExample, Unsatisfiable):
            found = None
        except Exception as exc:  # hypothesis gave up (e.g. a flaky function): keep the smallest seen
            found = state["best"]
            res.note = f"hypothesis stopped early ({type(exc).__name__}: {str(exc)[:120]})"
        if found is not None and state["best"] is not None and _size(state["best"]) < _size(found):
            found = state["best"]
        res.examples = state["n"]
        if state["hang"] is not None:
            self._deviate(res, state["hang"], fam.clause)
        elif found is not None:
            ev = s.evaluate(found)
            if not ev.deviates:
                res.note = "the smallest input did not deviate again when re-run (non-deterministic function?)"
            else:
                self._deviate(res, ev, fam.clause)
        elif state["expressed"] == 0:
            res.status = SKIP
            res.reason = f"no generated input could be expressed: {state['skip']}"
        res.seconds = time.perf_counter() - start
        return res

    def check_long_lists(self) -> CheckResult:
        """The dedicated long inputs (:mod:`.separate`): the first that deviates is the evidence."""
        start = time.perf_counter()
        res = CheckResult(separate.CHECK_ID, separate.CHECK_TITLE, separate.CHECK_CLAUSE, PASS)
        skipped = ""
        for case in separate.long_cases():
            ev = self.s.evaluate(case)
            if ev.skipped is not None:
                skipped = ev.skipped
                continue
            res.examples += 1
            if ev.mismatches:
                self._deviate(res, ev, separate.CHECK_CLAUSE)
                break
        if not res.examples:
            res.status, res.reason = SKIP, skipped
        res.seconds = time.perf_counter() - start
        return res

    def check_outside(self, check_id: str) -> CheckResult:
        """One input outside the protocol's usual domain (:mod:`.outside`), with the AP rule identified."""
        start = time.perf_counter()
        v = self.analysis().verdict if self.s.observed else None
        ap_rule = v.best.conv.ap_rule if v is not None and v.best is not None else self.s.convention.ap_rule
        res = outside.check_results(self.s, ap_rule, [check_id])[0]
        res.seconds = time.perf_counter() - start
        return res

    def _deviate(self, res: CheckResult, ev: Evaluation, fam_clause: str) -> None:
        res.status = DEVIATE
        res.deviation = self._evidence(res.id, ev, [fam_clause], [])
        self._pending.append((res, ev, fam_clause))

    # -- explanations -----------------------------------------------------------------------
    def analysis(self) -> Analysis:
        if not self._identified:  # one engine: everything --identify runs is evidence here too
            self._identified = True
            seen = {fingerprint(ev.case) for ev in self.s.observed}
            for case in identification_cases(self.s, IDENTIFY_PER_FAMILY):
                if self.s.aborted():
                    break
                if fingerprint(case) not in seen:
                    self.s.run_case(case)
        if self._analysis is None or self._analysis_size != len(self.s.observed):
            evs = [ev for ev in self.s.observed if not ev.case.non_positive_scores]
            self._analysis = analyse(self.s, evs)
            self._analysis_size = len(self.s.observed)
        return self._analysis

    def explain_pending(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        for res, ev, fam_clause in pending:
            self._causes = []
            clauses, why = self.explain(ev, fam_clause)
            res.deviation.clauses, res.deviation.explanations = clauses, why
            res.deviation.causes = self._causes

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
            why.append({"raised": f"the function raised {m.user}",
                        "timeout": f"the function did not return within {s.timeout:g} s",
                        "crashed": f"the function crashed the worker process ({m.user})",
                        "wrong-type": f"{m.user}"}[m.kind])
            r = self.analysis().raising
            if m.kind == "raised" and r.kind:
                why.append(f"it raises exactly on the inputs with {r.kind} ({len(r.raised)} calls), and returns a "
                           "value on every other input")
            return clauses, why
        if case.non_positive_scores:
            ev2 = s.evaluate(replace(case, non_positive_scores=False, name=case.name + " (scores > 0)"))
            if ev2.skipped is None and not ev2.mismatches:
                return (["spec §2 relevance does not depend on the score"],
                        why + ["the same input with positive scores conforms: relevant items with a score <= 0 were "
                               "counted as not relevant (torchmetrics >= 1.7.4, Lightning-AI/torchmetrics#3104)"])
        a = self.analysis()
        if a.nondeterministic:
            return (["the same input gives the same value (determinism)"],
                    why + ["not deterministic: " + a.nondeterministic])
        v = a.verdict
        if "non-finite" in kinds:
            why.append("the function returned a non-finite value (NaN or inf) where the reference is a number")
        beyond = outside_unit_interval(ev, s.atol)
        if beyond is not None and not (v is not None and v.survivors and a.impossible is None):
            why.append(impossible_text(beyond))
        if v is None or not v.survivors:
            named = partial_causes(s, a, ev)  # the fields that are identified may explain this input
            if named is not None:
                return named[0], why + named[1]
            return ([UNKNOWN], why + [f"no candidate ({search_text(a.dims)}) reproduces every value the function "
                                      f"returned (found by the {fam_clause} check); the values are below"])
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
        if not clauses:  # nothing identified differs from the protocol, yet this input deviates
            return ([UNKNOWN], why + ["what was identified reproduces every value, yet differs nowhere from the "
                                      "protocol on this input; the values are below"])
        rest = [p for p in parts(s, described, a.dims) if p not in here]
        together = ("together with " + ", ".join(part_label(described, p) for p in rest)
                    + " (shown on other inputs), ") if rest else ""
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
        snippet = make_snippet(s.func, s.target, s.adapter, call, s.arrays, s.protocol,
                               {k: v for k, v in s.overrides.items() if v is not None},
                               user_text.replace("\n", " ")[:120], fmt_exact(ref_val))
        case_text = ev.case.describe() + (f"; {call.note}" if call.note else "")
        printed = outcome.stdout + getattr(outcome, "stderr", "")
        return Deviation(check_id, clauses, why, ev.mismatches, case_text, snippet, printed,
                         outcome.traceback, size=ev.case.n_queries * ev.case.n_gallery)

    # -- the whole run ------------------------------------------------------------------------
    def check(self) -> Report:
        s = self.s
        report = Report(s.target, s.adapter.name, s.protocol, s.convention_text, s.arrays)
        try:
            import hypothesis  # noqa: F401
        except ImportError as exc:
            report.usage_error = (f"check needs hypothesis to generate inputs ({exc}); install it with: "
                                  "pip install hypothesis (pip install retrieval-conformance includes it)")
            return report
        for cid, run in self.plan():
            report.results.append(self.run_one(cid, run, explain=False))
        self.explain_pending()
        if s.observed and not self.s.only:
            report.results += self.unshown_causes(report)
        report.results = [self._apply_known(r) if r.status == DEVIATE else r for r in report.results]
        report.arrays = s.arrays
        report.notes.extend(s.notes)
        a = self.analysis() if s.observed else None
        if a is not None and a.uncheckable:
            report.usage_error = a.uncheckable
        elif s.runner is not None and s.runner.calls and s._success_count == 0:
            first = next((r.deviation for r in report.results if r.deviation), None)
            err = first.mismatches[0].text() if first and first.mismatches else "no call succeeded"
            report.usage_error = (f"the function could not be called successfully on any input with adapter "
                                  f"{s.adapter.name!r} ({err}); check the adapter and --arrays")
        elif s.runner is None and not any(r.status != SKIP for r in report.results):
            report.notes.append("no check could run with this adapter and protocol")
        if a is not None and not report.usage_error:
            probe = minus_one_probe(s, a.verdict.best) if a.verdict is not None and a.verdict.best else None
            if probe:
                report.notes.append(probe + "; pass topk = the gallery size for mAP@ALL")
            identified = identified_note(s, a)
            if identified:
                report.notes.append(identified)
            if a.verdict is not None and a.verdict.best is not None and a.verdict.best.conv.ties == UNSTABLE:
                report.notes.append(findings.platform_facts())
        timing = findings.timing(s.runner)
        if timing:
            report.notes.append(timing)
        return report

    def unshown_causes(self, report: Report) -> List[CheckResult]:
        """Every part of what was identified is reported: a part no check's smallest input showed
        (unstable ties from 17 tied items, beside percent on every input) gets its own result, on
        the smallest input that rules out the same candidate without it."""
        a = self.analysis()
        v = a.verdict
        if v is None or not v.survivors:
            return []
        named = {c for r in report.results if r.deviation for c in r.deviation.clauses}
        out = []
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
            res.deviation = self._evidence(cid, ev, _unique([clause_and_why(self.s, v.described, p)[0] for p in here]),
                                           [clause_and_why(self.s, v.described, p)[1] for p in here])
            res.deviation.explanations[-1] += (f" [shown on {ev.case.name}; together these reproduce all "
                                               f"{v.compared} values of the {v.inputs} inputs compared]")
            named.add(clause)
            out.append(res)
        return out

    def check_finding(self, check: FindingCheck) -> CheckResult:
        """A check on the function's behaviour over every input it was called on so far."""
        res = CheckResult(check.id, check.title, check.clause, PASS)
        if not self.s.observed:
            res.status, res.reason = SKIP, "no input was run before this check"
            return res
        a = self.analysis()
        text = check.finding(a)
        res.examples = len(a.evidence)
        if text:
            res.status = DEVIATE
            res.deviation = Deviation(check.id, [check.clause], [text], [], "", "")
        return res


def _size(case: Case) -> Tuple:
    """Order of "smaller" inputs: fewer queries x items, then fewer items, smaller distances."""
    return (case.n_queries * case.n_gallery, case.n_gallery, case.n_queries,
            float(abs(case.distances).sum()), int(case.relevance.sum()), case.k or 0)


def _unique(items) -> List[str]:
    out: List[str] = []
    for i in items:
        if i not in out:
            out.append(i)
    return out


__all__ = ["Checker", "Mismatch"]
