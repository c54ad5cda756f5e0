"""The documents stay true: the README's tour and the user guides' examples run as pasted, and
every path ARCHITECTURE.md names exists.

These read the checkout (README.md, docs/, ARCHITECTURE.md), found from the working directory
upwards (tox and CI run from the checkout); installed elsewhere without one, they are skipped.
"""
from __future__ import annotations

import contextlib
import io
import pathlib
import re

import pytest

#: documents whose ```python blocks run, in order, in one namespace per document
RUNNABLE = ("README.md", "docs/guide/hashing.md", "docs/guide/reid.md", "docs/guide/landmark.md",
            "docs/guide/ir.md", "docs/conventions.md")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _checkout() -> pathlib.Path:
    for folder in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents]:
        project = folder / "pyproject.toml"
        if project.is_file() and 'name = "retrieval-conformance"' in project.read_text(encoding="utf-8"):
            return folder
    pytest.skip("no checkout of retrieval-conformance above the working directory")


def python_blocks(text: str):
    return [m.group(1) for m in BLOCK.finditer(text)]


def test_block_extraction_finds_fenced_python_only():
    text = "a\n```python\nx = 1\n```\n```bash\nls\n```\n```python\ny = x + 1\n```\n"
    assert python_blocks(text) == ["x = 1\n", "y = x + 1\n"]


@pytest.mark.parametrize("document", RUNNABLE)
def test_python_examples_run_as_pasted(document, tmp_path, monkeypatch):
    pytest.importorskip("numpy")
    path = _checkout() / document
    blocks = python_blocks(path.read_text(encoding="utf-8"))
    assert blocks, f"{document} has no python block"
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    namespace = {"__name__": "__readme__"}
    for number, block in enumerate(blocks, 1):
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(compile(block, f"{document} block {number}", "exec"), namespace)
            except Exception as exc:  # name the block, then fail with its traceback
                raise AssertionError(f"{document}, python block {number} fails as pasted: {exc!r}") from exc


def test_readme_tour_prints_what_it_says():
    """The numbers the tour quotes in its comments are what it computes."""
    pytest.importorskip("numpy")
    readme = (_checkout() / "README.md").read_text(encoding="utf-8")
    tour = python_blocks(readme)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(tour, "README tour", "exec"), {"__name__": "__readme__"})
    printed = out.getvalue()
    for quoted in re.findall(r"#\s.*?(0\.\d{4})\.\.\.", tour):
        assert quoted in printed, f"the tour quotes {quoted}... but prints:\n{printed}"


#: where a path ARCHITECTURE.md names may be relative to (it says `contract/evaluate.py` inside
#: the reference's row, `csrc/rc_float.c` inside the implementations')
BASES = ("", "reference", "reference/contract", "reference/protocols", "reference/protocols/trec", "implementations",
         "conformance", "conformance/harness", "conformance/bench", "conformance/fuzz", "conformance/support",
         "conformance/problems", "api", "golden", "golden/tools", "implementations/csrc", "implementations/dask",
         "implementations/vector")
PATH = re.compile(r"`([\w.-]+(?:/[\w.-]+)*\.(?:py|c|h|md|json|cpp)|[\w.-]+(?:/[\w.-]+)*/)`")


def test_architecture_names_only_paths_that_exist():
    root = _checkout()
    text = (root / "ARCHITECTURE.md").read_text(encoding="utf-8")
    named = {m.group(1).split(":")[0] for m in PATH.finditer(text)}
    assert len(named) > 20, f"ARCHITECTURE.md names too few paths to check: {sorted(named)}"
    missing = sorted(n for n in named if not any((root / base / n).exists() for base in BASES))
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"
