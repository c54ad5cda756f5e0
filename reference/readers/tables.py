"""Runs and qrels from tables: JSON Lines files, DataFrames, and nearest-neighbour search results.

Each reader returns the ranx-style dict that :func:`~.trec.as_run` / :func:`~.trec.as_qrels`
then check (``{qid: {docid: score}}``, ``{qid: {docid: grade}}``); values are kept as they are
written (a grade ``2`` stays the int 2, ``1.5`` the float 1.5), so that which grades count is
decided in one place, when evaluating.

Columns
-------
A row names its query, its document and a value; each role has the names the common tools use
(:data:`COLUMNS`, one table for every reader here):

=========  =====================================  =========================================
role       accepted names                         used by
=========  =====================================  =========================================
query      ``qid``, ``query_id``, ``q_id``         TREC tools, ir_measures, ranx
document   ``docid``, ``doc_id``, ``docno``        TREC tools, ir_measures / ranx, trec_eval
score      ``score``                              every run format
grade      ``relevance``, ``rel``, ``score``       ir_measures, TREC, ranx (``Qrels.from_df``)
=========  =====================================  =========================================

A table holding two names of one role (``qid`` and ``query_id``) is refused: which one is meant
cannot be guessed.  Ids are ``str``; an integer id (``"qid": 301`` in JSON, an int column) is
read as its decimal text, as a TREC file writes it.  A repeated ``(query, document)`` pair is
an error naming both rows, as in TREC files.

Search results
--------------
:func:`run_from_search` turns ``(D, I)`` as ``faiss.Index.search`` returns them (no faiss needed:
the two arrays) into a run, and :func:`qrels_from_labels` turns class labels (person ids,
landmark ids) into qrels, so that embedding retrieval is evaluated with
:func:`~retrieval_conformance.reference.protocols.trec.evaluation.evaluate_run` like any run.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
from retrieval_conformance.reference.contract.validation import exact_float64
from retrieval_conformance.reference.readers.limits import (
    MAX_FILE_BYTES,
    MAX_LINES,
    FileRefusedError,
    PathLike,
    _clip,
    _read_text_data,
    _refuse_bare_cr,
)

#: ids of queries or documents: a sequence or a 1-D array
IdSequence = Union[Sequence[Any], np.ndarray]

__all__ = [
    "COLUMNS",
    "JSON_LINES_SUFFIXES",
    "SEARCH_METRICS",
    "is_json_lines",
    "is_table",
    "qrels_from_labels",
    "read_json_lines",
    "read_table",
    "run_from_search",
]

#: role -> accepted column names (see the module doc)
COLUMNS = {
    "query": ("qid", "query_id", "q_id"),
    "document": ("docid", "doc_id", "docno"),
    "score": ("score",),
    "grade": ("relevance", "rel", "score"),
}
#: file names read as JSON Lines (``.gz`` after any of them: compressed)
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")
#: how ``D`` of a search ranks: l2 (faiss METRIC_L2, smaller is closer), inner_product (larger is closer)
SEARCH_METRICS = ("l2", "inner_product")
#: how ``run_from_search`` ranks neighbours at equal distance: the search's order, or trec_eval's
SEARCH_TIES = ("search", "trec_eval")


#: the deepest nesting of objects and arrays a JSON Lines row may have (a row is one flat object;
#: Python's parser recurses per level and would stop with a RecursionError near 1,000)
MAX_JSON_DEPTH = 64


class _Refused(ValueError):
    """What a JSON Lines row may not hold (a key given twice, an integer of thousands of digits): the message
    is shown after the file and line."""


def _json_integer(text: str) -> int:
    if len(text.lstrip("-")) > 64:  # before int(): Python refuses 4,300 digits with no file or line
        raise _Refused(f"an integer of {len(text):,} digits, beyond any score, grade or id; write it shorter")
    return int(text)


def _refuse_nesting(raw: bytes, here: str) -> None:
    """Raise when ``raw`` nests objects or arrays deeper than :data:`MAX_JSON_DEPTH` (brackets in strings
    are skipped)."""
    depth, in_string, escaped = 0, False, False
    for byte in raw:
        if in_string:
            escaped, in_string = (False, True) if escaped else (byte == 0x5C, byte != 0x22)
        elif byte == 0x22:
            in_string = True
        elif byte in (0x7B, 0x5B):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise ValueError(
                    f"{here}: objects or arrays nested more than {MAX_JSON_DEPTH} deep; expected one flat "
                    'object per line, {"qid": ..., "docid": ..., "score": ...}'
                )
        elif byte in (0x7D, 0x5D):
            depth -= 1


def is_json_lines(path: PathLike) -> bool:
    """Whether ``path`` is named as a JSON Lines file (``.jsonl``, ``.ndjson``, optionally ``.gz``)."""
    name = os.fsdecode(os.fspath(path)).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return name.endswith(JSON_LINES_SUFFIXES)


def is_table(value: Any) -> bool:
    """Whether ``value`` looks like a DataFrame (pandas, polars, ...): ``columns`` and column lookup."""
    return hasattr(value, "columns") and hasattr(value, "__getitem__") and not isinstance(value, (dict, str, bytes))


def _roles(columns: Iterable[Any], kind: str, where: str) -> Tuple[str, str, str]:
    """The column names of query, document and value in ``columns``; a named error when missing or ambiguous."""
    present = [c for c in columns if isinstance(c, str)]
    chosen = []
    for role in ("query", "document", "score" if kind == "run" else "grade"):
        names = [name for name in COLUMNS[role] if name in present]
        if len(names) > 1:
            raise ValueError(f"{where}: columns {', '.join(names)} all name the {role}; keep one of them")
        if not names:
            raise ValueError(
                f"{where}: no {role} column; expected one of {', '.join(COLUMNS[role])} "
                f"(columns given: {_clip(', '.join(map(str, present)), 120)})"
            )
        chosen.append(names[0])
    return chosen[0], chosen[1], chosen[2]


def _shown(value: Any) -> str:
    """A value from a table for a message: strings quoted and clipped, others as printed (clipped)."""
    return _clip(value) if isinstance(value, str) else str(value)[:40]


def _id(value: Any, role: str, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return str(int(value))
    raise ValueError(f"{where}: expected a str {role} id (or an integer), got {_shown(value)} ({type(value).__name__})")


def _value(value: Any, kind: str, where: str) -> Any:
    """The score or grade as written: an int or a float, finite; anything else is refused by name."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(
            f"{where}: expected a number as the {'score' if kind == 'run' else 'grade'}, got "
            f"{_shown(value)} ({type(value).__name__})"
        )
    value = int(value) if isinstance(value, numbers.Integral) else float(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: expected a finite {'score' if kind == 'run' else 'grade'}, got {value}")
    return value


def _collect(rows: Iterable[Tuple[str, Any, Any, Any]], kind: str) -> Dict[str, Dict[str, Any]]:
    """``{qid: {docid: value}}`` from ``(where, qid, docid, value)`` rows; a repeated pair names both rows."""
    out: Dict[str, Dict[str, Any]] = {}
    first: Dict[Tuple[str, str], str] = {}
    for where, qid, docid, value in rows:
        qid, docid = _id(qid, "query", where), _id(docid, "document", where)
        docs = out.setdefault(qid, {})
        if docid in docs:
            raise ValueError(
                f"{where}: query {_clip(qid)} lists document {_clip(docid)} again (first at "
                f"{first[qid, docid]}); expected each (query, document) pair once in a {kind} "
                "(trec_eval stops with 'duplicate docs'): remove one of them"
            )
        first[qid, docid] = where.rsplit(": ", 1)[-1]
        docs[docid] = _value(value, kind, where)
    return out


def read_json_lines(
    path: PathLike, kind: str, *, max_bytes: int = MAX_FILE_BYTES, max_lines: int = MAX_LINES
) -> Dict[str, Dict[str, Any]]:
    """A run or qrels in JSON Lines: one object per line, ``{"qid": "301", "docid": "FT911-3", "score": 12.5}``.

    Parameters
    ----------
    path : str or os.PathLike
        A regular file, plain or gzip-compressed (``max_bytes`` bounds the decompressed bytes).
    kind : {"run", "qrels"}
        Which value column is read: ``score`` for a run, ``relevance``/``rel``/``score`` for qrels.
    max_bytes, max_lines : int
        Largest file and most lines read (1 GiB and 10**7 by default).

    Returns
    -------
    dict of str to dict of str to number
        Blank lines are skipped; keys other than the three roles are ignored (a ``rank`` or a
        ``run`` tag, as trec_eval ignores those fields).

    Raises
    ------
    ValueError
        A line that is not a JSON object (NaN and Infinity are not JSON), a missing, ambiguous or
        wrongly typed field, a repeated (query, document) pair, a key given twice in one object
        (``json`` would keep the last value silently), objects or arrays nested deeper than
        :data:`MAX_JSON_DEPTH`, an integer of more than 64 digits, or a carriage return inside a
        line (bare ``\r`` line ends); the message names the file and line.
    FileRefusedError
        A FIFO, a device, or a file beyond ``max_bytes`` / ``max_lines``.
    """
    where = os.fsdecode(os.fspath(path))
    data = _read_text_data(path, max_bytes)
    _refuse_bare_cr(data, where)
    lines = data.split(b"\n")
    if len(lines) - (1 if data.endswith(b"\n") or not data else 0) > max_lines:
        raise FileRefusedError(
            path,
            f"more than {max_lines:,} lines",
            f"pass max_lines=... to read a larger {kind} file",
            limit="max_lines",
        )

    def refuse(constant: str):
        raise ValueError(f"{constant} is not JSON")

    def once(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
        keys = [key for key, _ in pairs]
        if len(set(keys)) < len(keys):  # json keeps the last value of a repeated key without a word
            again = next(key for i, key in enumerate(keys) if key in keys[:i])
            raise _Refused(f"key {_clip(again)} appears twice in one object; keep one of them")
        return dict(pairs)

    def rows():
        roles = None
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            here = f"{where}: line {number}"
            if raw.count(b"{") > MAX_JSON_DEPTH or raw.count(b"[") > MAX_JSON_DEPTH:
                _refuse_nesting(raw, here)
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
                row = json.loads(text, parse_constant=refuse, parse_int=_json_integer, object_pairs_hook=once)
            except _Refused as exc:
                raise ValueError(f"{here}: {exc}") from None
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                raise ValueError(
                    f"{here}: not a JSON object ({str(exc)[:100]}); expected one object per line"
                ) from None
            if not isinstance(row, dict):
                raise ValueError(f"{here}: expected a JSON object per line, got {type(row).__name__}")
            if roles is None or any(name not in row for name in roles):
                roles = _roles(row, kind, here)
            yield (here, *(row[name] for name in roles))

    return _collect(rows(), kind)


def read_table(
    table: Any, kind: str, *, name: Optional[str] = None, max_rows: int = MAX_LINES
) -> Dict[str, Dict[str, Any]]:
    """A run or qrels from a DataFrame with query, document and value columns (see the module doc).

    The table is read through its columns only (``table[column]`` and the column's
    ``tolist()``/``to_list()``), so pandas, polars or any frame with those works and pandas is
    never imported here.  Errors name the row by its position (0 for the first row).

    Parameters
    ----------
    table : DataFrame
    kind : {"run", "qrels"}
    name : str, optional
        How errors name the table (default ``kind``).
    max_rows : int
        Most rows read (10**7 by default).
    """
    where = name or kind
    query, document, value = _roles(list(table.columns), kind, where)
    columns = []
    for column in (query, document, value):
        series = table[column]
        to_list = getattr(series, "tolist", None) or getattr(series, "to_list", None)
        if to_list is None:
            raise TypeError(
                f"{where}: column {column!r} has no tolist()/to_list(); pass a pandas or polars "
                "DataFrame, or a dict {qid: {docid: value}}"
            )
        columns.append(to_list())
    if len(columns[0]) > max_rows:
        raise ValueError(
            f"{where}: {len(columns[0]):,} rows, more than the limit of {max_rows:,}; pass "
            "max_rows=... to read a larger table"
        )
    rows = ((f"{where}: row {i}", q, d, v) for i, (q, d, v) in enumerate(zip(*columns)))
    return _collect(rows, kind)


def _ids(ids: Optional[IdSequence], n: int, name: str) -> List[str]:
    if ids is None:
        return [str(i) for i in range(n)]
    ids = list(ids.tolist() if isinstance(ids, np.ndarray) else ids)
    if len(ids) != n:
        raise ValueError(f"{name}: expected {n} ids (one per row of the search), got {len(ids)}")
    out = [_id(one, "query" if name == "query_ids" else "document", f"{name}[{i}]") for i, one in enumerate(ids)]
    if len(set(out)) != n:
        raise ValueError(f"{name}: ids repeat; expected one id per row")
    return out


def run_from_search(
    distances: Any,
    indices: Any,
    *,
    metric: str,
    query_ids: Optional[IdSequence] = None,
    db_ids: Optional[IdSequence] = None,
    n_db: Optional[int] = None,
    ties: str = "search",
) -> Dict[str, Dict[str, float]]:
    r"""A run from k-nearest-neighbour results ``(D, I)``, as ``faiss.Index.search`` returns them.

    Parameters
    ----------
    distances : array of shape (Q, k)
        ``D``: per query, the distance or similarity of each neighbour found.
    indices : integer array of shape (Q, k)
        ``I``: the database row of each neighbour; ``-1`` where fewer than k were found (faiss
        pads so), skipped.
    metric : {"l2", "inner_product"}
        How ``D`` ranks, with no default (the direction cannot be guessed): ``"l2"``, smaller is
        closer (``faiss.METRIC_L2``; the score is :math:`-D`), ``"inner_product"``, larger is
        closer (the score is :math:`D`).
    query_ids, db_ids : sequence, optional
        Ids of the query rows and of the database rows (default ``"0"``, ``"1"``, ...).
    n_db : int, optional
        Database size when ``db_ids`` is not given: indices must be below it.
    ties : {"search", "trec_eval"}
        How neighbours at equal distance rank. ``"search"`` (the default): in the order the
        search returned them; the scores are then the neighbours' places by distance, that order
        breaking ties, counted from the end (k, k - 1, ..., 1), so that any evaluator keeps it.
        ``"trec_eval"``: the scores are the distances (:math:`-D` or :math:`D`), and ties are
        ordered when evaluating, by trec_eval's rule for a run (document id descending, as
        strings: ``"999"`` before ``"1000"``).

    Returns
    -------
    dict
        ``{query_id: {db_id: score}}``.
    """
    if ties not in SEARCH_TIES:
        raise ValueError(
            f"ties: expected one of {', '.join(SEARCH_TIES)} (the search's order, or trec_eval's docno rule), "
            f"got {_shown(ties)}"
        )
    if metric not in SEARCH_METRICS:
        raise ValueError(
            f"metric: expected one of {', '.join(SEARCH_METRICS)} (how D ranks: smaller or larger is "
            f"closer), got {_shown(metric)}"
        )
    d, i = np.asarray(distances), np.asarray(indices)
    if d.ndim != 2 or d.shape != i.shape:
        raise ValueError(f"distances, indices: expected two arrays of one shape (Q, k), got {d.shape} and {i.shape}")
    if d.dtype.kind not in "fiu" or i.dtype.kind not in "iu":
        raise ValueError(
            f"distances, indices: expected real distances and integer indices, got dtypes "
            f"{d.dtype.str} and {i.dtype.str}"
        )
    qids = _ids(query_ids, d.shape[0], "query_ids")
    dids = _ids(db_ids, len(db_ids), "db_ids") if db_ids is not None else None
    limit = len(dids) if dids is not None else n_db
    found = i >= 0
    bad = np.argwhere((i < -1) | ((i >= limit) if limit is not None else False))
    if bad.size:
        row, col = bad[0]
        rows = f"0 .. {limit - 1}" if limit else "0 or more"
        raise ValueError(f"indices[{row}, {col}]: {i[row, col]} is not a database row ({rows}, or -1 for none found)")
    # negated as float64 values: -d in an unsigned dtype wraps (-1 -> 255), the nearest would rank last
    values = exact_float64("distances", d, counted=found)
    scores = np.where(found, -values if metric == "l2" else values, 0.0)
    bad = np.argwhere(found & ~np.isfinite(scores))
    if bad.size:
        row, col = bad[0]
        raise ValueError(f"distances[{row}, {col}]: {d[row, col]} is not finite for a neighbour found")
    out: Dict[str, Dict[str, float]] = {}
    for row in range(d.shape[0]):
        keep = found[row]
        rows, values = i[row, keep].tolist(), scores[row, keep].tolist()
        if len(set(rows)) != len(rows):
            raise ValueError(
                f"indices[{row}]: a database row appears twice in one query's neighbours; expected each neighbour once"
            )
        if ties == "search":  # places from the end, by score and then the search's order
            by_score = np.argsort(-np.asarray(values, dtype=np.float64), kind="stable")
            places = np.empty(len(rows), dtype=np.float64)
            places[by_score] = np.arange(len(rows), 0, -1, dtype=np.float64)
            values = places.tolist()
        if rows:
            out[qids[row]] = dict(zip((dids[j] for j in rows) if dids is not None else map(str, rows), values))
    return out


def qrels_from_labels(
    query_labels: Any, db_labels: Any, *, query_ids: Optional[IdSequence] = None, db_ids: Optional[IdSequence] = None
) -> Dict[str, Dict[str, int]]:
    """Qrels from class labels: a database item is relevant (grade 1) to a query of the same label.

    Parameters
    ----------
    query_labels : array of shape (Q,)
    db_labels : array of shape (N,)
        Integer or string labels (person ids, landmark ids, classes).
    query_ids, db_ids : sequence, optional
        Ids as in :func:`run_from_search` (default ``"0"``, ``"1"``, ...).

    Returns
    -------
    dict
        ``{query_id: {db_id: 1}}``; a query whose label no database item has gets no entry, so
        an evaluation of the run leaves it out as a query without judgments (trec_eval's rule).
    """
    q, db = np.asarray(query_labels), np.asarray(db_labels)
    if q.ndim != 1 or db.ndim != 1:
        raise ValueError(f"query_labels, db_labels: expected 1-d arrays, got shapes {q.shape} and {db.shape}")
    qids, dids = _ids(query_ids, q.shape[0], "query_ids"), _ids(db_ids, db.shape[0], "db_ids")
    members: Dict[Any, List[str]] = {}
    for did, label in zip(dids, db.tolist()):
        members.setdefault(label, []).append(did)
    return {qid: dict.fromkeys(members[label], 1) for qid, label in zip(qids, q.tolist()) if label in members}
