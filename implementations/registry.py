"""One interface for every implementation, and the registry that names them.

An implementation turns a validated :class:`~retrieval_conformance.reference.problem.Problem`
and resolved :class:`~retrieval_conformance.reference.problem.Options` into a
:class:`~retrieval_conformance.reference.problem.PerQuery`.  Validation happens before (in
the front end) and aggregation after (shared), so implementations differ only in how they
compute, never in what they accept or how they average.
"""
from __future__ import annotations

import importlib
from typing import Callable, Dict, List, Optional

from retrieval_conformance.reference.problem import Options, PerQuery, Problem


class ImplementationUnavailable(RuntimeError):
    """Raised when an implementation cannot run here; the message says why and what to do."""


class Implementation:
    """Base class.  Subclasses set ``name`` and ``speed_rank`` and override :meth:`compute`.

    ``speed_rank``: lower is faster; ``implementation="auto"`` picks the available one with
    the lowest rank.
    """

    name: str = ""
    speed_rank: int = 100

    def unavailable_reason(self) -> Optional[str]:
        """None when the implementation can run here, else a sentence saying why not."""
        return None

    def compute(self, problem: Problem, options: Options) -> PerQuery:  # pragma: no cover
        raise NotImplementedError


# name -> "module:attribute" (imported lazily, so a missing optional dependency only
# affects its own implementation)
_SPECS: Dict[str, str] = {
    "reference": "retrieval_conformance.reference.backend:ReferenceImplementation",
    "numpy": "retrieval_conformance.implementations.numpy_backend:NumpyImplementation",
    "torch": "retrieval_conformance.implementations.torch_backend:TorchImplementation",
    "c": "retrieval_conformance.implementations.c_backend:CImplementation",
}
_CACHE: Dict[str, Implementation] = {}
#: the built-in implementations' ``speed_rank``, known without importing them
_BUILT_IN_RANKS = {"c": 0, "numpy": 10, "torch": 20, "reference": 1000}


def _speed_rank(name: str) -> int:
    return _BUILT_IN_RANKS[name] if name in _BUILT_IN_RANKS and not callable(_SPECS[name]) else _load(name).speed_rank


def names() -> List[str]:
    """Every registered implementation name, available or not."""
    return list(_SPECS)


def register(name: str, factory: Callable[[], Implementation]) -> None:
    """Register an extra implementation (a factory called once, lazily)."""
    _CACHE.pop(name, None)
    _SPECS[name] = factory  # type: ignore[assignment]


def unregister(name: str) -> None:
    """Remove an implementation added with :func:`register` (the built-in ones stay)."""
    if name in ("reference", "numpy", "torch", "c"):
        raise ValueError(f"name: {name!r} is built in and cannot be unregistered")
    _SPECS.pop(name, None)
    _CACHE.pop(name, None)


def _load(name: str) -> Implementation:
    if name in _CACHE:
        return _CACHE[name]
    spec = _SPECS[name]
    if callable(spec):
        impl = spec()
    else:
        module, attr = spec.split(":")
        impl = getattr(importlib.import_module(module), attr)()
    _CACHE[name] = impl
    return impl


def unavailable_reason(name: str) -> Optional[str]:
    """None if ``name`` can run here, else why not."""
    if name not in _SPECS:
        return f"unknown implementation {name!r}; expected one of {names()} or 'auto'"
    try:
        impl = _load(name)
    except ImportError as exc:  # a module that needs a missing optional dependency
        return f"{name}: cannot import ({exc})"
    return impl.unavailable_reason()


def available() -> List[str]:
    """Names of the implementations that can run here."""
    return [n for n in names() if unavailable_reason(n) is None]


def get(name: str) -> Implementation:
    """The implementation called ``name`` (or the fastest available one for ``"auto"``).

    Raises ``ValueError`` for an unknown name and :class:`ImplementationUnavailable` when it
    cannot run here.
    """
    if name == "auto":
        # fastest first, loading each only when the faster ones cannot run: picking C must not
        # import torch (seconds on a first call)
        for candidate in sorted(names(), key=_speed_rank):
            if unavailable_reason(candidate) is None:
                return _load(candidate)
        raise ImplementationUnavailable("no implementation can run here")  # the reference always can
    if name not in _SPECS:
        raise ValueError(
            f"implementation: unknown implementation {name!r}; expected one of "
            f"{names()} or 'auto'"
        )
    reason = unavailable_reason(name)
    if reason is not None:
        raise ImplementationUnavailable(f"implementation {name!r} is unavailable: {reason}")
    return _load(name)
