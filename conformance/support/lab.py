"""A lab's repository for the CI gate's tests: two declared functions, one conforming and one
dividing AP@k by k (copies of our examples), and the command lines run from its folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from retrieval_conformance.conformance.examples import divided_by_k, hashing_correct

#: the command line of the installed package, whatever the folder
CLI = [sys.executable, "-c", "import sys; from retrieval_conformance.cli import main; sys.exit(main())"]

PYPROJECT = """\
# the lab's own project: the gate edits only the known-deviations key of a table
[project]
name = "mylab"

[[tool.retrieval-conformance.check]]
target = "mylab/good.py:calc_top_map"
protocol = "hashing"
max-examples = 5
only = ["golden/seed*", "k/*", "ties/*"]

[[tool.retrieval-conformance.check]]
name = "divided"
target = "mylab.divk:calc_top_map"   # a module, imported from the lab's root
adapter = "hashing-codes"
protocol = "hashing"
timeout = 20
max-examples = 5
only = ["golden/seed*", "k/*", "ties/*"]

[tool.other-tool]
keep = "this"
"""


def make_lab(root: Path) -> Path:
    """A lab repository: the two functions (copies of our examples) and the pyproject declaring them."""
    (root / "mylab").mkdir(parents=True)
    (root / "mylab" / "__init__.py").write_text("")
    for name, module in (("good.py", hashing_correct), ("divk.py", divided_by_k)):
        (root / "mylab" / name).write_text(Path(module.__file__).read_text())
    (root / "pyproject.toml").write_text(PYPROJECT)
    return root


def run(root: Path, *args: str, command=CLI):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([*command, *args], cwd=root, capture_output=True, text=True, env=env, timeout=600)
    return proc.returncode, proc.stdout, proc.stderr
