"""The globals a ground-truth pickle may name, and the check of one name.

Both the opcode pre-check (:mod:`~retrieval_conformance.reference.readers.pickles.opcodes`) and
:class:`~retrieval_conformance.reference.readers.pickles.restricted.RestrictedUnpickler` ask
:func:`_allowed_global` before a global is used; anything outside the allow-list raises
:class:`pickle.UnpicklingError` naming it.
"""

from __future__ import annotations

import _compat_pickle
import pickle
from typing import Tuple

# The globals a pickle may name: what standard pickles of sets, frozensets, bytes,
# bytearrays, complex numbers and numpy arrays, dtypes and scalars reference, nothing more.
# numpy 1.x pickles name numpy.core.*, numpy 2.x numpy._core.*; both are served by our own
# callables in pickle_proxies and safe_pickle (never by numpy's, which trust the pickle's
# state).
_NUMPY_GLOBALS = {("numpy", "ndarray"), ("numpy", "dtype")} | {
    (f"{package}.{module}", name)
    for package in ("numpy.core", "numpy._core")
    for module, name in (("multiarray", "_reconstruct"), ("multiarray", "scalar"), ("numeric", "_frombuffer"))
}
_ALLOWED_GLOBALS = frozenset(
    _NUMPY_GLOBALS
    | {
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "bytes"),
        ("builtins", "bytearray"),
        ("builtins", "complex"),
        ("_codecs", "encode"),
    }
)
# globals whose call always returns bytes: a safe dict key (protocol 0-2 store bytes so)
_BYTES_GLOBALS = frozenset({("_codecs", "encode"), ("builtins", "bytes")})


def _allowed_global(module: str, name: str) -> Tuple[str, str]:
    """``(module, name)`` after the Python 2 renaming, or UnpicklingError when refused."""
    # Python 2 names (__builtin__, copy_reg, ...) read as Python 3 names, as the standard
    # unpickler does for protocols < 3 (harmless for newer ones: the result still has to
    # pass the allow-list below).
    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    elif module in _compat_pickle.IMPORT_MAPPING:
        module = _compat_pickle.IMPORT_MAPPING[module]
    if (module, name) in _ALLOWED_GLOBALS:
        return module, name
    shown = (
        f"{module[:100]}.{name[:100]}" if isinstance(module, str) and isinstance(name, str) else "of a non-string name"
    )
    raise pickle.UnpicklingError(
        f"refused global {shown}: this unpickler only builds plain data and numpy arrays "
        "(a pickle can run code when loaded)"
    )
