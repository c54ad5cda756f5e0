"""One declared function checked in a process of its own: ``python -m ...gate.worker OUT.json``.

The declared check arrives as JSON on stdin (run from the lab's root, so that its targets and
modules resolve as they do for ``retrieval-conformance check``); the outcome, a JSON-ready dict
(:func:`outcome`), is written to ``OUT.json``.  A process per function keeps one function's
crash, hang or global state away from the others, and lets them run side by side.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Any, Dict

from retrieval_conformance.conformance.harness.entry import check
from retrieval_conformance.conformance.harness.report.results import DEVIATE, KNOWN, PASS, SKIP, Report

#: the verdicts of a declared function, worst last
PASSED, DEVIATED, ERROR = "pass", "deviate", "error"


def run_declared(spec: Dict[str, Any], derandomize: bool = True, isolation: str = "auto") -> Report:
    """``check`` under the table's settings (``spec``: a :class:`.config.DeclaredCheck` as a dict)."""
    return check(
        spec["target"],
        adapter=spec["adapter"],
        protocol=spec["protocol"],
        arrays=spec["arrays"],
        max_examples=spec["max_examples"],
        timeout=spec["timeout"],
        warmup_timeout=spec["warmup_timeout"],
        isolation=isolation,
        known_deviations=spec["known"],
        only=spec["only"],
        derandomize=derandomize,
        target=spec["target"],
        **spec["overrides"],
    )


def outcome(spec: Dict[str, Any], report: Report, verbose: bool = False) -> Dict[str, Any]:
    """What the reports of the gate need from one function's report, as plain data."""
    counts = {s: sum(r.status == s for r in report.results) for s in (PASS, DEVIATE, KNOWN, SKIP)}
    verdict = {0: PASSED, 1: DEVIATED}.get(report.exit_code, ERROR)
    deviations = []
    for r in report.results:
        if r.status not in (DEVIATE, KNOWN) or r.deviation is None:
            continue
        d = r.deviation
        deviations.append(
            {
                "check_id": r.id,
                "status": r.status,
                "clauses": list(d.clauses),
                "causes": [list(c) for c in d.causes],
                "explanations": list(d.explanations),
                "mismatches": [m.text() for m in d.mismatches[:6]],
                "smallest_input": d.case_text,
                "size": d.size,
                "snippet": d.snippet,
            }
        )
    return {
        "name": spec["name"] or spec["target"],
        "index": spec["index"],
        "target": spec["target"],
        "adapter": report.adapter,
        "protocol": report.protocol,
        "convention": report.convention,
        "verdict": verdict,
        "exit_code": report.exit_code,
        "counts": counts,
        "known_entries": list(spec["known"]),
        "deviations": deviations,
        "error": report.usage_error,
        "text": report.text(verbose=verbose),
        "junit_suite": report.junit_suite(spec["name"] or spec["target"]),
    }


def error_outcome(spec: Dict[str, Any], why: str) -> Dict[str, Any]:
    """The outcome of a function whose worker gave no answer (it died, or wrote nothing readable)."""
    report = Report(spec["target"], spec["adapter"], spec["protocol"] or "-", "-", spec["arrays"], usage_error=why)
    return outcome(spec, report)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out_path = argv[0]
    request = json.loads(sys.stdin.read())
    spec = request["spec"]
    report = run_declared(spec, derandomize=request["derandomize"], isolation=request["isolation"])
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(outcome(spec, report, verbose=request["verbose"]), fh)
    return 0


def request_json(declared, derandomize: bool, isolation: str, verbose: bool) -> str:
    """The worker's stdin for one :class:`.config.DeclaredCheck`."""
    return json.dumps(
        {"spec": asdict(declared), "derandomize": derandomize, "isolation": isolation, "verbose": verbose}
    )


if __name__ == "__main__":
    sys.exit(main())
