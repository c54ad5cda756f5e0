"""The project's checkout, for the tests that read what ships with the repository but not with the
package (README.md, docs/, tox.ini, .pre-commit-hooks.yaml).

tox and CI run the suite against the installed package from the checkout's folder, so the checkout
is found from the working directory upwards, never from a test file's own path (which lies in
site-packages there)."""

from __future__ import annotations

import pathlib
from typing import Optional

_PROJECT_LINE = 'name = "retrieval-conformance"'


def find_checkout() -> Optional[pathlib.Path]:
    """The nearest folder from the working directory up whose pyproject.toml is this project's."""
    for folder in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents]:
        project = folder / "pyproject.toml"
        if project.is_file() and _PROJECT_LINE in project.read_text(encoding="utf-8"):
            return folder
    return None


def checkout() -> pathlib.Path:
    """The checkout, or the calling test skipped when there is none (the package installed elsewhere)."""
    import pytest

    found = find_checkout()
    if found is None:
        pytest.skip("no checkout of retrieval-conformance above the working directory")
    return found
