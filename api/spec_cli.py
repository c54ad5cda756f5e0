"""``retrieval-conformance explain [CLAUSE]``: print clauses of the specification.

* ``explain "§4 ties=stable"`` (or ``ties=stable``, ``stable``, ``"spec §4 ties=stable"``)
  prints that clause; ``explain 4`` prints section §4; ``explain "§6 ap_at_k"`` prints every
  clause of that option.  Exit status 0.
* an unknown clause: a message with close matches on stderr, exit status 2.
* no argument: the section headings and every clause id.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

EXIT_UNKNOWN = 2


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``explain`` subcommand to an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "explain",
        help='print a clause of the specification, e.g. explain "§4 ties=stable"',
        description="Print a clause (or section) of the retrieval-conformance specification, as cited by "
        'error messages and reports ("spec §4 ties=stable"). Without CLAUSE: list every '
        "section and clause id.",
    )
    p.add_argument(
        "clause",
        nargs="*",
        metavar="CLAUSE",
        help='a clause id ("§4 ties=stable", "ties=stable", "stable"), a section ("§4", "4"), '
        'or a citation as printed ("spec §4 ties=stable")',
    )
    p.set_defaults(func=main)
    return p


def index_text() -> str:
    """Section headings with their clause ids."""
    from retrieval_conformance.reference.contract import spec

    by_section: dict = {}
    for cid in spec.clauses():
        by_section.setdefault(int(cid[1:].split(" ", 1)[0]), []).append(cid)
    lines = [f"The retrieval-conformance specification, spec_version {spec.SPEC_VERSION}", ""]
    for n, title in spec.section_titles().items():
        lines.append(f"§{n} {title}")
        lines.extend(f"    {cid}" for cid in by_section.get(n, []))
    lines += ["", 'retrieval-conformance explain CLAUSE prints one (e.g. explain "§4 ties=stable", explain 4).']
    return "\n".join(lines) + "\n"


def main(args) -> int:
    """Run ``explain`` for parsed ``args`` (``args.clause``: a list of words, possibly empty)."""
    from retrieval_conformance.reference.contract import spec

    words: List[str] = list(getattr(args, "clause", None) or [])
    if not words:
        sys.stdout.write(index_text())
        return 0
    query = " ".join(words)  # explain §4 ties=stable works without quotes
    try:
        found = spec.lookup(query)
    except KeyError as exc:
        sys.stderr.write(f"error: explain: {exc.args[0]}\n")
        return EXIT_UNKNOWN
    sys.stdout.write("\n".join(text.rstrip("\n") + "\n" for _, text in found))
    return 0


def run(argv: Optional[List[str]] = None) -> int:
    """Stand-alone entry point: ``python -m retrieval_conformance.spec_cli [CLAUSE]``."""
    from retrieval_conformance.reference.contract.command_line import CommandParser

    parser = CommandParser(allow_abbrev=False, prog="retrieval-conformance")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["explain", *(sys.argv[1:] if argv is None else argv)])
    return main(args)


if __name__ == "__main__":
    from retrieval_conformance.reference.contract.command_line import exit_with

    exit_with(run)
