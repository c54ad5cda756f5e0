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


#: measures that judge the judgments themselves: qrels made from labels judge every item, so they
#: say nothing there (Judged@k is 1, bpref counts every non-relevant item as judged)
LABEL_BLIND = ("bpref", "Judged_")


def drop_label_blind_measures(res) -> str:
    """Leave bpref and Judged@k out of a search evaluated with qrels from labels; the note saying so."""
    for one in res.values() if isinstance(res, dict) else [res]:
        extras = one.extras
        for table in (extras["trec_eval"], extras["trec_eval_per_query"], extras.get("trec_eval_exact", {})):
            for name in [n for n in table if n.startswith(LABEL_BLIND)]:
                del table[name]
    return (
        "bpref and Judged@k are left out: qrels made from labels judge every database item, so they carry "
        "no information here"
    )


#: the first characters with which a spreadsheet reads a cell as a formula (OWASP's CSV injection list)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(value):
    """A CSV cell that no spreadsheet runs: a text (a query id) starting like a formula gets a leading ``'``,
    as Excel, LibreOffice and Google Sheets read it (shown as text, the ``'`` hidden); numbers stay as they are."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


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
        writer.writerows({name: spreadsheet_text(value) for name, value in row.items()} for row in rows)
    else:
        for row in rows:
            query = row.pop("query")
            for name, value in row.items():
                print(f"{name}\t{query}\t{value}")
    return 0
