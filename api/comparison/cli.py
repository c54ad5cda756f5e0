"""``retrieval-conformance compare RUN RUN ...``: compare runs saved as ``.npz`` files or TREC run files.

Each run is a ``.npz`` of :func:`retrieval_conformance.evaluate`'s arrays (``--shared``:
the arrays every run shares, e.g. the labels), or, with ``--qrels``, a TREC run file
evaluated by :func:`retrieval_conformance.evaluate_run` (``--complete``: ``trec_eval -c``).
Every run is evaluated, compared with the baseline (or every pair, ``--pairs all``) and
printed as tables (text, ``--markdown``, ``--latex``) or ``--json``; a warning on stderr
says how many queries were dropped when the runs answer different queries.
``--fail-if-worse METRIC:MARGIN`` turns a significant regression into exit status 1.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from dataclasses import asdict
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from retrieval_conformance import strict_json
from retrieval_conformance.array_files import ArrayBudget, read_array_file
from retrieval_conformance.comparison.arguments import MAX_RESAMPLES, check_level, check_resamples
from retrieval_conformance.comparison.formatting import format_p, json_ready
from retrieval_conformance.comparison.metrics import metric_key
from retrieval_conformance.comparison.pairing import default_metrics
from retrieval_conformance.comparison.runs import PAIRS, compare
from retrieval_conformance.comparison.stats import CORRECTIONS
from retrieval_conformance.comparison.trec_runs import DEFAULT_TREC_METRICS, evaluate_trec_runs, split_metrics
from retrieval_conformance.reference.contract import progress
from retrieval_conformance.reference.contract.command_line import (
    CommandParser,
    integer,
    non_negative_int,
    parse_integer,
    positive_int,
)
from retrieval_conformance.reference.contract.evaluate import evaluate
from retrieval_conformance.reference.contract.metric_names import trec_measure
from retrieval_conformance.reference.contract.registry import ImplementationUnavailable
from retrieval_conformance.reference.contract.spec import SPEC_VERSION
from retrieval_conformance.reference.readers.grades import FLOAT_GRADES

__all__ = ["compare_main"]


def _parser() -> argparse.ArgumentParser:
    p = CommandParser(
        allow_abbrev=False,
        prog="retrieval-conformance compare",
        description="Evaluate runs (.npz files of evaluate()'s arrays, or TREC run files with --qrels) and compare "
        "them query by query (paired by query id): each run's mean with t and bootstrap intervals; "
        "for each pair, paired permutation test, paired t-test, bootstrap interval of the difference "
        "and effect size.  Exit 0; 1 when --fail-if-worse finds a significant regression; 2 for "
        "unusable input.",
    )
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="a .npz of arrays named like evaluate()'s arguments (scores or distances, plus relevance or "
        "query_labels/db_labels, ...), or with --qrels a TREC run file (qid Q0 docno rank score tag); "
        "the first is the baseline unless --baseline",
    )
    p.add_argument("--names", nargs="+", metavar="NAME", help="names of the runs (default: the file names)")
    p.add_argument("--baseline", metavar="NAME", help="the run the others are compared with (default: the first)")
    p.add_argument("--shared", metavar="FILE.npz", help=".npz runs: arrays shared by every run (e.g. the labels)")
    p.add_argument("--protocol", help=".npz runs: evaluation preset (default hashing)")
    p.add_argument("--k", help=".npz runs: cut-off (an integer, or 'all')")
    p.add_argument("--qrels", metavar="QRELS", help="the runs are TREC run files, judged by this TREC qrels file")
    p.add_argument(
        "--float-grades",
        choices=FLOAT_GRADES,
        help="TREC runs: qrels grades that are not integers (2.5): exact (the default, with a warning), "
        "truncate (trec_eval's atol: 2) or refuse",
    )
    p.add_argument(
        "--complete",
        action="store_true",
        help="TREC runs: evaluate every qrels query, 0 for a run without results for it (trec_eval -c); "
        "without it, queries not answered by every run are dropped, with a warning",
    )
    p.add_argument(
        "--relevance-level",
        type=integer,
        default=1,
        metavar="L",
        help="TREC runs: least relevant grade (trec_eval -l, default 1)",
    )
    p.add_argument("--implementation", default="auto")
    p.add_argument(
        "--metrics",
        nargs="+",
        metavar="METRIC",
        help="names, space- or comma-separated: for .npz runs map, precision_at_k, recall_at_k, "
        "rank1..rankN, minp, r_precision, ndcg, mrr, map_at_r (or P_10, P@10 at the runs' --k); for TREC "
        f"runs trec_eval's names (default {','.join(DEFAULT_TREC_METRICS)}; also ndcg, Rprec, recall_k, "
        "bpref, success_k, ...) or ir_measures' (AP, P@10, nDCG@10, R@100, RR, Judged@10, P(rel=2)@10)",
    )
    p.add_argument(
        "--pairs",
        choices=PAIRS,
        default="baseline",
        help="compare each run with the baseline (default) or every pair of runs",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output")
    out.add_argument("--markdown", action="store_true", help="a markdown table (for a pull request)")
    out.add_argument("--latex", action="store_true", help="a booktabs table (for a paper)")
    p.add_argument(
        "--fail-if-worse",
        action="append",
        default=[],
        metavar="METRIC:MARGIN",
        help="exit 1 when a run is worse than the baseline on METRIC by more than MARGIN, significantly "
        "(permutation test p < --alpha); repeatable",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument(
        "--resamples",
        type=integer,
        default=10_000,
        metavar="N",
        help=f"permutation and bootstrap resamples (default 10000, at most {MAX_RESAMPLES:,})",
    )
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed (default 0)")
    p.add_argument("--confidence", type=float, default=0.95, help="bootstrap interval level (default 0.95)")
    p.add_argument(
        "--correction",
        choices=[c for c in CORRECTIONS if c is not None],
        help="multiple-comparison correction over all tests: holm (family-wise error) or bh "
        "(Benjamini-Hochberg, false discovery rate)",
    )
    p.add_argument("--plus-minus", action="store_true", help="--latex: each mean ± the half-width of its t interval")
    p.add_argument(
        "--max-array-bytes",
        type=positive_int,
        metavar="N",
        help="refuse a file whose arrays exceed N bytes in total (default 2 GiB)",
    )
    return p


def _read_run(option: str, path: str, max_bytes: Optional[int]) -> Dict[str, np.ndarray]:
    """The arrays of one ``.npz`` (at most ``--max-array-bytes`` per file), every name one of ``evaluate``'s."""
    return read_array_file(option, path, ArrayBudget(max_bytes), archive=True)


