"""What a check run found: per-check results, deviations with their evidence, text and JUnit XML."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional, Tuple
from xml.sax.saxutils import escape, quoteattr

PASS, DEVIATE, SKIP, KNOWN = "pass", "deviate", "skip", "known"


def spec_version() -> str:
    """The version of the specification the clauses cite (pin it with the numbers you report)."""
    try:
        from retrieval_conformance.reference.contract.spec import SPEC_VERSION
    except Exception:  # the document is missing from a broken install: say so, never fail the report
        return "unknown"
    return SPEC_VERSION


def fmt_exact(value: Optional[Fraction]) -> str:
    """``169/240 = 0.704167`` (exact and float), ``undefined`` for None."""
    if value is None:
        return "undefined (no query is counted)"
    if isinstance(value, float):
        return fmt_float(value)
    if value.denominator == 1:
        return f"{value.numerator}"
    return f"{value} = {float(value):.6g}"


def fmt_float(value: Any) -> str:
    """A user's float with 6 significant digits, plus the simple fraction it equals if any."""
    if not isinstance(value, (int, float)):
        return str(value)
    if math.isnan(value) or math.isinf(value):
        return repr(float(value))
    frac = Fraction(value).limit_denominator(10000)
    text = f"{value:.6g}"
    if frac.denominator > 1 and abs(float(frac) - value) <= 1e-9 * max(1.0, abs(value)):
        text += f" (= {frac})"
    return text


@dataclass
class Mismatch:
    """One metric of one call that does not conform.

    ``kind``: ``value`` (a number that differs), ``non-finite`` (NaN/inf where the reference
    is a number), ``raised``, ``timeout``, ``crashed``, ``wrong-type``, ``length`` (a CMC of
    the wrong length).
    """

    metric: str
    kind: str
    user: Any
    reference: Any
    query: Optional[int] = None
    detail: str = ""

    def text(self) -> str:
        where = f" (query {self.query})" if self.query is not None and "query" not in self.metric else ""
        if self.kind in ("value", "non-finite"):
            return f"{self.metric}{where}: yours {fmt_float(self.user)}, reference {fmt_exact(self.reference)}" + (
                f" [{self.detail}]" if self.detail else ""
            )
        if self.kind == "timeout":
            return f"{self.metric}{where}: the call did not return within {self.detail}"
        if self.kind == "length":
            return f"{self.metric}{where}: {self.detail}"
        return f"{self.metric}{where}: {self.kind}: {self.user}"


@dataclass
class Deviation:
    """The evidence for one deviating check."""

    check_id: str
    clauses: List[str]
    explanations: List[str]
    mismatches: List[Mismatch]
    case_text: str
    snippet: str
    stdout: str = ""
    traceback: str = ""
    size: int = 0  # queries x gallery items of the input, to show the smallest first
    causes: List[Tuple[str, ...]] = field(default_factory=list)  # per cause named: its clause ids (known.py)
    #: what the function does instead, per cause named (``spec §4 ties=reverse``, ``CMC: spec §4 ...``),
    #: as ``Identification.causes`` words it
    named: List[str] = field(default_factory=list)


@dataclass
class CheckResult:
    id: str
    title: str
    clause: str
    status: str
    reason: str = ""
    deviation: Optional[Deviation] = None
    examples: int = 0
    seconds: float = 0.0
    note: str = ""


