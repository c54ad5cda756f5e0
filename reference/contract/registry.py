"""One interface for every implementation, and the registry that names them.

An implementation turns a validated :class:`~retrieval_conformance.reference.contract.problem.Problem`
and resolved :class:`~retrieval_conformance.reference.contract.problem.Options` into a
:class:`~retrieval_conformance.reference.contract.problem.PerQuery`.  Validation happens before (in
the front end) and aggregation after (shared), so implementations differ only in how they
compute, never in what they accept or how they average.

A third party adds an implementation without editing this project, through the entry-point
group ``retrieval_conformance.implementations`` (``name = "package.module:Factory"`` in its
``pyproject.toml``, where ``Factory()`` returns an :class:`Implementation`), or at run time
with :func:`register`.  Built-in names cannot be replaced.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, Iterable, List, Optional, TypeVar

from retrieval_conformance.reference.contract.install_hints import install_hint
from retrieval_conformance.reference.contract.problem import Options, PerQuery, Problem


class ImplementationUnavailable(RuntimeError):
    """Raised when an implementation cannot run here; the message says why and what to do."""


class Implementation:
    """Base class.  Subclasses set ``name`` and ``speed_rank`` and override :meth:`compute`.

    ``speed_rank``: lower is faster; ``implementation="auto"`` picks the available one with
    the lowest rank.  ``reads_scores``: ``evaluate`` hands similarity scores over as
    ``Problem.scores`` instead of negating them into ``Problem.distances`` (a copy of the
    whole matrix that such an implementation does not need).  ``reads_packed_codes``: a gallery
    of binary codes is handed over packed (``Problem.db_words``) and not as ``db_bits`` (one
    byte per bit, which such an implementation would only pack again).  ``checks_finite``:
    ``evaluate`` leaves the check of distances and scores for NaN/inf to the implementation,
    which reads them anyway (``Problem.finite`` False); it raises
    :class:`~.validation.NonFiniteError` with ``name`` and ``at`` (the first one, row-major),
    before any result, and ``evaluate`` shows the error its own check would have shown.
    """

    name: str = ""
    speed_rank: int = 100
    reads_scores: bool = False
    reads_packed_codes: bool = False
    checks_finite: bool = False

    def unavailable_reason(self) -> Optional[str]:
        """None when the implementation can run here, else a sentence saying why not."""
        return None

    def prepare(self, problem: Problem) -> Optional[object]:
        """Work that depends only on the gallery (packing codes, sorting ids), done once per
        evaluation.  ``evaluate`` passes what it returns to ``compute(..., state=...)`` for
        every query block of ``problem``'s gallery; None (the default) passes nothing."""
        return None

    def compute(self, problem: Problem, options: Options) -> PerQuery:  # pragma: no cover
        """Per-query values of ``problem`` under ``options``; with :meth:`prepare`, also
        ``state=`` (what it returned for this gallery)."""
        raise NotImplementedError


#: what a prepared gallery array's maker returns
Made = TypeVar("Made")


class PreparedGallery:
    """The gallery-side arrays of one evaluation, each made once, by the first block that asks
    (packed codes, sorted ids, arrays moved to a device): what :meth:`Implementation.prepare`
    returns for the built-in implementations.

    Bound to the gallery arrays it was made from (by identity): ``evaluate`` hands every query
    block the same validated gallery arrays, and a problem with other arrays gets a new store.
    """

    def __init__(self, problem: Problem):
        self._sources = _gallery_sources(problem)
        self._arrays: dict = {}

    def matches(self, problem: Problem) -> bool:
        arrays, rest = _gallery_sources(problem)
        return all(a is b for a, b in zip(self._sources[0], arrays)) and self._sources[1] == rest

    def get(self, name: str, make: Callable[[], Made]) -> Made:
        """The array stored as ``name``, made by ``make`` the first time (a name is always made
        by the same kind of ``make``, so it holds the type ``make`` returns)."""
        if name not in self._arrays:
            self._arrays[name] = make()
        return self._arrays[name]


def _gallery_sources(problem: Problem) -> tuple:
    """(the gallery arrays, compared by identity; the gallery's other facts, compared by value)"""
    return (
        (problem.db_bits, problem.db_words, problem.db_labels, problem.db_cams),
        (problem.junk_ids, problem.n_gallery),
    )


def gallery_store(state: object, problem: Problem) -> PreparedGallery:
    """``state`` when it is a store made for ``problem``'s gallery, else a new one (one block)."""
    return state if isinstance(state, PreparedGallery) and state.matches(problem) else PreparedGallery(problem)


