"""The package lists every folder of the checkout that holds Python: a subpackage left out of
``[tool.setuptools] packages`` works in an editable install and is missing from the wheel (the
CI gate's ``harness/gate/`` once was)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from retrieval_conformance.conformance.support.checkout import find_checkout

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

#: the checkout, from the working directory up (tox runs from it); None installed elsewhere
CHECKOUT = find_checkout() or Path("/nonexistent-checkout")


def test_every_folder_with_an_init_is_a_listed_and_mapped_package():
    path = CHECKOUT / "pyproject.toml"
    if not path.exists():
        pytest.skip("reads the checkout's pyproject.toml; the installed package has none")
    setuptools = tomllib.loads(path.read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed, mapped = set(setuptools["packages"]), setuptools["package-dir"]
    folders = {os.path.normpath(folder): name for name, folder in mapped.items()}
    missing = []
    for name, folder in mapped.items():
        for root, dirs, files in os.walk(CHECKOUT / folder):
            dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
            if "__init__.py" not in files:
                continue
            rel = os.path.normpath(os.path.relpath(root, CHECKOUT))
            package = folders.get(rel) or name + "." + ".".join(Path(os.path.relpath(root, CHECKOUT / folder)).parts)
            if package not in listed or rel not in folders:
                missing.append(f"{rel} ({package})")
    assert not missing, "listed in neither packages nor package-dir of pyproject.toml: " + ", ".join(
        sorted(set(missing))
    )


def test_the_pythons_promised_are_the_pythons_tested():
    """The README's versions, the classifiers and requires-python, and tox's environments agree."""
    import configparser
    import re

    readme, tox_ini = CHECKOUT / "README.md", CHECKOUT / "tox.ini"
    if not (readme.exists() and tox_ini.exists()):
        pytest.skip("reads the checkout's README.md, pyproject.toml and tox.ini")
    project = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    classified = {c.rsplit(" ", 1)[1] for c in project["classifiers"] if re.search(r":: 3\.\d+$", c)}
    promised = re.search(r"with Python ((?:3\.\d+, )+3\.\d+ or 3\.\d+), the versions tox tests", readme.read_text())
    assert promised, "the README no longer says which Pythons are tested"
    said = set(re.findall(r"3\.\d+", promised.group(1)))
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(tox_ini)
    factors = re.search(r"py\{([\d,]+)\}-minimal", " ".join(tox.sections())).group(1).split(",")
    tested = {f"3.{f[1:]}" for f in factors} | {"3.11"}  # the full suite's Python: the local torch wheel's
    assert said == classified == tested
    assert project["requires-python"] == f">={min(tested, key=lambda v: int(v.split('.')[1]))}"
