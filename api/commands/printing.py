"""What ``evaluate`` prints besides the summary: trec_eval's lines, and one row per query."""

from __future__ import annotations

import sys
from typing import Dict, List, Optional

from retrieval_conformance import strict_json


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
    return [
        f"{name:<22}\tall\t{value if isinstance(value, int) else format(value, '.4f')}"
        for name, value in measures.items()
    ]


def print_per_query(res, fmt: str, ids_path: Optional[str], ids: Optional[List[str]]) -> int:
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