# name -> "module:attribute" (imported lazily, so a missing optional dependency only
# affects its own implementation)
_SPECS: Dict[str, str] = {
    "reference": "retrieval_conformance.reference.backend:ReferenceImplementation",
    "numpy": "retrieval_conformance.implementations.numpy_backend:NumpyImplementation",
    "torch": "retrieval_conformance.implementations.torch_backend:TorchImplementation",
    "c": "retrieval_conformance.implementations.c.backend:CImplementation",
    "dask": "retrieval_conformance.implementations.dask.backend:DaskImplementation",
}
BUILT_IN = tuple(_SPECS)
#: the entry-point group third-party implementations register under
ENTRY_POINT_GROUP = "retrieval_conformance.implementations"
_CACHE: Dict[str, Implementation] = {}
_discovered = False


def _discover() -> None:
    """Add the implementations other installed packages declare (once, without importing them)."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    for point in _entry_points(ENTRY_POINT_GROUP):
        if point.name not in BUILT_IN:
            _SPECS.setdefault(point.name, point.value)


def _entry_points(group: str) -> Iterable[Any]:
    """The installed entry points of ``group``, on every Python the package supports."""
    from importlib.metadata import entry_points

    try:
        return entry_points(group=group)  # Python >= 3.10
    except TypeError:  # 3.9: no keyword; a dict of group -> entry points
        return entry_points().get(group, ())  # type: ignore[call-arg,attr-defined,unused-ignore]


#: the built-in implementations' ``speed_rank``, known without importing them
_BUILT_IN_RANKS = {"c": 0, "numpy": 10, "torch": 20, "dask": 500, "reference": 1000}


def _speed_rank(name: str) -> int:
    return _BUILT_IN_RANKS[name] if name in _BUILT_IN_RANKS and not callable(_SPECS[name]) else _load(name).speed_rank


def names() -> List[str]:
    """Every registered implementation name, available or not."""
    _discover()
    return list(_SPECS)


def register(name: str, factory: Callable[[], Implementation]) -> None:
    """Register an extra implementation (a factory called once, lazily)."""
    _CACHE.pop(name, None)
    _SPECS[name] = factory  # type: ignore[assignment]


def unregister(name: str) -> None:
    """Remove an implementation added with :func:`register` (the built-in ones stay)."""
    if name in BUILT_IN:
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


def unknown_name_message(argument: str, name: object, auto: bool = True) -> str:
    """The error for an implementation ``name`` that is not registered, given as ``argument``:
    names it and lists the registered ones (the message of every entry point)."""
    known = ", ".join(names()) + (", or 'auto' (the fastest available)" if auto else "")
    return (
        f"{argument}: unknown implementation {name!r}; the registered ones are {known} "
        "(a typo checks nothing, so it is refused)"
    )


def check_names(argument: str, given: Iterable[object], auto: bool = False) -> List[str]:
    """``given`` as a list, every name registered (``"auto"`` too when ``auto``).

    Raises
    ------
    ValueError
        Naming ``argument`` and the first unknown name, and listing the registered names.
    """
    _discover()
    given = list(given)
    for name in given:
        if not (isinstance(name, str) and (name in _SPECS or (auto and name == "auto"))):
            raise ValueError(unknown_name_message(argument, name, auto))
    return [str(name) for name in given]  # every one checked to be a str above


def unavailable_reason(name: str) -> Optional[str]:
    """None if ``name`` can run here, else why not."""
    _discover()
    if name not in _SPECS:
        return unknown_name_message("implementation", name)
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
    check_names("implementation", [name], auto=True)
    reason = unavailable_reason(name)
    if reason is not None:
        raise ImplementationUnavailable(f"implementation {name!r} is unavailable: {reason}")
    return _load(name)


def on_device(name: str, device) -> Implementation:
    """The implementation called ``name`` placed on ``device`` (``evaluate(device=...)``).

    Only implementations with an ``on_device(device)`` method take a device (torch: ``"cpu"``,
    ``"cuda"``, ``"cuda:1"``, a ``torch.device``); ``"auto"`` picks the fastest available one of
    those.  Raises ``ValueError`` naming ``device`` when none takes it, or when the device is not
    one this machine has (the implementation's ``on_device`` says which).
    """
    if name == "auto":
        for candidate in sorted(names(), key=_speed_rank):
            impl = _load(candidate) if unavailable_reason(candidate) is None else None
            if impl is not None and hasattr(impl, "on_device"):
                return impl.on_device(device)
        raise ValueError(
            f"device: got {device!r}, but no implementation that runs on a device is available here; "
            f"install torch ({install_hint('torch')}) or leave device unset"
        )
    impl = get(name)
    if not hasattr(impl, "on_device"):
        raise ValueError(
            f"device: implementation {name!r} runs on the CPU and takes no device (got {device!r}); pass "
            "device= with implementation='torch' (or 'auto'), or leave device unset"
        )
    return impl.on_device(device)
