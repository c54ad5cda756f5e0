"""The changes of one array argument that :mod:`.changes` applies: its layout (a list, Fortran
order, a negative stride, read-only, a torch tensor), its type (objects, a generator, ragged rows),
its shape (transposed, a row or a column missing), and values it must refuse (non-finite, huge or
fractional ids).

Each ``make(arr)`` returns the changed argument, or None where the change does not apply to it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

import numpy as np

from .case import torch_or_none


def ragged(arr):
    rows = arr.tolist()
    if arr.ndim != 2 or len(rows) < 2 or arr.shape[1] < 2:
        return None
    rows[-1] = rows[-1][:-1]
    return rows


def negative_stride(arr):
    # the same values, seen through a view that walks memory backwards
    return np.flip(np.ascontiguousarray(np.flip(arr, 0)), 0)


def read_only(arr):
    arr = arr.copy()
    arr.setflags(write=False)
    return arr


def with_nonfinite(d):
    def make(arr):
        if arr.size == 0:
            return None
        arr = arr.astype(np.float64)
        arr.flat[d.integer(0, arr.size - 1)] = d.choice((np.nan, np.inf, -np.inf))
        return arr

    return make


def tensor(d, dtype_name: Optional[str] = None, layout: str = "strided"):
    def make(arr):
        torch = torch_or_none()
        if torch is None:
            return None
        t = torch.from_numpy(np.ascontiguousarray(arr))
        if dtype_name is not None:
            t = t.to(getattr(torch, dtype_name))
        if layout == "sparse":
            return t.to_sparse() if t.ndim >= 1 else None
        if layout == "meta":
            return t.to("meta")
        if layout == "grad":
            return t.double().requires_grad_(True) if t.dtype.is_floating_point else None
        if layout == "noncontiguous":
            return t.t().contiguous().t() if t.ndim == 2 else None
        return t

    return make


def transpose(arr):
    return arr.T if arr.ndim == 2 and arr.shape[0] != arr.shape[1] else None


def drop_row(arr):
    return arr[:-1] if arr.ndim >= 1 and arr.shape[0] >= 1 else None


def drop_column(arr):
    return arr[:, :-1] if arr.ndim == 2 and arr.shape[1] >= 1 else None


def huge_ids(d):
    def make(arr):
        if arr.ndim != 1:
            return None
        size = np.abs(arr).astype(np.float64) + 1  # >= 1, so every value below is out of range (-1 too)
        return d.choice(
            (
                size * 1e20,  # floats >= 2**63: would merge in int64
                np.where(arr >= 0, arr, 0).astype(np.uint64) + np.uint64(2**64 - 4),  # beyond int64
                arr.astype(np.float64) + 0.5,  # not integers
                size * float(2**53),  # at or beyond float64's exact integers
            )
        )

    return make


def generator(arr):
    return (row for row in arr.tolist())


def fixed(make):
    """``make`` needs no drawer."""
    return lambda d: make


def as_fractions(arr):
    return np.array([Fraction(int(x)) for x in arr.flat], dtype=object).reshape(arr.shape)