def _parse_fail_if_worse(specs: List[str]) -> List[Tuple[str, float]]:
    """``--fail-if-worse METRIC:MARGIN`` options as (canonical metric, margin) pairs."""
    out = []
    for spec in specs:
        metric, sep, margin = spec.rpartition(":")
        try:
            value = float(margin) if sep and metric else float("nan")
        except ValueError:
            value = float("nan")
        if not (value >= 0 and math.isfinite(value)):
            raise ValueError(
                f"--fail-if-worse: expected METRIC:MARGIN with a margin >= 0 (e.g. map:0.01), got {spec!r}"
            )
        out.append((metric_key(metric), value))
    return out


def _run_names(args) -> List[str]:
    if args.names is not None and len(args.names) != len(args.runs):
        raise ValueError(f"--names: expected {len(args.runs)} names (one per run), got {len(args.names)}")
    names = args.names or [os.path.splitext(os.path.basename(p))[0] for p in args.runs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ValueError(f"two runs are named {dup!r}; name them with --names A B ...")
    extra = [args.qrels] if args.qrels else [args.shared] if args.shared else []
    missing = [p for p in args.runs + extra if not os.path.exists(p)]
    if missing:
        option = "run" if missing[0] in args.runs else "--qrels" if args.qrels else "--shared"
        raise ValueError(f"{option} {missing[0]}: no such file; check the path")
    return names


def _trec_runs(args, names: List[str], metrics: List[str]) -> Dict[str, Any]:
    """TREC run files evaluated against ``--qrels``; the .npz options are refused by name."""
    given = {
        "--shared": args.shared,
        "--protocol": args.protocol,
        "--k": args.k,
        "--max-array-bytes": args.max_array_bytes,
    }
    for flag, value in given.items():
        if value is not None:
            raise ValueError(
                f"{flag}: applies to .npz runs, not to TREC runs (--qrels); the cut-offs of TREC runs "
                "come from the measure names (--metrics P_10,ndcg_cut_10)"
            )
    return evaluate_trec_runs(
        args.runs,
        names,
        args.qrels,
        metrics,
        args.complete,
        args.relevance_level,
        args.implementation,
        args.float_grades,
    )


def _evaluated_runs(args, names: List[str]) -> Dict[str, Any]:
    """Read every .npz run (and --shared) and evaluate it; ValueError with the message to print."""
    if args.complete or args.relevance_level != 1 or args.float_grades is not None:
        flag = "--complete" if args.complete else "--relevance-level" if args.relevance_level != 1 else "--float-grades"
        raise ValueError(f"{flag}: applies to TREC runs (--qrels QRELS), not to .npz runs")
    shared: Dict[str, Any] = _read_run("--shared", args.shared, args.max_array_bytes) if args.shared else {}
    kwargs: Dict[str, Any] = dict(protocol=args.protocol or "hashing", implementation=args.implementation)
    if args.k is not None:
        text = args.k.strip().lower()
        k = None if text in ("all", "none") else parse_integer(text, least=1)  # the shared reading of an integer
        if k is None and text not in ("all", "none"):
            raise ValueError(
                f"--k must be an integer or 'all' (a whole number >= 1 in ASCII digits, within int64), "
                f"got {args.k[:40]!r}"
            )
        kwargs["k"] = k
    results = {}
    for name, path in zip(names, args.runs):
        arrays: Dict[str, Any] = _read_run("run", path, args.max_array_bytes)  # evaluate's keyword arguments
        both = sorted(set(arrays) & set(shared))
        if both:
            raise ValueError(f"run {path} and --shared {args.shared} both hold {both[0]!r}; keep it in one of them")
        try:
            results[name] = evaluate(**arrays, **shared, **kwargs)
            progress.tick()
        except (ValueError, TypeError) as exc:
            raise ValueError(f"run {name!r} ({path}): {exc}") from None
    return results


def _metrics(args, gates: List[Tuple[str, float]], runs: Dict[str, Any]) -> Optional[List[str]]:
    """The metrics to compare: ``--metrics`` (or the defaults) and every ``--fail-if-worse`` metric."""
    asked = split_metrics(args.metrics)
    first = next(iter(runs.values()))
    if asked is None and not gates:
        return None
    if asked is None:  # the defaults, then the gated metrics
        asked = default_metrics(first)
    names = asked + [m for m, _ in gates]
    return list(dict.fromkeys(metric_key(m) for m in names))


def compare_main(argv: Optional[Sequence[str]] = None) -> int:
    """``retrieval-conformance compare RUN RUN ...``; returns the exit status.

    0 on success; 1 when ``--fail-if-worse METRIC:MARGIN`` finds a run worse than the
    baseline by more than MARGIN with permutation p < ``--alpha`` (each printed on stderr as
    ``worse: ...``); 2 for usage or input errors (``error: ...`` on stderr: a missing or
    unreadable file, runs of different definitions, an unknown metric, ...).  Warnings
    (queries dropped because not every run answers them) go to stderr as ``warning: ...``.
    A leading ``"compare"`` is accepted, so the main CLI can pass its argv through.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "compare":
        argv = argv[1:]
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code or 0)
    try:
        gates = _parse_fail_if_worse(args.fail_if_worse)
        check_level("--alpha", args.alpha)
        check_level("--confidence", args.confidence)
        check_resamples("--resamples", args.resamples)
        if args.plus_minus and not args.latex:
            raise ValueError("--plus-minus: applies to the --latex table; add --latex")
        names = _run_names(args)
        # warnings (grades trec_eval reads otherwise, dropped queries) print below as one line each;
        # progress (runs evaluated, tests and intervals) on stderr when it is a terminal
        with warnings.catch_warnings(record=True) as caught, progress.reporting("compare", "steps"):
            warnings.simplefilter("always")
            if args.qrels:  # trec_eval's or ir_measures' names, as trec_eval's (the cut-offs come from them)
                asked = [
                    trec_measure(m, "--metrics", args.relevance_level, "--relevance-level")
                    for m in split_metrics(args.metrics) or DEFAULT_TREC_METRICS
                ]
                gates = [
                    (trec_measure(m, "--fail-if-worse", args.relevance_level, "--relevance-level"), margin)
                    for m, margin in gates
                ]
                runs = _trec_runs(args, names, asked + [m for m, _ in gates])
                metrics: Optional[List[str]] = list(dict.fromkeys(asked + [m for m, _ in gates]))
            else:
                runs = _evaluated_runs(args, names)
                metrics = _metrics(args, gates, runs)
            result = compare(
                runs,
                metrics=metrics,
                baseline=args.baseline,
                n_resamples=args.resamples,
                confidence=args.confidence,
                seed=args.seed,
                correction=args.correction,
                pairs=args.pairs,
            )
    except (ValueError, TypeError) as exc:
        message = str(exc)  # rc.compare's argument names, as the flags they are here
        for name in ("metrics", "baseline", "confidence"):
            if message.startswith(name + ":"):
                message = "--" + message
        print(f"error: {message}", file=sys.stderr)
        return 2
    except ImplementationUnavailable as exc:  # e.g. dask without a client: the message says what to do
        print(f"error: --implementation {args.implementation}: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:  # scipy, of the compare extra: the message names the install command
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for w in caught:  # the dropped queries; numpy's warnings on empty means are the tables' "-"
        if issubclass(w.category, UserWarning):
            print(f"warning: {w.message}", file=sys.stderr)
    worse = [
        (row, margin) for metric, margin in gates for row in result.regressions(margin, alpha=args.alpha, metric=metric)
    ]
    if args.json:
        payload = result.to_dict()
        payload["spec_version"] = SPEC_VERSION
        if gates:
            payload["regressions"] = [json_ready(dict(asdict(r), margin=m)) for r, m in worse]
        print(strict_json.dumps(payload, indent=2))  # NaN as null, listed under non_finite
    elif args.markdown:
        print(result.to_markdown(alpha=args.alpha), end="")
    elif args.latex:
        print(result.to_latex(alpha=args.alpha, plus_minus=args.plus_minus), end="")
    else:
        print(result.to_text(alpha=args.alpha), end="")
    for row, margin in worse:
        print(
            f"worse: {row.run} {row.label} {row.difference:+.4f} vs {row.baseline} (margin {margin:g}, "
            f"permutation p = {format_p(row.p_permutation_adjusted)} < {args.alpha:g})",
            file=sys.stderr,
        )
    return 1 if worse else 0
