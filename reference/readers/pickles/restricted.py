"""Loading ground-truth pickles safely: :class:`RestrictedUnpickler` and
:func:`load_restricted_pickle`.

A pickle can run arbitrary code when loaded: never hand an untrusted file to the standard
library's unrestricted loader.  The stream is checked before anything is built
(:mod:`~retrieval_conformance.reference.readers.pickles.opcodes`), globals are served by checked
stand-ins (:mod:`~retrieval_conformance.reference.readers.pickles.proxies`), and the result is
walked once after (:func:`_finish`).  Limits: see :mod:`retrieval_conformance.reference.readers.limits`.
"""

from __future__ import annotations

import io
import math
import pickle
from typing import Any, Callable, Dict, Optional, Tuple, Union

import numpy as np
from retrieval_conformance.reference.readers.limits import (
    MAX_ARRAY_BYTES,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_ITEMS,
    FileRefusedError,
    PathLike,
    _clip,
    _describe,
    _read_bounded,
    _read_file,
    _size,
)
from retrieval_conformance.reference.readers.pickles.allowed_globals import _allowed_global
from retrieval_conformance.reference.readers.pickles.opcodes import _check_opcodes
from retrieval_conformance.reference.readers.pickles.proxies import (
    _ArrayProxy,
    _as_raw,
    _check_text,
    _Done,
    _DtypeProxy,
    _Global,
    _latin1_encode,
    _refuse,
    _safe_bytearray,
    _safe_bytes,
    _safe_complex,
    _safe_frozenset,
    _safe_set,
)

__all__ = ["RestrictedUnpickler", "load_restricted_pickle"]

