"""``retrieval-conformance audit``: audit arrays from .npy/.npz files, or a TREC run (``--run R --qrels Q``);
exit 1 when a ``--fail-if`` holds.

Exit status: 0 (audited, no condition met), 1 (a ``--fail-if`` condition is met), 2 (unusable
input or options: one ``error: ...`` line naming the option).
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from retrieval_conformance import strict_json
from retrieval_conformance.array_files import EVALUATE_ARRAYS, load_evaluate_arrays
from retrieval_conformance.reference.contract import progress
from retrieval_conformance.reference.contract.command_line import (
    CommandParser,
    non_negative_int,
    parse_integer,
    positive_int,
)


def build_parser() -> argparse.ArgumentParser:
    p = CommandParser(
        prog="retrieval-conformance audit",
        description="Audit an evaluation: every metric under every convention with its tie interval, the "
        "conventions (and known bugs) that reproduce reported numbers, and what in the data makes "
        "the numbers fragile.",
    )
    p.add_argument("--npz", help="an .npz holding arrays named like evaluate()'s arguments")
    for key in EVALUATE_ARRAYS:
        p.add_argument("--" + key.replace("_", "-"), dest=key, help=f"{key} as a .npy file")
    p.add_argument("--run", help="a TREC run file (qid Q0 docno rank score tag), audited against --qrels")
    p.add_argument("--qrels", help="the TREC qrels file of --run (qid iter docno rel)")
    p.add_argument("--relevance-level", type=positive_int, help="with --run: the least relevant grade (trec_eval -l)")
    p.add_argument("--depth", type=positive_int, help="with --run: the declared ranking depth (trec_eval -M)")
    p.add_argument("--judged-only", action="store_true", help="with --run: declared trec_eval -J")
    p.add_argument("--complete", action="store_true", help="with --run: declared trec_eval -c")
    p.add_argument("--score-dtype", help="with --run: float64 (trec_eval 10.0, default) or float32 (9.0.8)")
    p.add_argument("--float-grades", help="with --run: exact, truncate (trec_eval's atol) or refuse")
    p.add_argument("--gains", help="with --run: nDCG gain per grade, e.g. 1=3,2=9 (trec_eval -m ndcg.1=3,2=9)")
    p.add_argument(
        "--ignore-identical-ids", action="store_true", help="with --run: drop a document named like its query (BEIR)"
    )
    p.add_argument("--metric", help="distance of embeddings: euclidean (default) or cosine")
    p.add_argument("--protocol", default="hashing", help="the declared preset (retrieval-conformance presets)")
    p.add_argument(
        "--k",
        help="the declared cut-off: an integer, or 'all' (default) for the whole gallery; with "
        "--run the cut-offs of P_k, ndcg_cut_k... (e.g. 5,10; default 10)",
    )
    p.add_argument("--max-rank", type=positive_int, default=50)
    for option in ("ties", "ap-rule", "ap-at-k", "empty", "gain", "discount", "recall"):
        p.add_argument(
            "--" + option,
            help=f"override of the preset's {option.replace('-', '_')}"
            + (
                "; with --run the order of tied documents: trec_eval (docno descending, the default), stable "
                "(file order), reverse, docno_ascending, pessimistic or optimistic"
                if option == "ties"
                else "; with --run too"
                if option in ("discount", "gain")
                else ""
            ),
        )
    p.add_argument("--reported", help="published numbers to trace, e.g. map=0.6026,rank1=88.2%%")
    p.add_argument(
        "--max-cost",
        type=non_negative_int,
        default=2,
        help="what a candidate may assume: known bugs plus an unstable tie order (0, 1 or 2)",
    )
    p.add_argument("--format", choices=("text", "json", "html"), default=None, help="the report's form (default text)")
    p.add_argument("--json", action="store_true", help="the report as JSON: --format json, as on every command")
    p.add_argument("--output", "-o", help="write the report here (default: standard output)")
    p.add_argument(
        "--fail-if",
        action="append",
        default=[],
        metavar="CONDITION",
        help="exit 1 when it holds: tie_interval:map>0.005, self_matches>0, empty_queries.share>0.01, "
        "reproduced<1, map<0.5 (repeat, or join with ;)",
    )
    p.add_argument("--implementation", default="auto")
    p.add_argument(
        "--max-array-bytes",
        type=positive_int,
        metavar="N",
        help="refuse input arrays larger than N bytes in total (default 2 GiB)",
    )
    return p


def audit_main(argv: Optional[List[str]] = None) -> int:
    from retrieval_conformance.conformance.audit import fail_if
    from retrieval_conformance.conformance.audit.run import audit

    args = build_parser().parse_args(argv)
    if args.json and args.format not in (None, "json"):
        print(
            f"error: --json asks for JSON and --format {args.format} for {args.format}; give one of them",
            file=sys.stderr,
        )
        return 2
    args.format = "json" if args.json else args.format or "text"
    try:
        kind = "trec run" if args.run is not None or args.qrels is not None else "arrays"
        cutoffs = (_cutoffs(args.k) or []) if kind == "trec run" else None
        for condition in fail_if.conditions(args.fail_if):
            fail_if.parse(condition, kind, cutoffs)  # refused before the work, not after it
        with progress.reporting("audit", "evaluations"):  # on stderr, when it is a terminal
            if args.run is not None or args.qrels is not None:
                result = _audit_run(args, audit)
            else:
                result = _audit_arrays(args, audit)
    except (ValueError, TypeError) as exc:
        print(f"error: {_as_flags(str(exc))}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"error: {exc.filename}: no such file; check the path", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # ImplementationUnavailable: a backend that is not installed here
        print(f"error: --implementation {args.implementation}: {exc}", file=sys.stderr)
        return 2
    return _write(args, result)


#: the API's argument names that are options of the command (``max_rank`` is ``--max-rank``)
API_NAMES = frozenset(
    (
        "fail_if",
        "reported",
        "max_cost",
        "relevance_level",
        "depth",
        "score_dtype",
        "float_grades",
        "run",
        "qrels",
        "ties",
        "discount",
        "gain",
        "gains",
        "k",
        "max_rank",
        "protocol",
        "metric",
        "ap_rule",
        "ap_at_k",
        "empty",
        "recall",
    )
)


def _as_flags(message: str) -> str:
    """An API error as the command names things: ``"run, qrels: ..."`` -> ``"--run, --qrels: ..."``."""
    head, colon, rest = message.partition(":")
    names = [name.strip() for name in head.split(",")]
    if not colon or not all(name in API_NAMES for name in names):
        return message
    return ", ".join("--" + name.replace("_", "-") for name in names) + colon + rest


#: the options of arrays only, refused by name with --run
ARRAY_ONLY = ("npz", "metric", "protocol", "ap_rule", "ap_at_k", "empty", "recall", "max_array_bytes")
#: the options of runs only, refused by name without --run
RUN_ONLY = (
    "relevance_level",
    "depth",
    "judged_only",
    "complete",
    "score_dtype",
    "float_grades",
    "gains",
    "ignore_identical_ids",
)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _audit_run(args, audit):
    if args.run is None or args.qrels is None:
        raise ValueError(
            f"{'--run' if args.run is None else '--qrels'}: a TREC run is audited against its qrels; "
            "pass both --run and --qrels"
        )
    defaults = {"protocol": "hashing", "max_rank": 50}
    for name in ARRAY_ONLY + EVALUATE_ARRAYS + ("max_rank",):
        value = getattr(args, name, None)
        if value is not None and value is not False and value != defaults.get(name, object()):
            raise ValueError(
                f"{_flag(name)}: applies to arrays; with --run the ranking and relevance come from the "
                "run and qrels (trec_eval's measures)"
            )
    _warn_below_random(args, None)
    return audit(
        run=args.run,
        qrels=args.qrels,
        k=_cutoffs(args.k),
        ties=args.ties,
        discount=args.discount,
        gain=args.gain,
        reported=args.reported,
        implementation=args.implementation,
        max_cost=args.max_cost,
        relevance_level=1 if args.relevance_level is None else args.relevance_level,
        depth=args.depth,
        judged_only=args.judged_only,
        complete=args.complete,
        score_dtype=args.score_dtype or "float64",
        float_grades=args.float_grades,
        gains=_gains(args.gains),
        ignore_identical_ids=args.ignore_identical_ids,
    )


def _audit_arrays(args, audit):
    for name in RUN_ONLY:
        if getattr(args, name) not in (None, False):
            raise ValueError(f"{_flag(name)}: an option of a TREC run (trec_eval's); pass --run and --qrels")
    k = _cutoff(args.k)
    arrays = load_evaluate_arrays(args)
    unknown = sorted(set(arrays) - set(EVALUATE_ARRAYS))
    if unknown:
        raise ValueError(
            f"--npz: array {unknown[0]!r} is not an evaluate() argument; expected names from {list(EVALUATE_ARRAYS)}"
        )
    if "query_embeddings" in arrays:
        arrays["metric"] = args.metric or "euclidean"
    elif args.metric is not None:
        raise ValueError(
            f"--metric: {args.metric!r} applies to embeddings (--query-embeddings and "
            "--db-embeddings); the arrays given have their own distances"
        )
    _warn_below_random(args, arrays)
    return audit(
        **arrays,
        protocol=args.protocol,
        k=k,
        max_rank=args.max_rank,
        ties=args.ties,
        ap_rule=args.ap_rule,
        ap_at_k=args.ap_at_k,
        empty=args.empty,
        gain=args.gain,
        discount=args.discount,
        recall=args.recall,
        reported=args.reported,
        implementation=args.implementation,
        max_cost=args.max_cost,
    )


def _warn_below_random(args, arrays) -> None:
    """evaluate's warning when the data is far below a random order of its items (similarities given
    as distances, a reversed run), on stderr before the audit's work."""
    from retrieval_conformance.commands import random_check
    from retrieval_conformance.reference.contract.evaluate import evaluate
    from retrieval_conformance.reference.protocols.trec.evaluation import run_queries
    from retrieval_conformance.reference.protocols.trec.trec_eval_measures import below_random

    if arrays is None:
        queries = run_queries(
            args.run,
            args.qrels,
            1 if args.relevance_level is None else args.relevance_level,
            args.complete,
            args.score_dtype or "float64",
            args.depth,
            args.judged_only,
            args.ignore_identical_ids,
            args.float_grades,
        )[0]
        warning = below_random(queries)
    else:
        whole = evaluate(**arrays, protocol=args.protocol or "hashing", k=None, metrics=["map"])
        warning = random_check.arrays_warning(whole, arrays)
    if warning is not None:
        print(f"warning: {warning}", file=sys.stderr)


