"""Command line: ``retrieval-conformance {golden,evaluate,compare,check,identify,bench,compute-ap,presets,explain}``."""
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from retrieval_conformance.array_files import EVALUATE_ARRAYS, ArrayBudget, read_array_file
from retrieval_conformance.reference.contract import options_table


def _load(target: str):
    """The function named ``"module:function"``, imported when its subcommand runs: the jobs of
    the conformance layer sit above this face (ARCHITECTURE.md)."""
    import importlib

    module, function = target.split(":")
    return getattr(importlib.import_module(module), function)


def _by_name(target: str):
    """A subcommand function that loads ``target`` when it runs."""
    return lambda args: _load(target)(args)


def _load_arrays(args) -> dict:
    """The arrays named by ``--npz`` and the per-array options, read defensively.

    Files are read with :func:`~retrieval_conformance.reference.readers.read_npz` /
    :func:`~retrieval_conformance.reference.readers.read_npy`: only regular files of plain
    arrays, each header's declared size checked against the data present and against
    ``--max-array-bytes`` (all arrays together) before anything is allocated.

    Raises
    ------
    ValueError
        With a message naming the option, the file and what to do; ``evaluate_main``
        prints it as ``error: ...`` and exits with status 2.
    """
    budget = ArrayBudget(args.max_array_bytes)
    arrays = dict(read_array_file("--npz", args.npz, budget, archive=True)) if args.npz else {}
    for key in EVALUATE_ARRAYS:
        path = getattr(args, key)
        if path:
            arrays[key] = read_array_file("--" + key.replace("_", "-"), path, budget, archive=False)[""]
    return arrays


