"""``python -m retrieval_conformance.conformance.zoo``: the zoo's long round trip and its rate.

Writes ``--count`` functions from ``--seed`` (20,000 by default, the long profile), runs
``identify`` on each and prints the share whose verdict names exactly the composed behaviours
(or states their equivalence class), the rate of each behaviour family, the time, and the first
failures with their source.  Exit status: 0 when the rate reaches ``--min-rate``, 1 below it,
2 on a usage error.
"""

from __future__ import annotations

import sys
from typing import List, Optional

from retrieval_conformance.reference.contract.command_line import CommandParser, run_command

from .catalogue import TEMPLATES
from .memo import Memo
from .recipes import zoo_recipes
from .roundtrip import Tally, round_trip

LONG_COUNT = 20000


def _parser() -> CommandParser:
    p = CommandParser(prog="python -m retrieval_conformance.conformance.zoo", description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=LONG_COUNT, help="how many zoo functions (default 20000)")
    p.add_argument("--seed", type=int, default=0, help="the seed of the recipes (default 0)")
    p.add_argument(
        "--adapter",
        action="append",
        choices=sorted(TEMPLATES),
        help="only this adapter (repeatable; default: every adapter the writer has a template for)",
    )
    p.add_argument("--no-memo", action="store_true", help="run identify on every function, reusing no verdict")
    p.add_argument("--show", type=int, default=5, help="failures printed with their source (default 5)")
    p.add_argument("--min-rate", type=float, default=0.0, help="exit status 1 below this rate (0 to 1)")
    return p


def _progress(tally: Tally, total: int) -> None:
    done = len(tally.outcomes)
    if done % 100 == 0 or done == total:
        failed = len(tally.failures)
        sys.stderr.write(f"\rzoo {done}/{total}, {failed} misidentified   ")
        sys.stderr.flush()


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.count < 1:
        _parser().error(f"--count: expected a positive number of functions, got {args.count}")
    if not 0.0 <= args.min_rate <= 1.0:
        _parser().error(f"--min-rate: expected a rate between 0 and 1, got {args.min_rate}")
    recipes = zoo_recipes(args.count, args.seed, args.adapter)
    memo = None if args.no_memo else Memo()
    tally = round_trip(recipes, memo=memo, progress=lambda t: _progress(t, len(recipes)))
    sys.stderr.write("\n")
    print(tally.summary())
    print("per behaviour family (identified/run), the worst first:")
    rows = sorted(tally.by_family().items(), key=lambda kv: (kv[1][0] / kv[1][1], kv[0]))
    for family, (ok, n) in rows:
        if ok < n:
            print(f"  {ok}/{n}  {family}")
    print(f"  every other family: all identified ({sum(ok == n for _, (ok, n) in rows)} families)")
    for outcome in tally.failures[: args.show]:
        print()
        print(outcome.failure_text())
    return 0 if tally.rate >= args.min_rate else 1


if __name__ == "__main__":
    sys.exit(run_command(main))
