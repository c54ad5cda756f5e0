"""The checks of :func:`retrieval_conformance.compare`'s settings.

One check per kind of argument, raising with the argument's name (the function's keyword or
the command line's flag) and what was expected.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, List, Optional

import numpy as np

__all__ = [
    "MAX_RESAMPLES",
    "check_choice",
    "check_digits",
    "check_level",
    "check_names",
    "check_non_negative",
    "check_resamples",
    "check_seed",
]


# -- checks ------------------------------------------------------------------------------
def check_names(argument: str, value: Any) -> List[str]:
    """A name or a sequence of names, as a list without repeats (first occurrence kept)."""
    if isinstance(value, str):
        return [value]
    try:
        names = list(value)
    except TypeError:
        raise TypeError(f"{argument}: expected a name or a sequence of names, got {type(value).__name__}") from None
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"{argument}: expected names (str), got {type(bad[0]).__name__} {bad[0]!r}")
    return list(dict.fromkeys(names))


def check_choice(argument: str, value: Any, choices: Iterable) -> Any:
    """``value``, when it is one of ``choices``."""
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f"{argument}: expected one of {list(choices)}, got {value!r}")
    return value


def _is_real(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))


def _is_integer(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


def check_level(argument: str, value: Any) -> float:
    """A significance or confidence level: a number strictly between 0 and 1."""
    if not _is_real(value) or not 0 < float(value) < 1:
        raise ValueError(f"{argument}: expected a number strictly between 0 and 1 (e.g. 0.05), got {value!r}")
    return float(value)


def check_non_negative(argument: str, value: Any) -> float:
    """A margin: a finite number >= 0."""
    if not _is_real(value) or not float(value) >= 0 or math.isinf(float(value)):
        raise ValueError(f"{argument}: expected a finite number >= 0 (e.g. 0.01), got {value!r}")
    return float(value)


#: the most resamples of the permutation test and the bootstrap: each keeps one float64 per resample
#: (and the bootstrap its resampled means), and a resampled p-value's resolution, 1/(N + 1), is a
#: millionth here, far below any significance level in use
MAX_RESAMPLES = 1_000_000


def check_resamples(argument: str, value: Any) -> int:
    """A number of resamples: an integer from 1 to :data:`MAX_RESAMPLES`."""
    if not _is_integer(value) or value < 1:
        raise ValueError(f"{argument}: expected a positive integer (e.g. 10000), got {value!r}")
    if value > MAX_RESAMPLES:
        raise ValueError(
            f"{argument}: expected at most {MAX_RESAMPLES:,} resamples, got {value:,}: each resample is kept in "
            "memory and takes time over every query, and beyond a million the p-value's resolution "
            "(1/(N + 1)) is far below any significance level; pass a smaller number (the default is 10,000)"
        )
    return int(value)


def check_seed(value: Any) -> Optional[int]:
    """A seed of ``numpy.random.default_rng``: a non-negative integer, or None."""
    if value is not None and (not _is_integer(value) or value < 0):
        raise ValueError(f"seed: expected a non-negative integer or None, got {value!r}")
    return None if value is None else int(value)


def check_digits(value: Any) -> int:
    """A number of decimals: an integer from 0 to 12."""
    if not _is_integer(value) or not 0 <= value <= 12:
        raise ValueError(f"digits: expected an integer from 0 to 12, got {value!r}")
    return int(value)
