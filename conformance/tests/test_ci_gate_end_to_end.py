"""The CI gate end to end, as a lab adopts it: a repository declaring two functions, one conforming
and one dividing AP@k by k, through ``retrieval-conformance check`` with no target, its Markdown
summary, the ``--accept`` baseline, a deviation planted afterwards, and ``pytest`` with the plugin.

Every command runs in a fresh process from the lab's folder, as CI would run it.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from retrieval_conformance.conformance.examples import hashing_correct
from retrieval_conformance.conformance.support.lab import PYPROJECT, make_lab, run

#: a lab's repository, git and the command line end to end: the full suite's env only (tox's minimal
#: env deselects slow tests)
pytestmark = pytest.mark.slow


def verdict_line(out: str, name: str) -> str:
    return next(line for line in out.splitlines() if line.strip().startswith(name + " "))


def test_the_gate_fails_on_the_deviation_accepts_it_and_fails_again_on_a_new_one(tmp_path):
    lab = make_lab(tmp_path)
    code, out, err = run(lab, "check", "--summary", "summary.md", "--json", "gate.json", "--junit-xml", "gate.xml")
    assert code == 1, out + err
    assert verdict_line(out, "mylab/good.py:calc_top_map").split()[1] == "passes"
    divided = verdict_line(out, "divided")
    assert "DEVIATES" in divided and "§6 ap_at_k=hits" in divided and "§11 divided-by-k" in divided
    summary = (lab / "summary.md").read_text()
    assert "`mylab/good.py:calc_top_map` | passes" in summary
    assert "divided (`mylab.divk:calc_top_map`) | DEVIATES" in summary and "AP@k is divided by k" in summary
    assert "smallest failing input" in summary
    report = json.loads((lab / "gate.json").read_text())
    assert [f["verdict"] for f in report["functions"]] == ["pass", "deviate"] and report["exit_code"] == 1
    assert (lab / "gate.xml").read_text().count("<testsuite ") == 2

    code, out, err = run(lab, "check", "--accept")
    assert code == 0, out + err
    assert "divided: accepted '§11 divided-by-k'" in out
    text = (lab / "pyproject.toml").read_text()
    # only the second table gained its key; every other line is kept as written
    assert text.replace('known-deviations = [\n    "§11 divided-by-k",\n]\n', "", 1) == PYPROJECT
    assert text.index("known-deviations = [") > text.index('name = "divided"')

    code, out, err = run(lab, "check")
    assert code == 0, out + err
    assert "known deviation(s) accepted" in verdict_line(out, "divided")

    # a new deviation, in the function that conformed: the percent bug (spec §11 percent)
    good = lab / "mylab" / "good.py"
    good.write_text(good.read_text().replace("return total / num_query", "return 100 * total / num_query"))
    code, out, err = run(lab, "check")
    assert code == 1, out + err
    assert "DEVIATES" in verdict_line(out, "mylab/good.py:calc_top_map")
    assert "known deviation(s) accepted" in verdict_line(out, "divided")

    # the divided function fixed: its accepted deviation no longer happens, reported as stale
    (lab / "mylab" / "divk.py").write_text(Path(hashing_correct.__file__).read_text())
    code, out, err = run(lab, "check")
    assert "divided: stale known deviation '§11 divided-by-k'" in out


def test_pytest_with_the_plugin_runs_the_declared_checks_without_impl(tmp_path):
    lab = make_lab(tmp_path)
    code, out, err = run(lab, "-p", "no:cacheprovider", "-q", command=[sys.executable, "-m", "pytest"])
    assert code == 1, out + err
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert failed and all(line.startswith("FAILED pyproject.toml::divided::") for line in failed)
    assert "spec §6 ap_at_k=hits" in out and " passed" in out


def test_pytest_runs_the_declared_checks_when_testpaths_leave_out_the_declaring_file(tmp_path):
    lab = make_lab(tmp_path)
    (lab / "tests").mkdir()
    (lab / "tests" / "test_lab.py").write_text("def test_lab():\n    pass\n")
    with open(lab / "pyproject.toml", "a") as fh:
        fh.write(textwrap.dedent('\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'))
    code, out, err = run(lab, "-p", "no:cacheprovider", "-q", "-k", "good", command=[sys.executable, "-m", "pytest"])
    assert code == 0, out + err
    assert "passed" in out and "test_lab" not in out  # -k applies to the declared checks too
    # a path given: only that path
    code, out, err = run(lab, "-p", "no:cacheprovider", "-q", "tests", command=[sys.executable, "-m", "pytest"])
    assert code == 0 and "1 passed" in out, out + err


@pytest.mark.parametrize("changed, expected", [(["mylab/divk.py"], ["divided"]), (["README.md"], [])])
def test_changed_files_select_the_functions_they_touch(tmp_path, changed, expected):
    lab = make_lab(tmp_path)
    code, out, err = run(lab, "check", "--changed", *changed, "--json", "gate.json")
    if not expected:
        assert code == 0 and "touch no function" in out, out + err
        return
    assert code == 1, out + err
    assert [f["name"] for f in json.loads((lab / "gate.json").read_text())["functions"]] == expected
