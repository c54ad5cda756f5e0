"""Which options of ``evaluate`` apply to which input: arrays, a TREC run with its qrels, or a search.

An option that does not apply to the input given is refused by name (``error: --flag: ...``),
never ignored; with ``--run`` each option is passed to ``rc.evaluate_run`` when it takes that
keyword.
"""

from __future__ import annotations

import argparse
from typing import Optional, Tuple

from retrieval_conformance.array_files import EVALUATE_ARRAYS
from retrieval_conformance.reference.contract import options_table

#: options that a TREC run evaluation always takes (``rc.evaluate_run`` has these keywords)
RUN_OPTIONS = ("k", "max_rank", "implementation")
#: the other options of ``evaluate`` (the options table's, and --progress): with ``--run`` each one is
#: passed to ``rc.evaluate_run`` when it takes that keyword, and refused by name when it does not
ARRAY_OPTIONS = tuple(o.name for o in options_table.taken_by("evaluate-cli") if o.name not in RUN_OPTIONS) + (
    "progress",
)
#: options that only mean something for a TREC run (trec_eval's -c, -l, -M, -J, -m ndcg.G=V; BEIR's
#: ignore_identical_ids)
RUN_ONLY_OPTIONS = (
    "complete",
    "relevance_level",
    "depth",
    "judged_only",
    "ignore_identical_ids",
    "gains",
    "float_grades",
)


def parse_gains(text: str) -> dict:
    """``"1=3,2=9"`` -> ``{1: 3.0, 2: 9.0}`` (argparse names the flag when this raises)."""
    gains = {}
    for part in text.split(","):
        grade, sep, value = part.partition("=")
        try:
            if not sep:
                raise ValueError
            gains[int(grade)] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected GRADE=GAIN pairs like 1=3,2=9, got {part!r}") from None
    return gains


def flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def given(args, dest: str) -> bool:
    value = getattr(args, dest)
    return value is not None and value is not False


def check_combination(args, trec: bool) -> Optional[str]:
    """The first option that does not apply to this kind of input, as an ``error: ...`` text, or None."""
    if args.search_metric is not None and args.search is None:
        return "--search-metric: says how the D of --search ranks; give --search FILE, or drop --search-metric"
    if args.search_ties is not None and args.search is None:
        return "--search-ties: says how tied neighbours of --search rank; give --search FILE, or drop --search-ties"
    if trec:
        if args.search is not None:
            if args.run is not None:
                return "--run: give a run file or a search (--search), not both"
            if args.search_metric is None:
                return (
                    "--search-metric: required with --search: l2 (D is a distance, smaller is closer, "
                    "faiss METRIC_L2) or inner_product (larger is closer)"
                )
            array_options: Tuple[str, ...] = ("npz",) + EVALUATE_ARRAYS
        elif args.run is None or args.qrels is None:
            return (
                f"{'--run' if args.run is None else '--qrels'}: a TREC run is evaluated against qrels; "
                "give both --run RUN and --qrels QRELS"
            )
        else:
            array_options = ("npz", "max_array_bytes") + EVALUATE_ARRAYS
        for dest in array_options:
            if given(args, dest):
                return (
                    f"{flag(dest)}: arrays are not read with --run or --search (the run and the qrels are the "
                    f"input); drop {flag(dest)} or evaluate the arrays without --run/--qrels/--search"
                )
    else:
        for dest in RUN_ONLY_OPTIONS:
            if given(args, dest):
                return f"{flag(dest)}: applies to a TREC run only; give --run RUN --qrels QRELS, or drop {flag(dest)}"
    if args.query_ids is not None and not args.per_query:
        return "--query-ids: names the rows of --per-query; add --per-query text|json|csv, or drop --query-ids"
    if args.json and args.per_query:
        return "--json: the per-query table has its own JSON form; give --per-query json, or drop --json"
    if args.quiet and (args.json or args.per_query):
        return f"--quiet: prints only mAP as text; drop it with {'--json' if args.json else '--per-query'}"
    return None


def run_options(args) -> Tuple[dict, Optional[str]]:
    """Keywords of ``rc.evaluate_run`` from the options given, or the ``error: ...`` text of one it does not take."""
    import inspect

    import retrieval_conformance as rc

    accepted = inspect.signature(rc.evaluate_run).parameters
    kwargs = dict(max_rank=args.max_rank, implementation=args.implementation)
    for dest in RUN_ONLY_OPTIONS:
        if given(args, dest):
            kwargs[dest] = getattr(args, dest)
    for dest in ARRAY_OPTIONS:
        if not given(args, dest) or dest == "metrics":  # --metrics: trec_eval's names (commands/run_measures.py)
            continue
        if dest not in accepted:
            return kwargs, (
                f"{flag(dest)}: not an option of a TREC run evaluation (rc.evaluate_run takes "
                f"{', '.join(flag(name) for name in ARRAY_OPTIONS + RUN_ONLY_OPTIONS if name in accepted)}"
                f"); drop {flag(dest)}, or evaluate arrays without --run/--qrels"
            )
        kwargs[dest] = args.progress and not args.quiet if dest == "progress" else getattr(args, dest)
    return kwargs, None
