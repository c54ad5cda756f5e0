"""Small modules: no Python module of the package is over ``MAX_LINES`` lines.

A module that grows past the limit is split by what its code does (a family of modules becomes
a subpackage).  The lines are counted as the file stands; the code is kept formatted
(``ruff format``, line length 120), so the count is that of the formatted file.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Iterable, List, Tuple

PACKAGE = "retrieval_conformance"
#: the most lines a module may have (the developer guide's limit)
MAX_LINES = 450
#: the package's folders: the face (``api/``) and the subpackages mapped beside it
FOLDERS = ("", "reference", "implementations", "golden", "conformance")


def package_folders() -> List[str]:
    """The folders of the package's source, as installed (an editable install: the repository's)."""
    out = []
    for sub in FOLDERS:
        spec = importlib.util.find_spec(f"{PACKAGE}.{sub}" if sub else PACKAGE)
        assert spec is not None and spec.submodule_search_locations, sub
        out.extend(spec.submodule_search_locations)
    return out


def python_files(folders: Iterable[str]) -> List[Path]:
    """Every ``.py`` file under ``folders`` (each once)."""
    return sorted({path.resolve() for folder in folders for path in Path(folder).rglob("*.py")})


def long_modules(paths: Iterable[Path], limit: int = MAX_LINES) -> List[Tuple[str, int]]:
    """(path, lines) of each file of more than ``limit`` lines."""
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        if lines > limit:
            out.append((str(path), lines))
    return out


def test_no_module_is_over_the_limit():
    files = python_files(package_folders())
    assert any(os.path.basename(path) == "evaluate.py" for path in files)  # the walk found the package
    assert long_modules(files) == [], f"split these modules by what their code does (at most {MAX_LINES} lines)"


def test_the_check_sees_a_long_module(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "short.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "pkg" / "notes.txt").write_text("x\n" * 1000)
    found = long_modules(python_files([str(tmp_path)]))
    assert [(os.path.basename(path), lines) for path, lines in found] == [("long.py", MAX_LINES + 1)]
