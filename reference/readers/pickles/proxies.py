"""What :class:`~retrieval_conformance.reference.readers.pickles.restricted.RestrictedUnpickler` hands to
the pickle machine in place of the allowed globals.

Checked stand-ins for ``numpy.dtype`` and ``_reconstruct`` arrays (:class:`_DtypeProxy`,
:class:`_ArrayProxy`), wrappers that keep finished values and globals out of reach of
``BUILD`` (:class:`_Done`, :class:`_Global`), and the builtins (``set``, ``bytes``,
``complex``, ``_codecs.encode``, ...) limited to the arguments their own pickles use.
"""

from __future__ import annotations

import pickle
from typing import Any, Callable, Optional

import numpy as np
from retrieval_conformance.reference.readers.limits import _PLAIN_KINDS, _clip, _describe

_TEXT_CODECS = ("latin1", "latin-1", "iso-8859-1", "utf-8", "utf8", "ascii")
# ints below this have distinct hashes, so they cannot collide in a dict or set (keys and
# set items are restricted to such scalars: a pickle of colliding keys costs quadratic time)
_SMALL_INT = 1 << 60


class _Restricted:
    """Base of what our unpickler hands to the pickle machine: refuses ``BUILD``.

    The C unpickler's ``BUILD`` calls ``__setstate__`` when an object has one, and
    otherwise writes attributes (``setattr``) -- on a function, ``__defaults__`` could be
    rewritten for the whole process.  Objects of these classes have no ``__dict__`` and a
    ``__setstate__`` that refuses, except where a subclass accepts a checked state.
    """

    __slots__ = ()
    what = "this object"

    def __setstate__(self, state: Any) -> None:
        raise pickle.UnpicklingError(f"refused BUILD (state) on {self.what}")


class _Global(_Restricted):
    """A callable standing for an allowed global; calls our checked implementation."""

    __slots__ = ("qualname", "_call")

    def __init__(self, qualname: str, call: Optional[Callable[..., Any]]):
        self.qualname = qualname
        self._call = call

    @property
    def what(self) -> str:  # type: ignore[override]
        return f"the global {self.qualname}"

    def __call__(self, *args: Any) -> Any:
        if self._call is None:
            raise pickle.UnpicklingError(
                f"refused call of {self.qualname}: only accepted as an argument of _reconstruct"
            )
        return self._call(*args)

    def __repr__(self) -> str:
        return f"<restricted global {self.qualname}>"


class _Done(_Restricted):
    """A finished value (an array or numpy scalar) kept out of the pickle machine's reach.

    Real numpy objects never sit on the unpickler's stack, where ``BUILD`` could call their
    own ``__setstate__``; :func:`_finish` swaps these wrappers for their values.
    """

    __slots__ = ("value",)
    what = "a numpy array or scalar"

    def __init__(self, value: Any):
        self.value = value


def _refuse(message: str) -> pickle.UnpicklingError:
    return pickle.UnpicklingError(message)


class _DtypeProxy(_Restricted):
    """``numpy.dtype(code, align, copy)`` with its ``BUILD`` state, checked.

    Only plain dtypes are built (bool, ints, floats, complex, bytes ``S`` and str ``U``);
    the state may only set the byte order (and the size of an unsized ``S``/``U``): a state
    with fields, names, a sub-array, a field offset or object flags is refused -- numpy's
    own ``dtype.__setstate__`` accepts an object field with flags 0 (arrays of it then hold
    forged pointers) and any field offset (reads outside the array).
    """

    __slots__ = ("_dtype", "_state_set", "_used")
    what = "a dtype already in use"

    def __init__(self, code: Any, align: Any = False, copy: Any = True):
        if not isinstance(code, str) or len(code) > 32:
            raise _refuse(
                f"refused numpy.dtype({_clip(code, 32)}): only a short type code of a plain dtype is accepted"
            )
        try:
            dt = np.dtype(code)
        except Exception:
            raise _refuse(f"refused numpy.dtype({_clip(code, 32)}): not a dtype") from None
        self._dtype = _plain_dtype(dt, f"numpy.dtype({_clip(code, 32)})")
        self._state_set = False
        self._used = False

    def __setstate__(self, state: Any) -> None:
        if self._state_set or self._used:
            raise _refuse("refused a second dtype state, or a state after the dtype was used")
        self._state_set = True
        dt = self._dtype
        # (version, byte order, subarray, names, fields, elsize, alignment, flags[, metadata])
        if not isinstance(state, tuple) or len(state) not in (8, 9) or state[0] not in (3, 4):
            raise _refuse(
                f"refused dtype state ({_describe(state)}): only the version 3/4 state of a plain dtype is accepted"
            )
        endian, subarray, names, fields, elsize = state[1:6]
        if (
            subarray is not None
            or names is not None
            or fields is not None
            or (len(state) == 9 and state[8] is not None)
        ):
            raise _refuse(
                "refused dtype state with fields, names, a sub-array or metadata "
                "(structured dtypes can place an object pointer or an offset "
                "outside the array)"
            )
        if endian not in ("<", ">", "|", "=") or not all(type(v) is int for v in state[5:8]):
            raise _refuse("refused malformed dtype state")
        if elsize not in (-1, dt.itemsize):
            if dt.itemsize == 0 and dt.kind in "SU" and 0 < elsize <= 1 << 40 and (dt.kind == "S" or elsize % 4 == 0):
                dt = np.dtype(f"{dt.kind}{elsize if dt.kind == 'S' else elsize // 4}")
            else:
                raise _refuse(f"refused dtype state: item size {elsize} for dtype {dt.str}")
        if endian in "<>" and dt.byteorder not in ("|", endian):
            dt = dt.newbyteorder(endian)
        self._dtype = dt

    def resolve(self) -> Any:
        self._used = True
        if self._dtype.itemsize == 0:
            raise _refuse(f"refused unsized dtype {self._dtype.str}")
        return self._dtype


