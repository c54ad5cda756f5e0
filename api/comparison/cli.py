"""``retrieval-conformance compare RUN.npz RUN.npz ...``: compare runs saved as ``.npz`` files.

Each run is a ``.npz`` of :func:`retrieval_conformance.evaluate`'s arrays (``--shared``:
the arrays every run shares, e.g. the labels); every run is evaluated, compared with the
baseline and printed as a table (text, ``--markdown``, ``--latex``) or ``--json``.
``--fail-if-worse METRIC:MARGIN`` turns a significant regression into exit status 1.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from dataclasses import asdict
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from retrieval_conformance.array_files import ArrayBudget, read_array_file
from retrieval_conformance.comparison.arguments import (
    canonical_metric,
    check_level,
    check_resamples,
    result_metric_labels,
)
from retrieval_conformance.comparison.runs import compare
from retrieval_conformance.comparison.stats import CORRECTIONS
from retrieval_conformance.comparison.tables import format_p, json_ready
from retrieval_conformance.reference.contract.evaluate import evaluate

__all__ = ["compare_main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="retrieval-conformance compare",
        description="Evaluate runs (.npz files of evaluate()'s arrays) and compare each with the first one, "
                    "query by query: paired permutation test, paired t-test, bootstrap interval of the "
                    "difference.  Exit 0; 1 when --fail-if-worse finds a significant regression; 2 for "
                    "unusable input.")
    p.add_argument("runs", nargs="+", metavar="RUN.npz",
                   help="a run: arrays named like evaluate()'s arguments (scores or distances, plus relevance or "
                        "query_labels/db_labels, ...); the first is the baseline unless --baseline")
    p.add_argument("--names", nargs="+", metavar="NAME", help="names of the runs (default: the file names)")
    p.add_argument("--baseline", metavar="NAME", help="the run the others are compared with (default: the first)")
    p.add_argument("--shared", metavar="FILE.npz", help="arrays shared by every run (e.g. the labels)")
    p.add_argument("--protocol", default="hashing", help="evaluation preset (default hashing)")
    p.add_argument("--k", help="cut-off (an integer, or 'all')")
    p.add_argument("--implementation", default="auto")
    p.add_argument("--metrics", nargs="+", metavar="METRIC",
                   help="some of map, precision_at_k, recall_at_k, rank1..rankN, minp, r_precision")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output")
    out.add_argument("--markdown", action="store_true", help="a markdown table (for a pull request)")
    out.add_argument("--latex", action="store_true", help="a booktabs table (for a paper)")
    p.add_argument("--fail-if-worse", action="append", default=[], metavar="METRIC:MARGIN",
                   help="exit 1 when a run is worse than the baseline on METRIC by more than MARGIN, significantly "
                        "(permutation test p < --alpha); repeatable")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--resamples", type=int, default=10_000, metavar="N",
                   help="permutation and bootstrap resamples (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--confidence", type=float, default=0.95, help="bootstrap interval level (default 0.95)")
    p.add_argument("--correction", choices=[c for c in CORRECTIONS if c is not None],
                   help="multiple-comparison correction over all tests")
    p.add_argument("--max-array-bytes", type=int, metavar="N",
                   help="refuse a file whose arrays exceed N bytes in total (default 2 GiB)")
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
            raise ValueError(f"--fail-if-worse: expected METRIC:MARGIN with a margin >= 0 (e.g. map:0.01), "
                             f"got {spec!r}")
        out.append((canonical_metric(metric), value))
    return out


def _evaluated_runs(args) -> Dict[str, Any]:
    """Read every run (and --shared) and evaluate it; ValueError with the message to print."""
    if len(args.runs) < 2:
        raise ValueError(f"expected at least 2 runs to compare, got {len(args.runs)}")
    if args.names is not None and len(args.names) != len(args.runs):
        raise ValueError(f"--names: expected {len(args.runs)} names (one per run), got {len(args.names)}")
    names = args.names or [os.path.splitext(os.path.basename(p))[0] for p in args.runs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ValueError(f"two runs are named {dup!r}; name them with --names A B ...")
    missing = [p for p in args.runs + ([args.shared] if args.shared else []) if not os.path.exists(p)]
    if missing:
        option = "--shared" if missing[0] == args.shared and missing[0] not in args.runs else "run"
        raise ValueError(f"{option} {missing[0]}: no such file; check the path")
    shared = _read_run("--shared", args.shared, args.max_array_bytes) if args.shared else {}
    kwargs: Dict[str, Any] = dict(protocol=args.protocol, implementation=args.implementation)
    if args.k is not None:
        text = args.k.strip().lower()
        try:
            kwargs["k"] = None if text in ("all", "none") else int(text)
        except ValueError:
            raise ValueError(f"--k must be an integer or 'all', got {args.k[:40]!r}") from None
    results = {}
    for name, path in zip(names, args.runs):
        arrays = _read_run("run", path, args.max_array_bytes)
        both = sorted(set(arrays) & set(shared))
        if both:
            raise ValueError(f"run {path} and --shared {args.shared} both hold {both[0]!r}; keep it in one of them")
        try:
            results[name] = evaluate(**arrays, **shared, **kwargs)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"run {name!r} ({path}): {exc}") from None
    return results


def compare_main(argv: Optional[Sequence[str]] = None) -> int:
    """``retrieval-conformance compare RUN.npz RUN.npz ...``; returns the exit status.

    0 on success; 1 when ``--fail-if-worse METRIC:MARGIN`` finds a run worse than the
    baseline by more than MARGIN with permutation p < ``--alpha`` (each printed on stderr as
    ``worse: ...``); 2 for usage or input errors (``error: ...`` on stderr: a missing or
    unreadable file, runs with different numbers of queries, an unknown metric, ...).
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
        runs = _evaluated_runs(args)
        metrics = args.metrics
        if metrics is not None:
            metrics = list(dict.fromkeys([canonical_metric(m) for m in metrics] + [m for m, _ in gates]))
        elif gates:
            metrics = list(dict.fromkeys(list(result_metric_labels(runs, None)) + [m for m, _ in gates]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. no query counted: the table says NaN
            result = compare(runs, metrics=metrics, baseline=args.baseline, n_resamples=args.resamples,
                             confidence=args.confidence, seed=args.seed, correction=args.correction)
    except (ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    worse = [(row, margin) for metric, margin in gates
             for row in result.regressions(margin, alpha=args.alpha, metric=metric)]
    if args.json:
        payload = result.to_dict()
        if gates:
            payload["regressions"] = [json_ready(dict(asdict(r), margin=m)) for r, m in worse]
        print(json.dumps(payload, indent=2))
    elif args.markdown:
        print(result.to_markdown(alpha=args.alpha), end="")
    elif args.latex:
        print(result.to_latex(alpha=args.alpha), end="")
    else:
        print(result.to_text(alpha=args.alpha), end="")
    for row, margin in worse:
        print(f"worse: {row.run} {row.label} {row.difference:+.4f} vs {row.baseline} (margin {margin:g}, "
              f"permutation p = {format_p(row.p_permutation_adjusted)} < {args.alpha:g})", file=sys.stderr)
    return 1 if worse else 0
