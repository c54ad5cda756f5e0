"""``retrieval-conformance audit``: audit arrays from .npy/.npz files; exit 1 when a ``--fail-if`` holds.

Exit status: 0 (audited, no condition met), 1 (a ``--fail-if`` condition is met), 2 (unusable
input or options: one ``error: ...`` line naming the option).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from retrieval_conformance.array_files import EVALUATE_ARRAYS, ArrayBudget, read_array_file


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="retrieval-conformance audit",
        description="Audit an evaluation: every metric under every convention with its tie interval, the "
                    "conventions (and known bugs) that reproduce reported numbers, and what in the data makes "
                    "the numbers fragile.")
    p.add_argument("--npz", help="an .npz holding arrays named like evaluate()'s arguments")
    for key in EVALUATE_ARRAYS:
        p.add_argument("--" + key.replace("_", "-"), dest=key, help=f"{key} as a .npy file")
    p.add_argument("--metric", help="distance of embeddings: euclidean (default) or cosine")
    p.add_argument("--protocol", default="hashing", help="the declared preset (retrieval-conformance presets)")
    p.add_argument("--k", help="the declared cut-off: an integer, or 'all' (default) for the whole gallery")
    p.add_argument("--max-rank", type=int, default=50)
    for option in ("ties", "ap-rule", "ap-at-k", "empty", "gain", "discount", "recall"):
        p.add_argument("--" + option, help=f"override of the preset's {option.replace('-', '_')}")
    p.add_argument("--reported", help="published numbers to trace, e.g. map=0.6026,rank1=88.2%%")
    p.add_argument("--max-cost", type=int, default=2,
                   help="what a candidate may assume: known bugs plus an unstable tie order (0, 1 or 2)")
    p.add_argument("--format", choices=("text", "json", "html"), default="text")
    p.add_argument("--output", "-o", help="write the report here (default: standard output)")
    p.add_argument("--fail-if", action="append", default=[], metavar="CONDITION",
                   help="exit 1 when it holds: tie_interval:map>0.005, self_matches>0, empty_queries.share>0.01, "
                        "reproduced<1, map<0.5 (repeat, or join with ;)")
    p.add_argument("--implementation", default="auto")
    p.add_argument("--max-array-bytes", type=int, metavar="N",
                   help="refuse input arrays larger than N bytes in total (default 2 GiB)")
    return p


def audit_main(argv: Optional[List[str]] = None) -> int:
    from retrieval_conformance.conformance.audit import fail_if
    from retrieval_conformance.conformance.audit.run import audit

    args = build_parser().parse_args(argv)
    try:
        for condition in fail_if.conditions(args.fail_if):
            fail_if.parse(condition)  # refused before the work, not after it
        k = _cutoff(args.k)
        budget = ArrayBudget(args.max_array_bytes)
        arrays = dict(read_array_file("--npz", args.npz, budget, archive=True)) if args.npz else {}
        for key in EVALUATE_ARRAYS:
            path = getattr(args, key)
            if path:
                arrays[key] = read_array_file("--" + key.replace("_", "-"), path, budget, archive=False)[""]
        unknown = sorted(set(arrays) - set(EVALUATE_ARRAYS))
        if unknown:
            raise ValueError(f"--npz: array {unknown[0]!r} is not an evaluate() argument; expected names from "
                             f"{list(EVALUATE_ARRAYS)}")
        if "query_embeddings" in arrays:
            arrays["metric"] = args.metric or "euclidean"
        elif args.metric is not None:
            raise ValueError(f"--metric: {args.metric!r} applies to embeddings (--query-embeddings and "
                             "--db-embeddings); the arrays given have their own distances")
        result = audit(**arrays, protocol=args.protocol, k=k, max_rank=args.max_rank, ties=args.ties,
                       ap_rule=args.ap_rule, ap_at_k=args.ap_at_k, empty=args.empty, gain=args.gain,
                       discount=args.discount, recall=args.recall, reported=args.reported,
                       implementation=args.implementation, max_cost=args.max_cost)
    except (ValueError, TypeError) as exc:
        message = str(exc)
        for name in ("fail_if", "reported", "max_cost"):  # the API's argument names, as options here
            if message.startswith(name + ":"):
                message = "--" + name.replace("_", "-") + message[len(name):]
        print(f"error: {message}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # ImplementationUnavailable: a backend that is not installed here
        print(f"error: --implementation {args.implementation}: {exc}", file=sys.stderr)
        return 2
    text = {"text": result.to_text, "html": result.to_html,
            "json": lambda: json.dumps(result.to_dict(), indent=1, default=str) + "\n"}[args.format]()
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
    try:
        k = int(text)
    except ValueError:
        k = 0
    if k < 1:
        raise ValueError(f"--k: expected a positive integer or 'all', got {text!r}")
    return k
