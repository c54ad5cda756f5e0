"""The pytest plugin's selection: with ``--impl``, the lab's checks run and nothing else, wherever
pytest is started from."""

from __future__ import annotations

import pathlib
from types import SimpleNamespace

from retrieval_conformance.conformance.harness import pytest_plugin


class _Config:
    def __init__(self, impl):
        self.impl, self.deselected = impl, []
        self.hook = SimpleNamespace(pytest_deselected=lambda items: self.deselected.extend(items))

    def getoption(self, name):
        assert name == "--impl"
        return self.impl


def _session(config):
    # pytest given paths on its command line: the declared checks are not added beside them
    config.args_source = SimpleNamespace(name="ARGS")
    return SimpleNamespace(config=config)


def _item(folder: str, module: str, nodeid: str):
    return SimpleNamespace(path=pathlib.Path(folder) / module, nodeid=nodeid)


def test_impl_keeps_the_lab_checks_even_when_node_ids_hold_no_file():
    # ``pytest --pyargs retrieval_conformance.conformance`` from a lab's folder: the suite lies
    # outside the rootdir and its node ids start with "::"
    site = "/venv/site-packages/retrieval_conformance/conformance/tests"
    lab = _item(site, pytest_plugin.LAB_CHECKS_MODULE, "::test_check[golden/seed000]")
    ours = _item(site, "test_layers.py", "::test_layers_hold")
    items = [ours, lab]
    config = _Config("mylab.eval:calc_map")
    pytest_plugin.pytest_collection_modifyitems(_session(config), config, items)
    assert items == [lab] and config.deselected == [ours]


def test_without_impl_nothing_is_deselected():
    items = [_item("tests", "test_layers.py", "tests/test_layers.py::test_layers_hold")]
    config = _Config(None)
    pytest_plugin.pytest_collection_modifyitems(_session(config), config, items)
    assert len(items) == 1
