"""``retrieval-conformance check``: the command line of the harness.

::

    retrieval-conformance check mylab.eval:calc_map --adapter hashing-codes --protocol hashing
    retrieval-conformance check mylab.eval:calc_map --adapter hashing-codes --identify
    retrieval-conformance check scripts/eval.py:calc_map --known-deviations known.txt --junit-xml out.xml
    retrieval-conformance check --summary summary.md    # every function a pyproject.toml declares

With no target, every function declared in ``[[tool.retrieval-conformance.check]]`` tables is
checked (:mod:`.gate`, docs/ci-gate.md).

Exit status: 0 the function conforms (deviations listed in ``--known-deviations`` allowed; with
``--identify``: a convention matches every input), 1 it deviates (``--identify``: no convention
matches), 2 the function could not be loaded or called, or an argument is unusable (usage error:
the last line on stderr is ``error: ...``); 130 and 141 as every command
(``reference/contract/command_line.py``).
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional, Sequence

from retrieval_conformance.conformance.harness.adapters.base import UsageError
from retrieval_conformance.conformance.harness.adapters.registry import ADAPTERS
from retrieval_conformance.conformance.harness.calling.loading import (
    IMPORT_OUTPUT,
    load_function,
    read_known_deviations,
)
from retrieval_conformance.conformance.harness.entry import check, identify
from retrieval_conformance.conformance.harness.gate.cli import add_gate_arguments, refused_options, run_gate
from retrieval_conformance.conformance.harness.report.results import Report
from retrieval_conformance.reference.contract import options_table, progress
from retrieval_conformance.reference.contract.command_line import (
    CommandParser,
    exit_with,
    positive_int,
    positive_seconds,
    writable_file,
)
from retrieval_conformance.reference.contract.presets import PRESETS

DEFAULT_MAX_EXAMPLES = 60
_EXIT_STATUS = (
    "\nexit status: 0 conforms, 1 deviates, 2 the function could not be loaded or called, or a\n"
    "usage error; 130 interrupted; 141 the reader of the output went away\n"
)
#: options that only ``check`` reads (``identify`` has no use for them and refuses them by name)
CHECK_ONLY = {
    "max_examples": "--max-examples",
    "known_deviations": "--known-deviations",
    "only": "--only",
    "random": "--random",
}


def add_check_arguments(parser: argparse.ArgumentParser, identify_only: bool = False) -> None:
    """The options of ``check`` (for the main CLI's subparser); ``identify_only``: those of ``identify``."""
    if identify_only:
        parser.add_argument("target", help="the function to check, as module:function or path/to/file.py:function")
    else:
        parser.add_argument(
            "target",
            nargs="?",
            default=None,
            help="the function to check, as module:function or path/to/file.py:function (none: every "
            "function declared in [[tool.retrieval-conformance.check]] tables)",
        )
    parser.add_argument(
        "--adapter",
        default="hashing-codes",
        choices=sorted(ADAPTERS),
        help="the function's signature (default: hashing-codes)",
    )
    parser.add_argument(
        "--protocol",
        default=None,
        help=f"preset to check against: {', '.join(PRESETS)}; with "
        "--adapter oxford: oxford, roxford-easy, roxford-medium, roxford-hard, gldv2 "
        "(default: the adapter's usual one)",
    )
    # the convention overrides (--ties, --ap-rule, ...), generated from the one options table
    options_table.add_arguments(parser, "check-cli", skip=("protocol",))
    if not identify_only:
        parser.add_argument(
            "--identify",
            action="store_true",
            help="name the convention(s) the function follows instead of checking one",
        )
    parser.add_argument("--junit-xml", metavar="FILE", default=None, help="also write a JUnit XML report")
    if not identify_only:
        parser.add_argument(
            "--known-deviations",
            metavar="FILE",
            default=None,
            help="file of accepted deviations, one per line (# comments): a check id or glob "
            "(ties/tie-heavy, golden/*) accepts every deviation of that check; a cause, a "
            "clause starting with § (§4 ties=unstable, §11 percent), accepts a deviation under "
            "any check when every cause named for it is accepted (see KNOWN DEVIATIONS below)",
        )
    parser.add_argument(
        "--arrays",
        default="auto",
        choices=("auto", "numpy", "torch"),
        help="pass numpy arrays or torch tensors (auto: numpy, torch if numpy fails)",
    )
    if not identify_only:
        parser.add_argument(
            "--max-examples",
            type=positive_int,
            default=None,
            metavar="N",
            help="generated inputs per property check (default 60)",
        )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help="seconds allowed per call (default 10)",
    )
    parser.add_argument(
        "--warmup-timeout",
        type=positive_seconds,
        default=None,
        metavar="SECONDS",
        help="seconds allowed for the first call, which may compile or load (default: max(60, 6 x --timeout))",
    )
    parser.add_argument(
        "--isolation",
        default="auto",
        choices=("auto", "process", "thread", "none"),
        help="process: a worker process whose process tree is killed at the end (default where fork "
        "exists); thread: a thread of the harness; none: a plain call, no time limit",
    )
    if not identify_only:
        parser.add_argument(
            "--only",
            action="append",
            default=[],
            metavar="PATTERN",
            help="run only the checks whose id matches (glob; repeatable)",
        )
        parser.add_argument(
            "--random",
            action="store_true",
            help="let hypothesis draw new random inputs (default: derandomized, reproducible)",
        )
    parser.add_argument("-v", "--verbose", action="store_true", help="snippets and tracebacks for every deviation")
    if not identify_only:
        add_gate_arguments(parser)


