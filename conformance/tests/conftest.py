"""Fixtures shared by the test modules: the C implementation, or the test skipped where the
library is not built (a failure with ``RC_REQUIRE=c``); and the ``harness`` mark on the modules
that judge the harness's verdicts."""

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


#: the modules that judge the harness's verdicts (``check``, ``--identify``, the zoo, hostile
#: targets): the verdicts come from the exact reference whatever implementations are installed, so
#: tox's minimal env leaves them (``-m "not harness"``) to the full suite's env
HARNESS_MODULES = ("test_harness_", "test_fuzz_check_targets.py", "test_zoo")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name.startswith(HARNESS_MODULES):
            item.add_marker(pytest.mark.harness)
