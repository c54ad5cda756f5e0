"""Relevance grades as read from qrels: integers, and those that are not (spec §13 trec_eval, float grades).

trec_eval reads a grade with C's ``atol`` (``get_qrels.c``): the integer its text starts
with, so ``2.5`` is 2, ``-0.5`` is 0 and ``1e3`` is 1.  We read a grade that is not an
integer as ``float_grades`` says: ``"exact"`` (its exact value, a ``Fraction``: relevant
when ``>= relevance_level``, its own nDCG gain), ``"truncate"`` (trec_eval's reading) or
``"refuse"``; None is ``"exact"`` with one warning per file or dict naming the first grade
trec_eval would read otherwise, so that a difference from trec_eval is never silent.
"""

from __future__ import annotations

import math
import numbers
import re
import warnings
from fractions import Fraction
from typing import Any, Optional, Tuple, Union

import numpy as np
from retrieval_conformance.reference.contract.validation import choice, shown

__all__ = ["FLOAT_GRADES", "Grade"]

#: how a grade that is not an integer is read (None: "exact", with a warning)
FLOAT_GRADES = ("exact", "truncate", "refuse")
#: a grade: an int, or the exact value of one that is not an integer
Grade = Union[int, Fraction]

_NUMBER = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(rb"[+-]?[0-9]+")
_LEADING_INTEGER = re.compile(rb"[+-]?[0-9]*")
#: grades must fit in int64 (trec_eval stores them in a C ``long``)
_GRADE_LIMIT = 2**63
#: longest grade field and largest decimal exponent read exactly (bounds Fraction's work)
_GRADE_CHARS = 64
_GRADE_EXPONENT = 400


def float_grades_mode(float_grades: Optional[str]) -> Optional[str]:
    return None if float_grades is None else choice("float_grades", float_grades, FLOAT_GRADES)


def _exact(value: Fraction) -> Grade:
    return int(value) if value.denominator == 1 else value


def text_grade(raw: bytes, mode: Optional[str]) -> Tuple[Optional[Grade], str]:
    """The exact grade a field writes, or None and why not."""
    if len(raw) > _GRADE_CHARS:  # before int(): Python refuses 4,300 digits with no file or line
        return None, f"{len(raw):,} characters, beyond int64" if _INTEGER.fullmatch(raw) else "not a decimal number"
    if _INTEGER.fullmatch(raw):
        grade: Grade = int(raw)
    elif mode == "refuse" or len(raw) > _GRADE_CHARS or not _NUMBER.fullmatch(raw):
        return None, "not a decimal integer" if mode == "refuse" else "not a decimal number"
    else:
        mantissa, _, exponent = raw.lower().partition(b"e")
        if exponent and abs(int(exponent)) > _GRADE_EXPONENT:
            return None, f"a decimal exponent beyond {_GRADE_EXPONENT}"
        grade = _exact(Fraction(raw.decode("ascii")))
    if not -_GRADE_LIMIT <= grade < _GRADE_LIMIT:
        return None, "beyond int64"
    return grade, ""


def atol(raw: bytes) -> int:
    """C's ``atol``, as trec_eval reads a grade: the integer the text starts with (0 if none)."""
    digits = _LEADING_INTEGER.match(raw).group()
    return int(digits) if digits.lstrip(b"+-") else 0


class Changed:
    """Grades that trec_eval's ``atol`` reads otherwise: kept exact or truncated, and counted
    for one warning (``float_grades=None``)."""

    def __init__(self, mode: Optional[str], where: str) -> None:
        self.mode, self.where, self.count, self.first = mode, where, 0, ""

    def take(self, exact: Grade, truncated: int, place: str) -> Grade:
        if exact == truncated and isinstance(exact, int):
            return exact
        self.count += 1
        if not self.first:
            self.first = f"{place} is {exact}, trec_eval reads {truncated}"
        return truncated if self.mode == "truncate" else exact

    def finish(self, stacklevel: int = 3) -> None:
        if self.mode is None and self.count:
            warnings.warn(
                f"{self.where}: {self.count} relevance grade(s) that trec_eval reads as other integers (atol), "
                f"e.g. {self.first}; they are used exactly (relevant when >= relevance_level, the grade is "
                "the nDCG gain): pass float_grades='truncate' (--float-grades truncate) to reproduce trec_eval, or "
                "float_grades='exact' to keep them without this warning",
                UserWarning,
                stacklevel=stacklevel,
            )


def value_grade(value: Any, where: str, mode: Optional[str]) -> Tuple[Grade, int]:
    """A grade given as a number: (its exact value, its truncation toward zero)."""
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, numbers.Real)
        or (mode == "refuse" and not isinstance(value, numbers.Integral))
    ):
        kind = "an integer" if mode == "refuse" else "a real number as the"
        raise TypeError(
            f"{where}: expected {kind} grade (rel >= relevance_level relevant), got {shown(value)} "
            f"({type(value).__name__}); pass {'int' if mode == 'refuse' else 'int or float'} grades"
        )
    if isinstance(value, numbers.Integral):
        exact: Grade = int(value)
    else:
        if not math.isfinite(float(value)):
            raise ValueError(
                f"{where}: expected a finite grade, got {shown(value)}; judge the document "
                "with a number or leave it out of the qrels"
            )
        # a float is the shortest decimal that prints it (0.1 is 1/10, as in a file)
        exact = _exact(
            value
            if isinstance(value, Fraction)
            else Fraction(value)
            if isinstance(value, numbers.Rational)
            else Fraction(repr(float(value)))
        )
    if not -_GRADE_LIMIT <= exact < _GRADE_LIMIT:
        raise ValueError(f"{where}: expected a grade within int64, got {shown(value)}")
    return exact, int(exact)
