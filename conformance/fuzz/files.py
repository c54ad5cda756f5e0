"""The fuzz campaign for files: ``.npy``/``.npz`` headers and TREC run and qrels lines.

A case is a file written from the drawer's choices (:func:`draw_file_case`): a ``.npy`` whose
header fields (magic, version, header length, ``descr``, ``fortran_order``, ``shape``) and data
length are varied, an ``.npz`` of such members (names, duplicates, compression, truncation), or
a TREC run / qrels / JSON Lines text whose lines vary in field count, ids (BOM, NUL, ``#``,
bytes that are not UTF-8), scores and grades, sometimes gzip-compressed.

What a correct reader does (:func:`classify_file_case`):

* it returns, or raises a ``ValueError``/``TypeError`` whose message starts with the file's
  path (``named_error``); any other exception, or a message that does not name the file, is an
  ``unnamed_error``; no case may take longer than the time limit (``hang``);
* an array it returns equals what ``numpy.load`` reads from the same file (``wrong_number``
  otherwise);
* a TREC text reads the same, value or error, as its twins: the same bytes gzip-compressed and
  with ``\\r\\n`` line ends (trec_eval reads ``\\r`` as whitespace); with a byte-order mark in
  front it reads the same or is refused, never as other ids; a run it returns has only ``str``
  ids and finite float scores;
* an accepted run and qrels pair evaluates (``evaluate_run``) or raises a named error.

Run with ``python -m retrieval_conformance.conformance.fuzz --target files --cases N``.
"""

from __future__ import annotations

import gzip
import io
import math
import os
import signal
import tempfile
import time
import warnings
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional

import numpy as np
from retrieval_conformance.conformance.problems.choices import RandomChoices, case_rng

from .classify import Outcome

__all__ = ["FileCase", "classify_file_case", "draw_file_case", "run_file_campaign"]

_DESCRS = (
    "<f8",
    "<f4",
    "<i8",
    "|u1",
    "|b1",
    ">i4",
    "<U3",
    "|S2",
    "<U0",
    "|S0",
    "|O",
    "|V8",
    "<c16",
    "<m8",
    "[('a', '<f8')]",
    "('<f8', (2,))",
    "'<f8'",
    "1",
    "None",
)
_SHAPES = (
    "()",
    "(0,)",
    "(3,)",
    "(2, 3)",
    "(0, 18446744073709551616)",
    "(268435456,)",
    "(-1,)",
    "(2.5,)",
    "(9223372036854775807,)",
    "(4294967296, 4294967296)",
    "[3]",
    "(3",
    "'x'",
    "(1,) * 40",
)
_TOKENS = (
    b"1",
    b"q1",
    b"Q0",
    b"d1",
    b"d2",
    b"\xef\xbb\xbfq1",
    b"#c",
    b"\xff\xfe",
    b"d\x00",
    b"",
    b"\r",
    b"0.5",
    b"-1",
    b"1e400",
    b"nan",
    b"inf",
    b"abc",
    b"1.5",
    b"99999999999999999999",
    b"+2",
    b"0x10",
    b"1_0",
    b".5",
    b"-0",
    b"52",
    b"53",
    b"1000",
)


_BOM = b"\xef\xbb\xbf"


@dataclass
class FileCase:
    """A file to read: its name, its bytes, and which reader reads it."""

    kind: str  # "npy", "npz", "run", "qrels", "run.jsonl"
    data: bytes
    notes: List[str] = field(default_factory=list)

    @property
    def change(self) -> str:
        return self.kind


