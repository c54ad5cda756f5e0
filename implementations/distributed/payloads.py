"""The payloads ranks exchange, as bytes without pickle: a JSON header for the structure and the
scalars, and the numpy arrays in ``.npz`` form read back with ``allow_pickle=False``.

A payload is built from ``dict`` (string keys), ``list``, ``tuple``, ``None``, ``bool``, ``int``,
``float``, ``str``, numpy arrays of a non-object dtype and numpy scalars.  Decoding builds
nothing but these, so bytes from another rank can never run code here (``pickle.loads`` would
run whatever the bytes name).  The round trip is exact: an array keeps its dtype, shape and bits,
a float its bits (written as ``float.hex``), a tuple stays a tuple.

Layout: the header's length (8 bytes, little-endian), the header (UTF-8 JSON), the ``.npz``
archive (``arr_0``, ``arr_1``, ... in the order the header refers to them).  In the header a JSON
``null``, boolean, integer or string stands for itself; every other value is an object of one
key: ``{"float": hex}``, ``{"list": [...]}``, ``{"tuple": [...]}``, ``{"dict": [[key, value],
...]}``, ``{"array": i}`` or ``{"scalar": i}`` (a numpy scalar, stored as a 0-d array).
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any, List

import numpy as np

#: bytes of the header's length
_LENGTH = 8


def encode_payload(value: Any) -> bytes:
    """``value`` as bytes (see the module docstring for what it may hold).

    Raises ``TypeError`` naming the value's type (and where it sits) for anything else.
    """
    arrays: List[np.ndarray] = []
    header = json.dumps(_node(value, arrays, "payload"), separators=(",", ":")).encode("utf-8")
    archive = io.BytesIO()
    np.savez(archive, *arrays)  # named arr_0, arr_1, ... in order
    return len(header).to_bytes(_LENGTH, "little") + header + archive.getvalue()


def decode_payload(data: bytes) -> Any:
    """The value :func:`encode_payload` turned into ``data``.

    Raises ``ValueError`` when ``data`` is not such a payload.
    """
    if len(data) < _LENGTH:
        raise ValueError(f"payload: expected at least {_LENGTH} bytes (the header's length), got {len(data)}")
    size = int.from_bytes(data[:_LENGTH], "little")
    if size > len(data) - _LENGTH:
        raise ValueError(f"payload: its header claims {size} bytes, but only {len(data) - _LENGTH} follow")
    try:
        header = json.loads(data[_LENGTH : _LENGTH + size].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"payload: the header is not UTF-8 JSON ({exc})") from None
    try:
        with np.load(io.BytesIO(data[_LENGTH + size :]), allow_pickle=False) as archive:
            arrays = [archive[f"arr_{i}"] for i in range(len(archive.files))]
    except (EOFError, OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise ValueError(
            f"payload: the arrays after the header are not an .npz archive of arr_0, arr_1, ... "
            f"({type(exc).__name__}: {exc})"
        ) from None
    return _value(header, arrays)


def _node(value: Any, arrays: List[np.ndarray], where: str) -> Any:
    """The header node of ``value``; its arrays appended to ``arrays``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError(
                f"{where}: an array of dtype {value.dtype} cannot travel without pickle; give "
                "numbers, booleans or fixed-width strings"
            )
        arrays.append(value)
        return {"array": len(arrays) - 1}
    if isinstance(value, np.generic):
        if value.dtype.hasobject:  # pragma: no cover - numpy has no object scalar type of its own
            raise TypeError(f"{where}: a numpy scalar of dtype {value.dtype} cannot travel without pickle")
        arrays.append(np.asarray(value))
        return {"scalar": len(arrays) - 1}
    if isinstance(value, int):  # after bool, which is an int
        return int(value)
    if isinstance(value, float):
        return {"float": float(value).hex()}
    if isinstance(value, (list, tuple)):
        kind = "tuple" if isinstance(value, tuple) else "list"
        return {kind: [_node(v, arrays, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"{where}: a dict key must be a str to travel, got {type(key).__name__} {key!r}")
        return {"dict": [[key, _node(v, arrays, f"{where}[{key!r}]")] for key, v in value.items()]}
    raise TypeError(
        f"{where}: a {type(value).__module__}.{type(value).__qualname__} cannot travel between ranks; "
        "give dicts, lists, tuples, None, bools, ints, floats, strs and numpy arrays or scalars"
    )


def _value(node: Any, arrays: List[np.ndarray]) -> Any:
    """The value of a header node (the inverse of :func:`_node`)."""
    if node is None or isinstance(node, (bool, str, int)):
        return node
    if not isinstance(node, dict) or len(node) != 1:
        raise ValueError(f"payload: unexpected header node {node!r:.80}")
    ((kind, content),) = node.items()
    if kind == "float":
        return float.fromhex(content)
    if kind in ("list", "tuple"):
        items = [_value(v, arrays) for v in content]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {key: _value(v, arrays) for key, v in content}
    if kind in ("array", "scalar"):
        if not isinstance(content, int) or not 0 <= content < len(arrays):
            raise ValueError(f"payload: the header refers to array {content!r}, but the archive holds {len(arrays)}")
        return arrays[content] if kind == "array" else arrays[content][()]
    raise ValueError(f"payload: unknown header node kind {kind!r}")