@dataclass
class Identification:
    """Which convention(s) a function follows (``--identify``)."""

    matched: bool
    lines: List[str]
    conventions: List[Any] = field(default_factory=list)
    preset: Optional[str] = None
    differences: Dict[str, str] = field(default_factory=dict)
    bug: Optional[str] = None
    n_cases: int = 0
    uncheckable: Optional[str] = None  # why no verdict can be given (exit status 2)
    nondeterministic: bool = False
    notes: List[str] = field(default_factory=list)  # ids of informational findings (e.g. topk-minus-one)
    #: where fields follow different conventions: field -> its options that differ from its nearest preset
    per_field: Dict[str, Dict[str, str]] = field(default_factory=dict)
    composite: Any = None  # the per-field candidate (engine.composite.Composite), or None
    #: what the verdict names (``spec §4 ties=reverse``, ``CMC: spec §4 ties=unstable``), as ``check``
    #: names it on its deviations (engine.causes.verdict_causes)
    causes: List[str] = field(default_factory=list)
    #: each exception type raised where a value was due, with the input kind that triggers it
    #: exactly (None: no one kind), as the ``also: raises ...`` line names them
    raises: List[Tuple[str, Optional[str]]] = field(default_factory=list)
    #: oxford adapter: per landmark name rule, the values that reproduce every edge input
    name_rules: Dict[str, Tuple[str, ...]] = field(default_factory=dict)

    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class Report:
    target: str
    adapter: str
    protocol: str
    convention: str
    arrays: str
    results: List[CheckResult] = field(default_factory=list)
    identification: Optional[Identification] = None
    usage_error: Optional[str] = None
    notes: List[str] = field(default_factory=list)

    @property
    def deviations(self) -> List[CheckResult]:
        return [r for r in self.results if r.status == DEVIATE]

    @property
    def named_causes(self) -> List[str]:
        """Every cause named on a deviation (``spec §4 ties=reverse``), as ``Identification.causes``."""
        return sorted({n for r in self.deviations for n in r.deviation.named})

    @property
    def conforms(self) -> bool:
        return self.usage_error is None and not self.deviations

    @property
    def exit_code(self) -> int:
        """0 conforms (known deviations allowed), 1 deviates, 2 usage error."""
        if self.usage_error is not None:
            return 2
        if self.identification is not None and self.identification.uncheckable:
            return 2
        if self.identification is not None and not self.results:
            return 0 if self.identification.matched else 1
        return 1 if self.deviations else 0

    def result(self, check_id: str) -> CheckResult:
        for r in self.results:
            if r.id == check_id:
                return r
        raise KeyError(check_id)

    def clauses(self) -> List[str]:
        out: List[str] = []
        for r in self.results:
            if r.deviation is not None:
                out.extend(c for c in r.deviation.clauses if c not in out)
        return out

    # -- text ------------------------------------------------------------------------
    def groups(self) -> List[List[CheckResult]]:
        """Deviating checks grouped by the clauses they break and the exceptions they raised (one
        group's heading names its first check's exception), most common first; inside a group the
        most telling one first (a documented bug, then the smallest input)."""
        by: Dict[tuple, List[CheckResult]] = {}
        for r in self.deviations:
            raised = sorted({str(m.user).split(":")[0] for m in r.deviation.mismatches if m.kind == "raised"})
            by.setdefault((tuple(r.deviation.clauses), tuple(raised)), []).append(r)

        def rank(r: CheckResult):
            d = r.deviation
            documented = any("documented bug" in w for w in d.explanations)
            return (not documented, d.size)

        out = [sorted(g, key=rank) for g in by.values()]
        return sorted(out, key=lambda g: (rank(g[0])[0], -len(g)))

    def text(self, verbose: bool = False) -> str:
        lines = [
            f"retrieval-conformance check: {self.target}",
            f"adapter {self.adapter} ({self.arrays} arrays), protocol {self.protocol} ({self.convention}); "
            f"specification {spec_version()} (retrieval-conformance explain CLAUSE)",
        ]
        if self.usage_error is not None:
            lines += ["", f"USAGE ERROR: {self.usage_error}"]
            return "\n".join(lines) + "\n"
        if self.results:
            counts = {s: sum(r.status == s for r in self.results) for s in (PASS, DEVIATE, SKIP, KNOWN)}
            head = "CONFORMS" if not counts[DEVIATE] else "DEVIATES"
            lines += [
                "",
                f"{head}: {counts[PASS]} passed, {counts[DEVIATE]} deviated, {counts[KNOWN]} known "
                f"deviation(s), {counts[SKIP]} skipped",
            ]
            for n, group in enumerate(self.groups(), start=1):
                first = group[0]
                d = first.deviation
                ids = ", ".join(r.id for r in group[:4]) + (f", ... ({len(group)} checks)" if len(group) > 4 else "")
                lines += ["", f"{n}) broken: {'; '.join(d.clauses)}", f"   in: {ids}"]
                for w in d.explanations:
                    lines.append(f"   why: {w}")
                for m in d.mismatches[:6]:
                    lines.append(f"   {m.text()}")
                if len(d.mismatches) > 6:
                    lines.append(f"   ... and {len(d.mismatches) - 6} more")
                if d.case_text:
                    lines.append(f"   smallest failing input ({first.id}): {d.case_text}")
                crashed = any(m.kind in ("raised", "crashed") for m in d.mismatches)
                if d.traceback and (verbose or crashed):
                    lines += ["   " + t for t in d.traceback.rstrip().splitlines()[-6:]]
                if d.stdout.strip() and (verbose or crashed):
                    lines.append("   what the function printed (last lines):")
                    lines += ["     | " + t for t in d.stdout.rstrip().splitlines()[-8:]]
                if d.snippet and (n == 1 or verbose):
                    lines.append("   reproduce:")
                    lines += ["     " + t for t in d.snippet.rstrip().splitlines()]
                if verbose:
                    for r in group[1:]:
                        lines.append(f"   [{r.id}] " + "; ".join(m.text() for m in r.deviation.mismatches[:2]))
            lines += ["", "checks:"]
            for r in self.results:
                mark = {PASS: "ok  ", DEVIATE: "FAIL", SKIP: "skip", KNOWN: "known"}[r.status]
                extra = f" ({r.examples} inputs)" if r.examples > 1 and r.status == PASS else ""
                text = r.reason
                if r.status == DEVIATE and r.deviation:
                    text = "; ".join(r.deviation.clauses)
                lines.append(
                    f"  [{mark}] {r.id}{extra}" + (f": {text}" if text else "") + (f" -- {r.note}" if r.note else "")
                )
            if len(self.groups()) > 1 and not verbose:
                lines.append("(reproducing snippets of the other groups: --verbose, or the JUnit XML report)")
        if self.identification is not None:
            lines += ["", self.identification.text()]
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines) + "\n"

    # -- JUnit XML ---------------------------------------------------------------------
    def junit_xml(self) -> str:
        """A JUnit XML document: one testcase per check; deviations are failures, known
        deviations are skipped with type ``xfail``."""
        return junit_document([self.junit_suite()])

    def junit_suite(self, name: str = "retrieval-conformance") -> str:
        """This report's ``<testsuite>`` element, named ``name`` (the CI gate names one per function)."""
        n = len(self.results)
        failures = len(self.deviations)
        skipped = sum(r.status in (SKIP, KNOWN) for r in self.results)
        errors = 1 if self.usage_error else 0
        total = sum(r.seconds for r in self.results)
        out = [
            f'<testsuite name={quoteattr(name)} tests="{n + errors}" failures="{failures}" '
            f'errors="{errors}" skipped="{skipped}" time="{total:.3f}">',
            f'<properties><property name="spec_version" value={quoteattr(spec_version())}/></properties>',
        ]
        cls = quoteattr(f"{self.adapter}.{self.protocol}")
        if self.usage_error:
            out.append(
                f'<testcase classname={cls} name="load-and-call" time="0">'
                f"<error message={quoteattr(self.usage_error)}/></testcase>"
            )
        for r in self.results:
            out.append(f'<testcase classname={cls} name={quoteattr(r.id)} time="{r.seconds:.3f}">')
            if r.status == DEVIATE and r.deviation:
                msg = "; ".join(r.deviation.clauses)
                body = "\n".join(
                    r.deviation.explanations
                    + [m.text() for m in r.deviation.mismatches]
                    + ["input: " + r.deviation.case_text, "", r.deviation.snippet]
                )
                out.append(f"<failure message={quoteattr(msg)}>{escape(body)}</failure>")
            elif r.status == KNOWN:
                out.append(f'<skipped type="xfail" message={quoteattr("known deviation: " + r.reason)}/>')
            elif r.status == SKIP:
                out.append(f"<skipped message={quoteattr(r.reason)}/>")
            out.append("</testcase>")
        out.append("</testsuite>")
        return "\n".join(out)

    def write_junit(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.junit_xml())


def junit_document(suites: List[str]) -> str:
    """A JUnit XML document of ``<testsuite>`` elements (:meth:`Report.junit_suite`)."""
    return "\n".join(['<?xml version="1.0" encoding="utf-8"?>', "<testsuites>", *suites, "</testsuites>"]) + "\n"
