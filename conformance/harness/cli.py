"""``retrieval-conformance check``: the command line of the harness.

::

    retrieval-conformance check mylab.eval:calc_map --adapter hashing-codes --protocol hashing
    retrieval-conformance check mylab.eval:calc_map --adapter hashing-codes --identify
    retrieval-conformance check scripts/eval.py:calc_map --known-deviations known.txt --junit-xml out.xml

Exit status: 0 the function conforms (deviations listed in ``--known-deviations`` allowed; with
``--identify``: a convention matches every input), 1 it deviates (``--identify``: no convention
matches), 2 the function could not be loaded or called (usage error).
"""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional, Sequence

from retrieval_conformance.conformance.harness.adapters import ADAPTERS, UsageError
from retrieval_conformance.conformance.harness.entry import check, identify
from retrieval_conformance.conformance.harness.loading import IMPORT_OUTPUT, load_function, read_known_deviations
from retrieval_conformance.conformance.harness.report import Report
from retrieval_conformance.reference.contract import options_table
from retrieval_conformance.reference.contract.presets import PRESETS


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``check`` (for the main CLI's subparser)."""
    parser.add_argument("target", help="the function to check, as module:function or path/to/file.py:function")
    parser.add_argument("--adapter", default="hashing-codes", choices=sorted(ADAPTERS),
                        help="the function's signature (default: hashing-codes)")
    parser.add_argument("--protocol", default=None,
                        help=f"preset to check against: {', '.join(PRESETS)}; with "
                             "--adapter oxford: oxford, roxford-easy, roxford-medium, roxford-hard, gldv2 "
                             "(default: the adapter's usual one)")
    # the convention overrides (--ties, --ap-rule, ...), generated from the one options table
    options_table.add_arguments(parser, "check-cli", skip=("protocol",))
    parser.add_argument("--identify", action="store_true",
                        help="name the convention(s) the function follows instead of checking one")
    parser.add_argument("--junit-xml", metavar="FILE", default=None, help="also write a JUnit XML report")
    parser.add_argument("--known-deviations", metavar="FILE", default=None,
                        help="file of accepted deviations, one per line (# comments): a check id or glob "
                             "(ties/tie-heavy, golden/*) accepts every deviation of that check; a cause, a clause "
                             "starting with § (§4 ties=unstable, §11 percent), accepts a deviation under any check "
                             "when every cause named for it is accepted (see KNOWN DEVIATIONS below)")
    parser.add_argument("--arrays", default="auto", choices=("auto", "numpy", "torch"),
                        help="pass numpy arrays or torch tensors (auto: numpy, torch if numpy fails)")
    parser.add_argument("--max-examples", type=int, default=60,
                        help="generated inputs per property check (default 60)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds allowed per call (default 10)")
    parser.add_argument("--warmup-timeout", type=float, default=None,
                        help="seconds allowed for the first call, which may compile or load (default: "
                             "max(60, 6 x --timeout))")
    parser.add_argument("--isolation", default="auto", choices=("auto", "process", "thread", "none"),
                        help="run the function in a worker process (default where fork exists) or a thread")
    parser.add_argument("--only", action="append", default=[], metavar="PATTERN",
                        help="run only the checks whose id matches (glob; repeatable)")
    parser.add_argument("--random", action="store_true",
                        help="let hypothesis draw new random inputs (default: derandomized, reproducible)")
    parser.add_argument("-v", "--verbose", action="store_true", help="snippets and tracebacks for every deviation")


def run_check_args(ns: argparse.Namespace, out=None) -> int:
    """Run ``check`` from parsed arguments; print the report; return the exit status."""
    out = out or sys.stdout
    kwargs = dict(adapter=ns.adapter, protocol=ns.protocol, arrays=ns.arrays, timeout=ns.timeout,
                  isolation=ns.isolation, target=ns.target, warmup_timeout=ns.warmup_timeout,
                  **{name: getattr(ns, name) for name in options_table.CONVENTION_OPTIONS})
    try:
        func = load_function(ns.target)
        known: List[str] = []
        if ns.known_deviations:
            try:
                known = read_known_deviations(ns.known_deviations)
            except (OSError, ValueError) as exc:
                raise UsageError(f"--known-deviations: cannot read {ns.known_deviations!r}: {exc}") from None
        if ns.identify:
            report = identify(func, **kwargs)
        else:
            report = check(func, max_examples=ns.max_examples, derandomize=not ns.random,
                           known_deviations=known, only=ns.only, **kwargs)
    except UsageError as exc:
        report = Report(ns.target, ns.adapter, ns.protocol or "-", "-", ns.arrays, usage_error=str(exc))
    if ns.verbose and IMPORT_OUTPUT.get(ns.target):
        report.notes.append("importing the target printed or warned: " + IMPORT_OUTPUT[ns.target].strip()[-600:])
    out.write(report.text(verbose=ns.verbose))
    if ns.junit_xml:
        report.write_junit(ns.junit_xml)
    return report.exit_code


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


def check_parser(command: str = "check") -> argparse.ArgumentParser:
    """The parser of ``check`` (``identify``: the same options under its own name): no abbreviated
    flags (``--k`` must not pass for ``--known-deviations``)."""
    description = ("Name the conventions (and known bugs) a metric function follows (check --identify)."
                   if command == "identify" else "Check a metric function against the reference.")
    parser = argparse.ArgumentParser(allow_abbrev=False, prog=f"retrieval-conformance {command}",
                                     description=description,
                                     epilog=KNOWN_DEVIATIONS_HELP if command == "check" else None,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_check_arguments(parser)
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
    return run_check_args(ns)


def identify_main(argv: Optional[Sequence[str]] = None) -> int:
    """``retrieval-conformance identify TARGET ...``: ``check --identify``, named for what it does."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "identify":
        argv = argv[1:]
    return check_main(argv + ["--identify"], command="identify")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(check_main())
