"""``retrieval-conformance evaluate``: the metrics of arrays from ``.npy``/``.npz`` files, of a TREC run
against its qrels, or of nearest-neighbour search results."""

from __future__ import annotations

import sys
import warnings
from typing import List, Optional

from retrieval_conformance import strict_json
from retrieval_conformance.array_files import EVALUATE_ARRAYS, ArrayBudget, load_evaluate_arrays, read_search_file
from retrieval_conformance.commands.printing import print_per_query, trec_eval_lines
from retrieval_conformance.commands.run_options import check_combination, parse_gains, run_options
from retrieval_conformance.reference.contract import options_table
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
    e.add_argument("--complete", action="store_true", help="with --run: trec_eval -c (every qrels query counts)")
    e.add_argument("--relevance-level", type=int, help="with --run: least relevant grade (trec_eval -l; default 1)")
    e.add_argument(
        "--depth",
        type=int,
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
        type=int,
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
        help="one row per query (text: 'metric<TAB>query<TAB>value' lines like trec_eval -q)",
    )
    e.add_argument("--query-ids", metavar="FILE", help="query ids for --per-query, one per line (default 0..Q-1)")
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
    problem = check_combination(args, trec)
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
    if args.search is not None:
        try:
            run, from_labels = read_search_file(
                args.search, args.search_metric, ArrayBudget(args.max_array_bytes), qrels_given=qrels is not None
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
    try:
        # a TREC run's warnings (grades trec_eval reads otherwise) print as one line each
        with warnings.catch_warnings(record=trec) as caught:
            res = rc.evaluate_run(run, qrels, **kwargs) if trec else rc.evaluate(**kwargs)
        for w in caught or ():
            print(f"warning: {w.message}", file=sys.stderr)
    except (ValueError, TypeError, rc.ImplementationUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a run or qrels file that cannot be opened
        print(f"error: {exc.filename}: {exc.strerror or exc}; check the path", file=sys.stderr)
        return 2
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


def _parse_k(text: str) -> Optional[list]:
    """``all``/``none`` -> [None]; ``5`` -> [5]; ``1,5,10`` -> [1, 5, 10]; None when unusable."""
    text = text.strip().lower()
    if text in ("all", "none"):
        return [None]
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        return None
    return values if all(value >= 1 for value in values) else None


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
