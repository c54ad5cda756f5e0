"""``retrieval-conformance check`` with no target: the declared functions, one summary, one exit status.

::

    retrieval-conformance check                            # every declared function
    retrieval-conformance check --summary summary.md --junit-xml gate.xml --json gate.json
    retrieval-conformance check --accept                   # today's deviations become known
    retrieval-conformance check --changed a.py b.py        # those a change touches (pre-commit)

Exit status: 0 every function conforms or deviates only as accepted, 1 a deviation not accepted,
2 a configuration error or a function that could not be checked.
"""

from __future__ import annotations

import argparse
import sys
from typing import Dict, List, Optional

from retrieval_conformance.conformance.harness.adapters.base import UsageError
from retrieval_conformance.conformance.harness.gate import accept, outputs
from retrieval_conformance.conformance.harness.gate.config import read_config
from retrieval_conformance.conformance.harness.gate.run import run_all, stale_entries, touched_by
from retrieval_conformance.reference.contract import options_table
from retrieval_conformance.reference.contract.command_line import positive_int, writable_file

#: dest -> flag of the options that only the declared checks read
GATE_ONLY = {
    "config": "--config",
    "accept": "--accept",
    "summary": "--summary",
    "json": "--json",
    "jobs": "--jobs",
    "changed": "--changed",
}
#: the options of one function that a table sets instead (refused without a target)
PER_TABLE = ("adapter", "protocol", "arrays", "known_deviations", "max_examples", "timeout", "warmup_timeout", "only")


def add_gate_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``check`` with no target (the declared functions)."""
    group = parser.add_argument_group(
        "declared functions (no target: every [[tool.retrieval-conformance.check]] table; docs/ci-gate.md)"
    )
    group.add_argument(
        "--config",
        metavar="FILE",
        default=None,
        help="the file declaring them (default: the nearest retrieval-conformance.toml or pyproject.toml "
        "declaring them, from this folder upwards)",
    )
    group.add_argument(
        "--accept",
        action="store_true",
        help="record today's deviations of each function as known (their causes, written where its table keeps "
        "its known deviations); drop accepted ones that no longer happen",
    )
    group.add_argument("--summary", metavar="FILE", default=None, help="also write a Markdown summary")
    group.add_argument("--json", metavar="FILE", default=None, help="also write every function's outcome as JSON")
    group.add_argument(
        "--jobs",
        type=positive_int,
        default=None,
        metavar="N",
        help="functions checked at once, each in its own worker process (default: one per core)",
    )
    group.add_argument(
        "--changed",
        nargs="*",
        metavar="PATH",
        default=None,
        help="check only the functions these changed files touch: a target's file, a table's 'files', "
        "the declaring file (pre-commit passes them)",
    )


def refused_options(ns: argparse.Namespace, given: Dict[str, object]) -> Optional[str]:
    """Why the options cannot go together with (or without) a target; None when they can."""
    if ns.target is not None:
        flags = [flag for dest, flag in GATE_ONLY.items() if dest in given]
        if flags:
            return f"{flags[0]}: applies to the declared functions (check with no target); leave out the target"
        return None
    per_table = list(PER_TABLE) + list(options_table.CONVENTION_OPTIONS) + ["identify"]
    for dest in per_table:
        if dest in given:
            flag = "--" + dest.replace("_", "-")
            key = "known-deviations" if dest == "known_deviations" else flag[2:]
            if dest == "identify":
                return "--identify: names one function's conventions; give its target"
            return f"{flag}: set per function in its table ({key} = ...) when no target is given, or give a target"
    return None


def run_gate(ns: argparse.Namespace, out=None) -> int:
    """Check every declared function (or those ``--changed`` touches); print one summary."""
    out = out or sys.stdout
    try:
        for dest in ("summary", "json", "junit_xml"):
            if getattr(ns, dest, None):
                writable_file("--" + dest.replace("_", "-"), getattr(ns, dest))
        config = read_config(ns.config)
    except (UsageError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    checks = config.checks if ns.changed is None else touched_by(config, ns.changed)
    if not checks:
        out.write(f"retrieval-conformance check: the changed files touch no function declared in {config.path}\n")
        return 0
    outcomes = run_all(
        config, checks, jobs=ns.jobs, derandomize=not ns.random, isolation=ns.isolation, verbose=ns.verbose
    )
    stale = {o["name"]: stale_entries(o) for o in outcomes}
    out.write(outputs.summary_text(outcomes, stale, verbose=ns.verbose))
    status = outputs.gate_exit_code(outcomes)
    if ns.accept:
        status = _accept(config, outcomes, stale, out)
    for dest, text in (
        ("summary", lambda: outputs.summary_markdown(outcomes, stale)),
        ("json", lambda: outputs.summary_json(outcomes, stale)),
        ("junit_xml", lambda: outputs.summary_junit(outcomes)),
    ):
        path = getattr(ns, dest, None)
        if path:
            try:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text())
            except OSError as exc:
                flag = "--" + dest.replace("_", "-")
                print(
                    f"error: {flag} {path}: cannot write ({exc.strerror or exc}); the verdict above stands",
                    file=sys.stderr,
                )
                status = status or 2
    if status == 2:
        print("error: a declared function could not be checked (see the summary above)", file=sys.stderr)
    return status


def _accept(config, outcomes: List[dict], stale: Dict[str, List[str]], out) -> int:
    """Record the baseline; 0 when every function's deviations are now accepted, 2 when one could not run."""
    accepted, changes = {}, []
    for o in outcomes:
        if o["verdict"] == "error":
            continue
        entries = accept.entries_to_accept(o, stale[o["name"]])
        if entries != o["known_entries"]:
            accepted[o["index"]] = entries
            added = [e for e in entries if e not in o["known_entries"]]
            changes.append((o["name"], added, stale[o["name"]]))
    try:
        written = accept.record(config, accepted) if accepted else []
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out.write(accept.accept_summary(changes))
    out.write(
        f"--accept: wrote {', '.join(written)}\n"
        if written
        else "--accept: nothing to change, the baseline is current\n"
    )
    return 2 if any(o["verdict"] == "error" for o in outcomes) else 0
