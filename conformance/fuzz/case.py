"""The :class:`Case` the fuzz campaign runs: a problem, the change made to it, and what to expect.

The valid problems it starts from are built by
:func:`retrieval_conformance.conformance.problems.evaluate_inputs.evaluate_problem`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class Case:
    """One input of the campaign: ``kwargs`` for ``rc.evaluate`` (without ``implementation``)."""

    kwargs: Dict[str, Any]
    change: str = "none"
    expect: str = "value"  # "value", "error" or "either"
    twin: Optional[Dict[str, Any]] = None
    relation: str = "same"  # how the result relates to the twin's
    notes: List[str] = field(default_factory=list)

    def describe(self) -> str:
        """A short, bounded description (never the repr of a possibly huge or hostile value)."""
        parts = []
        for key, value in self.kwargs.items():
            parts.append(f"{key}={short_repr(value)}")
        return f"[{self.change}] " + ", ".join(parts)


def short_repr(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, (int, float)):
        return f"<{type(value).__name__} {getattr(value, 'dtype', '')} {tuple(shape)}>"
    if isinstance(value, (list, tuple)):
        return f"<{type(value).__name__} of {len(value)}>"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_TORCH: Any = None


def torch_or_none():
    """torch if installed (imported once, only when a change needs it), else None."""
    global _TORCH
    if _TORCH is None:
        try:
            import torch
        except ImportError:
            torch = False
        _TORCH = torch
    return _TORCH or None
