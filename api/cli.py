"""Command line: ``retrieval-conformance COMMAND`` (golden, evaluate, compare, check, identify, audit, bench,
compute-ap, presets, explain)."""
from __future__ import annotations

import argparse
import sys
import warnings
from typing import Dict, List, Optional, Tuple

from retrieval_conformance import strict_json
from retrieval_conformance.array_files import EVALUATE_ARRAYS, ArrayBudget, load_evaluate_arrays, read_search_file
from retrieval_conformance.reference.contract import options_table
from retrieval_conformance.reference.contract.command_line import (
    CommandParser,
    non_negative_int,
    run_command,
)
from retrieval_conformance.reference.readers.grades import FLOAT_GRADES
from retrieval_conformance.reference.readers.text import read_text_lines
from retrieval_conformance.result_text import print_result


def _load(target: str):
    """The function named ``"module:function"``, imported when its subcommand runs: the jobs of
    the conformance layer sit above this face (ARCHITECTURE.md)."""
    import importlib

    module, function = target.split(":")
    return getattr(importlib.import_module(module), function)


def _by_name(target: str):
    """A subcommand function that loads ``target`` when it runs."""
    return lambda args: _load(target)(args)


#: options that a TREC run evaluation always takes (``rc.evaluate_run`` has these keywords)
RUN_OPTIONS = ("k", "max_rank", "implementation")
#: the other options of ``evaluate`` (the options table's, and --progress): with ``--run`` each one is
#: passed to ``rc.evaluate_run`` when it takes that keyword, and refused by name when it does not
ARRAY_OPTIONS = tuple(o.name for o in options_table.taken_by("evaluate-cli") if o.name not in RUN_OPTIONS) + (
    "progress",)
#: options that only mean something for a TREC run (trec_eval's -c, -l, -M, -J, -m ndcg.G=V; BEIR's
#: ignore_identical_ids)
RUN_ONLY_OPTIONS = ("complete", "relevance_level", "depth", "judged_only", "ignore_identical_ids", "gains",
                    "float_grades")


def _parse_gains(text: str) -> dict:
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


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _given(args, dest: str) -> bool:
    value = getattr(args, dest)
    return value is not None and value is not False


def _check_combination(args, trec: bool) -> Optional[str]:
    """The first option that does not apply to this kind of input, as an ``error: ...`` text, or None."""
    if args.search_metric is not None and args.search is None:
        return "--search-metric: says how the D of --search ranks; give --search FILE, or drop --search-metric"
    if trec:
        if args.search is not None:
            if args.run is not None:
                return "--run: give a run file or a search (--search), not both"
            if args.search_metric is None:
                return ("--search-metric: required with --search: l2 (D is a distance, smaller is closer, "
                        "faiss METRIC_L2) or inner_product (larger is closer)")
            array_options: Tuple[str, ...] = ("npz",) + EVALUATE_ARRAYS
        elif args.run is None or args.qrels is None:
            return (f"{'--run' if args.run is None else '--qrels'}: a TREC run is evaluated against qrels; "
                    "give both --run RUN and --qrels QRELS")
        else:
            array_options = ("npz", "max_array_bytes") + EVALUATE_ARRAYS
        for dest in array_options:
            if _given(args, dest):
                return (f"{_flag(dest)}: arrays are not read with --run or --search (the run and the qrels are the "
                        f"input); drop {_flag(dest)} or evaluate the arrays without --run/--qrels/--search")
    else:
        for dest in RUN_ONLY_OPTIONS:
            if _given(args, dest):
                return f"{_flag(dest)}: applies to a TREC run only; give --run RUN --qrels QRELS, or drop {_flag(dest)}"
    if args.query_ids is not None and not args.per_query:
        return "--query-ids: names the rows of --per-query; add --per-query text|json|csv, or drop --query-ids"
    if args.json and args.per_query:
        return "--json: the per-query table has its own JSON form; give --per-query json, or drop --json"
    if args.quiet and (args.json or args.per_query):
        return f"--quiet: prints only mAP as text; drop it with {'--json' if args.json else '--per-query'}"
    return None


