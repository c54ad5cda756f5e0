"""What one call of a user's function did (:class:`Outcome`), and the returned value made plain.

Whatever the function returns is converted for the harness: tensors become numpy arrays,
containers are converted element-wise, objects the harness cannot use are kept as their repr
(:class:`Opaque`).  Captured output is clipped to :data:`OUTPUT_LIMIT` characters.
"""

from __future__ import annotations

import decimal
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional, Tuple

import numpy as np

OUTPUT_LIMIT = 2000


@dataclass
class Outcome:
    """What one call did.

    ``kind`` is ``ok`` (``value`` holds the result converted by :func:`to_plain`),
    ``raised`` (``error`` is ``"TypeName: message"``, its first OUTPUT_LIMIT characters), ``timeout`` or
    ``crashed``.
    ``type_name`` describes the returned object before conversion (e.g. ``torch.Tensor``).
    ``stdout``/``stderr``: what the function wrote (at most :data:`OUTPUT_LIMIT` characters each,
    the last part, see :func:`clip_output`).  ``seconds``: how long the call took.
    ``mutated``: labels of the arguments the function modified in place, e.g.
    ``"argument 2 (query_labels)"`` or ``"keyword argument k"`` (empty when unknown, i.e. after a
    time-out or crash).  ``warmup``: the call was a warm-up (see the module docstring) and ran
    under the warm-up time limit.  ``limit``: the time limit that applied (None: no limit).
    """

    kind: str
    value: Any = None
    type_name: str = ""
    error: str = ""
    traceback: str = ""
    stdout: str = ""
    seconds: float = 0.0
    stderr: str = ""
    mutated: Tuple[str, ...] = ()
    warmup: bool = False
    limit: Optional[float] = None

    @property
    def ok(self) -> bool:
        return self.kind == "ok"

    @property
    def error_line(self) -> str:
        """The error's first line (empty when there is none, as after a time-out)."""
        lines = self.error.strip().splitlines()
        return lines[0] if lines else ""

    @property
    def failure(self) -> str:
        """What a call that did not return a value did, in a few words: ``raised ValueError: ...``,
        ``did not return within 5 s``, ``crashed: the worker process died (...)``."""
        if self.kind == "timeout":
            return f"did not return within {self.limit:g} s" if self.limit else "did not return"
        if self.kind == "raised":
            return f"raised {self.error_line}"
        return f"{self.kind}: {self.error_line}" if self.error_line else self.kind


def clip_output(text: str, limit: int = OUTPUT_LIMIT, cut: int = 0) -> str:
    """``text`` if it has at most ``limit`` characters, else its last part behind a
    ``"[... N characters cut]"`` line, ``limit`` characters in all.  ``cut`` counts characters
    already dropped before ``text``."""
    if cut <= 0 and len(text) <= limit:
        return text
    keep = limit
    for _ in range(3):  # the marker's length depends on the count it shows
        marker = f"[... {cut + len(text) - keep} characters cut]\n"
        keep = max(0, min(len(text), limit - len(marker)))
    marker = f"[... {cut + len(text) - keep} characters cut]\n"
    return (marker + text[len(text) - keep :])[-limit:] if keep else marker[:limit]


def type_name(obj: Any) -> str:
    t = type(obj)
    mod = t.__module__
    name = t.__qualname__
    if mod in ("builtins",):
        base = name
    else:
        base = f"{mod.split('.')[0]}.{name}" if mod.startswith(("torch", "numpy")) else f"{mod}.{name}"
    if isinstance(obj, (tuple, list)) and len(obj) <= 5:
        return f"{base}[{', '.join(type_name(x) for x in obj)}]"
    if hasattr(obj, "shape") and hasattr(obj, "dtype"):
        try:
            return f"{base}(shape={tuple(obj.shape)}, dtype={obj.dtype})"
        except Exception:
            return base
    return base


class Opaque:
    """Stand-in for a returned object the harness cannot use (kept as its repr, and ``why``:
    what failed when it was read, e.g. its ``__float__`` raising)."""

    def __init__(self, obj: Any, why: str = ""):
        self.type_name = type_name(obj)
        try:
            text = repr(obj)
        except Exception as exc:  # a broken __repr__ is the function's problem, not ours
            text = f"<repr() raised {type(exc).__name__}>"
        self.text = text if len(text) <= 200 else text[:200] + "..."
        self.why = why[:300]

    def __repr__(self) -> str:
        return f"<{self.type_name}: {self.text}>" + (f" ({self.why})" if self.why else "")


def is_tensor(obj: Any) -> bool:
    """A torch tensor (or anything that detaches to numpy like one)."""
    return hasattr(obj, "detach") and hasattr(obj, "cpu") and hasattr(obj, "numpy")


#: returned as they are; a subclass of one of them is another library's number (below)
_PLAIN_TYPES = (type(None), bool, int, float, complex, str, Fraction)


def to_plain(obj: Any) -> Any:
    """Tensors -> numpy arrays, containers converted element-wise, other objects -> :class:`Opaque`.

    Numbers, numpy scalars and arrays, strings and None pass through unchanged; other real
    numbers (a float subclass, ``Decimal``, another library's scalar) become floats, or an
    :class:`Opaque` saying why not when their conversion raises.
    """
    if type(obj) in _PLAIN_TYPES or isinstance(obj, (np.generic, np.ndarray)):
        return obj
    if isinstance(obj, (numbers.Real, decimal.Decimal)):  # a float crosses processes
        try:
            return float(obj)
        except Exception as exc:  # whatever its __float__ raises
            return Opaque(obj, f"float() raised {type(exc).__name__}: {exc}")
    if is_tensor(obj):
        try:
            return obj.detach().cpu().numpy()
        except Exception:  # e.g. bfloat16
            return obj.detach().cpu().float().numpy()
    if isinstance(obj, (tuple, list)):
        return type(obj)(to_plain(x) for x in obj) if isinstance(obj, list) else tuple(to_plain(x) for x in obj)
    if isinstance(obj, dict):
        return {k: to_plain(v) for k, v in obj.items()}
    return Opaque(obj)


def to_torch(obj: Any) -> Any:
    """numpy arrays -> CPU tensors of the same dtype (containers element-wise)."""
    import torch

    if isinstance(obj, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(obj).copy())
    if isinstance(obj, tuple):
        return tuple(to_torch(x) for x in obj)
    if isinstance(obj, list):
        return [to_torch(x) for x in obj]
    if isinstance(obj, dict):
        return {k: to_torch(v) for k, v in obj.items()}
    return obj
