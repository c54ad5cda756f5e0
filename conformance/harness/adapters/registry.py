"""Every adapter by name, the protocol each checks by default, and :func:`get_adapter`.

An adapter joins the harness by being listed here (its class in :mod:`.average_precision` or
:mod:`.rank_metrics`); the command line, the pytest plugin and the reports read this table.
"""

from __future__ import annotations

from typing import Callable, Dict

from retrieval_conformance.conformance.harness.adapters.average_precision import AP_ADAPTERS
from retrieval_conformance.conformance.harness.adapters.base import Adapter, UsageError
from retrieval_conformance.conformance.harness.adapters.rank_metrics import RANK_ADAPTERS

ADAPTERS: Dict[str, type] = {cls.name: cls for cls in (*AP_ADAPTERS, *RANK_ADAPTERS)}
DEFAULT_PROTOCOL: Dict[str, str] = {name: cls.default_protocol for name, cls in ADAPTERS.items()}


def get_adapter(name: str, func: Callable) -> Adapter:
    """An adapter ``name`` bound to ``func``; :class:`UsageError` for an unknown name or a function
    whose signature cannot fit."""
    if name not in ADAPTERS:
        raise UsageError(f"adapter: unknown adapter {name!r}; expected one of {sorted(ADAPTERS)}")
    return ADAPTERS[name](func)


def adapter_names_text() -> str:
    """Every adapter's name, module by module, as a docstring names them: ```hashing-codes``, ...
    (see :mod:`.adapters.average_precision`); ...``."""
    by_module: Dict[str, list] = {}
    for name, cls in ADAPTERS.items():
        by_module.setdefault(cls.__module__.rsplit(".", 1)[1], []).append(f"``{name}``")
    return "; ".join(f"{', '.join(names)} (see :mod:`.adapters.{module}`)" for module, names in by_module.items())