def evaluate_main(args) -> int:
    """``evaluate``: print the metrics of the arrays given; 0, or 2 for unusable input.

    A missing, unreadable or hostile file (garbage, truncated zip, object arrays, a header
    declaring more data than the file holds or than ``--max-array-bytes``), an unusable
    ``--k`` or arrays that ``evaluate`` rejects print ``error: <what, which option or file,
    what to do>`` on stderr and return 2.
    """
    import retrieval_conformance as rc

    # every failure of the input prints one line, "error: ...", and exits with 2 (a usage
    # error), never a traceback
    trec = args.run is not None or args.qrels is not None
    if trec:
        if args.run is None or args.qrels is None:
            print(f"error: {'--run' if args.run is None else '--qrels'}: a TREC run is evaluated against qrels; "
                  "give both --run RUN and --qrels QRELS", file=sys.stderr)
            return 2
        kwargs = dict(max_rank=args.max_rank, implementation=args.implementation, complete=args.complete,
                      relevance_level=args.relevance_level)
    else:
        try:
            arrays = _load_arrays(args)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        # every option of the table but k (parsed below) goes to evaluate as it was given
        options = {o.name: getattr(args, o.name) for o in options_table.taken_by("evaluate-cli") if o.name != "k"}
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
        res = rc.evaluate_run(args.run, args.qrels, **kwargs) if trec else rc.evaluate(**kwargs)
    except (ValueError, TypeError, rc.ImplementationUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a run or qrels file that cannot be opened
        print(f"error: {exc.filename}: {exc.strerror or exc}; check the path", file=sys.stderr)
        return 2
    if args.per_query:
        return _print_per_query(res, args.per_query, args.query_ids)
    results = list(res.values()) if isinstance(res, rc.ResultsAtK) else [res]
    if args.json:
        summary = res.summary()
        if trec:  # trec_eval's own names as well
            summary = {key: dict(one, trec_eval=r.extras["trec_eval"]) for (key, one), r in
                       zip(summary.items(), results)} if isinstance(res, rc.ResultsAtK) else \
                dict(summary, trec_eval=res.extras["trec_eval"])
        print(json.dumps(summary, indent=2, default=str))
        return 0
    for one in results:
        if args.quiet:
            print(f"{one.map!r}")
        elif trec:
            for name, value in one.extras["trec_eval"].items():  # as trec_eval prints its summary
                print(f"{name:<22}\tall\t{value}")
        else:
            _print_result(one)
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


def _print_result(res) -> None:
    o = res.options
    print(f"protocol {res.protocol} (implementation {res.implementation})")
    print(f"  ties={o.ties} ap_rule={o.ap_rule} k={o.k} ap_at_k={o.ap_at_k} empty={o.empty}")
    print(f"  queries: {res.ap.shape[0]}, counted: {res.n_counted}")
    exact = f"  (exact {res.exact.map})" if res.exact is not None and res.exact.map is not None else ""
    print(f"  mAP{'' if o.k is None else '@' + str(o.k)}: {res.map:.6f}{exact}")
    if res.precision_at_k is not None:
        print(f"  P@{o.k}: {res.precision_at_k:.6f}   R@{o.k}: {res.recall_at_k:.6f}")
    ranks = [r for r in (1, 5, 10, 20, 50) if r <= res.cmc.shape[0]]
    print("  CMC: " + "  ".join(f"Rank-{r} {res.cmc[r - 1]:.4f}" for r in ranks))
    print(f"  mINP: {res.minp:.6f}   R-precision: {res.r_precision:.6f}")
    at_k = "" if o.k is None else "@" + str(o.k)
    print(f"  nDCG{at_k}: {res.ndcg_at_k:.6f}   MRR{at_k}: {res.mrr:.6f}   MAP@R: {res.map_at_r:.6f}")
    if res.precision_at_radius is not None:
        print(f"  within radius {o.radius:g}: precision {res.precision_at_radius:.6f}, "
              f"recall {res.recall_at_radius:.6f}")


def _print_per_query(res, fmt: str, ids_path: Optional[str]) -> int:
    """One row per query (like ``trec_eval -q``), as text, JSON or CSV."""
    import csv

    query_ids = res.extras.get("query_ids")  # a TREC run's qids
    if ids_path:
        try:
            with open(ids_path, encoding="utf-8") as f:
                query_ids = [line.rstrip("\n") for line in f if line.strip()]
        except OSError as exc:
            print(f"error: --query-ids {ids_path}: cannot read it ({exc.strerror}); pass a text file with "
                  "one query id per line", file=sys.stderr)
            return 2
    try:
        rows = res.per_query_table(query_ids)
    except ValueError as exc:
        print(f"error: --query-ids {ids_path}: {exc}", file=sys.stderr)
        return 2
    if fmt == "json":
        print(json.dumps({"summary": res.summary(), "queries": rows}, indent=1, default=str))
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
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="retrieval-conformance", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("golden", help="check every implementation against the golden cases and the reference")
    g.add_argument("--implementations", nargs="*", help="names to check (default: all registered)")
    g.add_argument("--require", nargs="*", default=[], help="fail if one of these is unavailable")
    g.add_argument("--random", type=int, default=200, help="generated cross-check problems (0 to skip)")
    g.add_argument("--seed", type=int, default=0)
    g.set_defaults(func=_by_name("retrieval_conformance.conformance.main_job:golden_main"))

    e = sub.add_parser("evaluate", help="evaluate arrays from .npy/.npz files, or a TREC run against qrels")
    e.add_argument("--run", help="a TREC run file (qid Q0 docno rank score tag), evaluated as trec_eval does")
    e.add_argument("--qrels", help="the TREC qrels file for --run (qid iter docno rel)")
    e.add_argument("--complete", action="store_true", help="with --run: trec_eval -c (every qrels query counts)")
    e.add_argument("--relevance-level", type=int, default=1, help="with --run: least relevant grade (trec_eval -l)")
    e.add_argument("--npz", help="an .npz holding arrays named like evaluate()'s arguments")
    for key in EVALUATE_ARRAYS:
        e.add_argument("--" + key.replace("_", "-"), dest=key, help=f"{key} as a .npy file")
    e.add_argument("--max-array-bytes", type=int, metavar="N",
                   help="refuse input arrays larger than N bytes in total, checked from the "
                        "file headers before loading (default 2 GiB)")
    # every evaluation option from the one options table (flags, choices and help)
    options_table.add_arguments(e, "evaluate-cli", defaults={"protocol": "hashing", "max_rank": 50,
                                                             "implementation": "auto"})
    e.add_argument("--json", action="store_true", help="machine-readable output")
    e.add_argument("--per-query", choices=("text", "json", "csv"),
                   help="one row per query (text: 'metric<TAB>query<TAB>value' lines like trec_eval -q)")
    e.add_argument("--query-ids", metavar="FILE", help="query ids for --per-query, one per line (default 0..Q-1)")
    e.add_argument("--progress", action="store_true", help="show progress on stderr")
    e.add_argument("--quiet", action="store_true", help="print only mAP (errors still go to stderr)")
    e.set_defaults(func=evaluate_main)

    p = sub.add_parser("presets", help="list the protocol presets")
    p.set_defaults(func=presets_main)

    from retrieval_conformance.reference import spec_cli

    spec_cli.add_parser(sub)  # explain [CLAUSE]: the specification's clauses
    # listed in --help; main() hands their arguments to their own parsers
    for name, (_, _, text) in DELEGATED.items():
        sub.add_parser(name, help=text, add_help=False)
    for subparser in sub.choices.values():  # a flag is taken by its own name, never by a prefix of it
        subparser.allow_abbrev = False
    return parser


#: subcommands that parse their own arguments: name -> (module, function, help)
DELEGATED = {
    "compare": ("retrieval_conformance.comparison", "compare_main",
                "compare runs (.npz, or TREC runs with --qrels) query by query: intervals, paired tests, effect sizes"),
    "check": ("retrieval_conformance.conformance.harness.cli", "check_main",
              "check your own metric function against the reference, and name its conventions"),
    "identify": ("retrieval_conformance.conformance.harness.cli", "identify_main",
                 "name the conventions (and known bugs) your metric function follows: check --identify"),
    "bench": ("retrieval_conformance.conformance.bench.cli", "bench_main",
              "speed benchmarks at dataset scale with peers, a ratio regression gate (run, gate, report, plot)"),
    "compute-ap": ("retrieval_conformance.reference.landmark.cli", "compute_ap_main",
                   "the VGG compute_ap program for Oxford/Paris ranked lists"),
}


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # subcommands with their own argument parsing, provided by their modules
    if argv and argv[0] in DELEGATED:
        module, function, _ = DELEGATED[argv[0]]
        return _load(f"{module}:{function}")(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (| head): not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