def _plain_dtype(dt: Any, where: str) -> Any:
    if dt.kind not in _PLAIN_KINDS or dt.fields is not None or dt.subdtype is not None or dt.hasobject or dt.metadata:
        raise _refuse(
            f"refused {where}: dtype {dt.str} is not a plain numeric, bytes or str "
            "dtype (object and structured dtypes can hold forged pointers)"
        )
    return dt


def _as_raw(raw: Any, where: str) -> bytes:
    # Python 2 pickles hold array data as str, read back as latin-1 text
    if isinstance(raw, str):
        try:
            return raw.encode("latin1")
        except UnicodeEncodeError:
            raise _refuse(f"refused {where}: text data beyond latin-1") from None
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw) if isinstance(raw, bytearray) else raw
    raise _refuse(f"refused {where}: the data is a {type(raw).__name__}, not bytes (object arrays are not read)")


def _check_text(raw: bytes, dt: Any, where: str) -> None:
    """Code points of a ``U`` array must be Unicode (numpy raises SystemError otherwise)."""
    if dt.kind == "U" and raw:
        order = dt.byteorder if dt.byteorder in "<>" else "="
        if int(np.frombuffer(raw, dtype=np.dtype(np.uint32).newbyteorder(order)).max()) > 0x10FFFF:
            raise _refuse(f"refused {where}: str data holds invalid code points")


class _ArrayProxy(_Restricted):
    """What ``_reconstruct(ndarray, (0,), b"b")`` returns; ``BUILD`` gives it the array.

    The state ``(version, shape, dtype, is_fortran, rawdata)`` is checked (plain dtype,
    non-negative int shape, byte count equal to shape times item size, within the array
    budget) and the array is copied out of the bytes by us, never by numpy's
    ``ndarray.__setstate__``.

    ``build`` is the unpickler's ``_build_array`` (which charges its array budget).
    """

    __slots__ = ("_build", "value")
    what = "an array already built"

    def __init__(self, build: Callable[..., Any]):
        self._build = build
        self.value = None

    def __setstate__(self, state: Any) -> None:
        if self.value is not None:
            raise _refuse("refused a second array state")
        if isinstance(state, tuple) and len(state) == 5 and type(state[0]) is int and state[0] in (0, 1):
            state = state[1:]
        if not isinstance(state, tuple) or len(state) != 4:
            raise _refuse(f"refused array state ({_describe(state)})")
        shape, dtype, fortran, raw = state
        if type(fortran) not in (bool, int) or fortran not in (0, 1):
            raise _refuse("refused array state: malformed Fortran flag")
        value = self._build(raw, dtype, shape, "F" if fortran else "C", None, "array state")
        if not value.dtype.isnative:
            # numpy's own __setstate__ swaps such data to the native byte order (protocol-5
            # arrays keep theirs, as numpy's _frombuffer does): load identically
            value = value.byteswap(inplace=True).view(value.dtype.newbyteorder("="))
        self.value = value


# -- builtins, with the arguments their own pickles use ---------------------------------------
def _latin1_encode(obj: Any, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    """Stand-in for ``_codecs.encode`` limited to the text codecs pickle itself uses.

    Protocol-2 pickles written by Python 3 store ``bytes`` (numpy array buffers among them)
    as ``_codecs.encode(text, "latin1")``; other codecs are refused.
    """
    if not isinstance(encoding, str) or encoding.lower().replace("_", "-") not in _TEXT_CODECS:
        raise pickle.UnpicklingError(f"refused _codecs.encode with codec {_clip(encoding, 30)}")
    if not isinstance(obj, str):
        raise pickle.UnpicklingError("refused _codecs.encode of a non-str object")
    if errors not in ("strict", "surrogateescape", "surrogatepass"):
        raise pickle.UnpicklingError(f"refused _codecs.encode with errors={_clip(errors, 30)}")
    return obj.encode(encoding, errors)


def _safe_bytes(*args: Any) -> bytes:
    # bytes() or bytes(text, codec[, errors]); never bytes(n), which allocates n bytes
    if not args:
        return b""
    if len(args) == 1 and isinstance(args[0], (bytes, bytearray)):
        return bytes(args[0])
    if 2 <= len(args) <= 3 and isinstance(args[0], str):
        return _latin1_encode(*args)
    raise pickle.UnpicklingError(
        f"refused bytes() of {_describe(args[0])}: only bytes() of "
        "bytes or of text with a codec is accepted (not a size)"
    )


def _safe_bytearray(*args: Any) -> bytearray:
    return bytearray(_safe_bytes(*args))


def _scalar_items(items: Any, what: str) -> Any:
    if not _scalar_list(items):
        raise pickle.UnpicklingError(
            f"refused {what}() of {_describe(items)}: only a list of str, bytes, None, bool, float or int is accepted"
        )
    return items


def _scalar_list(items: Any) -> bool:
    return isinstance(items, (list, tuple)) and all(
        type(v) in (str, bytes, bool, float, type(None)) or (type(v) is int and -_SMALL_INT < v < _SMALL_INT)
        for v in items
    )


def _safe_set(items: Any = ()) -> set:
    return set(_scalar_items(items, "set"))


def _safe_frozenset(items: Any = ()) -> frozenset:
    return frozenset(_scalar_items(items, "frozenset"))


def _safe_complex(real: Any = 0.0, imag: Any = 0.0) -> complex:
    if type(real) not in (int, float) or type(imag) not in (int, float):
        raise pickle.UnpicklingError("refused complex() of anything but two numbers")
    return complex(real, imag)
