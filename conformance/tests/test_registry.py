"""One interface: names, availability with reasons, ``auto``, and the no-compiler path."""

from __future__ import annotations

import os

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.reference.contract import registry


def test_registered_names_are_stable():
    assert registry.names()[:4] == ["reference", "numpy", "torch", "c"]
    assert "reference" in rc.available_implementations()


def test_auto_picks_the_fastest_available():
    impl = registry.get("auto")
    usable = [registry.get(n) for n in registry.available()]
    assert impl.speed_rank == min(i.speed_rank for i in usable)
    res = rc.evaluate(distances=[[0.1, 0.2]], relevance=[[0, 1]], implementation="auto")
    assert res.implementation == impl.name and res.map == 0.5


def test_unknown_implementation_is_a_clear_error():
    with pytest.raises(ValueError, match="implementation: unknown implementation 'gpu'"):
        registry.get("gpu")
    assert "unknown implementation" in registry.unavailable_reason("gpu")


@pytest.mark.skipif(os.environ.get("RC_EXPECT_NO_C") != "1", reason="only where the C library was not built")
def test_without_a_compiler_c_reports_itself_unavailable():
    reason = registry.unavailable_reason("c")
    assert reason is not None and "RC_BUILD_C" in reason
    with pytest.raises(rc.ImplementationUnavailable, match="implementation 'c' is unavailable"):
        rc.evaluate(distances=np.zeros((1, 2)), relevance=[[1, 0]], implementation="c")
    assert registry.get("auto").name != "c"


def test_speed_ranks_known_without_import_match_the_classes():
    for name, rank in registry._BUILT_IN_RANKS.items():
        if registry.unavailable_reason(name) is None:
            assert registry.get(name).speed_rank == rank, name


def test_auto_does_not_import_torch_when_c_runs():
    """Importing torch costs seconds on a first call: ``auto`` must not pay it to pick C."""
    if registry.unavailable_reason("c") is not None:
        pytest.skip(registry.unavailable_reason("c"))
    import subprocess
    import sys

    code = (
        "import sys, retrieval_conformance as rc; "
        "r = rc.evaluate(distances=[[0.0, 1.0]], relevance=[[1, 0]], implementation='auto'); "
        "print(r.implementation, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["c", "False"]


def test_a_third_party_registers_through_the_entry_point_group(monkeypatch, tmp_path):
    # a package of its own, declaring entry points: a new backend and one that tries to take a built-in name
    (tmp_path / "thirdparty_rc.py").write_text(
        "from retrieval_conformance.reference.contract.registry import get\n"
        "class Backend:\n"
        "    name = 'thirdparty'\n"
        "    speed_rank = 500\n"
        "    def unavailable_reason(self):\n"
        "        return None\n"
        "    def compute(self, problem, options):\n"
        "        return get('reference').compute(problem, options)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from importlib.metadata import EntryPoint

    points = [
        EntryPoint("thirdparty", "thirdparty_rc:Backend", registry.ENTRY_POINT_GROUP),
        EntryPoint("c", "thirdparty_rc:Backend", registry.ENTRY_POINT_GROUP),
    ]
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group=None: [p for p in points if p.group == group])
    monkeypatch.setattr(registry, "_discovered", False)
    monkeypatch.setattr(registry, "_SPECS", dict(registry._SPECS))
    monkeypatch.setattr(registry, "_CACHE", {})
    assert "thirdparty" in registry.names()
    assert registry._SPECS["c"] == "retrieval_conformance.implementations.c.backend:CImplementation"
    res = rc.evaluate(
        distances=[[0.1, 0.2], [0.3, 0.1]], relevance=[[0, 1], [0, 1]], implementation="thirdparty", block_size=1
    )  # several blocks, and no prepare(): nothing is passed
    assert res.implementation == "thirdparty" and res.map == 0.75


def test_entry_points_are_read_with_the_api_of_python_3_9(monkeypatch):
    """Python 3.9's ``entry_points()`` takes no ``group`` and returns a dict of groups: the
    registry read it with 3.10's keyword, and ``retrieval-conformance golden`` crashed there."""
    from importlib.metadata import EntryPoint

    point = EntryPoint("py39thirdparty", "thirdparty_rc:Backend", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr("importlib.metadata.entry_points", lambda: {registry.ENTRY_POINT_GROUP: (point,)})
    monkeypatch.setattr(registry, "_discovered", False)
    monkeypatch.setattr(registry, "_SPECS", dict(registry._SPECS))
    assert registry.names()[-1] == "py39thirdparty"
