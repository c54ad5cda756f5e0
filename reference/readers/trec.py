"""TREC run and qrels files read within the limits of :mod:`~.limits`, and dicts checked.

Formats (as ``trec_eval`` reads them; sources are ``get_trec_results.c``, ``get_qrels.c`` and
``form_res_rels.c`` of usnistgov/trec_eval, tags v9.0.8 and v10.0):

run (``qid Q0 docno rank score tag``)
    At least six whitespace-separated fields.  ``Q0`` (the iteration), ``rank`` and ``tag``
    are ignored: trec_eval ranks by the score alone (its ``get_trec_results.c`` says "the
    rank field is ignored here; internally ranks will be assigned by sorting by the sim
    field"), and fields after the sixth are ignored as there.  The score must be a decimal
    number, finite in float64.
qrels (``qid iter docno rel``)
    Exactly four fields (a fifth one is a malformed line in trec_eval too).  ``rel`` is a
    signed decimal number: ``rel >= relevance_level`` (1 by default, ``trec_eval -l``) is
    relevant, other values are not.  A grade that is not an integer (``2.5``) is read as
    ``float_grades`` says (spec §13 trec_eval, float grades): exactly, as the ``Fraction``
    it writes (the default, with a warning that trec_eval reads it otherwise), truncated
    toward zero as trec_eval's ``atol`` reads it (``"truncate"``: ``2.5`` is 2, ``-0.5`` is
    0, ``1e3`` is 1), or refused (``"refuse"``).  A negative grade is what trec_eval calls "in the pool
    but unjudged" (``form_res_rels.c``); it is never relevant and is not counted among the
    judged levels, which for ``map``, ``P``, ``recall`` and ``Rprec`` is the same as a
    judged non-relevant document (only ``trec_eval -J`` tells them apart).

Both files are read as bytes and split into lines on ``b"\\n"`` and into fields on ASCII
whitespace (space, tab, ``\\r``, ``\\v``, ``\\f``: C's ``isspace``, so a file written on
Windows reads the same).  Ids are decoded as UTF-8 with ``surrogateescape``, which is one
to one, so ids are equal exactly when their bytes are, and the bytes (not the decoded
text) give the order in which trec_eval breaks ties (``strcmp``).

Where we differ from trec_eval, always by refusing or by accepting a harmless layout:

* a blank line, or one whose first field starts with ``#``, is skipped in both files
  (trec_eval 10.0 skips both in runs but only reads ``#`` comments in qrels, and 9.0.8
  knows no comments);
* a score or a grade that is not a decimal number (``atof`` and ``atol`` read ``abc`` as 0)
  is an error, and a grade that is not an integer is read exactly unless
  ``float_grades="truncate"`` asks for ``atol``;
* a repeated (qid, docno) pair is an error naming both lines in both files.  trec_eval
  stops with ``duplicate docs`` too, but only once the query is evaluated; ranx's readers
  keep the last line silently;
* a NUL byte is an error (trec_eval's files "may contain no NULL characters");
* a file starting with a UTF-8 byte-order mark is an error: trec_eval reads the mark as
  part of the first query id, which then matches no query of the other file, and the
  numbers change without a word.  Line ends ``\r\n`` are read as trec_eval reads them
  (``\r`` is whitespace), so they need no change;
* a carriage return inside a line (a file whose lines end in a bare ``\r``, as classic Mac OS
  wrote them) is an error naming the line: trec_eval reads such a file as one line, its first
  record, and drops the rest without a word.

Compressed and other layouts: a file whose first bytes are gzip's (``1f 8b``) is
decompressed first, within the same ``max_bytes`` (counted on the decompressed bytes, so a
gzip bomb is refused as a plain file of that size); a file named ``*.jsonl`` or ``*.ndjson``
(``.gz`` allowed after it) is JSON Lines, one ``{"qid": ..., "docid": ..., "score": ...}``
object per line (:func:`~.tables.read_json_lines`).

:func:`as_run` and :func:`as_qrels` take a path (read as above), a ranx-style dict
(``{qid: {docno: score}}``, ``{qid: {docno: grade}}``), a DataFrame with query, document
and value columns (``qid, docid, score`` / ``qid, docid, relevance`` or the ranx and
ir_measures names, :func:`~.tables.read_table`; pandas is never imported), or an object
with ``to_dict()`` returning a dict (``ranx.Run``, ``ranx.Qrels``), and return checked
dicts: ``str`` ids, finite real scores, grades that are ``int`` or, when not integers,
``Fraction`` (a float is the decimal it prints as: ``2.5``, ``0.1`` is 1/10); a query with no entry is dropped,
as a query without lines.

Every error is a ``ValueError`` naming the file, the line and what was expected; files
are opened and read as :func:`~retrieval_conformance.reference.readers.limits._read_file` does, so a
FIFO, a device or a file beyond ``max_bytes`` / ``max_lines`` raises
:class:`~retrieval_conformance.reference.readers.limits.FileRefusedError` and a missing file
``FileNotFoundError``.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

import numpy as np
from retrieval_conformance.reference.contract.validation import choice, shown
from retrieval_conformance.reference.readers.grades import (
    FLOAT_GRADES,
    Changed,
    Grade,
    atol,
    float_grades_mode,
    text_grade,
    value_grade,
)
from retrieval_conformance.reference.readers.limits import (
    MAX_FILE_BYTES,
    MAX_LINES,
    FileRefusedError,
    PathLike,
    _clip,
    _read_text_data,
    _refuse_bare_cr,
)
from retrieval_conformance.reference.readers.tables import is_json_lines, is_table, read_json_lines, read_table

__all__ = ["FLOAT_GRADES", "SCORE_DTYPES", "Grade", "as_qrels", "as_run", "id_bytes", "read_qrels", "read_run"]

SCORE_DTYPES = ("float64", "float32")

_NUMBER = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_BOM = b"\xef\xbb\xbf"
_OTHER = {"run": "qrels", "qrels": "run"}


def id_bytes(name: str) -> bytes:
    """The bytes of an id as a file holds them: the key of trec_eval's ``strcmp`` order.

    Ids read from files come back to their bytes exactly (``surrogateescape``); any other
    ``str`` is encoded as UTF-8 (with ``surrogatepass`` for lone surrogates), whose byte
    order is the order of code points.
    """
    try:
        return name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogatepass")


def _path_text(path: PathLike) -> str:
    return os.fsdecode(os.fspath(path))


def _lines(path: PathLike, what: str, max_bytes: int, max_lines: int) -> Iterator[Tuple[int, List[bytes]]]:
    """``(line number, fields)`` of every line of the file that holds data (1-based numbers)."""
    data = _read_text_data(path, max_bytes)
    if data.startswith(_BOM):
        raise ValueError(
            f"{_path_text(path)}: line 1: starts with a UTF-8 byte-order mark; trec_eval would read "
            f"it as part of the first query id, which then matches no {_OTHER[what]} query: remove "
            "the mark (save as UTF-8 without BOM)"
        )
    n = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    if n > max_lines:
        raise FileRefusedError(
            path,
            f"more than {max_lines:,} lines ({n:,})",
            f"pass max_lines=... to read a larger {what} file",
            limit="max_lines",
        )
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise ValueError(
            f"{_path_text(path)}: line {line}: NUL byte in a {what} file (is it binary or "
            f"compressed?); expected text lines"
        )
    _refuse_bare_cr(data, _path_text(path))
    for number, raw in enumerate(data.split(b"\n"), 1):
        fields = raw.split()
        if fields and not fields[0].startswith(b"#"):
            yield number, fields


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _first_line(
    path: PathLike, what: str, qid: bytes, docno: bytes, fields: int, max_bytes: int, max_lines: int
) -> int:
    """Line number of the first line holding ``(qid, docno)`` (only read to report a duplicate)."""
    for number, parts in _lines(path, what, max_bytes, max_lines):
        if len(parts) >= fields and parts[0] == qid and parts[2] == docno:
            return number
    return 0  # pragma: no cover - the caller saw it


def _duplicate(
    path: PathLike, what: str, number: int, parts: List[bytes], fields: int, max_bytes: int, max_lines: int
) -> ValueError:
    first = _first_line(path, what, parts[0], parts[2], fields, max_bytes, max_lines)
    return ValueError(
        f"{_path_text(path)}: line {number}: query {_clip(_decode(parts[0]))} lists document "
        f"{_clip(_decode(parts[2]))} again (first on line {first}); expected each (qid, docno) pair "
        f"once in a {what} file (trec_eval stops with 'duplicate docs'): remove one of the lines"
    )


def read_run(
    path: PathLike, *, max_bytes: int = MAX_FILE_BYTES, max_lines: int = MAX_LINES
) -> Dict[str, Dict[str, float]]:
    """A TREC run file as a ranx-style dict ``{qid: {docno: score}}``.

    Each line is ``qid Q0 docno rank score tag``; only ``qid``, ``docno`` and ``score`` are
    kept (trec_eval ignores the rest, see the module doc).  Documents keep the order of the
    file; the ranking is made later, by score
    (:func:`~retrieval_conformance.reference.protocols.trec.evaluation.evaluate_run`).

    Parameters
    ----------
    path : str or os.PathLike
        A regular file.
    max_bytes, max_lines : int
        Largest file and most lines read (1 GiB and 10**7 by default).

    Returns
    -------
    dict of str to dict of str to float
        An empty dict for a file with no data line.

    Raises
    ------
    ValueError
        A line with fewer than 6 fields, a score that is not a finite decimal number, a
        repeated (qid, docno) pair, or a NUL byte; the message names the file and the line.
    FileRefusedError
        A FIFO, a device, or a file beyond ``max_bytes`` or ``max_lines``.
    FileNotFoundError
        When ``path`` does not exist.

    Examples
    --------
    A file holding ``301 Q0 FT911-3 1 12.5 bm25`` reads as ``{"301": {"FT911-3": 12.5}}``.
    """
    if is_json_lines(path):
        return read_json_lines(path, "run", max_bytes=max_bytes, max_lines=max_lines)
    run: Dict[str, Dict[str, float]] = {}
    for number, parts in _lines(path, "run", max_bytes, max_lines):
        if len(parts) < 6:
            raise ValueError(
                f"{_path_text(path)}: line {number}: expected 6 whitespace-separated fields "
                f"'qid Q0 docno rank score tag', got {len(parts)} ({_clip(b' '.join(parts))})"
            )
        raw_score = parts[4]
        score = float(raw_score) if _NUMBER.fullmatch(raw_score) else None
        if score is None or not math.isfinite(score):
            problem = "beyond the float64 range" if score is not None else "not a decimal number"
            raise ValueError(
                f"{_path_text(path)}: line {number}: expected a finite decimal score in field 5 "
                f"(qid Q0 docno rank score tag), got {_clip(_decode(raw_score))} ({problem})"
            )
        docs = run.setdefault(_decode(parts[0]), {})
        docno = _decode(parts[2])
        if docno in docs:
            raise _duplicate(path, "run", number, parts, 6, max_bytes, max_lines)
        docs[docno] = score
    return run


def read_qrels(
    path: PathLike, *, float_grades: Optional[str] = None, max_bytes: int = MAX_FILE_BYTES, max_lines: int = MAX_LINES
) -> Dict[str, Dict[str, Grade]]:
    """A TREC qrels file as a ranx-style dict ``{qid: {docno: grade}}``.

    Each line is ``qid iter docno rel`` (``iter`` is ignored, as in trec_eval).  Grades are
    kept as they are, negative ones included; which of them count as relevant is decided
    when evaluating (``relevance_level``).

    Parameters
    ----------
    path : str or os.PathLike
        A regular file.
    float_grades : {None, "exact", "truncate", "refuse"}
        How a grade that is not an integer (``2.5``) is read.  ``"exact"``: as the
        ``Fraction`` it writes (5/2); ``"truncate"``: as trec_eval's ``atol`` reads it, the
        integer its text starts with (``2.5`` is 2, ``-0.5`` is 0, ``1e3`` is 1);
        ``"refuse"``: a ``ValueError``.  None (the default) is ``"exact"`` with a warning
        naming the first such line when trec_eval would read a grade otherwise.
    max_bytes, max_lines : int
        Largest file and most lines read (1 GiB and 10**7 by default).

    Returns
    -------
    dict of str to dict of str to int or Fraction
        ``int`` grades, and ``Fraction`` for those that are not integers.

    Raises
    ------
    ValueError
        A line without exactly 4 fields, a grade that is not a decimal number within int64
        (or not an integer, with ``float_grades="refuse"``), a repeated (qid, docno) pair, or
        a NUL byte; the message names the file and the line.
    FileRefusedError
        A FIFO, a device, or a file beyond ``max_bytes`` or ``max_lines``.
    FileNotFoundError
        When ``path`` does not exist.

    Examples
    --------
    ``301 0 FT911-3 2`` and ``301 0 FT911-7 -1`` read as ``{"301": {"FT911-3": 2, "FT911-7": -1}}``;
    ``301 0 FT911-9 2.5`` as ``Fraction(5, 2)`` (``float_grades="truncate"``: 2).
    """
    mode = float_grades_mode(float_grades)
    if is_json_lines(path):
        return _checked_grades(
            read_json_lines(path, "qrels", max_bytes=max_bytes, max_lines=max_lines), mode, _path_text(path)
        )
    qrels: Dict[str, Dict[str, Grade]] = {}
    changed = Changed(mode, _path_text(path))
    for number, parts in _lines(path, "qrels", max_bytes, max_lines):
        if len(parts) != 4:
            raise ValueError(
                f"{_path_text(path)}: line {number}: expected 4 whitespace-separated fields "
                f"'qid iter docno rel', got {len(parts)} ({_clip(b' '.join(parts))})"
            )
        raw_grade = parts[3]
        grade, problem = text_grade(raw_grade, mode)
        if grade is None:
            raise ValueError(
                f"{_path_text(path)}: line {number}: expected a{'n integer' if mode == 'refuse' else ' decimal'} "
                f"relevance grade in field 4 (qid iter docno rel), got {_clip(_decode(raw_grade))} ({problem})"
            )
        grade = changed.take(grade, atol(raw_grade), f"line {number}: {_clip(_decode(raw_grade))}")
        docs = qrels.setdefault(_decode(parts[0]), {})
        docno = _decode(parts[2])
        if docno in docs:
            raise _duplicate(path, "qrels", number, parts, 4, max_bytes, max_lines)
        docs[docno] = grade
    changed.finish()
    return qrels


def _checked_grades(qrels: Any, mode: Optional[str], where: str) -> Dict[str, Dict[str, Grade]]:
    out: Dict[str, Dict[str, Grade]] = {}
    changed = Changed(mode, where)
    for qid, docs, grades in _entries(qrels, "qrels", read_qrels, "grade"):
        if not set(map(type, grades)) <= {int}:
            values = []
            for doc, grade in zip(docs, grades):
                place = f"qrels[{qid!r}][{doc!r}]"
                values.append(changed.take(*value_grade(grade, place, mode), f"{place} = {shown(grade)}"))
            grades = values
        out[qid] = dict(zip(docs, grades))
    changed.finish(stacklevel=4)  # the caller of as_qrels
    return out


# --------------------------------------------------------------------------- dicts
def _mapping(value: Any, name: str, reader) -> Mapping:
    if isinstance(value, (str, bytes, os.PathLike)):
        return reader(value)
    if is_table(value):  # a DataFrame: its to_dict() is by column, never a run
        return read_table(value, name)
    if not isinstance(value, Mapping) and callable(getattr(value, "to_dict", None)):
        value = value.to_dict()  # a ranx Run or Qrels
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{name}: expected a path to a TREC {name} file or a dict {{query_id: {{doc_id: "
            f"{'score' if name == 'run' else 'grade'}}}}}, got {type(value).__name__}"
        )
    return value


def _entries(value: Any, name: str, reader, what: str):
    """``(qid, doc ids, values)`` of each query with entries, every id checked to be a ``str``."""
    for qid, docs in _mapping(value, name, reader).items():
        _str_ids(name, [qid])
        if not isinstance(docs, Mapping):
            raise TypeError(f"{name}[{qid!r}]: expected a dict {{doc_id: {what}}}, got {type(docs).__name__}")
        if docs:
            ids = list(docs)
            _str_ids(f"{name}[{qid!r}]", ids)
            yield qid, ids, list(docs.values())


def _str_ids(name: str, ids: List[Any]) -> None:
    if set(map(type, ids)) <= {str}:
        return
    for key in ids:
        if not isinstance(key, str):
            raise TypeError(
                f"{name}: expected str ids (as TREC files and ranx use), got {shown(key)} "
                f"({type(key).__name__}); convert the ids with str()"
            )


def as_run(run: Any, score_dtype: str = "float64") -> Dict[str, Dict[str, float]]:
    """A run file, ranx-style dict or ``ranx.Run`` as a checked ``{qid: {docno: float score}}``.

    Parameters
    ----------
    run : path, dict, DataFrame, or object with ``to_dict()``
        A path is read with :func:`read_run` (plain, gzip or JSON Lines), a DataFrame with
        :func:`~.tables.read_table`.  Ids must be ``str``; scores real numbers
        (bools are refused), finite once rounded to ``score_dtype``.
    score_dtype : {"float64", "float32"}
        Scores are rounded to this precision (float32: trec_eval 9.0.8's C ``float``) and
        returned as Python floats.

    Returns
    -------
    dict of str to dict of str to float
        A new dict; queries without any document are left out (a query without lines).
    """
    score_dtype = choice("score_dtype", score_dtype, SCORE_DTYPES)
    out: Dict[str, Dict[str, float]] = {}
    for qid, docs, scores in _entries(run, "run", read_run, "score"):
        if not set(map(type, scores)) <= {float, int}:  # numpy scalars and others: one by one
            for doc, score in zip(docs, scores):
                if isinstance(score, (bool, np.bool_)) or not isinstance(score, numbers.Real):
                    raise TypeError(
                        f"run[{qid!r}][{doc!r}]: expected a real score, got {shown(score)} ({type(score).__name__})"
                    )
        try:
            values = np.array(scores, dtype=np.float64)
        except OverflowError:  # an int beyond the float range: inf, refused below
            values = np.array([_float_or_inf(s) for s in scores], dtype=np.float64)
        if score_dtype == "float32":
            with np.errstate(over="ignore"):
                values = values.astype(np.float32).astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            doc, score = docs[bad[0]], scores[bad[0]]
            raise ValueError(
                f"run[{qid!r}][{doc!r}]: expected a finite score in {score_dtype}, got "
                f"{shown(score)}; replace NaN/inf scores (e.g. by the lowest finite score)"
            )
        out[qid] = dict(zip(docs, values.tolist()))
    return out


def _float_or_inf(score: Any) -> float:
    try:
        return float(score)
    except OverflowError:
        return float("inf")


def as_qrels(qrels: Any, float_grades: Optional[str] = None) -> Dict[str, Dict[str, Grade]]:
    """A qrels file, ranx-style dict or ``ranx.Qrels`` as a checked ``{qid: {docno: grade}}``.

    A path is read with :func:`read_qrels` (plain, gzip or JSON Lines), a DataFrame with
    :func:`~.tables.read_table`; ids must be ``str`` and grades real numbers (Python or
    numpy; bools are refused).  Integer grades are ``int``; the others follow
    ``float_grades`` as in :func:`read_qrels` (a float is the decimal it prints as, its
    truncation is toward zero, as C's cast).  Queries without any judgment are left out,
    as a query without lines.
    """
    mode = float_grades_mode(float_grades)
    if isinstance(qrels, (str, bytes, os.PathLike)):
        return read_qrels(qrels, float_grades=mode)
    return _checked_grades(qrels, mode, "qrels")
