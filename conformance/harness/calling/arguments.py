"""The arguments a function gets: private copies, and which of them it modified in place.

The function always gets copies of the caller's arguments; after the call, :func:`mutations`
compares them with pristine copies (:func:`snapshot`) and names the arguments that changed.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Dict, Sequence, Tuple

import numpy as np
from retrieval_conformance.conformance.harness.calling.outcome import is_tensor


class _Uncopyable:
    """Marks a value that could not be copied, so it cannot be checked for changes either."""


_UNCOPYABLE = _Uncopyable()
_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, np.generic)


def snapshot(obj: Any) -> Any:
    """An independent copy: arrays and tensors copied, containers element-wise, other objects deep-copied."""
    if isinstance(obj, _IMMUTABLE):
        return obj
    if isinstance(obj, np.ndarray):
        return obj.copy()
    if is_tensor(obj) and hasattr(obj, "clone"):
        try:
            return obj.detach().clone()
        except Exception:
            return _UNCOPYABLE
    if type(obj) is list:
        return [snapshot(x) for x in obj]
    if type(obj) is tuple:
        return tuple(snapshot(x) for x in obj)
    if type(obj) is dict:
        return {k: snapshot(v) for k, v in obj.items()}
    try:
        return copy.deepcopy(obj)
    except Exception:
        return _UNCOPYABLE


def _same_tensor(now: Any, before: Any) -> bool:
    if not is_tensor(now) or tuple(now.shape) != tuple(before.shape) or now.dtype != before.dtype:
        return False
    now, before = now.detach(), before.detach()
    if now.is_floating_point() or now.is_complex():
        return bool(((now == before) | (now.isnan() & before.isnan())).all())
    return bool((now == before).all())


def _same(now: Any, before: Any) -> bool:
    """Whether ``now`` (what the function got) still equals ``before`` (its pristine copy).
    Values that cannot be compared count as unchanged."""
    if before is _UNCOPYABLE or now is before:
        return True
    try:
        if isinstance(before, np.ndarray):
            if not isinstance(now, np.ndarray) or now.shape != before.shape or now.dtype != before.dtype:
                return False
            try:
                return bool(np.array_equal(now, before, equal_nan=True))
            except TypeError:  # equal_nan on non-numeric dtypes
                return bool(np.array_equal(now, before))
        if is_tensor(before):
            return _same_tensor(now, before)
        if isinstance(before, (list, tuple)):
            return (
                type(now) is type(before) and len(now) == len(before) and all(_same(a, b) for a, b in zip(now, before))
            )
        if isinstance(before, dict):
            return isinstance(now, dict) and list(now) == list(before) and all(_same(now[k], before[k]) for k in before)
        if isinstance(before, float) and isinstance(now, float) and math.isnan(before):
            return math.isnan(now)
        equal = now == before
        return bool(equal) if isinstance(equal, (bool, np.bool_)) else True
    except Exception:
        return True


def _argument_label(index: int, names: Sequence[str]) -> str:
    if index < len(names) and names[index]:
        return f"argument {index + 1} ({names[index]})"
    return f"argument {index + 1}"


def mutations(
    args: Sequence, kwargs: Dict[str, Any], pristine: Tuple[Sequence, Dict[str, Any]], names: Sequence[str]
) -> Tuple[str, ...]:
    before_args, before_kwargs = pristine
    out = [
        _argument_label(i, names) for i, (now, before) in enumerate(zip(args, before_args)) if not _same(now, before)
    ]
    out += [
        f"keyword argument {key}"
        for key in kwargs
        if key in before_kwargs and not _same(kwargs[key], before_kwargs[key])
    ]
    return tuple(out)