# --------------------------------------------------------------------------- generators
def _npy_bytes(d) -> bytes:
    """A ``.npy`` file: a valid small array about half the time, otherwise one header field changed."""
    array = np.arange(6, dtype=d.choice(("<f8", "<i4", "|u1"))).reshape(d.choice(((6,), (2, 3), (3, 2))))
    buf = io.BytesIO()
    np.save(buf, array)
    valid = buf.getvalue()
    if d.chance(0.4):
        return valid[: d.integer(0, len(valid))] if d.chance(0.2) else valid
    descr = d.choice(_DESCRS + (repr(array.dtype.str),))
    descr = descr if descr.startswith(("[", "(", "'", "1", "N")) else repr(descr)
    shape = d.choice(_SHAPES + (repr(array.shape),))
    order = d.choice(("False", "True", "'x'"))
    text = "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (descr, order, shape)
    if d.chance(0.1):
        text = text.replace("}", "'extra': 1, }")
    header = text.encode("latin1")
    header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    version = d.choice((b"\x01\x00", b"\x02\x00", b"\x03\x00", b"\x09\x09"))
    width = 2 if version == b"\x01\x00" else 4
    length = len(header) if d.chance(0.8) else d.choice((0, 1, 2**16 - 1, 2**31, 2**32 - 1))
    length = min(length, 2 ** (8 * width) - 1)
    magic = b"\x93NUMPY" if d.chance(0.95) else b"\x93NUMPX"
    data = array.tobytes()[: d.choice((0, 8, 24, 48, 10**3))] if d.chance(0.5) else array.tobytes()
    return magic + version + length.to_bytes(width, "little") + header + data


def _npz_bytes(d) -> bytes:
    buf = io.BytesIO()
    compression = d.choice((zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED))
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w", compression) as archive:
        warnings.simplefilter("ignore")  # a duplicate member name is one of the cases
        for _ in range(d.integer(0, 3)):
            name = d.choice(
                ("distances.npy", "relevance.npy", "query_labels.npy", "weights.npy", "distances", "a/../b.npy")
            )
            archive.writestr(name, _npy_bytes(d))
    data = buf.getvalue()
    if d.chance(0.2):
        data = data[: d.integer(0, len(data))]
    if d.chance(0.1) and data:
        at = d.integer(0, len(data) - 1)
        data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]
    return data


def _trec_bytes(d, kind: str) -> bytes:
    """Lines of a run (6 fields) or qrels (4 fields), mostly valid, each field sometimes replaced."""
    fields = 6 if kind == "run" else 4
    lines = []
    for _ in range(d.integer(0, 6)):
        qid, doc = d.choice((b"q1", b"q2", b"1")), d.choice((b"d1", b"d2", b"d3", b"d4"))
        value = d.choice((b"0.5", b"1", b"-2.5e1", b"3")) if kind == "run" else d.choice((b"0", b"1", b"2", b"-1"))
        parts = [qid, b"Q0", doc, b"1", value, b"t"] if kind == "run" else [qid, b"0", doc, value]
        if d.chance(0.3):
            parts[d.integer(0, fields - 1)] = d.choice(_TOKENS)
        if d.chance(0.1):
            parts = parts[: d.integer(0, fields + 2)] + [b"x"] * d.integer(0, 2)
        lines.append(d.choice((b" ", b"\t", b"  ")).join(parts))
    text = b"\n".join(lines) + (b"\n" if d.chance(0.8) else b"")
    if d.chance(0.05):
        text = b"\xef\xbb\xbf" + text
    return text


def _jsonl_bytes(d) -> bytes:
    rows = []
    for _ in range(d.integer(0, 5)):
        qid = d.choice(('"q1"', '"q2"', "1", "1.5", "null", "true"))
        doc = d.choice(('"d1"', '"d2"', '"d3"', "[1]"))
        score = d.choice(("0.5", "1", "NaN", "1e999", '"x"', "true", "-3"))
        key = d.choice(("qid", "query_id", "q_id", "qid"))
        rows.append(('{"%s": %s, "docid": %s, "score": %s}' % (key, qid, doc, score)).encode())
    if d.chance(0.1):
        rows.append(d.choice((b"[1, 2]", b"{", b"\xff", b"42")))
    return b"\n".join(rows) + b"\n"


def draw_file_case(d) -> FileCase:
    """One file case from the source of choices ``d`` (a seeded ``random`` or hypothesis)."""
    kind = d.choice(("npy", "npz", "run", "qrels", "run.jsonl"))
    if kind == "npy":
        return FileCase(kind, _npy_bytes(d))
    if kind == "npz":
        return FileCase(kind, _npz_bytes(d))
    if kind == "run.jsonl":
        return FileCase(kind, _jsonl_bytes(d))
    return FileCase(kind, _trec_bytes(d, kind))


# --------------------------------------------------------------------------- classification
def _read(kind: str, path: str) -> Any:
    from retrieval_conformance.reference.readers import read_npy, read_npz, read_qrels, read_run

    reader = {"npy": read_npy, "npz": read_npz, "run": read_run, "qrels": read_qrels, "run.jsonl": read_run}[kind]
    return reader(path)


