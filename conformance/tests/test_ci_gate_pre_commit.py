"""The pre-commit hook end to end: a lab's git repository using our ``.pre-commit-hooks.yaml``
(``retrieval-conformance-check``), failing on a planted deviation and passing once accepted.

pre-commit installs the hook from this checkout into an environment of its own (``pip install``
of the package and its dependencies from the package index), so the test needs ``pre-commit``,
``git``, the checkout (not only the installed package) and the index; it is skipped, saying which
is missing, otherwise.  It runs one function only, to keep the hook's two runs short.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from retrieval_conformance.conformance.support.checkout import find_checkout
from retrieval_conformance.conformance.support.lab import make_lab, run

#: a lab's repository, git and the command line end to end: the full suite's env only (tox's minimal
#: env deselects slow tests)
pytestmark = [
    pytest.mark.slow,
    # pre-commit from the package index and a hook environment of its own: minutes, so a long check
    pytest.mark.skipif(
        os.environ.get("RC_LONG_CHECKS") != "1", reason="a long check: RC_LONG_CHECKS=1 runs pre-commit end to end"
    ),
]

#: the checkout holding .pre-commit-hooks.yaml, from the working directory up (tox runs from it)
CHECKOUT = find_checkout() or Path("/nonexistent-checkout")
HOOK_ID = "retrieval-conformance-check"

ONE_FUNCTION = """\
[[tool.retrieval-conformance.check]]
name = "divided"
target = "mylab/divk.py:calc_top_map"
protocol = "hashing"
max-examples = 5
only = ["golden/seed00*", "k/*"]
"""


def test_the_hooks_file_declares_the_hook():
    hooks = CHECKOUT / ".pre-commit-hooks.yaml"
    if not hooks.exists():
        pytest.skip("not a checkout: .pre-commit-hooks.yaml ships with the repository, not the package")
    text = hooks.read_text()
    assert f"- id: {HOOK_ID}\n" in text and "entry: retrieval-conformance check --changed" in text


def _pre_commit() -> list:
    found = shutil.which("pre-commit") or shutil.which("pre-commit", path=os.path.dirname(sys.executable))
    if found is None:
        pytest.skip("pre-commit is not installed (pip install pre-commit)")
    if shutil.which("git") is None or not (CHECKOUT / ".git").exists():
        pytest.skip("needs git and this repository's checkout (the hook is installed from it)")
    return [found]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_the_hook_fails_on_a_planted_deviation_and_passes_once_accepted(tmp_path):
    pre_commit = _pre_commit()
    lab = make_lab(tmp_path / "lab")
    (lab / "pyproject.toml").write_text(ONE_FUNCTION)
    git(lab, "init", "-q")
    git(lab, "-c", "user.name=lab", "-c", "user.email=lab@example.org", "commit", "-q", "--allow-empty", "-m", "init")
    git(lab, "add", "-A")
    # try-repo: the hook as this checkout defines it now (uncommitted changes included)
    env_home = str(tmp_path / "pre-commit-home")
    argv = ["try-repo", str(CHECKOUT), HOOK_ID, "--verbose"]
    env = dict(os.environ, PRE_COMMIT_HOME=env_home, RC_BUILD_C="0")

    def hook():
        proc = subprocess.run(pre_commit + argv, cwd=lab, capture_output=True, text=True, env=env, timeout=1200)
        if "Could not find a version" in proc.stdout + proc.stderr or "Network is unreachable" in proc.stderr:
            pytest.skip("pre-commit could not install the hook's environment: no package index")
        return proc.returncode, proc.stdout + proc.stderr

    code, out = hook()
    assert code == 1 and "divided" in out and "DEVIATES" in out and "§11 divided-by-k" in out, out

    code, out, err = run(lab, "check", "--accept")
    assert code == 0, out + err
    git(lab, "add", "-A")
    code, out = hook()
    assert code == 0 and "known deviation(s) accepted" in out, out
