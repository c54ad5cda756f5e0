"""Arguments read as numpy arrays: array-likes and torch tensors in, a named error for anything else.

The first step of validation (``validation.py`` checks values, ``ids.py`` ids): nothing is
converted silently, so a generator, a set, a ragged list or a tensor without plain values is
refused here, naming the argument.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence, Tuple, cast

import numpy as np

#: arguments that hold ids, compared only for equality: integers, or strings (see :func:`joint_ids`)
ID_ARGUMENTS = ("query_labels", "db_labels", "query_cams", "db_cams")


def to_numpy(name: str, value: Any) -> np.ndarray:
    """Accept numpy arrays, array-likes and torch tensors (moved to the CPU).

    Everything else is refused here, by name, before numpy can turn it into something else:
    a generator or a set would become a 0-d object array, a string an array of one string.
    """
    if value is None:
        raise TypeError(f"{name}: expected an array, got None")
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor, without importing torch
        value = _tensor_to_numpy(name, value)
    elif isinstance(value, (str, bytes, bytearray, dict, set, frozenset)) or hasattr(value, "__next__"):
        raise TypeError(
            f"{name}: expected an array (numpy array, torch tensor or nested list of numbers), "
            f"got a {type(value).__name__}; pass np.asarray(list(...)) of the values instead"
        )
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(
            f"{name}: expected a rectangular array of numbers, got a {type(value).__name__} numpy cannot "
            f"read as one ({str(exc)[:200]}); every row must have the same length"
        ) from None
    if arr.dtype == object and name in ID_ARGUMENTS and arr.size and all(isinstance(x, str) for x in arr.flat):
        arr = arr.astype(str)  # string ids from a pandas column or a list of Python strings
    if arr.dtype == object:
        raise TypeError(
            f"{name}: expected an array of numbers, got dtype=object (ragged rows, or Python objects such "
            "as Fraction or Decimal?); pass a float or integer array, e.g. np.asarray(x, dtype=np.float64)"
        )
    if arr.dtype.fields is not None or arr.dtype.kind == "V":  # strings, complex, ...: the callers name them
        raise TypeError(f"{name}: expected real numbers, got dtype={arr.dtype}; pass a float, integer or bool array")
    return arr


def _tensor_to_numpy(name: str, tensor: Any) -> np.ndarray:
    """A torch tensor's values as a numpy array, or a named error for tensors without plain values."""
    layout = str(getattr(tensor, "layout", "torch.strided"))
    if layout != "torch.strided":
        raise TypeError(f"{name}: got a torch tensor with layout={layout}; pass a dense one: {name}.to_dense()")
    device = str(getattr(tensor, "device", "cpu"))
    if device == "meta":
        raise TypeError(
            f"{name}: got a torch tensor on the 'meta' device, which has a shape but no values; "
            "pass a tensor that holds the values (on any real device)"
        )
    dtype = str(getattr(tensor, "dtype", ""))
    if dtype == "torch.bfloat16":
        tensor = tensor.float()  # exact: every bfloat16 is a float32 (numpy has no bfloat16)
    elif dtype.startswith("torch.complex"):
        raise TypeError(f"{name}: expected real numbers, got a tensor of dtype={dtype}; pass a real tensor")
    try:
        return tensor.detach().cpu().numpy()
    except Exception as exc:  # quantized, nested or other tensors numpy cannot view
        raise TypeError(
            f"{name}: cannot read this torch tensor (dtype={dtype}, device={device}: {str(exc)[:200]}); "
            f"pass a plain dense tensor, e.g. {name}.to_dense().float()"
        ) from None


def array_input(name: str, value: Any) -> np.ndarray:
    """An array argument as a numpy array (no copy for numpy arrays and CPU tensors), at least 1-D."""
    arr = to_numpy(name, value)
    if arr.ndim == 0:
        raise TypeError(
            f"{name}: expected an array, got the scalar {str(arr.item())[:40]!s} ({type(value).__name__}); "
            "pass one value per query or gallery item"
        )
    return arr


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters: a message must stay readable whatever was passed."""
    if isinstance(value, int) and value.bit_length() > 128:  # repr() of 4,300 digits raises; nobody reads them
        return f"{'a negative' if value < 0 else 'an'} integer of {value.bit_length():,} bits"
    text = object.__repr__(value) if isinstance(value, (list, tuple, dict, set)) and len(value) > 20 else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def position_text(arr: np.ndarray, mask: np.ndarray) -> str:
    return index_text(np.argwhere(mask)[0])


def index_text(index: Sequence[int]) -> str:
    """An array index as messages show it: ``[3, 17]``."""
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


#: elements a whole-array check reads at a time, so that its temporaries (a boolean mask per
#: test) stay this small however large the array is
CHUNK_ITEMS = 1 << 18


def first_where(arr: np.ndarray, test: Callable[[np.ndarray], np.ndarray]) -> Optional[Tuple[int, ...]]:
    """The index of the first element (in row-major order, as ``np.argwhere`` lists them) for
    which the vectorised ``test`` is true, or None; ``arr`` is read ``CHUNK_ITEMS`` elements at a
    time, whatever its memory layout."""
    seen = 0
    with np.nditer(
        arr, flags=["external_loop", "buffered", "zerosize_ok"], order="C", buffersize=CHUNK_ITEMS
    ) as chunks:
        for chunk in cast(Iterable[np.ndarray], chunks):  # one operand: each chunk is one array
            hit = test(chunk)
            i = int(hit.argmax())
            if hit[i]:
                return tuple(int(j) for j in np.unravel_index(seen + i, arr.shape))
            seen += chunk.shape[0]
    return None


def check_ndim(name: str, arr: np.ndarray, ndim: int, what: str) -> None:
    if arr.ndim != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D array ({what}), got shape {arr.shape}")