def _run_options(args) -> Tuple[dict, Optional[str]]:
    """Keywords of ``rc.evaluate_run`` from the options given, or the ``error: ...`` text of one it does not take."""
    import inspect

    import retrieval_conformance as rc

    accepted = inspect.signature(rc.evaluate_run).parameters
    kwargs = dict(max_rank=args.max_rank, implementation=args.implementation)
    for dest in RUN_ONLY_OPTIONS:
        if _given(args, dest):
            kwargs[dest] = getattr(args, dest)
    for dest in ARRAY_OPTIONS:
        if not _given(args, dest):
            continue
        if dest not in accepted:
            return kwargs, (f"{_flag(dest)}: not an option of a TREC run evaluation (rc.evaluate_run takes "
                            f"{', '.join(_flag(name) for name in ARRAY_OPTIONS + RUN_ONLY_OPTIONS if name in accepted)}"
                            f"); drop {_flag(dest)}, or evaluate arrays without --run/--qrels")
        kwargs[dest] = args.progress and not args.quiet if dest == "progress" else getattr(args, dest)
    return kwargs, None


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
    problem = _check_combination(args, trec)
    if problem is None and trec:
        kwargs, problem = _run_options(args)
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
            run, from_labels = read_search_file(args.search, args.search_metric, ArrayBudget(args.max_array_bytes),
                                                qrels_given=qrels is not None)
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
            print(f"error: --k: expected a positive integer, a list like 1,5,10, or 'all' for the whole gallery, "
                  f"got {shown!r}", file=sys.stderr)
            return 2
        kwargs["k"] = cutoffs[0] if len(cutoffs) == 1 else tuple(cutoffs)
        if len(cutoffs) > 1 and args.per_query:
            print("error: --per-query: give one --k (per-query values are reported for one cut-off)",
                  file=sys.stderr)
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
        return _print_per_query(res, args.per_query, args.query_ids, query_ids)
    results = list(res.values()) if isinstance(res, rc.ResultsAtK) else [res]
    if args.json:
        summary = res.summary()
        if trec:  # trec_eval's own names as well
            summary = {key: dict(one, trec_eval=r.extras["trec_eval"]) for (key, one), r in
                       zip(summary.items(), results)} if isinstance(res, rc.ResultsAtK) else \
                dict(summary, trec_eval=res.extras["trec_eval"])
        print(strict_json.dumps(summary, indent=2, default=str))
        return 0
    if trec and not args.quiet:
        print("\n".join(trec_eval_lines(results)))
        return 0
    if args.quiet and not results[0].has("map"):
        print("error: --quiet: prints only mAP, which --metrics did not ask for; add map to --metrics, or drop "
              "--quiet", file=sys.stderr)
        return 2
    for one in results:
        if args.quiet:
            print(f"{one.map!r}")
        else:
            print_result(one)
    return 0


def trec_eval_lines(results) -> List[str]:
    """The summary as trec_eval prints it (``%-22s\\tall\\t%.4f``, counts as integers): each measure
    once, the measures of a cut-off family (``P_5``, ``P_10``, ...) together in the order of the
    cut-offs; ``--json`` has the full float64 values."""
    uncut: Dict[str, object] = {}
    families: Dict[str, Dict[str, object]] = {}
    for one in results:
        for name, value in one.extras["trec_eval"].items():
            family, _, cut = name.rpartition("_")
            if family and cut.isdigit():
                families.setdefault(family, {}).setdefault(name, value)
            else:
                uncut.setdefault(name, value)
    measures = dict(uncut)
    for family in families.values():
        measures.update(family)
    return [f"{name:<22}\tall\t{value if isinstance(value, int) else format(value, '.4f')}"
            for name, value in measures.items()]


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
        raise ValueError(f"--query-ids {path}: cannot read it ({exc.strerror or exc}); pass a text file with "
                         "one query id per line") from None


def _print_per_query(res, fmt: str, ids_path: Optional[str], ids: Optional[List[str]]) -> int:
    """One row per query (like ``trec_eval -q``), as text, JSON or CSV."""
    import csv

    query_ids = ids if ids is not None else res.extras.get("query_ids")  # a TREC run's qids
    try:
        rows = res.per_query_table(query_ids)
    except ValueError as exc:
        print(f"error: --query-ids {ids_path}: {exc}", file=sys.stderr)
        return 2
    if fmt == "json":
        print(strict_json.dumps({"summary": res.summary(), "queries": rows}, indent=1, default=str))
    elif fmt == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    else:
        for row in rows:
            query = row.pop("query")
            for name, value in row.items():
                print(f"{name}\t{query}\t{value}")
    return 0


