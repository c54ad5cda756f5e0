"""``python -m retrieval_conformance.conformance.fuzz``: run the fuzz campaign, or show one case.

Exit status: 0 when every case ended in the reference's numbers or a named error, 1 when
anything else happened (each finding is listed with the command that reproduces it), 2 on a
usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
from typing import List, Optional

from .campaign import PROFILES, Report, reproduce_command, run_campaign


def _progress(report: Report) -> None:
    done = report.cases
    total = report.stop - report.start
    rate = done / report.seconds if report.seconds else 0.0
    left = (total - done) / rate / 60 if rate else float("inf")
    sys.stderr.write(
        f"\rcases {done}/{total} ({100 * done / total:.1f}%), {rate:.0f}/s, "
        f"~{left:.0f} min left, findings {len(report.findings)}   "
    )
    sys.stderr.flush()


CHECKPOINT_SECONDS = 60.0


def _write_json(path: str, report: Report, complete: bool = False) -> None:
    data = dict(report.as_dict(), complete=complete)
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1)
    os.replace(path + ".tmp", path)


def show_case(seed: int, index: int, implementations: Optional[List[str]]) -> int:
    """Print case ``index`` and what each implementation does with it (in this process)."""
    import retrieval_conformance as rc
    from retrieval_conformance.conformance.problems.choices import RandomChoices, case_rng

    from .cases import draw_case
    from .classify import classify

    def build():
        return draw_case(RandomChoices(case_rng(seed, index)))

    case = build()
    print(f"case {index} of seed {seed}: {case.describe()}")
    print(f"  expected: {case.expect}" + (f", {case.relation} as its twin" if case.twin else ""))
    names = implementations or ["reference"] + [n for n in rc.available_implementations() if n != "reference"]
    for name in names:
        try:
            res = rc.evaluate(**build().kwargs, implementation=name)
            print(f"  {name}: map={res.map!r} minp={res.minp!r} cmc[0]={res.cmc[0]!r}")
        except Exception:
            print(f"  {name} raised:")
            print("    " + "    ".join(traceback.format_exc(limit=4).splitlines(True)))
    outcome = classify(build, names)
    print(f"outcome: {outcome.kind}" + (f" ({outcome.implementation}: {outcome.detail})" if not outcome.clean else ""))
    return 0 if outcome.clean else 1


def _cli_main(args) -> int:
    """``--target cli``: argument vectors of every subcommand, in this process (:mod:`.cli_vectors`)."""
    from .cli_vectors import run_cli_campaign

    for flag, value in (
        ("--implementations", args.implementations),
        ("--workers", args.workers),
        ("--case", args.case),
        ("--json", args.json),
        ("--start", args.start or None),
    ):
        if value is not None:
            print(f"error: {flag}: not used with --target cli; drop it", file=sys.stderr)
            return 2
    cases = args.cases if args.cases is not None else (10_000 if args.profile == "long" else 400)
    if cases < 1:
        print(f"error: --cases: expected a positive number, got {cases}", file=sys.stderr)
        return 2

    def progress(done: int, total: int) -> None:
        if not args.quiet:
            sys.stderr.write(f"\rvectors {done}/{total}   ")
            sys.stderr.flush()

    start = time.monotonic()
    findings = run_cli_campaign(cases, args.seed, args.timeout or 120.0, progress)
    if not args.quiet:
        sys.stderr.write("\n")
    print(
        f"command-line vectors, seed {args.seed}: {cases} in {time.monotonic() - start:.0f} s, "
        f"{len(findings)} finding(s)"
    )
    for finding in findings[:50]:
        print(f"  retrieval-conformance {' '.join(map(repr, finding.argv))}: status {finding.status}: {finding.detail}")
    return 1 if findings else 0


#: cases of the campaigns run by :func:`_files_main`, per profile (a ``check`` case runs a whole check, an
#: audit dozens of evaluations)
FILE_CASES = {
    "files": {"quick": 10_000, "long": 1_000_000},
    "evaluate-argv": {"quick": 10_000, "long": 1_000_000},
    "compare": {"quick": 10_000, "long": 1_000_000},
    "audit": {"quick": 200, "long": 10_000},
    "search": {"quick": 10_000, "long": 1_000_000},
    "accumulator": {"quick": 10_000, "long": 1_000_000},
    "curves": {"quick": 2_000, "long": 100_000},
    "check": {"quick": 40, "long": 10_000},
}


def _files_main(args) -> int:
    """``--target files``, ``evaluate-argv``, ``compare`` and ``check``: campaigns in this process (:mod:`.files`)."""
    from .files import run_file_campaign

    for flag, value in (
        ("--implementations", args.implementations),
        ("--workers", args.workers),
        ("--case", args.case),
    ):
        if value is not None:  # the readers have no implementations; the campaign runs in this process
            print(f"error: {flag}: not used with --target {args.target}; drop it", file=sys.stderr)
            return 2
    cases = args.cases if args.cases is not None else FILE_CASES[args.target][args.profile]
    if cases < 1:
        print(f"error: --cases: expected a positive number, got {cases}", file=sys.stderr)
        return 2

    def progress(report) -> None:
        if not args.quiet and report.cases % 1000 == 0:
            sys.stderr.write(f"\rcases {report.cases}/{cases}, findings {len(report.findings)}   ")
            sys.stderr.flush()

    report = run_file_campaign(
        seed=args.seed,
        cases=cases,
        start=args.start,
        timeout=args.timeout or (120.0 if args.target == "check" else 20.0),
        progress=progress,
        target=args.target,
    )
    if not args.quiet:
        sys.stderr.write("\n")
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(report.kinds.items()))
    print(
        f"{args.target} fuzz campaign, seed {args.seed}: {report.cases} cases "
        f"({args.start}..{args.start + cases - 1}) in {report.seconds:.1f} s; {kinds}"
    )
    for kind, count in sorted(report.counts.items(), key=lambda kv: -kv[1]):
        print(f"  {kind:<17} {count}")
    if args.json:
        data = {
            "target": args.target,
            "seed": args.seed,
            "start": args.start,
            "cases": report.cases,
            "seconds": round(report.seconds, 1),
            "outcomes": dict(report.counts),
            "kinds": dict(report.kinds),
            "findings": [dict(zip(("index", "kind", "outcome", "detail"), f)) for f in report.findings],
        }
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)
    if not report.findings:
        print("PASSED: 0 wrong values, 0 unnamed errors, 0 hangs")
        return 0
    print(f"FAILED: {len(report.findings)} finding(s)")
    for index, kind, outcome, detail in report.findings[:50]:
        print(f"  case {index} [{kind}] {outcome}: {detail[:300]}")
    return 1


def main(argv: Optional[List[str]] = None) -> int:
    # a terminated campaign still stops its worker processes (SystemExit runs the cleanup)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    default = os.environ.get("RC_FUZZ", "quick")
    parser = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="python -m retrieval_conformance.conformance.fuzz",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default=default if default in PROFILES else "quick",
        help="quick (CI) or long (RC_FUZZ=long); sets --cases and --timeout",
    )
    parser.add_argument("--cases", type=int, help="number of cases (default: the profile's)")
    parser.add_argument("--start", type=int, default=0, help="first case index (to resume or split a campaign)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, help="worker processes (default: every core)")
    parser.add_argument("--timeout", type=float, help="seconds per case before it counts as a hang")
    parser.add_argument(
        "--implementations", nargs="+", help="the oracle first (default: reference, then all available)"
    )
    parser.add_argument("--case", type=int, help="show one case and what every implementation does with it")
    parser.add_argument("--json", help="write the report to this file")
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    parser.add_argument(
        "--target",
        choices=(
            "evaluate",
            "files",
            "evaluate-argv",
            "cli",
            "compare",
            "audit",
            "search",
            "accumulator",
            "curves",
            "distributed",
            "check",
        ),
        default="evaluate",
        help="evaluate's inputs (default), files (.npy/.npz headers, TREC lines), evaluate-argv "
        "(argument vectors of the evaluate command), cli (argument vectors of every "
        "subcommand), compare (rc.compare's runs and settings), audit (arrays, .npz and "
        "TREC runs with hostile ids, every --fail-if form, the reports), search (run_from_search's D "
        "and I), accumulator (Accumulator blocks of mixed dtypes), curves (rc.curves: every kind "
        "and implementation, odd points), distributed "
        "(Accumulator(distributed=True) on --workers gloo ranks, default 2) or check (hostile "
        "functions given to the harness's check: forks, processes, threads, exits, odd numbers)",
    )
    args = parser.parse_args(argv)
    if args.target in FILE_CASES:
        return _files_main(args)
    if args.target == "distributed":
        from .distributed_ranks import distributed_main

        return distributed_main(args)
    if args.target == "cli":
        return _cli_main(args)
    if args.case is not None:
        return show_case(args.seed, args.case, args.implementations)
    profile = PROFILES[args.profile]
    cases = args.cases if args.cases is not None else profile.cases
    if cases < 1:
        print(f"error: --cases: expected a positive number, got {cases}", file=sys.stderr)
        return 2
    checkpoint = {"at": 0.0}

    def progress(report: Report) -> None:
        if not args.quiet:
            _progress(report)
        # a long campaign keeps its report on disk as it goes: an interrupted run is not lost
        if args.json and report.seconds - checkpoint["at"] >= CHECKPOINT_SECONDS:
            checkpoint["at"] = report.seconds
            _write_json(args.json, report)

    report = run_campaign(
        seed=args.seed,
        cases=cases,
        implementations=args.implementations,
        workers=args.workers,
        timeout=args.timeout or profile.timeout,
        start=args.start,
        progress=progress,
    )
    if not args.quiet:
        sys.stderr.write("\n")
    print(
        f"fuzz campaign, profile {profile.name}, seed {args.seed}: {report.cases} cases "
        f"({report.start}..{report.stop - 1}) through {', '.join(report.implementations)} "
        f"in {report.seconds / 60:.1f} min"
    )
    for kind, count in sorted(report.counts.items(), key=lambda kv: -kv[1]):
        print(f"  {kind:<17} {count}")
    if args.json:
        _write_json(args.json, report, complete=True)
    if not report.findings:
        print("PASSED: 0 wrong numbers, 0 unnamed errors, 0 crashes, 0 hangs")
        return 0
    print(f"FAILED: {len(report.findings)} finding(s)")
    for f in report.findings[:50]:
        print(f"  case {f.index} [{f.change}] {f.kind} {f.implementation}: {f.detail[:300]}")
        print(f"    reproduce: {reproduce_command(args.seed, f.index)}")
    return 1


if __name__ == "__main__":
    from retrieval_conformance.reference.contract.command_line import exit_with

    exit_with(main)
