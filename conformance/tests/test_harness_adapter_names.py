"""What depends on the adapter is owned by the adapter class: no module outside the adapters
compares an adapter's name to a string.

A check such as ``session.adapter.name == "reid"`` spreads one adapter's behaviour over the
harness, so a new adapter must find and edit every such place; an attribute or method of the
:class:`~retrieval_conformance.conformance.harness.adapters.base.Adapter` base class, overridden by
the adapter that differs, keeps it in one class.  The scan reads every module of the package
(tests aside) and flags each comparison (``==``, ``!=``, ``in``, ``not in``) of an expression
that names an adapter (``adapter``, ``adapter_name``, ``session.adapter.name``, ``ad.name``)
with a string literal, or a tuple, list or set of them, that is an adapter's name.
"""

from __future__ import annotations

import ast
import re
from typing import List, Optional

from retrieval_conformance.conformance.harness.adapters.registry import ADAPTERS
from retrieval_conformance.conformance.tests.test_layers import PACKAGE, all_modules

#: the package that defines the adapters: the only modules that may speak of an adapter by name
ADAPTER_MODULES = (f"{PACKAGE}.conformance.harness.adapters",)
TESTS = f"{PACKAGE}.conformance.tests"
#: an expression that holds an adapter or its name
NAMES_AN_ADAPTER = re.compile(r"adapter|\.name$")


def _literals(node: ast.AST) -> List[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for elt in node.elts for s in _literals(elt)]
    return []


def adapter_name_comparisons(source: str) -> List[str]:
    """``line: text`` of each comparison of an adapter (or its name) with an adapter's name."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        named = [ast.unparse(o) for o in operands if not _literals(o)]
        literals = {s for o in operands for s in _literals(o)}
        if literals & set(ADAPTERS) and any(NAMES_AN_ADAPTER.search(text) for text in named):
            out.append(f"{node.lineno}: {ast.unparse(node)}")
    return out


def _outside_adapters(module: str) -> bool:
    return not any(module == m or module.startswith(m + ".") for m in ADAPTER_MODULES + (TESTS,))


def _read(path: Optional[str]) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_no_module_outside_the_adapters_compares_an_adapter_name():
    found = {
        module: hits
        for module, path in all_modules()
        if path and _outside_adapters(module)
        for hits in [adapter_name_comparisons(_read(path))]
        if hits
    }
    assert not found, (
        "behaviour that depends on the adapter belongs to the adapter class (an attribute or method "
        f"of Adapter that the adapter overrides), not to a check of its name: {found}"
    )


def test_the_scan_finds_each_spelling():
    spellings = [
        'session.adapter.name == "oxford"',
        'adapter != "hashing-codes"',
        'ad.name != "reid"',
        'self.adapter_name in ("reid", "pml")',
        '"sklearn" == adapter.name',
    ]
    for text in spellings:
        assert adapter_name_comparisons(text), text
    # a protocol, peer or workload called like an adapter is not an adapter
    for text in ['protocol not in ("reid", "reid-matlab")', 'peer == "sklearn"', 'workload.name != "oxford5k"']:
        assert not adapter_name_comparisons(text), text


def test_the_scan_reads_the_harness():
    scanned = {module for module, path in all_modules() if path and _outside_adapters(module)}
    assert f"{PACKAGE}.conformance.harness.session" in scanned
    assert not any(m.startswith(ADAPTER_MODULES[0]) for m in scanned)
