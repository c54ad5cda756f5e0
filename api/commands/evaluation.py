"""``retrieval-conformance evaluate``: the metrics of arrays from ``.npy``/``.npz`` files, of a TREC run
against its qrels, or of nearest-neighbour search results."""

from __future__ import annotations

import sys
import warnings
from types import SimpleNamespace
from typing import List, Optional

from retrieval_conformance import strict_json
from retrieval_conformance.array_files import EVALUATE_ARRAYS, ArrayBudget, load_evaluate_arrays, read_search_file
from retrieval_conformance.commands import random_check, trec_eval_output
from retrieval_conformance.commands.printing import drop_label_blind_measures, print_per_query, trec_eval_lines
from retrieval_conformance.commands.run_measures import asked_measures, cutoffs_to_evaluate, selected
from retrieval_conformance.commands.run_options import check_combination, parse_gains, run_options
from retrieval_conformance.reference.contract import options_table
from retrieval_conformance.reference.contract.command_line import integer, parse_integer
from retrieval_conformance.reference.readers.grades import FLOAT_GRADES
from retrieval_conformance.reference.readers.text import read_text_lines
from retrieval_conformance.result_text import print_result


def add_parser(sub) -> None:
    """The ``evaluate`` subcommand and its flags (the evaluation options from the options table)."""
    e = sub.add_parser("evaluate", help="evaluate arrays from .npy/.npz files, or a TREC run against qrels")
    e.add_argument(
        "--run",
        help="a TREC run file (qid Q0 docno rank score tag; .gz, or .jsonl as JSON Lines), evaluated as trec_eval does",
    )
    e.add_argument("--qrels", help="the TREC qrels file for --run (qid iter docno rel); .gz and .jsonl read too")
    e.add_argument(
        "--search",
        metavar="NPZ",
        help="nearest-neighbour results as a run: an .npz of faiss's D and I (-1: none), with "
        "query_labels and db_labels (same label: relevant) or --qrels, optional query_ids, db_ids",
    )
    e.add_argument(
        "--search-metric",
        choices=("l2", "inner_product"),
        help="with --search: how D ranks (l2: smaller is closer; inner_product: larger is closer)",
    )
    e.add_argument(
        "--search-ties",
        choices=("search", "trec_eval"),
        help="with --search: how neighbours at equal distance rank: search (the default: in the order "
        "the search returned them) or trec_eval (by trec_eval's docno rule on the row ids)",
    )
    e.add_argument("--complete", action="store_true", help="with --run: trec_eval -c (every qrels query counts)")
    e.add_argument("--relevance-level", type=integer, help="with --run: least relevant grade (trec_eval -l; default 1)")
    e.add_argument(
        "--depth",
        type=integer,
        metavar="M",
        help="with --run: only the first M documents of each query count (trec_eval -M)",
    )
    e.add_argument(
        "--judged-only",
        action="store_true",
        help="with --run: unjudged documents are dropped from the run first (trec_eval -J)",
    )
    e.add_argument(
        "--ignore-identical-ids",
        action="store_true",
        help="with --run: a document whose id equals the "
        "query id is dropped from the run (BEIR's ignore_identical_ids)",
    )
    e.add_argument(
        "--gains",
        type=parse_gains,
        metavar="G=V,...",
        help="with --run: nDCG's gain of each grade, "
        "e.g. 1=1,2=3,3=7 (trec_eval -m ndcg.1=1,2=3,3=7); other grades keep their own value",
    )
    e.add_argument(
        "--float-grades",
        choices=FLOAT_GRADES,
        help="with --run: qrels grades that are not integers "
        "(2.5): exact (the default, with a warning), truncate (trec_eval's atol: 2) or refuse",
    )
    e.add_argument("--npz", help="an .npz holding arrays named like evaluate()'s arguments")
    for key in EVALUATE_ARRAYS:
        e.add_argument("--" + key.replace("_", "-"), dest=key, help=f"{key} as a .npy file")
    e.add_argument(
        "--max-array-bytes",
        type=integer,
        metavar="N",
        help="refuse input arrays larger than N bytes in total, checked from the "
        "file headers before loading (default 2 GiB)",
    )
    # every evaluation option from the one options table (flags, choices and help); --protocol has no
    # default here so that one given with --run is seen (arrays: hashing)
    options_table.add_arguments(e, "evaluate-cli", defaults={"max_rank": 50, "implementation": "auto"})
    e.add_argument(
        "--json",
        action="store_true",
        help="machine-readable output (strict JSON: NaN/inf as null, listed under 'non_finite')",
    )
    e.add_argument(
        "--per-query",
        choices=("text", "json", "csv"),
        help="one row per query (text: 'metric<TAB>query<TAB>value' lines like trec_eval -q; csv: an id that "
        "starts like a spreadsheet formula, =, +, -, @, gets a leading ')",
    )
    e.add_argument("--query-ids", metavar="FILE", help="query ids for --per-query, one per line (default 0..Q-1)")
    trec_eval_output.add_arguments(e)
    e.add_argument("--progress", action="store_true", help="show progress on stderr")
    e.add_argument("--quiet", action="store_true", help="print only mAP (errors still go to stderr)")
    e.set_defaults(func=evaluate_main)