def presets_main(args) -> int:
    from retrieval_conformance.reference.contract.presets import PRESETS

    print(f"{'preset':<13} {'AP':<14} {'@k':<12} {'ties':<9} {'empty':<12} {'junk':<22} {'other':<16} matches")
    for p in PRESETS.values():
        at_k = p.ap_at_k + (f" k={p.k}" if p.k else "")
        defaults = (("gain", "linear"), ("discount", "log2"), ("recall", "fraction"))
        other = [f"{name}={getattr(p, name)}" for name, default in defaults if getattr(p, name) != default]
        print(f"{p.name:<13} {p.ap_rule:<14} {at_k:<12} {p.ties:<9} {p.empty:<12} "
              f"{'+'.join(p.junk) or '-':<22} {' '.join(other) or '-':<16} {p.matches}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from retrieval_conformance import __version__
    from retrieval_conformance.reference.contract.spec import SPEC_VERSION

    parser = CommandParser(allow_abbrev=False, prog="retrieval-conformance", description=__doc__,
                           epilog="Exit status: 0 done, 1 a negative verdict or lost output, 2 usage error, "
                                  "130 interrupted, 141 the reader of the output went away (| head).")
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {__version__} (specification {SPEC_VERSION})")
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("golden", help="check every implementation against the golden cases and the reference")
    g.add_argument("--implementations", nargs="*", metavar="NAME",
                   help="registered names to check (default: all registered); an unknown name is an error")
    g.add_argument("--require", nargs="*", default=[], metavar="NAME",
                   help="exit 1 if one of these is unavailable here; an unknown name is an error")
    g.add_argument("--random", type=non_negative_int, default=200, metavar="N",
                   help="generated cross-check problems (0 to skip; default 200)")
    g.add_argument("--seed", type=non_negative_int, default=0, metavar="N",
                   help="seed of the generated problems (default 0)")
    g.set_defaults(func=_by_name("retrieval_conformance.conformance.main_job:golden_main"))

    e = sub.add_parser("evaluate", help="evaluate arrays from .npy/.npz files, or a TREC run against qrels")
    e.add_argument("--run", help="a TREC run file (qid Q0 docno rank score tag; .gz, or .jsonl as JSON Lines), "
                                 "evaluated as trec_eval does")
    e.add_argument("--qrels", help="the TREC qrels file for --run (qid iter docno rel); .gz and .jsonl read too")
    e.add_argument("--search", metavar="NPZ",
                   help="nearest-neighbour results as a run: an .npz of faiss's D and I (-1: none), with "
                        "query_labels and db_labels (same label: relevant) or --qrels, optional query_ids, db_ids")
    e.add_argument("--search-metric", choices=("l2", "inner_product"),
                   help="with --search: how D ranks (l2: smaller is closer; inner_product: larger is closer)")
    e.add_argument("--complete", action="store_true", help="with --run: trec_eval -c (every qrels query counts)")
    e.add_argument("--relevance-level", type=int, help="with --run: least relevant grade (trec_eval -l; default 1)")
    e.add_argument("--depth", type=int, metavar="M", help="with --run: only the first M documents of each query "
                   "count (trec_eval -M)")
    e.add_argument("--judged-only", action="store_true", help="with --run: unjudged documents are dropped from the "
                   "run first (trec_eval -J)")
    e.add_argument("--ignore-identical-ids", action="store_true", help="with --run: a document whose id equals the "
                   "query id is dropped from the run (BEIR's ignore_identical_ids)")
    e.add_argument("--gains", type=_parse_gains, metavar="G=V,...", help="with --run: nDCG's gain of each grade, "
                   "e.g. 1=1,2=3,3=7 (trec_eval -m ndcg.1=1,2=3,3=7); other grades keep their own value")
    e.add_argument("--float-grades", choices=FLOAT_GRADES, help="with --run: qrels grades that are not integers "
                   "(2.5): exact (the default, with a warning), truncate (trec_eval's atol: 2) or refuse")
    e.add_argument("--npz", help="an .npz holding arrays named like evaluate()'s arguments")
    for key in EVALUATE_ARRAYS:
        e.add_argument("--" + key.replace("_", "-"), dest=key, help=f"{key} as a .npy file")
    e.add_argument("--max-array-bytes", type=int, metavar="N",
                   help="refuse input arrays larger than N bytes in total, checked from the "
                        "file headers before loading (default 2 GiB)")
    # every evaluation option from the one options table (flags, choices and help); --protocol has no
    # default here so that one given with --run is seen (arrays: hashing)
    options_table.add_arguments(e, "evaluate-cli", defaults={"max_rank": 50, "implementation": "auto"})
    e.add_argument("--json", action="store_true",
                   help="machine-readable output (strict JSON: NaN/inf as null, listed under 'non_finite')")
    e.add_argument("--per-query", choices=("text", "json", "csv"),
                   help="one row per query (text: 'metric<TAB>query<TAB>value' lines like trec_eval -q)")
    e.add_argument("--query-ids", metavar="FILE", help="query ids for --per-query, one per line (default 0..Q-1)")
    e.add_argument("--progress", action="store_true", help="show progress on stderr")
    e.add_argument("--quiet", action="store_true", help="print only mAP (errors still go to stderr)")
    e.set_defaults(func=evaluate_main)

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
    "compare": ("retrieval_conformance.comparison", "compare_main",
                "compare runs (.npz, or TREC runs with --qrels) query by query: intervals, paired tests, effect sizes"),
    "check": ("retrieval_conformance.conformance.harness.cli", "check_main",
              "check your own metric function against the reference, and name its conventions"),
    "identify": ("retrieval_conformance.conformance.harness.cli", "identify_main",
                 "name the conventions (and known bugs) your metric function follows: check --identify"),
    "audit": ("retrieval_conformance.conformance.audit.cli", "audit_main",
              "audit an evaluation: every convention's number, the conventions behind reported numbers, fragility"),
    "bench": ("retrieval_conformance.conformance.bench.cli", "bench_main",
              "speed benchmarks at dataset scale with peers, a ratio regression gate, the feature page "
              "(run, gate, report, features, plot)"),
    "compute-ap": ("retrieval_conformance.reference.protocols.landmark.cli", "compute_ap_main",
                   "the VGG compute_ap program for Oxford/Paris ranked lists"),
}


def main(argv: Optional[List[str]] = None) -> int:
    """``retrieval-conformance ...``: the exit status (the table of ``reference/contract/command_line.py``:
    0, 1, 2 usage error, 130 interrupted, 141 closed pipe), never a traceback at an edge."""
    return run_command(_run, argv)


if __name__ == "__main__":
    sys.exit(main())
