"""Skip, or fail, when an implementation cannot run here.

By default a test of an unavailable implementation is skipped with the reason.  CI asks for
them instead: ``RC_REQUIRE=c,torch`` (or ``RC_REQUIRE_C=1``, ``RC_REQUIRE_TORCH=1``) turns the
skip into a failure, so a missing C build or torch install cannot pass silently.
"""

from __future__ import annotations

import contextlib
import os

import pytest
from retrieval_conformance.reference.contract import registry


def required_names() -> set:
    names = {n.strip() for n in os.environ.get("RC_REQUIRE", "").split(",") if n.strip()}
    registry.check_names("RC_REQUIRE", sorted(names))  # a typo would skip what it was meant to require
    for name in registry.names():
        if os.environ.get(f"RC_REQUIRE_{name.upper()}") == "1":
            names.add(name)
    return names


def require_implementation(name: str) -> None:
    """Skip the calling test when ``name`` is unavailable, or fail if it is required."""
    reason = registry.unavailable_reason(name)
    if reason is None:
        return
    if name in required_names():
        pytest.fail(f"implementation {name!r} is required here (RC_REQUIRE) but unavailable: {reason}")
    pytest.skip(reason)


def implementation_params():
    """Every registered implementation name, for ``pytest.mark.parametrize``."""
    return registry.names()


@contextlib.contextmanager
def missing_implementation(name: str = "missing-here", reason: str = "its library is not installed"):
    """An implementation registered as ``name`` that says it cannot run here (``reason``), for as
    long as the block lasts."""

    class Missing(registry.Implementation):
        def unavailable_reason(self):
            return reason

    Missing.name = name
    registry.register(name, Missing)
    try:
        yield name
    finally:
        registry.unregister(name)
