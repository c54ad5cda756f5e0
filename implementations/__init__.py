"""Interchangeable implementations behind one interface (see :mod:`.registry`)."""

from retrieval_conformance.reference.contract.registry import (
    Implementation,
    ImplementationUnavailable,
    available,
    get,
    names,
    register,
    unavailable_reason,
)

__all__ = [
    "Implementation",
    "ImplementationUnavailable",
    "available",
    "get",
    "names",
    "register",
    "unavailable_reason",
]
