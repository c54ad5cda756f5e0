"""Cross-implementation check: generated tie-heavy problems, every option, against the reference.

An implementation agrees when every per-query value equals the reference's exact value
rounded to float64 where that rounding is exact (bit for bit), and lies within 1e-12
otherwise; an input the reference rejects must be rejected too.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Dict, List, Optional

import numpy as np
import retrieval_conformance as rc
from retrieval_conformance.conformance.problems.choices import NumpyChoices
from retrieval_conformance.conformance.problems.evaluate_inputs import crosscheck_options, crosscheck_problem
from retrieval_conformance.reference.contract.problem import ARRAY_FIELDS, OPTIONAL_FIELDS, VALUE_FIELDS

TOLERANCE = 1e-12
FIELDS = VALUE_FIELDS


def compare_per_query(ref, other, label: str = "") -> List[str]:
    """Differences between a reference PerQuery (with ``exact``) and another implementation's."""
    return compare_exact(dict(ref.exact, n_relevant=ref.n_relevant), other, label)


def compare_exact(exact: Dict[str, list], other, label: str = "") -> List[str]:
    """Differences between exact per-query values (``PerQuery.exact``'s lists of Fractions, a
    list per query for ``cmc``, plus ``n_relevant``: the reference's or the test oracle's) and
    an implementation's PerQuery: bit for bit where the exact value is a float64, else 1e-12."""
    problems = []

    def check(field, q, j, want: Fraction, got: float):
        if not np.isfinite(got):
            problems.append(f"{label}{field}[{q}{'' if j is None else f', {j}'}]: got {got}, want {want}")
            return
        as_float = float(want)
        bit_exact = Fraction(as_float) == want
        if (bit_exact and got != as_float) or abs(got - as_float) > TOLERANCE:
            where = f"[{q}{'' if j is None else f', {j}'}]"
            problems.append(f"{label}{field}{where}: got {got!r}, reference {want} = {as_float!r}")

    n_relevant = np.asarray(exact["n_relevant"])
    if not np.array_equal(n_relevant, other.n_relevant):
        problems.append(f"{label}n_relevant: got {other.n_relevant.tolist()}, reference {n_relevant.tolist()}")
    for field in FIELDS:
        got = np.asarray(getattr(other, field), dtype=np.float64)
        for q, want in enumerate(exact[field]):
            check(field, q, None, want, float(got[q]))
    for q, row in enumerate(exact["cmc"]):
        for j, want in enumerate(row):
            check("cmc", q, j, want, float(other.cmc[q, j]))
    for field in OPTIONAL_FIELDS:
        if field in exact:
            got = getattr(other, field)
            for q, want in enumerate(exact[field]):
                check(field, q, None, want, float(got[q]))
    return problems


def same_bits(a, b, label: str = "") -> List[str]:
    """Differences between two implementations' PerQuery arrays, which must be identical: the
    same fields set, the same dtypes, the same values (implementation against implementation,
    or one implementation under two settings)."""
    problems = []
    for field in ARRAY_FIELDS:
        x, y = getattr(a, field), getattr(b, field)
        if x is None and y is None:
            continue
        x, y = (None if v is None else np.asarray(v) for v in (x, y))
        if x is None or y is None or x.dtype != y.dtype or not np.array_equal(x, y):
            show = [None if v is None else (v.dtype.name, v.tolist()) for v in (x, y)]
            problems.append(f"{label} {field}: {show[0]} != {show[1]}")
    return problems


def run_both(fn_ref, fn_other, *args):
    """``(fn_ref(*args), fn_other(*args))``; or, when the first raises ValueError, ``(None,
    (its message, the other's))`` once the other has raised ValueError too (else
    AssertionError): the yardstick's errors must be an implementation's errors."""
    try:
        ref = fn_ref(*args)
    except ValueError as exc:
        try:
            fn_other(*args)
        except ValueError as other:
            return None, (str(exc), str(other))
        raise AssertionError(f"{fn_ref} raised ValueError ({exc}) but {fn_other} did not") from exc
    return ref, fn_other(*args)


def crosscheck_one(name: str, kwargs: Dict[str, object]) -> List[str]:
    """Compare implementation ``name`` with the reference on one input; returns problems."""
    kwargs = dict(kwargs, empty="zero")  # per-query values; aggregation is shared code
    label = f"{name} {describe(kwargs)}: "
    try:
        ref = rc.evaluate(**kwargs, implementation="reference").per_query
    except ValueError as exc:
        try:
            rc.evaluate(**kwargs, implementation=name)
        except ValueError:
            return []
        return [f"{label}reference raised ValueError ({exc}) but {name} did not"]
    try:
        other = rc.evaluate(**kwargs, implementation=name).per_query
    except Exception as exc:
        return [f"{label}raised {type(exc).__name__}: {exc}"]
    return compare_per_query(ref, other, label)


def describe(kwargs: Dict[str, object]) -> str:
    opts = {k: v for k, v in kwargs.items() if not isinstance(v, np.ndarray)}
    shapes = {k: v.shape for k, v in kwargs.items() if isinstance(v, np.ndarray)}
    return f"{opts} {shapes}"


def crosscheck(
    name: str, count: int, seed: int = 0, progress: Optional[Callable[[int, int], None]] = None
) -> List[str]:
    """Run ``count`` generated problems through ``name`` and the reference."""
    choices = NumpyChoices(np.random.default_rng(seed))
    problems: List[str] = []
    for i in range(count):
        kwargs = dict(crosscheck_problem(choices), **crosscheck_options(choices))
        problems.extend(crosscheck_one(name, kwargs))
        if progress is not None:
            progress(i + 1, count)
    return problems
