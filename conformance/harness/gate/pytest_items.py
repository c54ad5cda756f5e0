"""The declared checks as pytest tests: one test per declared function and check id.

With the plugin loaded (:mod:`..pytest_plugin`), ``pytest`` in a lab's repository collects the
file that declares the checks (``pyproject.toml`` or ``retrieval-conformance.toml``) as a test
file: ``pytest`` with no paths (or with that file as one) runs every declared function's checks,
without ``--impl``.  A deviation fails with the harness's explanation, one the table accepts is
an xfail, a check the adapter cannot express is skipped.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
from pathlib import Path
from typing import Optional

import pytest
from retrieval_conformance.conformance.harness.adapters.base import UsageError
from retrieval_conformance.conformance.harness.calling.loading import load_function
from retrieval_conformance.conformance.harness.checks import Checker, every_check_id
from retrieval_conformance.conformance.harness.gate.config import CONFIG_NAMES, DeclaredCheck, find_config, read_config
from retrieval_conformance.conformance.harness.report.results import DEVIATE, KNOWN, SKIP, Report
from retrieval_conformance.conformance.harness.session import Session


def declaring_file(file_path: Path) -> bool:
    """Whether ``file_path`` is the file whose tables the gate reads for its folder."""
    if file_path.name not in CONFIG_NAMES:
        return False
    found = find_config(str(file_path.parent))
    return found is not None and Path(found) == file_path


def gate_file(parent, file_path: Path) -> "GateFile":
    return GateFile.from_parent(parent, path=file_path)


def items_without_paths(session) -> list:
    """The declared checks' tests when ``pytest`` was given no paths (its testpaths may skip the
    declaring file); nothing when it was, or when no folder from the root up declares any."""
    config = session.config
    source = getattr(config, "args_source", None)
    if source is None or source.name == "ARGS":
        return []
    found = find_config(str(config.rootpath))
    if found is None:
        return []
    items = []
    for function in gate_file(session, Path(found)).collect():
        items.extend(function.collect())
    return items


@contextlib.contextmanager
def _in_folder(folder: str):
    """Run in the lab's root, where its targets resolve as for ``retrieval-conformance check``."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


class GateFile(pytest.File):
    """The declaring file: a collector of the declared functions."""

    def collect(self):
        config = read_config(str(self.path))
        for declared in config.checks:
            yield GateFunction.from_parent(self, name=declared.label, declared=declared, root=config.root)


class GateFunction(pytest.Collector):
    """One declared function: its session opens before its first check and closes after its last."""

    def __init__(self, *, declared: DeclaredCheck, root: str, **kw):
        super().__init__(**kw)
        self.declared, self.root = declared, root
        self.checker = None

    def collect(self):
        only = self.declared.only  # the table's `only` keeps its checks, as the session runs them
        for check_id in every_check_id():
            if not only or any(fnmatch.fnmatch(check_id, pattern) for pattern in only):
                yield GateCheck.from_parent(self, name=check_id)

    def setup(self) -> None:
        d = self.declared
        try:
            with _in_folder(self.root):
                session = Session(
                    load_function(d.target),
                    d.adapter,
                    d.protocol,
                    arrays=d.arrays,
                    max_examples=d.max_examples,
                    timeout=d.timeout,
                    warmup_timeout=d.warmup_timeout,
                    target=d.target,
                    known_deviations=d.known,
                    only=d.only,
                    **d.overrides,
                )
        except UsageError as exc:
            pytest.fail(f"{d.label}: {exc}", pytrace=False)
        self.checker = Checker(session)

    def teardown(self) -> None:
        if self.checker is not None:
            self.checker.s.close()
            self.checker = None


class GateCheck(pytest.Item):
    """One check id of one declared function."""

    def runtest(self) -> None:
        function: GateFunction = self.parent
        with _in_folder(function.root):
            res = function.checker.run_one(self.name)
        s = function.checker.s
        if res.status == SKIP:
            pytest.skip(res.reason)
        if res.status == KNOWN:
            pytest.xfail(f"known deviation: {res.reason}")
        if res.status == DEVIATE:
            rep = Report(s.target, s.adapter.name, s.protocol, s.convention_text, s.arrays, results=[res])
            raise GateFailure(rep.text(verbose=True))

    def repr_failure(self, excinfo, style: Optional[str] = None):
        if isinstance(excinfo.value, GateFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"{self.parent.name}::{self.name}"


class GateFailure(Exception):
    """A declared function deviates on a check (its report is the message)."""
