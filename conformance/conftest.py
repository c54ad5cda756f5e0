"""pytest options of the conformance suite (generic: they only add options and fixtures).

Check your own metric function inside pytest, with the same checks as
``retrieval-conformance check``::

    pytest --pyargs retrieval_conformance.conformance --impl mylab.eval:calc_map --adapter hashing-codes
    pytest --pyargs retrieval_conformance.conformance -k harness_impl --impl mylab.eval:calc_map \\
        --protocol dcmh --arrays torch --known-deviations known.txt

Options: ``--impl``, ``--adapter``, ``--protocol``, ``--arrays``, ``--known-deviations``,
``--conformance-max-examples``, ``--conformance-timeout``, ``--require-torch`` (fail instead of
skip tests that need torch).  Fixtures: ``conformance_options``, ``torch_module``.

The options live in :mod:`retrieval_conformance.conformance.harness.pytest_plugin`, which the
package registers as a ``pytest11`` entry point (pytest reads options before it collects
``--pyargs`` packages, so a conftest alone cannot provide them there); this conftest adds them
when that plugin is not loaded (e.g. running the suite from a checkout by path).
"""

from retrieval_conformance.conformance.harness import pytest_plugin as _plugin
from retrieval_conformance.conformance.harness.pytest_plugin import (  # noqa: F401  (fixtures)
    conformance_options,
    torch_module,
)


def pytest_addoption(parser, pluginmanager):
    if not _plugin.is_registered(pluginmanager):
        _plugin.add_options(parser)