def _attempt(kind: str, path: str):
    """``("value", result)`` or ``("error", message)``; an exception of another kind propagates."""
    try:
        return "value", _read(kind, path)
    except (ValueError, TypeError) as exc:
        return "error", str(exc)


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        )
    return a == b


def _check_value(case: FileCase, path: str, value: Any) -> Optional[str]:
    """What is wrong with an accepted file's value, or None."""
    if case.kind == "npy":
        expected = np.load(path, allow_pickle=False)
        return None if _same_value(value, expected) else "read_npy differs from numpy.load"
    if case.kind == "npz":
        with np.load(path, allow_pickle=False) as archive:
            expected = {name: archive[name] for name in archive.files}
        return None if _same_value(value, expected) else "read_npz differs from numpy.load"
    for qid, docs in value.items():
        for doc, number in docs.items():
            if not isinstance(qid, str) or not isinstance(doc, str):
                return f"a non-str id {qid!r} {doc!r}"
            if case.kind.startswith("run") and not (isinstance(number, (int, float)) and math.isfinite(number)):
                return f"score {number!r} is not a finite number"
    return None


def _twin_paths(case: FileCase, folder: str) -> List[str]:
    """The same TREC text gzip-compressed and with CRLF line ends: it must read the same."""
    if case.kind not in ("run", "qrels"):
        return []
    out = []
    for name, data in (("gz", gzip.compress(case.data)), ("crlf", case.data.replace(b"\n", b"\r\n"))):
        path = os.path.join(folder, f"twin-{name}.{case.kind}")
        with open(path, "wb") as fh:
            fh.write(data)
        out.append(path)
    return out


def classify_file_case(case: FileCase) -> Outcome:
    """Read ``case`` and its twins; the outcome (see the module doc)."""
    with tempfile.TemporaryDirectory(prefix="rc-fuzz-") as folder:
        path = os.path.join(folder, f"case.{case.kind}")
        with open(path, "wb") as fh:
            fh.write(case.data)
        try:
            status, result = _attempt(case.kind, path)
        except Exception as exc:  # anything but ValueError/TypeError is a finding
            return Outcome("unnamed_error", f"{type(exc).__name__}: {str(exc)[:300]}")
        if status == "error":
            if not result.startswith(path):
                return Outcome("unnamed_error", f"message does not name the file: {result[:300]}")
        else:
            problem = _check_value(case, path, result)
            if problem:
                return Outcome("wrong_number", problem)
        for twin in _twin_paths(case, folder):
            try:
                other = _attempt(case.kind, twin)
            except Exception as exc:
                return Outcome("unnamed_error", f"twin {twin}: {type(exc).__name__}: {str(exc)[:300]}")
            if other[0] != status or (status == "value" and not _same_value(result, other[1])):
                return Outcome(
                    "wrong_number",
                    f"twin {os.path.basename(twin)} reads differently: {other[0]} "
                    f"{str(other[1])[:200]} vs {status} {str(result)[:200]}",
                )
            if status == "error" and other[1].replace(twin, path) != result:  # the same complaint, same line
                return Outcome(
                    "wrong_number",
                    f"twin {os.path.basename(twin)} is refused otherwise: {other[1][:200]} vs {result[:200]}",
                )
        if status == "value" and case.kind in ("run", "qrels") and not case.data.startswith(_BOM):
            twin = os.path.join(folder, f"twin-bom.{case.kind}")
            with open(twin, "wb") as fh:
                fh.write(_BOM + case.data)
            other = _attempt(case.kind, twin)
            if other[0] == "value" and not _same_value(result, other[1]):  # refused, or read the same
                return Outcome("wrong_number", "a byte-order mark changed what the file reads as")
        if status == "value" and case.kind in ("run", "qrels"):
            return _evaluate_pair(case, result)
    return Outcome("value" if status == "value" else "named_error")


