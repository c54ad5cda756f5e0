"""Fixtures shared by the test modules: the C implementation, or the test skipped where the
library is not built (a failure with ``RC_REQUIRE=c``)."""

from __future__ import annotations

import pytest
from retrieval_conformance.conformance.support.c_test_support import load_c_backend


@pytest.fixture(scope="module")
def c_backend():
    """The module ``implementations.c.backend``."""
    return load_c_backend()


@pytest.fixture(scope="module")
def cimpl(c_backend):
    """A ``CImplementation`` with the default thread count."""
    return c_backend.CImplementation()
