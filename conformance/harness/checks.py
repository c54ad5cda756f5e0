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
no check's smallest input showed gets its own result (``identified/...``).  :mod:`.explanations`
words each deviation.
"""

from __future__ import annotations

import fnmatch
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from retrieval_conformance.conformance.harness.adapters.base import UsageError
from retrieval_conformance.conformance.harness.candidates.candidate import UNSTABLE
from retrieval_conformance.conformance.harness.engine import findings, outside, separate
from retrieval_conformance.conformance.harness.engine.analysis import Analysis, analyse
from retrieval_conformance.conformance.harness.engine.causes import (
    identified_note,
)
from retrieval_conformance.conformance.harness.engine.probes import minus_one_probe
from retrieval_conformance.conformance.harness.explanations import Explanations
from retrieval_conformance.conformance.harness.identify import identification_cases
from retrieval_conformance.conformance.harness.inputs.public import (
    FAMILIES,
    Case,
    Family,
    family_skip_reason,
    fingerprint,
    golden_cases,
    hypothesis_storage,
    hypothesis_strategy,
)
from retrieval_conformance.conformance.harness.report.known import KnownDeviations
from retrieval_conformance.conformance.harness.report.results import (
    DEVIATE,
    KNOWN,
    PASS,
    SKIP,
    CheckResult,
    Deviation,
    Mismatch,
    Report,
)
from retrieval_conformance.conformance.harness.session import Evaluation, Session
from retrieval_conformance.reference.contract import progress
from retrieval_conformance.reference.contract.install_hints import install_hint

#: inputs per family of ``--identify``'s fixed sample that ``check`` also runs before explaining
IDENTIFY_PER_FAMILY = 3


class FindingCheck(NamedTuple):
    """A check on the function's behaviour over every input it was called on so far."""

    id: str
    title: str
    clause: str
    finding: Callable[[Analysis], Optional[str]]  # what the analysis found (None: it conforms)


FINDING_CHECKS = (
    FindingCheck(
        "call/deterministic",
        "the same input twice gives the same values",
        "the same input gives the same value (determinism)",
        lambda a: a.nondeterministic,
    ),
    FindingCheck(
        "call/inputs-unchanged",
        "the function does not modify its inputs",
        "inputs are read, not modified",
        lambda a: a.mutated,
    ),
)


def every_check_id() -> List[str]:
    """Every check id, in the order they run (whatever the adapter: a check it cannot express is skipped)."""
    return (
        [c.name for c in golden_cases()]
        + [f.id for f in FAMILIES]
        + [separate.CHECK_ID]
        + list(outside.CHECK_IDS)
        + [f.id for f in FINDING_CHECKS]
    )


class Checker(Explanations):
    """Runs the checks of one :class:`Session` and explains its deviations (:class:`Explanations`)."""

    def __init__(self, session: Session):
        self.s = session
        self.known = KnownDeviations.parse(session.known, every_check_id())
        self._causes: List[Tuple[str, ...]] = []
        self._named: List[str] = []  # what the function does instead, per cause of the deviation explained
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

    def run_one(self, cid: str, run: Optional[Callable[[], CheckResult]] = None, explain: bool = True) -> CheckResult:
        """Run one check by id (explained at once unless ``explain=False``), known deviations applied."""
        if run is None:
            run = dict(self.plan())[cid]
        aborted = self.s.aborted()
        if aborted:
            return CheckResult(cid, "", "", SKIP, reason=aborted)
        res = run()
        progress.tick()  # shown by the command line on a terminal
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
            return CheckResult(
                fam.id,
                fam.purpose,
                fam.clause,
                SKIP,
                reason=f"hypothesis is not installed ({exc}): pip install hypothesis",
            )
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

        cfg = settings(
            max_examples=s.max_examples,
            derandomize=s.derandomize,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            phases=(Phase.generate, Phase.shrink),
            report_multiple_bugs=False,
        )
        found = None
        try:
            with hypothesis_storage():
                found = find(hypothesis_strategy(fam, caps), deviates, settings=cfg)
        except (NoSuchExample, Unsatisfiable):
            found = None
        except UsageError:  # raised by the session itself (torch missing for arrays=torch): said as it is
            raise
        except Exception as exc:  # hypothesis gave up (e.g. a flaky function): keep the smallest seen
            if state["n"] == 0:  # not one input drawn: the harness failed, the function was never asked
                raise UsageError(
                    f"check {fam.id}: the harness could not draw an input (hypothesis raised "
                    f"{type(exc).__name__}: {str(exc)[:200]}); this is retrieval-conformance's fault, not the "
                    "function's: please report it with your versions of Python and hypothesis"
                ) from exc
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
        """The dedicated long inputs (:mod:`.engine.separate`): the first that deviates is the evidence."""
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
        """One input outside the protocol's usual domain (:mod:`.engine.outside`), with the AP rule identified."""
        start = time.perf_counter()
        # the AP rule is identified on the usual inputs, run first when no other check ran them
        v = self.analysis().verdict if self.s.adapter.outside_protocol_rules else None
        if v is not None and v.best is not None:
            model = outside.edge_model(v.best)
        else:
            model = outside.EdgeModel(self.s.convention.ap_rule)
        res = outside.check_results(self.s, model, [check_id])[0]
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

    # -- the whole run ------------------------------------------------------------------------
    def check(self) -> Report:
        s = self.s
        report = Report(s.target, s.adapter.name, s.protocol, s.convention_text, s.arrays)
        try:
            import hypothesis  # noqa: F401
        except ImportError as exc:
            report.usage_error = f"check needs hypothesis to generate inputs ({exc}); install it with: " + install_hint(
                "check"
            )
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
            report.usage_error = (
                f"the function could not be called successfully on any input with adapter "
                f"{s.adapter.name!r} ({err}); check the adapter and --arrays"
            )
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
    return (
        case.n_queries * case.n_gallery,
        case.n_gallery,
        case.n_queries,
        float(abs(case.distances).sum()),
        int(case.relevance.sum()),
        case.k or 0,
    )


__all__ = ["Checker", "Mismatch"]
