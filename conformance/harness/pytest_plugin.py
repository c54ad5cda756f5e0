"""The pytest plugin of retrieval-conformance: options to check a user's metric function.

Registered as the ``pytest11`` entry point ``retrieval_conformance`` (so that
``pytest --pyargs retrieval_conformance.conformance --impl mylab.eval:calc_map`` parses its
options before collecting), and re-used by ``conformance/conftest.py`` when the entry point is
not installed.  It only adds options and fixtures: harmless for every other test.
"""

from __future__ import annotations

import pytest
from retrieval_conformance.reference.contract import options_table

#: the adapter ``--adapter`` names when not given (``retrieval-conformance check``'s default too)
DEFAULT_ADAPTER = "hashing-codes"


def is_registered(pluginmanager) -> bool:
    """True when this module is already a registered plugin (entry point or ``-p``)."""
    import sys

    return pluginmanager.is_registered(sys.modules[__name__])


def pytest_addoption(parser):
    add_options(parser)


def pytest_configure(config):
    # the suite runs with --pyargs from anywhere, so its markers cannot rely on pyproject.toml
    config.addinivalue_line("markers", "slow: long-running checks")
    config.addinivalue_line("markers", "benchmark: speed benchmarks at dataset scale (RC_BENCH=1)")
    problem = unusable_options(config)
    if problem:
        raise pytest.UsageError(problem)


def unusable_options(config) -> "str | None":
    """Why the options (or ``RC_REQUIRE``) cannot run, before anything is collected; None when they can.

    A typo in a gate (``RC_REQUIRE=cee``) would otherwise skip what it was meant to require.
    """
    import math
    import os

    required = [n.strip() for n in os.environ.get("RC_REQUIRE", "").split(",") if n.strip()]
    if required:
        from retrieval_conformance.reference.contract import registry

        try:
            registry.check_names("RC_REQUIRE", required)
        except ValueError as exc:
            return str(exc)
    try:
        adapter, examples, timeout = (
            config.getoption(name) for name in ("--adapter", "--conformance-max-examples", "--conformance-timeout")
        )
    except ValueError:  # the options are not ours to read (added by the conftest later)
        return None
    if adapter != DEFAULT_ADAPTER:  # the default needs no import of the harness to be known
        from retrieval_conformance.conformance.harness.adapters.registry import ADAPTERS

        if adapter not in ADAPTERS:
            return f"--adapter: unknown adapter {adapter!r}; expected one of {', '.join(sorted(ADAPTERS))}"
    if examples < 1:
        return f"--conformance-max-examples: expected a whole number >= 1, got {examples}"
    if not (math.isfinite(timeout) and timeout > 0):
        return f"--conformance-timeout: expected a number of seconds > 0 (e.g. 10), got {timeout}"
    return None


LAB_CHECKS_MODULE = "test_harness_impl.py"


def pytest_collect_file(file_path, parent):
    """The lab's file declaring ``[[tool.retrieval-conformance.check]]`` tables: its checks as tests."""
    if file_path.suffix == ".toml" and _impl(parent.config) is None:
        from retrieval_conformance.conformance.harness.gate import pytest_items

        if pytest_items.declaring_file(file_path):
            return pytest_items.gate_file(parent, file_path)
    return None


def _impl(config):
    try:
        return config.getoption("--impl")
    except ValueError:  # the options are not ours to read (added by the conftest later)
        return None


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect, so that they apply to the declared checks
def pytest_collection_modifyitems(session, config, items):
    """Without ``--impl``: the declared checks too when no path was given (the lab's testpaths may
    leave out the declaring file).  With ``--impl``: the lab's checks only (one test per check id),
    not our own suite."""
    impl = _impl(config)
    if not impl:
        from retrieval_conformance.conformance.harness.gate.pytest_items import GateCheck, items_without_paths

        if not any(isinstance(it, GateCheck) for it in items):
            items.extend(items_without_paths(session))
        return
    # by the file's name: a node id holds no file part when the suite lies outside the rootdir
    # (``pytest --pyargs ...`` run from the lab's folder)
    keep = [it for it in items if it.path.name == LAB_CHECKS_MODULE]
    if len(keep) == len(items):
        return
    config.hook.pytest_deselected(items=[it for it in items if it not in keep])
    items[:] = keep


def _landmark_presets():
    from retrieval_conformance.conformance.harness.session import LANDMARK_CONVENTIONS

    return tuple(LANDMARK_CONVENTIONS)


#: the presets --protocol takes beyond the table's, and when
PROTOCOL_VALUES = (_landmark_presets(), "default: the adapter's usual one; the landmark presets with --adapter oxford")


def add_options(parser):
    group = parser.getgroup("retrieval-conformance", "retrieval-conformance: check a user's metric function")
    group.addoption(
        "--impl",
        default=None,
        metavar="MODULE:FUNCTION",
        help="the metric function to check (module:function or path/to/file.py:function)",
    )
    group.addoption(
        "--adapter",
        default=DEFAULT_ADAPTER,
        metavar="NAME",
        help="its signature (retrieval-conformance check --help lists every adapter)",
    )
    # --protocol and the convention overrides (--ties, --ap-rule, ...), generated from the one options table
    options_table.add_arguments(group, "pytest-plugin", wider={"protocol": PROTOCOL_VALUES})
    group.addoption(
        "--arrays",
        default="auto",
        choices=("auto", "numpy", "torch"),
        help="pass numpy arrays or torch tensors to --impl (auto: torch if numpy fails)",
    )
    group.addoption(
        "--known-deviations",
        default=None,
        metavar="FILE",
        help="file of accepted deviations for --impl, one per line: check ids or globs, or causes "
        "such as '§4 ties=unstable' (xfail instead of fail)",
    )
    group.addoption(
        "--conformance-max-examples",
        type=int,
        default=60,
        metavar="N",
        help="generated inputs per property check of --impl (default 60)",
    )
    group.addoption(
        "--conformance-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="seconds allowed per call of --impl (default 10)",
    )
    group.addoption(
        "--require-torch",
        action="store_true",
        default=False,
        help="fail, instead of skip, the tests that need torch when it is missing",
    )


@pytest.fixture(scope="session")
def conformance_options(request):
    """The harness options given on the command line, as a dict."""
    opt = request.config.getoption
    return {
        "impl": opt("--impl"),
        "adapter": opt("--adapter"),
        "protocol": opt("--protocol"),
        "arrays": opt("--arrays"),
        "known_deviations": opt("--known-deviations"),
        "max_examples": opt("--conformance-max-examples"),
        "timeout": opt("--conformance-timeout"),
        "require_torch": opt("--require-torch"),
        "overrides": {name: opt(options_table.BY_NAME[name].flag) for name in options_table.CONVENTION_OPTIONS},
    }


@pytest.fixture(scope="session")
def torch_module(request):
    """``torch``, or a skip (a failure with ``--require-torch``) when it cannot be imported."""
    try:
        import torch
    except Exception as exc:  # ImportError or a broken install
        msg = f"torch is not importable ({type(exc).__name__}: {exc}); pip install torch==2.13.0"
        if request.config.getoption("--require-torch"):
            pytest.fail(msg + " (--require-torch)")
        pytest.skip(msg)
    return torch