def evaluate_main(args) -> int:
    """``evaluate``: print the metrics of the arrays given; 0, or 2 for unusable input.

    A missing, unreadable or hostile file (garbage, truncated zip, object arrays, a header
    declaring more data than the file holds or than ``--max-array-bytes``), an unusable
    ``--k``, an option that does not apply to the input (``--discount`` with ``--run`` when
    ``evaluate_run`` has no such keyword, ``--complete`` without ``--run``) or arrays that
    ``evaluate`` rejects print ``error: <what, which option or file, what to do>`` on stderr
    and return 2: no option is ever ignored.
    """
    import retrieval_conformance as rc

    # every failure of the input prints one line, "error: ...", and exits with 2 (a usage
    # error), never a traceback
    trec = args.run is not None or args.qrels is not None or args.search is not None
    # a run without --k or --metrics: trec_eval's measure selection (-m), printed as trec_eval prints it
    trec_selection = args.run is not None and args.search is None and args.k is None and args.metrics is None
    problem = check_combination(args, trec) or trec_eval_output.refusal(args, trec_selection)
    if problem is None and trec:
        kwargs, problem = run_options(args)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:  # read before evaluating: a bad file is refused before any work
        query_ids = _read_query_ids(args.query_ids) if args.query_ids is not None else None
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    run, qrels = args.run, args.qrels
    from_labels = None
    if trec_selection:
        return trec_eval_output.run_selection(args, run, qrels, kwargs)
    if args.search is not None:
        try:
            run, from_labels = read_search_file(
                args.search,
                args.search_metric,
                ArrayBudget(args.max_array_bytes),
                qrels_given=qrels is not None,
                ties=args.search_ties or "search",
            )
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        qrels = qrels if from_labels is None else from_labels
    if not trec:
        try:
            arrays = load_evaluate_arrays(args)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        # every option of the table but k (parsed below) goes to evaluate as it was given
        options = {o.name: getattr(args, o.name) for o in options_table.taken_by("evaluate-cli") if o.name != "k"}
        options["protocol"] = options["protocol"] or "hashing"  # None: not given (refused or passed on with --run)
        kwargs = dict(arrays, progress=args.progress and not args.quiet, **options)
    if args.k is not None:
        cutoffs = _parse_k(args.k)
        if cutoffs is None:
            shown = args.k if len(args.k) <= 40 else args.k[:40] + "..."
            print(
                f"error: --k: expected a positive integer, a list like 1,5,10, or 'all' for the whole gallery, "
                f"got {shown!r}",
                file=sys.stderr,
            )
            return 2
        kwargs["k"] = cutoffs[0] if len(cutoffs) == 1 else tuple(cutoffs)
        if len(cutoffs) > 1 and args.per_query:
            print("error: --per-query: give one --k (per-query values are reported for one cut-off)", file=sys.stderr)
            return 2
    measures: List[str] = []
    cutoffs_asked: Optional[List[Optional[int]]] = None
    if trec and args.metrics is not None:  # trec_eval's or ir_measures' names: the cut-offs come from them
        if args.per_query:
            print("error: --per-query: prints every measure of one evaluation; drop --metrics", file=sys.stderr)
            return 2
        try:
            measures = asked_measures(args.metrics, args.relevance_level)
            cutoffs_asked = cutoffs_to_evaluate(measures, None if args.k is None else _parse_k(args.k))
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    try:
        # a TREC run's warnings (grades trec_eval reads otherwise) print as one line each
        with warnings.catch_warnings(record=trec) as caught:
            if cutoffs_asked is not None:
                runs = [rc.evaluate_run(run, qrels, **dict(kwargs, k=c)) for c in cutoffs_asked]
                values = selected(runs, measures)
            else:
                res = rc.evaluate_run(run, qrels, **kwargs) if trec else rc.evaluate(**kwargs)
        for message in dict.fromkeys(str(w.message) for w in caught or ()):  # once, however many cut-offs
            print(f"warning: {message}", file=sys.stderr)
    except (ValueError, TypeError, rc.ImplementationUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a run or qrels file that cannot be opened
        print(f"error: {exc.filename}: {exc.strerror or exc}; check the path", file=sys.stderr)
        return 2
    if cutoffs_asked is not None:
        return _print_measures(args, values)
    for one in res.values() if isinstance(res, rc.ResultsAtK) else [res]:
        warning = random_check.run_warning(one) if trec else random_check.arrays_warning(one, kwargs)
        if warning is not None:
            print(f"warning: {warning}", file=sys.stderr)
            break
    if args.search is not None and from_labels is not None:
        print(f"note: {drop_label_blind_measures(res)}", file=sys.stderr)
    if args.per_query:
        return print_per_query(res, args.per_query, args.query_ids, query_ids)
    results = list(res.values()) if isinstance(res, rc.ResultsAtK) else [res]
    if args.json:
        summary = res.summary()
        if trec:  # trec_eval's own names as well
            summary = (
                {key: dict(one, trec_eval=r.extras["trec_eval"]) for (key, one), r in zip(summary.items(), results)}
                if isinstance(res, rc.ResultsAtK)
                else dict(summary, trec_eval=res.extras["trec_eval"])
            )
        print(strict_json.dumps(summary, indent=2, default=str))
        return 0
    if trec and not args.quiet:
        print("\n".join(trec_eval_lines(results)))
        return 0
    if args.quiet and not results[0].has("map"):
        print(
            "error: --quiet: prints only mAP, which --metrics did not ask for; add map to --metrics, or drop --quiet",
            file=sys.stderr,
        )
        return 2
    for one in results:
        if args.quiet:
            print(f"{one.map!r}")
        else:
            print_result(one)
    return 0


def _print_measures(args, values: dict) -> int:
    """The measures ``--metrics`` asked of a TREC run: trec_eval's lines, ``--json`` or ``--quiet``."""
    if args.json:
        print(strict_json.dumps({"trec_eval": values}, indent=2, default=str))
    elif args.quiet:
        if "map" not in values:
            print(
                "error: --quiet: prints only map, which --metrics did not ask for; add map, or drop --quiet",
                file=sys.stderr,
            )
            return 2
        print(f"{values['map']!r}")
    else:
        print("\n".join(trec_eval_lines([SimpleNamespace(extras={"trec_eval": values})])))
    return 0


def _parse_k(text: str) -> Optional[list]:
    """``all``/``none`` -> [None]; ``5`` -> [5]; ``1,5,10`` -> [1, 5, 10]; None when unusable."""
    text = text.strip().lower()
    if text in ("all", "none"):
        return [None]
    values = [parse_integer(part, least=1) for part in text.split(",")]  # the shared reading of an integer
    return None if None in values else values


def _read_query_ids(path: str) -> List[str]:
    """The ids of ``--query-ids``, read within limits; a ``ValueError`` naming the option and the file."""
    try:
        return read_text_lines(path)
    except ValueError as exc:  # FIFO, device, too large, not UTF-8: the message names the file
        raise ValueError(f"--query-ids {exc}; pass a text file with one query id per line") from None
    except OSError as exc:
        raise ValueError(
            f"--query-ids {path}: cannot read it ({exc.strerror or exc}); pass a text file with one query id per line"
        ) from None
