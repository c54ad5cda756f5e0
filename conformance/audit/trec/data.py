"""The run and qrels of an audit, read once, with what their text says.

A run file is read by the project's reader (:func:`~retrieval_conformance.reference.readers.trec.as_run`,
with its named errors) and scanned once more as text for what the reader does not keep: the
decimal places each score was printed with (``%.3f`` makes ties), and repeated (qid, docno)
lines.  trec_eval stops on a repeated line ("duplicate docs") and the reader refuses it; the
audit reads such a file anyway, keeps the first line of each pair (the order of the file) and
reports the repeats as a finding, with the number under ranx's reading (the last line kept).
Qrels are read once per reading of their grades (``float_grades``).
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from retrieval_conformance.conformance.audit.findings import _on_grid
from retrieval_conformance.reference.readers.limits import MAX_FILE_BYTES, _read_text_data
from retrieval_conformance.reference.readers.tables import is_json_lines
from retrieval_conformance.reference.readers.trec import as_qrels, as_run

Run = Dict[str, Dict[str, float]]
#: the most decimal places a score may be printed with and still count as rounded
ROUNDED_DECIMALS = 6
_SCORE = re.compile(rb"^[+-]?(?:[0-9]+\.?([0-9]*)|\.([0-9]+))$")


@dataclass
class RunText:
    """What a run file's text says beyond its scores."""

    decimals: Optional[int] = None  # the most decimal places of a score (None: not all plain decimals)
    repeats: List[Tuple[str, str, int, int]] = field(default_factory=list)  # (qid, docno, first, repeat line)
    last_kept: Optional[Run] = None  # the run with the last line of each repeated pair (ranx's reading)


@dataclass
class RunData:
    """A run with its qrels: ``run`` holds float64 scores in the order of the file (or dict)."""

    run: Run
    qrels_source: Any
    float_grades: Optional[str]
    text: RunText
    from_file: bool
    _qrels: Dict[str, Any] = field(default_factory=dict)
    _float32: Optional[Run] = None

    @classmethod
    def read(cls, run: Any, qrels: Any, float_grades: Optional[str] = None) -> "RunData":
        if isinstance(run, (str, bytes, os.PathLike)):
            text = _scan(run)
            try:
                scores = as_run(run)
            except ValueError as exc:
                if not text.repeats or "again (first on line" not in str(exc):
                    raise
                scores = _first_kept(run)
            return cls(scores, qrels, float_grades, text, True)
        return cls(as_run(run), qrels, float_grades, RunText(), False)

    def qrels(self, reading: Optional[str] = None) -> Dict[str, Dict[str, Any]]:
        """The qrels with their grades read as ``reading`` says (None: the declared reading)."""
        key = reading or self.float_grades or "declared"
        if key not in self._qrels:
            with warnings.catch_warnings():
                if reading is not None:
                    warnings.simplefilter("ignore")  # another reading than the declared one: asked for
                self._qrels[key] = as_qrels(self.qrels_source, reading or self.float_grades)
        return self._qrels[key]

    def scores(self, score_dtype: str = "float64") -> Run:
        """The scores as trec_eval compares them: float64 (10.0) or C float (9.0.8)."""
        if score_dtype == "float64":
            return self.run
        if self._float32 is None:
            self._float32 = {
                q: dict(zip(d, np.asarray(list(d.values())).astype(np.float32).astype(float).tolist()))
                for q, d in self.run.items()
            }
        return self._float32

    def float_grade_count(self) -> int:
        """Judgments whose grade is not an integer (read exactly)."""
        return sum(1 for docs in self.qrels("exact").values() for g in docs.values() if isinstance(g, Fraction))

    def decimals(self) -> Optional[int]:
        """The decimal places of the scores: from the file's text, or the coarsest grid a dict's scores lie on."""
        if self.from_file:
            return self.text.decimals
        values = np.array([s for docs in self.run.values() for s in docs.values()], dtype=np.float64)
        for d in range(ROUNDED_DECIMALS + 1):
            if values.size and _on_grid(values, d):
                return d
        return None


def _lines(path: Any) -> List[Tuple[int, List[bytes]]]:
    if is_json_lines(path):
        return []  # no printed scores to read
    data = _read_text_data(path, MAX_FILE_BYTES)
    out = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        fields = raw.split()
        if len(fields) >= 6 and not fields[0].startswith(b"#"):
            out.append((number, fields))
    return out


def _scan(path: Any) -> RunText:
    decimals: Optional[int] = 0
    seen: Dict[Tuple[bytes, bytes], int] = {}
    repeats = []
    last: Run = {}
    lines = _lines(path)
    for number, parts in lines:
        m = _SCORE.match(parts[4])
        if m is None:
            decimals = None  # an exponent or anything else: not a rounding we can read
        elif decimals is not None:
            decimals = max(decimals, len(m.group(1) or m.group(2) or b""))
        pair = (parts[0], parts[2])
        if pair in seen:
            repeats.append((_text(parts[0]), _text(parts[2]), seen[pair], number))
        else:
            seen[pair] = number
        try:
            last.setdefault(_text(parts[0]), {})[_text(parts[2])] = float(parts[4])
        except ValueError:
            pass  # the reader names the line
    return RunText(decimals if lines else None, repeats, last if repeats else None)


def _first_kept(path: Any) -> Run:
    """The run with the first line of each repeated (qid, docno) pair, checked as a dict."""
    run: Run = {}
    for _, parts in _lines(path):
        run.setdefault(_text(parts[0]), {}).setdefault(_text(parts[2]), float(parts[4]))
    return as_run(run)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")