def _evaluate_pair(case: FileCase, result: dict) -> Outcome:
    """An accepted run (or qrels) evaluated against a small fixed partner: a value or a named error."""
    from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run

    partner = (
        {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
        if case.kind == "run"
        else {"q1": {"d1": 0.5, "d2": 0.25}, "q2": {"d3": 1.0}}
    )
    try:
        if case.kind == "run":
            evaluate_run(result, partner, implementation="reference")
        else:
            evaluate_run(partner, result, implementation="reference")
    except (ValueError, TypeError) as exc:
        if not str(exc).startswith(("run", "qrels", "relevance")):
            return Outcome("unnamed_error", f"evaluate_run: {str(exc)[:300]}")
        return Outcome("named_error")
    except Exception as exc:
        return Outcome("unnamed_error", f"evaluate_run: {type(exc).__name__}: {str(exc)[:300]}")
    return Outcome("value")


# --------------------------------------------------------------------------- campaign
@dataclass
class FileReport:
    seed: int
    cases: int = 0
    counts: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)
    findings: List[tuple] = field(default_factory=list)  # (index, kind, outcome, detail)
    seconds: float = 0.0


class _Timeout(BaseException):
    """A case past its time limit: not an ``Exception``, so that no classifier's handler takes it."""


def _target(name: str):
    """``(draw, classify)`` of a target: ``files`` (here), ``evaluate-argv`` (:mod:`.evaluate_argv`),
    ``compare`` (:mod:`.compare_inputs`), ``audit`` (:mod:`.audit_inputs`), ``search`` and
    ``accumulator``, ``curves`` (:mod:`.search_inputs`, :mod:`.accumulator_blocks`,
    :mod:`.curve_inputs`) or ``check``
    (:mod:`.hostile_targets`)."""
    if name == "files":
        return draw_file_case, classify_file_case
    if name == "evaluate-argv":
        from .evaluate_argv import classify_argv_case, draw_argv_case

        return draw_argv_case, classify_argv_case
    if name == "compare":
        from .compare_inputs import classify_compare_case, draw_compare_case

        return draw_compare_case, classify_compare_case
    if name == "audit":
        from .audit_inputs import classify_audit_case, draw_audit_case

        return draw_audit_case, classify_audit_case
    if name in ("search", "accumulator", "curves"):  # (D, I); Accumulator blocks; rc.curves' inputs
        from . import accumulator_blocks, curve_inputs, search_inputs

        module = {"search": search_inputs, "accumulator": accumulator_blocks, "curves": curve_inputs}[name]
        return module.draw_case, module.classify_case
    if name == "check":
        from .hostile_targets import classify_hostile_case, draw_hostile_case

        return draw_hostile_case, classify_hostile_case
    raise ValueError(
        f"target: expected files, evaluate-argv, compare, audit, search, accumulator, curves or check, got {name!r}"
    )


def run_file_campaign(
    seed: int = 0,
    cases: int = 1000,
    start: int = 0,
    timeout: float = 20.0,
    progress: Optional[Callable[[FileReport], None]] = None,
    target: str = "files",
) -> FileReport:
    """Cases ``start .. start + cases - 1`` of ``seed``, in this process, each within ``timeout`` seconds.

    ``target`` picks the generator: ``files`` (readers), ``evaluate-argv`` (the ``evaluate`` command),
    ``compare`` (``rc.compare``'s inputs), ``audit`` (the audit's data, options and reports),
    ``search`` (``run_from_search``), ``accumulator`` (``rc.Accumulator``'s blocks), ``curves``
    (``rc.curves``) or ``check``
    (hostile functions given to ``check``).
    """
    draw, classify = _target(target)
    report = FileReport(seed)
    t0 = time.monotonic()
    can_alarm = hasattr(signal, "SIGALRM")

    def alarm(signum, frame):
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, alarm) if can_alarm else None
    try:
        for index in range(start, start + cases):
            case = draw(RandomChoices(case_rng(seed, index)))
            if can_alarm:
                signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                outcome = classify(case)
            except _Timeout:
                outcome = Outcome("hang", f"no answer within {timeout:g} s")
            finally:
                if can_alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            report.cases += 1
            report.counts[outcome.kind] += 1
            report.kinds[case.change] += 1
            if not outcome.clean:
                report.findings.append((index, case.change, outcome.kind, outcome.detail))
            if progress is not None:
                progress(report)
    finally:
        if can_alarm:
            signal.signal(signal.SIGALRM, previous)
    report.seconds = time.monotonic() - t0
    return report
