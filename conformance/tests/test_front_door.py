"""The front door: the package face's namespace, the commands' help, notes and flags, and what the
main job imports."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.cli import main
from retrieval_conformance.conformance.support.requirements import missing_implementation


def test_dir_lists_the_public_names_and_no_import_machinery():
    listed = dir(rc)
    for leaked in ("Any", "Dict", "annotations", "importlib"):
        assert leaked not in listed, leaked
    assert "evaluate" in listed and "curves" in listed and "__version__" in listed


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_compute_ap_help_exits_zero(flag, capsys):
    assert main(["compute-ap", flag]) == 0
    out = capsys.readouterr().out
    assert "Usage: ./compute_ap" in out and "GROUNDTRUTH QUERY" in out


def test_golden_says_a_missing_implementation_is_skipped_as_a_note(capsys):
    with missing_implementation("missing-here"):
        code = main(["golden", "--implementations", "reference", "missing-here", "--random", "0"])
    assert code == 0
    out = capsys.readouterr().out
    first = out.strip().splitlines()[0]
    assert first.startswith("skipped: missing-here"), first
    assert "unavailable" not in out and "its library is not installed" in first


def _seed_npz(tmp_path):
    path = tmp_path / "seed.npz"
    np.savez(
        path,
        distances=np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]]),
        query_labels=np.array([1, 2]),
        db_labels=np.array([1, 2, 1, 2]),
    )
    return str(path)


def test_audit_takes_json_as_the_synonym_of_format_json(tmp_path, capsys):
    path = _seed_npz(tmp_path)
    assert main(["audit", "--npz", path, "--json"]) == 0
    with_flag = json.loads(capsys.readouterr().out)
    assert main(["audit", "--npz", path, "--format", "json"]) == 0
    with_format = json.loads(capsys.readouterr().out)
    with_flag.pop("cost"), with_format.pop("cost")  # seconds taken
    assert with_flag == with_format
    assert main(["audit", "--npz", path, "--json", "--format", "html"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --json") and "--format html" in err


def test_the_main_job_imports_no_test_tool():
    """``retrieval-conformance golden`` runs where pytest, hypothesis and scipy are not installed
    (they are the ``test`` extra): none of them is imported on its way."""
    code = (
        "import sys\n"
        "from retrieval_conformance.cli import main\n"
        "status = main(['golden', '--implementations', 'reference', 'numpy', '--random', '3'])\n"
        "tools = ('pytest', '_pytest', 'hypothesis', 'pytest_benchmark', 'scipy')\n"
        "loaded = sorted(m for m in tools if m in sys.modules)\n"
        "print('LOADED', loaded, status)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "LOADED [] 0", done.stdout[-2000:]


def test_the_install_requires_only_what_evaluation_needs():
    import re
    from importlib.metadata import requires

    by_extra: dict = {}
    for requirement in requires("retrieval-conformance") or []:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()
        extra = re.search(r"extra\s*==\s*['\"]([\w-]+)['\"]", requirement)
        by_extra.setdefault(extra.group(1) if extra else None, set()).add(name)
    tools = {"pytest", "hypothesis", "pytest-benchmark", "scipy"}
    assert not by_extra[None] & tools, by_extra[None]
    assert tools <= by_extra["test"], by_extra.get("test")


# --------------------------------------------------------------------------- progress
class _Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self):
        return True


def _with_terminal(monkeypatch, argv):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    status = main(argv)
    monkeypatch.undo()
    return status, terminal.getvalue()


def test_audit_shows_progress_on_a_terminal_and_nowhere_else(tmp_path, monkeypatch, capsys):
    path = _seed_npz(tmp_path)
    assert main(["audit", "--npz", path, "--json"]) == 0
    assert capsys.readouterr().err == ""  # a file or a pipe: nothing
    status, err = _with_terminal(monkeypatch, ["audit", "--npz", path, "--json"])
    assert status == 0 and "\raudit: 1 evaluations" in err and err.endswith(" evaluations\n")


def test_compare_shows_progress_on_a_terminal(tmp_path, monkeypatch, capsys):
    path = _seed_npz(tmp_path)
    argv = ["compare", path, path, "--names", "a", "b", "--json", "--resamples", "50"]
    assert main(argv) == 0
    assert capsys.readouterr().err == ""
    status, err = _with_terminal(monkeypatch, argv)
    assert status == 0 and "\rcompare: 1 steps" in err and "\rcompare: 2 steps" in err


def test_check_shows_progress_on_a_terminal(monkeypatch, capsys):
    target = "retrieval_conformance.conformance.examples.divided_by_k:calc_top_map"
    argv = ["check", target, "--max-examples", "3", "--only", "golden*"]
    main(argv)
    assert "\rcheck: " not in capsys.readouterr().err
    _, err = _with_terminal(monkeypatch, argv)
    assert "\rcheck: 1 checks done" in err


# --------------------------------------------------------------------------- the extras each command names
def test_compare_without_scipy_names_its_extra(tmp_path, monkeypatch, capsys):
    path = _seed_npz(tmp_path)
    monkeypatch.setitem(sys.modules, "scipy", None)  # as if not installed: importing it fails
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    assert main(["compare", path, path, "--names", "a", "b", "--resamples", "50"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: compare's paired tests") and "pip install 'retrieval-conformance[compare]'" in err


def test_bench_run_without_pytest_benchmark_names_its_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pytest_benchmark", None)
    assert main(["bench", "run", "-k", "nothing"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: bench run needs pytest_benchmark") and "retrieval-conformance[bench]" in err


def test_check_without_hypothesis_names_its_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    target = "retrieval_conformance.conformance.examples.divided_by_k:calc_top_map"
    assert main(["check", target, "--max-examples", "3"]) == 2
    assert "pip install 'retrieval-conformance[check]'" in capsys.readouterr().err
