"""How a C++ ``float`` prints with ``std::cout`` (spec §5 oxford compute_ap).

The Oxford protocol's AP is the text ``compute_ap.cpp`` prints, so its golden values and
``retrieval-conformance compute-ap`` compare printed text: :func:`format_cpp_float` produces
it, :func:`normalize_cpp_float_text` reads the variant an old MSVC runtime printed.
"""

from __future__ import annotations

import math
import re
from typing import Union

import numpy as np

__all__ = ["format_cpp_float", "normalize_cpp_float_text"]


def format_cpp_float(value: Union[float, np.floating]) -> str:
    """Text that ``std::cout << (float)value`` prints with default stream settings.

    A C++ ``float`` goes through ``printf("%.6g")`` as a double: 6 significant digits,
    trailing zeros and a trailing point removed, exponent form when the exponent is < -4
    or >= 6, with at least two exponent digits (``6.96767e-05``; MSVC's old runtime printed
    three, ``6.96767e-005``, see :func:`normalize_cpp_float_text`).  NaN prints as glibc
    does: ``-nan`` when its sign bit is set (the NaN x86 produces for 0/0, and what
    :func:`~retrieval_conformance.reference.protocols.landmark.oxford.oxford_ap` returns), ``nan``
    otherwise; infinities as ``inf`` / ``-inf``.

    Parameters
    ----------
    value : float
        Rounded to float32 first (that is what a ``float`` variable holds).

    Examples
    --------
    >>> format_cpp_float(0.02376021)
    '0.0237602'
    >>> format_cpp_float(1.0), format_cpp_float(6.967670e-05)
    ('1', '6.96767e-05')
    """
    v = float(value)
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    # CPython's %g and glibc's %g both round the exact binary value correctly (ties to
    # even), so they agree digit for digit on every finite double.
    return "%g" % float(np.float32(v))


_WIN_EXPONENT = re.compile(r"e([+-])0(\d\d)$")


def normalize_cpp_float_text(text: str) -> str:
    """Normalise a printed C++ float: strip whitespace, 3-digit MSVC exponents to 2 digits.

    ``"6.96767e-005"`` (old Windows runtime) -> ``"6.96767e-05"`` (glibc); other text is
    returned stripped and unchanged.
    """
    return _WIN_EXPONENT.sub(r"e\1\2", text.strip())
