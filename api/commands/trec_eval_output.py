"""``evaluate --run`` without ``--k``: trec_eval's measures, selected and printed as trec_eval does.

With no ``-m`` the output is trec_eval's default set (``official``); ``-m`` takes trec_eval's words
(``-m map -m ndcg_cut.10,20``, ``-m all_trec``); ``--per-query text`` is ``trec_eval -q``'s layout
(each query's lines, then ``all``).  The values come from
:func:`~retrieval_conformance.reference.protocols.trec.trec_eval_measures.trec_eval_measures`.
"""

from __future__ import annotations

import csv
import sys
from typing import Dict, List, Optional

from retrieval_conformance import strict_json
from retrieval_conformance.commands.printing import spreadsheet_text
from retrieval_conformance.reference.protocols.trec.measure_sets import trec_eval_text

#: the options of ``evaluate`` that trec_eval's selection reads (the others are refused by name)
SELECTION_OPTIONS = ("complete", "relevance_level", "depth", "judged_only", "ignore_identical_ids", "float_grades")


def add_arguments(parser) -> None:
    parser.add_argument(
        "-m",
        "--measure",
        action="append",
        metavar="MEASURE",
        help="with --run: trec_eval's measure selection, repeatable, in its spelling: map, P.5,10, "
        "ndcg_cut.10,20, ndcg.1=3,2=9, official (the default: what trec_eval prints without -m), all_trec",
    )
    parser.add_argument(
        "--trec-eval-version",
        choices=("10.0", "9.0.8"),
        help="with --run: the trec_eval whose arithmetic to follow (default 10.0; 9.0.8 compares scores "
        "as C float and places iprec_at_recall's recall points otherwise)",
    )


def refusal(args, trec_selection: bool) -> Optional[str]:
    """The first option that does not fit trec_eval's selection, as an ``error: ...`` text, or None."""
    if not trec_selection:
        for flag, given in (("-m", args.measure), ("--trec-eval-version", args.trec_eval_version)):
            if not given:
                continue
            if args.run is None:
                return f"{flag}: selects trec_eval's measures of a --run; give --run RUN --qrels QRELS, or drop {flag}"
            if args.metrics is not None:
                return (
                    f"{flag}: --metrics names the measures already; give trec_eval's words with -m, or names "
                    f"with --metrics, not both"
                )
            return (
                f"{flag}: selects trec_eval's measures of a --run without --k; drop --k (give the "
                f"cut-offs in the measure: -m P.5,10) or drop {flag}"
            )
        return None
    if args.query_ids is not None:
        return "--query-ids: a run names its own queries (trec_eval's qids); drop --query-ids"
    if args.implementation not in (None, "auto"):
        return (
            "--implementation: trec_eval's measures (a --run without --k) are computed as trec_eval's doubles "
            "in Python; drop --implementation, or give --k to evaluate the run with an implementation"
        )
    return None


def selection_words(args) -> List[str]:
    words = list(args.measure or ["official"])
    if args.gains:  # --gains is trec_eval's ndcg gain map: ndcg.1=3,2=9
        words.append("ndcg." + ",".join(f"{grade}={gain!r}" for grade, gain in args.gains.items()))
    return words


#: what run_options passes on that trec_eval's selection reads here (the rest is refused by name)
_READ_HERE = SELECTION_OPTIONS + ("gains", "max_rank", "implementation")


def run_selection(args, run, qrels, passed: Optional[dict] = None) -> int:
    """Print trec_eval's selected measures of the run; 0, or 2 naming what is wrong.

    ``passed``: the keywords ``run_options`` would give ``evaluate_run``; one this selection does
    not read is refused by name, never dropped."""
    from retrieval_conformance.reference.protocols.trec.trec_eval_measures import trec_eval_measures

    unread = sorted(set(passed or {}) - set(_READ_HERE))
    if unread:
        flag = "--" + unread[0].replace("_", "-")
        print(
            f"error: {flag}: not read by trec_eval's measure selection (a --run without --k); give --k to "
            f"evaluate the run with it, or drop {flag}",
            file=sys.stderr,
        )
        return 2

    options = {name: getattr(args, name) for name in SELECTION_OPTIONS if getattr(args, name) not in (None, False)}
    try:
        table = trec_eval_measures(
            run, qrels, selection_words(args), version=args.trec_eval_version or "10.0", **options
        )
    except (ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.filename}: {exc.strerror or exc}; check the path", file=sys.stderr)
        return 2
    from retrieval_conformance.reference.protocols.trec.trec_eval_measures import below_random

    warning = below_random(table.queries)
    if warning is not None:
        print(f"warning: {warning}", file=sys.stderr)
    summary = dict(table.summary)
    if args.quiet:
        if "map" not in summary:
            print(
                "error: --quiet: prints only map, which -m did not select; add -m map, or drop --quiet", file=sys.stderr
            )
            return 2
        print(repr(summary["map"]))
    elif args.per_query == "json" or args.json:
        # trec_eval's summary under "trec_eval", as evaluate --run --k K writes it
        data: Dict[str, object] = {"trec_eval": summary}
        if args.per_query == "json":
            data = {"queries": {qid: dict(row) for qid, row in table.per_query}, **data}
        print(strict_json.dumps(data, indent=1))
    elif args.per_query == "csv":
        names = [name for name, _ in table.per_query[0][1]] if table.per_query else []
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["query", *names])
        for qid, row in table.per_query:  # ids a spreadsheet would run as formulas are escaped
            writer.writerow([spreadsheet_text(qid), *(value for _, value in row)])
    else:
        print(trec_eval_text(table, per_query=args.per_query == "text"))
    return 0
