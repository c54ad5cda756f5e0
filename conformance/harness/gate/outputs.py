"""What the gate reports: one summary on the terminal, Markdown for a CI page, JSON and JUnit XML.

Each reads the outcomes of :func:`.run.run_all` (one dict per declared function) and the stale
entries of each; none runs anything.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Sequence

from retrieval_conformance.conformance.harness.gate.worker import DEVIATED, ERROR, PASSED
from retrieval_conformance.conformance.harness.report.results import DEVIATE, junit_document, spec_version

#: the verdict as the summary prints it
VERDICT_WORDS = {PASSED: "passes", DEVIATED: "DEVIATES", ERROR: "ERROR"}


def gate_exit_code(outcomes: Sequence[Dict[str, Any]]) -> int:
    """2 when a function could not be checked, else 1 when one deviates beyond what is accepted, else 0."""
    codes = [o["exit_code"] for o in outcomes]
    return 2 if 2 in codes else 1 if 1 in codes else 0


def what_it_does(deviation: Dict[str, Any]) -> List[str]:
    """Per cause of a deviation, the clause naming what the function does (``§11 divided-by-k``)
    rather than the protocol clause it breaks; the latter when no other spelling exists."""
    broken = {c[len("spec ") :] if c.startswith("spec ") else c for c in deviation["clauses"]}
    return [
        next((s for s in reversed(spellings) if s not in broken), spellings[-1]) for spellings in deviation["causes"]
    ]


def causes_of(outcome: Dict[str, Any], status: str = DEVIATE) -> List[str]:
    """The causes of the function's deviations of ``status``: the clauses broken, with what the
    function does instead (``spec §6 ap_at_k=hits (does §11 divided-by-k)``), each once."""
    out: List[str] = []
    for d in outcome["deviations"]:
        if d["status"] != status:
            continue
        does = [c for c in what_it_does(d) if c not in " ".join(d["clauses"])]
        text = "; ".join(d["clauses"]) or f"{d['check_id']} (cause unknown)"
        if does:
            text += f" (does {', '.join(does)})"
        if text not in out:
            out.append(text)
    return out


def _smallest(outcome: Dict[str, Any]) -> Dict[str, Any]:
    failing = [d for d in outcome["deviations"] if d["status"] == DEVIATE]
    return min(failing, key=lambda d: d["size"]) if failing else {}


def _groups(outcome: Dict[str, Any]) -> List[List[Dict[str, Any]]]:
    """The function's deviating checks grouped by status and the clauses they break, each group
    smallest input first; the groups not accepted first."""
    by: Dict[tuple, List[Dict[str, Any]]] = {}
    for d in outcome["deviations"]:
        by.setdefault((d["status"] != DEVIATE, tuple(d["clauses"])), []).append(d)
    return [sorted(by[key], key=lambda d: d["size"]) for key in sorted(by)]


def summary_text(outcomes: Sequence[Dict[str, Any]], stale: Dict[str, List[str]], verbose: bool = False) -> str:
    """The terminal summary: a line per function (verdict, causes), then what each needs."""
    width = max(len(o["name"]) for o in outcomes)
    lines = [f"retrieval-conformance check: {len(outcomes)} declared function(s); specification {spec_version()}"]
    for o in outcomes:
        known = sum(d["status"] != DEVIATE for d in o["deviations"])
        why = "; ".join(causes_of(o)) if o["verdict"] == DEVIATED else o["error"] or ""
        extra = f" ({known} known deviation(s) accepted)" if known else ""
        lines.append(f"  {o['name']:<{width}}  {VERDICT_WORDS[o['verdict']]}{extra}" + (f": {why}" if why else ""))
    for o in outcomes:
        smallest = _smallest(o)
        if smallest:
            lines.append(f"{o['name']}: smallest failing input ({smallest['check_id']}): {smallest['smallest_input']}")
        for entry in stale.get(o["name"], []):
            lines.append(
                f"{o['name']}: stale known deviation {entry!r}: accepted, but no longer happens; "
                "remove it (check --accept does)"
            )
    failing = [o for o in outcomes if o["verdict"] != PASSED]
    if failing:
        lines.append(
            "details: retrieval-conformance check TARGET (the same options), --summary FILE or --verbose; "
            "accept today's deviations as known: retrieval-conformance check --accept"
        )
    if verbose:
        for o in failing:
            lines += ["", o["text"].rstrip()]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def summary_markdown(outcomes: Sequence[Dict[str, Any]], stale: Dict[str, List[str]]) -> str:
    """A Markdown page for a CI job summary or a PR comment: the verdicts, then a table per function."""
    code = gate_exit_code(outcomes)
    head = {0: "passes", 1: "fails: a deviation not accepted", 2: "fails: a function could not be checked"}[code]
    lines = [
        f"## retrieval-conformance: the gate {head}",
        "",
        "| function | verdict | causes |",
        "|---|---|---|",
    ]
    for o in outcomes:
        why = "; ".join(causes_of(o)) if o["verdict"] == DEVIATED else o["error"] or ""
        who = f"`{_cell(o['target'])}`" if o["name"] == o["target"] else f"{_cell(o['name'])} (`{_cell(o['target'])}`)"
        lines.append(f"| {who} | {VERDICT_WORDS[o['verdict']]} | {_cell(why) or '-'} |")
    for o in outcomes:
        counts = o["counts"]
        lines += [
            "",
            f"### `{_cell(o['name'])}`",
            "",
            f"`{_cell(o['target'])}`: adapter `{o['adapter']}`, protocol `{o['protocol']}` ({_cell(o['convention'])}); "
            f"{counts['pass']} passed, {counts['deviate']} deviated, {counts['known']} known, {counts['skip']} skipped",
        ]
        if o["error"]:
            lines += ["", f"**could not be checked**: {_cell(o['error'])}"]
        if o["deviations"]:
            lines += ["", "| causes | status | why | checks | smallest failing input |", "|---|---|---|---|---|"]
            for group in _groups(o):
                first = group[0]
                ids = ", ".join(f"`{d['check_id']}`" for d in group[:3]) + (
                    f" and {len(group) - 3} more" if len(group) > 3 else ""
                )
                lines.append(
                    f"| {_cell('; '.join(first['clauses']) or 'unknown')} | "
                    f"{'deviates' if first['status'] == DEVIATE else 'known (accepted)'} | "
                    f"{_cell(' '.join(first['explanations'][:1]))} | {ids} | "
                    f"{_cell(first['smallest_input'])} (`{first['check_id']}`) |"
                )
        smallest = _smallest(o)
        if smallest.get("snippet"):
            lines += ["", "<details><summary>reproduce the smallest failing input</summary>", "", "```python"]
            lines += [smallest["snippet"].rstrip(), "```", "", "</details>"]
        for entry in stale.get(o["name"], []):
            lines += ["", f"stale known deviation `{_cell(entry)}`: accepted, but no longer happens"]
    return "\n".join(lines) + "\n"


def summary_json(outcomes: Sequence[Dict[str, Any]], stale: Dict[str, List[str]]) -> str:
    """Every function's outcome (its report's text and JUnit suite left out), with its stale entries."""
    functions = []
    for o in outcomes:
        kept = {k: v for k, v in o.items() if k not in ("text", "junit_suite")}
        kept["stale_known_deviations"] = stale.get(o["name"], [])
        functions.append(kept)
    return (
        json.dumps(
            {"exit_code": gate_exit_code(outcomes), "specification": spec_version(), "functions": functions},
            indent=2,
            ensure_ascii=False,
        )
        + "\n"
    )


def summary_junit(outcomes: Sequence[Dict[str, Any]]) -> str:
    """One JUnit XML document, a ``<testsuite>`` per function."""
    return junit_document([o["junit_suite"] for o in outcomes])