def _write(args, result) -> int:
    text = {
        "text": result.to_text,
        "html": result.to_html,
        # strict JSON, as evaluate --json and compare --json: NaN as null, listed under "non_finite"
        "json": lambda: strict_json.dumps(result.to_dict(), indent=1, default=str) + "\n",
    }[args.format]()
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            print(f"error: --output {args.output}: {exc.strerror or exc}; check the path", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    met = result.failures(args.fail_if)
    for line in met:
        print(f"fail-if: {line}", file=sys.stderr)
    return 1 if met else 0


def _cutoff(text: Optional[str]) -> Optional[int]:
    if text is None or text.strip().lower() in ("all", "none"):
        return None
    k = parse_integer(text, least=1)  # the one reading of an integer option: no 1_0, no other scripts' digits
    if k is None:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise ValueError(f"--k: expected a positive integer (ASCII digits, within int64) or 'all', got {shown!r}")
    return k


def _cutoffs(text: Optional[str]) -> Optional[List[int]]:
    """``--k 5,10`` -> [5, 10] (None: the default cut-off)."""
    if text is None:
        return None
    return [_cutoff(part) or 0 for part in text.split(",")]


def _gains(text: Optional[str]):
    """``--gains 1=3,2=9`` -> {1: 3, 2: 9} (trec_eval's ``-m ndcg.1=3,2=9``)."""
    if text is None:
        return None
    out = {}
    for part in text.split(","):
        grade, _, gain = part.partition("=")
        try:
            out[int(grade)] = int(gain) if gain.strip().lstrip("-").isdigit() else float(gain)
        except ValueError:
            raise ValueError(f"--gains: expected GRADE=GAIN pairs like 1=3,2=9, got {part!r}") from None
    return out