_MAX_DIMS = 32


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that builds only plain data and plain numpy arrays, within limits.

    Dicts, lists, tuples, strings, bytes and numbers need no global at all.  The globals
    resolved are exactly: ``numpy.ndarray`` (only as the argument of ``_reconstruct``),
    ``numpy.dtype``, ``numpy{.core,._core}.multiarray._reconstruct`` (arrays, protocols
    0-4), ``numpy{.core,._core}.numeric._frombuffer`` (arrays, protocol 5),
    ``numpy{.core,._core}.multiarray.scalar`` (numpy scalars), ``_codecs.encode`` with a
    text codec only (bytes in protocols 0-2), and ``set``, ``frozenset``, ``bytes``,
    ``bytearray`` and ``complex`` with the arguments their own pickles use.  Any other
    global -- ``os.system``, ``builtins.eval``, ``subprocess.Popen``, ``builtins.range``, a
    user class -- raises :class:`pickle.UnpicklingError` naming it, before anything is
    called.  Each is served by our own checked callable, never by numpy's:

    * dtypes are plain (bool, ints, floats, complex, ``S`` bytes, ``U`` str); object and
      structured dtypes, field offsets and sub-arrays are refused (numpy's own
      ``__setstate__`` would build arrays of forged pointers from them and crash);
    * arrays are copied out of their bytes after checking that the byte count is shape
      times item size, within ``max_array_bytes`` in total;
    * ``bytes``/``bytearray`` of an int size, ``set`` of anything but a list of scalars,
      ``complex`` of strings are refused.

    Before anything is built, the opcode stream is checked (see ``_check_opcodes``: at
    most ``max_items`` elements, scalar dict keys and set items only, sane memo indices, no
    instance-building opcodes); after, the result is walked once (depth at most
    ``max_depth``, at most ``max_items`` elements counting shared objects at every place,
    no reference cycles) and checked wrappers are replaced by the arrays they hold.

    Python 2 pickles are read with ``encoding="latin1"`` by default (what numpy arrays
    pickled by Python 2 need).  The whole stream (at most ``max_bytes``) is read when the
    unpickler is created, and :meth:`load` reads one pickle.  The opcode check runs in
    Python: a ground-truth file of a few thousand names takes milliseconds, a list of a
    million names about a second.

    Parameters
    ----------
    file : binary file object
    encoding : str
    max_bytes, max_items, max_array_bytes, max_depth : int
        Limits, see :mod:`retrieval_conformance.reference.readers.limits` (:data:`MAX_FILE_BYTES`,
        :data:`MAX_ITEMS`, :data:`MAX_ARRAY_BYTES`, :data:`MAX_DEPTH`).

    Examples
    --------
    >>> import io
    >>> RestrictedUnpickler(io.BytesIO(data)).load()        # doctest: +SKIP
    """

    def __init__(
        self,
        file,
        *,
        encoding: str = "latin1",
        max_bytes: int = MAX_FILE_BYTES,
        max_items: int = MAX_ITEMS,
        max_array_bytes: int = MAX_ARRAY_BYTES,
        max_depth: int = MAX_DEPTH,
        **kwargs,
    ):
        if not 0 <= max_depth <= 500:
            raise ValueError("max_depth must be in [0, 500] (the check walks recursively)")
        self._data = _read_bounded(file, max_bytes, getattr(file, "name", "pickle stream"))
        super().__init__(io.BytesIO(self._data), encoding=encoding, **kwargs)
        self._max_items = max_items
        self._max_array_bytes = max_array_bytes
        self._max_depth = max_depth
        self._array_bytes = 0
        self._loaded = False
        self._globals: Dict[Tuple[str, str], _Global] = {}

    # -- the pickle machine's hooks ---------------------------------------------------
    def find_class(self, module: str, name: str) -> Any:  # noqa: D102 (pickle hook)
        key = _allowed_global(module, name)
        if key not in self._globals:
            self._globals[key] = _Global(".".join(key), self._implementation(key))
        return self._globals[key]

    def persistent_load(self, pid: Any) -> Any:  # noqa: D102 (pickle hook)
        raise pickle.UnpicklingError(f"refused persistent id ({_describe(pid)})")

    def load(self) -> Any:
        """Check the stream, build it, check and finish the result (see the class doc)."""
        if self._loaded:
            raise pickle.UnpicklingError("a RestrictedUnpickler reads one pickle")
        self._loaded = True
        _check_opcodes(self._data, self._max_items)
        try:
            obj = super().load()
        except pickle.UnpicklingError:
            raise
        except Exception as exc:  # TypeError of a wrong call, MemoryError, ...: one type
            raise pickle.UnpicklingError(f"refused pickle: {type(exc).__name__}: {str(exc)[:200]}") from None
        return _finish(obj, self._max_depth, self._max_items)

    # -- our implementations of the allowed globals ----------------------------------
    def _implementation(self, key: Tuple[str, str]) -> Optional[Callable[..., Any]]:
        module, name = key
        if key == ("numpy", "ndarray"):
            return None
        if key == ("numpy", "dtype"):
            return _DtypeProxy
        if name == "_reconstruct":
            return self._reconstruct
        if name == "_frombuffer":
            return self._frombuffer
        if name == "scalar":
            return self._scalar
        return {
            "set": _safe_set,
            "frozenset": _safe_frozenset,
            "bytes": _safe_bytes,
            "bytearray": _safe_bytearray,
            "complex": _safe_complex,
            "encode": _latin1_encode,
        }[name]

    def _reconstruct(self, subtype: Any, shape: Any, code: Any) -> _ArrayProxy:
        if (
            not (isinstance(subtype, _Global) and subtype.qualname == "numpy.ndarray")
            or shape != (0,)
            or code not in (b"b", "b")
        ):
            raise _refuse("refused _reconstruct other than _reconstruct(numpy.ndarray, (0,), b'b')")
        return _ArrayProxy(self._build_array)

    def _frombuffer(self, buf: Any, dtype: Any, shape: Any, order: Any, axis_order: Any = None) -> _Done:
        return _Done(self._build_array(buf, dtype, shape, order, axis_order, "_frombuffer"))

    def _scalar(self, dtype: Any, raw: Any = None) -> _Done:
        if not isinstance(dtype, _DtypeProxy):
            raise _refuse("refused numpy scalar: its dtype is not a numpy.dtype")
        dt = dtype.resolve()
        raw = _as_raw(raw, "numpy scalar")
        if len(raw) != dt.itemsize:
            raise _refuse(f"refused numpy scalar: {len(raw)} bytes for dtype {dt.str}")
        _check_text(raw, dt, "numpy scalar")
        return _Done(np.frombuffer(raw, dtype=dt, count=1)[0])

    def _build_array(self, raw: Any, dtype: Any, shape: Any, order: Any, axis_order: Any, where: str) -> Any:
        """A fresh array from checked pieces; charges ``max_array_bytes``."""
        if not isinstance(dtype, _DtypeProxy):
            raise _refuse(f"refused {where}: the dtype is {_describe(dtype)}, not a numpy.dtype")
        dt = dtype.resolve()
        if not isinstance(shape, tuple) or len(shape) > _MAX_DIMS or not all(type(d) is int and d >= 0 for d in shape):
            raise _refuse(
                f"refused {where}: the shape must be a tuple of at most {_MAX_DIMS} "
                f"non-negative ints, got {_describe(shape)}"
            )
        if order not in ("C", "F", "K"):
            raise _refuse(f"refused {where}: order {_clip(order)}")
        if axis_order is not None and (
            order != "K" or not isinstance(axis_order, tuple) or sorted(axis_order) != list(range(len(shape)))
        ):
            raise _refuse(f"refused {where}: axis order is not a permutation of the axes")
        raw = _as_raw(raw, where)
        count = math.prod(shape)
        nbytes = count * dt.itemsize
        if nbytes != len(raw):
            raise _refuse(
                f"refused {where}: {len(raw):,} bytes of data for shape {shape} of {dt.str} ({nbytes:,} bytes)"
            )
        self._array_bytes += nbytes
        if self._array_bytes > self._max_array_bytes:
            raise _refuse(
                f"the pickle's arrays exceed {_size(self._max_array_bytes)} in total "
                "(max_array_bytes); pass max_array_bytes=... to read it"
            )
        _check_text(raw, dt, where)
        try:
            flat = np.frombuffer(raw, dtype=dt, count=count)
            if axis_order is not None:
                out = flat.reshape(shape, order="C").transpose(axis_order)
            else:
                out = flat.reshape(shape, order="F" if order == "F" else "C")
            return np.array(out, copy=True, order="K")  # owns writable memory, same layout
        except (ValueError, TypeError, MemoryError) as exc:
            raise _refuse(f"refused {where}: {type(exc).__name__}: {str(exc)[:200]}") from None


# -- the result --------------------------------------------------------------------------
_ATOMS = (type(None), bool, int, float, complex, str, bytes, bytearray)


def _finish(root: Any, max_depth: int, max_items: int) -> Any:
    """Check what the pickle machine built and swap checked wrappers for their values.

    One walk, each object once (memoised by ``id``): containers deeper than ``max_depth``,
    more than ``max_items`` container elements when shared objects count at every place
    they appear (what a ``repr`` or a deep copy would visit: an array counts as one
    element), reference cycles, bare globals and unfinished arrays are refused.
    """
    done: Dict[int, Tuple[Any, int]] = {}
    active = set()

    def visit(obj: Any, depth: int) -> Tuple[Any, int]:
        if type(obj) in _ATOMS:
            return obj, 0
        key = id(obj)
        if key in done:
            return done[key]
        if isinstance(obj, _Done):
            result = (obj.value, 0)
        elif isinstance(obj, _ArrayProxy):
            if obj.value is None:
                raise _refuse("refused an array without its state (no BUILD)")
            result = (obj.value, 0)
        elif isinstance(obj, _DtypeProxy):
            result = (obj.resolve(), 0)
        elif isinstance(obj, _Global):
            raise _refuse(f"refused a bare global ({obj.qualname}) in the data")
        elif type(obj) in (list, tuple, dict, set, frozenset):
            if depth >= max_depth:
                raise _refuse(
                    f"refused data nested deeper than {max_depth} containers (max_depth); pass max_depth=... to read it"
                )
            if key in active:
                raise _refuse("refused data with a reference cycle")
            active.add(key)
            total = len(obj)  # its elements, plus theirs (counted again wherever shared)
            if type(obj) is list:
                for i, item in enumerate(obj):
                    if type(item) not in _ATOMS:  # (atoms inline: long lists of names)
                        obj[i], size = visit(item, depth + 1)
                        total += size
                value = obj
            elif type(obj) is tuple:
                parts = []
                for item in obj:
                    new, size = visit(item, depth + 1)
                    parts.append(new)
                    total += size
                    if total > max_items:
                        break
                same = len(parts) == len(obj) and all(a is b for a, b in zip(parts, obj))
                value = obj if same else tuple(parts)
            elif type(obj) is dict:
                for k, item in obj.items():  # keys are scalars (checked with the opcodes)
                    if type(item) not in _ATOMS:
                        obj[k], size = visit(item, depth + 1)
                        total += size
                value = obj
            else:  # set, frozenset: scalar items only (checked with the opcodes)
                value = obj
            active.discard(key)
            result = (value, total)
        else:
            raise _refuse(f"refused a {type(obj).__name__} in the data")
        if result[1] > max_items:
            raise _refuse(
                f"refused data of more than {max_items:,} elements when shared "
                "objects are counted at every place (max_items); pass "
                "max_items=... to read it"
            )
        done[key] = result
        return result

    return visit(root, 0)[0]


def _limits(max_bytes: int, max_items: int, max_array_bytes: int, max_depth: int) -> Dict[str, int]:
    return dict(max_bytes=max_bytes, max_items=max_items, max_array_bytes=max_array_bytes, max_depth=max_depth)


def load_restricted_pickle(
    source: Union[PathLike, bytes, io.IOBase],
    *,
    max_bytes: int = MAX_FILE_BYTES,
    max_items: int = MAX_ITEMS,
    max_array_bytes: int = MAX_ARRAY_BYTES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """Load a pickle with :class:`RestrictedUnpickler`.

    Parameters
    ----------
    source : path, bytes or binary file object
        A path must name a regular file (see :mod:`retrieval_conformance.reference.readers.limits`
        for what is refused).
    max_bytes, max_items, max_array_bytes, max_depth : int
        Limits, see :mod:`retrieval_conformance.reference.readers.limits`.

    Raises
    ------
    pickle.UnpicklingError
        For anything refused (the message names it).
    FileRefusedError, OSError
        For a file that is not read (missing, a FIFO or device, beyond ``max_bytes``).
    """
    limits = _limits(max_bytes, max_items, max_array_bytes, max_depth)
    if isinstance(source, (bytes, bytearray)):
        if len(source) > max_bytes:
            raise FileRefusedError(
                "pickle data",
                f"larger than the limit of {_size(max_bytes)}",
                "pass max_bytes=... to read it",
                limit="max_bytes",
            )
        return RestrictedUnpickler(io.BytesIO(bytes(source)), **limits).load()
    if hasattr(source, "read"):
        return RestrictedUnpickler(source, **limits).load()
    data = _read_file(source, max_bytes)
    return RestrictedUnpickler(io.BytesIO(data), **limits).load()
