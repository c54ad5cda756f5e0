"""docs/ci-gate.md stays true: its configuration example reads as declared checks, and the
``retrieval-conformance`` commands of its GitHub Actions and GitLab CI examples, run in a lab with
a conforming function and one dividing AP@k by k, exit 1 naming the second and write every file
the later steps of those examples read."""

from __future__ import annotations

import re
import shlex

import pytest
from retrieval_conformance.conformance.harness.gate.config import read_config
from retrieval_conformance.conformance.support.checkout import checkout
from retrieval_conformance.conformance.support.lab import make_lab, run

#: a lab's repository, git and the command line end to end: the full suite's env only (tox's minimal
#: env deselects slow tests)
pytestmark = pytest.mark.slow


def page() -> str:
    """docs/ci-gate.md, read from the checkout (the installed package does not hold docs/)."""
    return (checkout() / "docs" / "ci-gate.md").read_text(encoding="utf-8")


def blocks(language: str):
    return re.findall(rf"^```{language}\n(.*?)^```", page(), re.MULTILINE | re.DOTALL)


def ci_commands():
    """The retrieval-conformance commands of the CI examples (``run:`` steps and ``script:`` items)."""
    found = []
    for block in blocks("yaml"):
        for line in block.splitlines():
            text = re.sub(r"^\s*(-\s+)?(run:\s+)?", "", line)
            if text.startswith("retrieval-conformance "):
                found.append(shlex.split(text))
    return found


def test_the_configuration_example_declares_valid_checks(tmp_path):
    (tmp_path / "pyproject.toml").write_text(blocks("toml")[0], encoding="utf-8")
    checks = read_config(str(tmp_path / "pyproject.toml")).checks
    assert [c.label for c in checks] == ["mylab/eval.py:calc_top_map", "reid-cmc"]


def test_the_ci_examples_commands_run_in_a_lab(tmp_path):
    commands = ci_commands()
    assert len(commands) == 2, commands  # GitHub Actions and GitLab CI
    for n, argv in enumerate(dict.fromkeys(map(tuple, commands))):  # the same command is run once
        lab = make_lab(tmp_path / f"lab{n}")
        code, out, err = run(lab, *argv[1:])
        assert code == 1, out + err
        assert "divided" in out and "DEVIATES" in out
        for name in ("gate-summary.md", "gate.xml", "gate.json"):
            assert (lab / name).stat().st_size > 0, name
        assert "divided (`mylab.divk:calc_top_map`) | DEVIATES" in (lab / "gate-summary.md").read_text()
    # the steps after the check read these files
    assert "cat gate-summary.md" in page() and "junit: gate.xml" in page()