def run_check_args(ns: argparse.Namespace, out=None) -> int:
    """Run ``check`` from parsed arguments; print the report; return the exit status."""
    out = out or sys.stdout
    problem = _unusable_arguments(ns)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    kwargs = dict(
        adapter=ns.adapter,
        protocol=ns.protocol,
        arrays=ns.arrays,
        timeout=ns.timeout,
        isolation=ns.isolation,
        target=ns.target,
        warmup_timeout=ns.warmup_timeout,
        **{name: getattr(ns, name) for name in options_table.CONVENTION_OPTIONS},
    )
    try:
        func = load_function(ns.target)
        known: List[str] = []
        if getattr(ns, "known_deviations", None):
            try:
                known = read_known_deviations(ns.known_deviations)
            except (OSError, ValueError) as exc:
                raise UsageError(f"--known-deviations: cannot read {ns.known_deviations!r}: {exc}") from None
        if ns.identify:
            report = identify(func, **kwargs)
        else:
            examples = DEFAULT_MAX_EXAMPLES if ns.max_examples is None else ns.max_examples
            with progress.reporting("check", "checks done"):  # on stderr, when it is a terminal
                report = check(
                    func,
                    max_examples=examples,
                    derandomize=not ns.random,
                    known_deviations=known,
                    only=ns.only,
                    **kwargs,
                )
    except UsageError as exc:
        report = Report(ns.target, ns.adapter, ns.protocol or "-", "-", ns.arrays, usage_error=str(exc))
    if ns.verbose and IMPORT_OUTPUT.get(ns.target):
        report.notes.append("importing the target printed or warned: " + IMPORT_OUTPUT[ns.target].strip()[-600:])
    out.write(report.text(verbose=ns.verbose))
    if report.exit_code == 2:  # the report says why on stdout; scripts read the last line of stderr
        why = report.usage_error if report.usage_error is not None else "nothing could be compared (see the report)"
        print(f"error: {' '.join(str(why).split())[:500]}", file=sys.stderr)
    if ns.junit_xml:
        try:
            report.write_junit(ns.junit_xml)
        except OSError as exc:  # checked before the run, so something changed since: keep the verdict
            print(
                f"error: --junit-xml {ns.junit_xml}: cannot write the report ({exc.strerror or exc}); "
                "the verdict above stands",
                file=sys.stderr,
            )
            return report.exit_code or 2
    return report.exit_code


def _unusable_arguments(ns: argparse.Namespace) -> Optional[str]:
    """Why the arguments cannot run, found before anything runs (None when they can)."""
    if ns.identify:
        given = [flag for dest, flag in CHECK_ONLY.items() if getattr(ns, dest, None) not in (None, False, [])]
        if given:
            return (
                f"{given[0]}: applies to check, not to --identify (which runs its own inputs); "
                "leave it out or drop --identify"
            )
    if ns.junit_xml:
        try:
            writable_file("--junit-xml", ns.junit_xml)
        except ValueError as exc:
            return str(exc)
    return None


KNOWN_DEVIATIONS_HELP = """\
known deviations (--known-deviations FILE), one entry per line, # starts a comment:
  ties/tie-heavy      a check id or glob (golden/*): every deviation that check finds is accepted
  §4 ties=unstable    a cause, a clause as the report cites it ("spec " optional): a deviation is
                      accepted under whichever check finds it when every cause named for it is
                      accepted; a cause is named both by the protocol clause it breaks
                      (§4 ties=stable) and by what the function does (§4 ties=unstable; a bug by
                      its §11 clause, e.g. §11 percent); a prefix (§6 ap_at_k) or a section (§4)
                      names each of its clauses.  A deviation with no known cause is accepted
                      only by its check id.  An entry naming no check and no clause is refused
                      (exit status 2).
"""
_IDENTIFY_EXIT_STATUS = (
    "exit status: 0 a convention matches every input, 1 none does, 2 the function could\n"
    "not be loaded or called, or a usage error; 130 interrupted; 141 the reader of the\n"
    "output went away\n"
)


def check_parser(command: str = "check") -> argparse.ArgumentParser:
    """The parser of ``check`` (``identify``: its own options under its own name, without those only
    ``check`` reads): no abbreviated flags (``--k`` must not pass for ``--known-deviations``)."""
    identifying = command == "identify"
    description = (
        "Name the conventions (and known bugs) a metric function follows (check --identify)."
        if identifying
        else "Check a metric function against the reference."
    )
    parser = CommandParser(
        allow_abbrev=False,
        prog=f"retrieval-conformance {command}",
        description=description,
        epilog=_IDENTIFY_EXIT_STATUS if identifying else KNOWN_DEVIATIONS_HELP + _EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_check_arguments(parser, identify_only=identifying)
    return parser


def check_main(argv: Optional[Sequence[str]] = None, command: str = "check") -> int:
    """Entry point: ``check_main(["mylab.eval:calc_map", "--adapter", "hashing-codes"])`` -> exit status.

    A leading ``"check"`` is accepted, so the main CLI can pass its argv through; ``command``
    is the subcommand named in ``--help`` (``identify`` is ``check --identify``).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == command:
        argv = argv[1:]
    parser = check_parser(command)
    try:
        ns = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0)
    if command == "identify":
        ns.identify = True
        return run_check_args(ns)
    problem = refused_options(ns, _given(argv))
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    return run_gate(ns) if ns.target is None else run_check_args(ns)


def _given(argv: Sequence[str]) -> dict:
    """The options written on the command line (their defaults left out), to refuse by name."""
    parser = check_parser()
    for action in parser._actions:
        action.default = argparse.SUPPRESS
    return vars(parser.parse_args(argv))


def identify_main(argv: Optional[Sequence[str]] = None) -> int:
    """``retrieval-conformance identify TARGET ...``: ``check --identify``, named for what it does."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "identify":
        argv = argv[1:]
    return check_main(argv, command="identify")


if __name__ == "__main__":  # pragma: no cover
    exit_with(check_main)
