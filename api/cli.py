"""Command line: ``retrieval-conformance COMMAND`` (golden, evaluate, compare, check, identify, audit, bench,
compute-ap, presets, explain)."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from retrieval_conformance.reference.contract.command_line import (
    CommandParser,
    non_negative_int,
    run_command,
)


def _load(target: str):
    """The function named ``"module:function"``, imported when its subcommand runs: the jobs of
    the conformance layer sit above this face (ARCHITECTURE.md)."""
    import importlib

    module, function = target.split(":")
    return getattr(importlib.import_module(module), function)


def _by_name(target: str):
    """A subcommand function that loads ``target`` when it runs."""
    return lambda args: _load(target)(args)


def presets_main(args) -> int:
    from retrieval_conformance.reference.contract.presets import PRESETS

    print(f"{'preset':<13} {'AP':<14} {'@k':<12} {'ties':<9} {'empty':<12} {'junk':<22} {'other':<16} matches")
    for p in PRESETS.values():
        at_k = p.ap_at_k + (f" k={p.k}" if p.k else "")
        defaults = (("gain", "linear"), ("discount", "log2"), ("recall", "fraction"))
        other = [f"{name}={getattr(p, name)}" for name, default in defaults if getattr(p, name) != default]
        print(
            f"{p.name:<13} {p.ap_rule:<14} {at_k:<12} {p.ties:<9} {p.empty:<12} "
            f"{'+'.join(p.junk) or '-':<22} {' '.join(other) or '-':<16} {p.matches}"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    from retrieval_conformance import __version__
    from retrieval_conformance.reference.contract.spec import SPEC_VERSION

    parser = CommandParser(
        allow_abbrev=False,
        prog="retrieval-conformance",
        description=__doc__,
        epilog="Exit status: 0 done, 1 a negative verdict or lost output, 2 usage error, "
        "130 interrupted, 141 the reader of the output went away (| head).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__} (specification {SPEC_VERSION})")
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("golden", help="check every implementation against the golden cases and the reference")
    g.add_argument(
        "--implementations",
        nargs="*",
        metavar="NAME",
        help="registered names to check (default: all registered); an unknown name is an error",
    )
    g.add_argument(
        "--require",
        nargs="*",
        default=[],
        metavar="NAME",
        help="exit 1 if one of these is unavailable here; an unknown name is an error",
    )
    g.add_argument(
        "--random",
        type=non_negative_int,
        default=200,
        metavar="N",
        help="generated cross-check problems (0 to skip; default 200)",
    )
    g.add_argument(
        "--seed", type=non_negative_int, default=0, metavar="N", help="seed of the generated problems (default 0)"
    )
    g.set_defaults(func=_by_name("retrieval_conformance.conformance.main_job:golden_main"))

    from retrieval_conformance.commands import evaluation

    evaluation.add_parser(sub)  # evaluate: arrays, a TREC run with its qrels, or a search

    p = sub.add_parser("presets", help="list the protocol presets")
    p.set_defaults(func=presets_main)

    from retrieval_conformance import spec_cli

    spec_cli.add_parser(sub)  # explain [CLAUSE]: the specification's clauses
    # listed in --help; main() hands their arguments to their own parsers
    for name, (_, _, text) in DELEGATED.items():
        sub.add_parser(name, help=text, add_help=False)
    for subparser in sub.choices.values():  # a flag is taken by its own name, never by a prefix of it
        subparser.allow_abbrev = False
    return parser


def _run(argv: Optional[List[str]]) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # subcommands with their own argument parsing, provided by their modules
    if argv and argv[0] in DELEGATED:
        module, function, _ = DELEGATED[argv[0]]
        return _load(f"{module}:{function}")(argv[1:])
    args = build_parser().parse_args(argv)
    return args.func(args)


#: subcommands that parse their own arguments: name -> (module, function, help)
DELEGATED = {
    "compare": (
        "retrieval_conformance.comparison",
        "compare_main",
        "compare runs (.npz, or TREC runs with --qrels) query by query: intervals, paired tests, effect sizes",
    ),
    "check": (
        "retrieval_conformance.conformance.harness.cli",
        "check_main",
        "check your own metric function against the reference, and name its conventions",
    ),
    "identify": (
        "retrieval_conformance.conformance.harness.cli",
        "identify_main",
        "name the conventions (and known bugs) your metric function follows: check --identify",
    ),
    "audit": (
        "retrieval_conformance.conformance.audit.cli",
        "audit_main",
        "audit an evaluation: every convention's number, the conventions behind reported numbers, fragility",
    ),
    "bench": (
        "retrieval_conformance.conformance.bench.cli",
        "bench_main",
        "speed benchmarks at dataset scale with peers, a ratio regression gate, the feature page "
        "(run, gate, report, features, plot)",
    ),
    "compute-ap": (
        "retrieval_conformance.reference.protocols.landmark.cli",
        "compute_ap_main",
        "the VGG compute_ap program for Oxford/Paris ranked lists",
    ),
}


def main(argv: Optional[List[str]] = None) -> int:
    """``retrieval-conformance ...``: the exit status (the table of ``reference/contract/command_line.py``:
    0, 1, 2 usage error, 130 interrupted, 141 closed pipe), never a traceback at an edge."""
    return run_command(_run, argv)


if __name__ == "__main__":
    sys.exit(main())
