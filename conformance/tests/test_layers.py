"""The layers of ARCHITECTURE.md: no module imports a layer above its own.

Bottom to top: the contract (``reference/contract``); the exact oracle (``reference``), the
golden data (``golden``) and the fast implementations (``implementations``), side by side;
the package face (``api/``: ``retrieval_conformance`` itself); the conformance suite and
harness (``conformance``).  A layer may import itself and the layers below, with one more
rule: the oracle and the implementations never import each other, so every implementation
is checked against a reference it cannot share code with.

Two checks: every import statement of every module, wherever it sits (a function-level
import is an import too); and, in a fresh interpreter, importing all of a layer's modules
loads no module of a higher layer.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import pkgutil
import subprocess
import sys
from typing import Dict, List, Tuple

import pytest

PACKAGE = "retrieval_conformance"

#: layer name -> (rank, module prefix); the longest matching prefix decides
LAYERS: Dict[str, Tuple[int, str]] = {
    "contract": (0, f"{PACKAGE}.reference.contract"),
    "reference": (1, f"{PACKAGE}.reference"),
    "golden": (1, f"{PACKAGE}.golden"),
    "implementations": (1, f"{PACKAGE}.implementations"),
    "face": (2, PACKAGE),
    "conformance": (3, f"{PACKAGE}.conformance"),
}
#: layers of the same rank that must not import each other
SEPARATE = {
    ("reference", "implementations"),
    ("implementations", "reference"),
    ("golden", "implementations"),
    ("golden", "reference"),
}


def layer_of(module: str) -> str:
    matches = [
        (len(prefix), name)
        for name, (_, prefix) in LAYERS.items()
        if module == prefix or module.startswith(prefix + ".")
    ]
    return max(matches)[1]


def upward(importer: str, imported: str) -> bool:
    a, b = layer_of(importer), layer_of(imported)
    return LAYERS[b][0] > LAYERS[a][0] or (a, b) in SEPARATE


def all_modules() -> List[Tuple[str, str]]:
    """(module name, source path) of every module of the installed package.

    Each subpackage is found through its own spec: the repository folders are mapped to
    subpackages (pyproject.toml), so they need not sit inside the top package's folder."""
    todo = [PACKAGE] + [f"{PACKAGE}.{sub}" for sub in ("reference", "implementations", "golden", "conformance")]
    out = []
    seen = set()
    while todo:
        package = todo.pop()
        if package in seen:
            continue
        seen.add(package)
        spec = importlib.util.find_spec(package)
        out.append((package, spec.origin))
        for info in pkgutil.iter_modules(spec.submodule_search_locations):
            name = f"{package}.{info.name}"
            if info.ispkg:
                todo.append(name)
            else:
                sub = importlib.util.find_spec(name)
                if sub is not None and sub.origin and sub.origin.endswith(".py"):
                    out.append((name, sub.origin))
    return sorted(out)


def imports_of(module: str, path: str) -> List[Tuple[int, str]]:
    """(line, module) of every import of the project in a source file (relative ones resolved)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # "from package import module" imports the module; "from module import name" the module
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            target = f"{base}.{node.module}" if node.module else base
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] == PACKAGE]


def _resolve(name: str) -> str:
    """``a.b.C`` -> the longest prefix that is a module (``a.b`` when C is a class)."""
    while "." in name:
        try:
            if importlib.util.find_spec(name) is not None:
                return name
        except ModuleNotFoundError:  # the parent is a module, not a package
            pass
        name = name.rsplit(".", 1)[0]
    return name


def test_the_layer_table_knows_every_module():
    modules = all_modules()
    assert len(modules) > 50, "the package's modules were not found"
    assert {layer_of(name) for name, _ in modules} == set(LAYERS)


def test_no_import_statement_runs_upward():
    problems = []
    for module, path in all_modules():
        for line, name in imports_of(module, path):
            if upward(module, _resolve(name)):
                problems.append(
                    f"{path}:{line}: {layer_of(module)} module {module} imports {name} ({layer_of(_resolve(name))})"
                )
    assert not problems, "imports against ARCHITECTURE.md's layers:\n" + "\n".join(problems)


@pytest.mark.parametrize("layer", ["contract", "reference", "golden", "implementations", "face"])
def test_importing_a_layer_loads_nothing_above_it(layer):
    rank, _ = LAYERS[layer]
    names = [m for m, _ in all_modules() if layer_of(m) == layer and not m.endswith("__main__")]
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.split('.')[0] == 'retrieval_conformance')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=os.path.dirname(os.path.dirname(importlib.util.find_spec(PACKAGE).origin)),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    # Python runs the parent packages' __init__ first; the face's is lazy and the others are
    # docstrings, and anything they imported would be listed here too
    modules = out.stdout.split()
    parents = {name.rsplit(".", i)[0] for name in modules for i in range(1, name.count(".") + 1)}
    loaded = [m for m in modules if m not in parents]
    above = [m for m in loaded if LAYERS[layer_of(m)][0] > rank or (layer, layer_of(m)) in SEPARATE]
    assert not above, f"importing the {layer} layer loaded {above}"


def test_the_check_sees_a_violation():
    # the rules themselves: an upward and a sideways import are caught, a downward one is not
    assert upward(f"{PACKAGE}.reference.contract.problem", f"{PACKAGE}.reference.per_query")
    assert upward(f"{PACKAGE}.implementations.c.backend", f"{PACKAGE}.reference.per_query")
    assert upward(f"{PACKAGE}.dispatch", f"{PACKAGE}.conformance.crosscheck")
    assert not upward(f"{PACKAGE}.implementations.c.backend", f"{PACKAGE}.reference.contract.problem")
    assert not upward(f"{PACKAGE}.conformance.crosscheck", PACKAGE)


def test_no_public_name_is_shadowed_by_a_submodule():
    # importing a submodule sets the package attribute of the same name: rc.compare would turn
    # into a module the moment anything imported retrieval_conformance.compare
    import retrieval_conformance as rc

    submodules = {name.rsplit(".", 1)[1] for name, _ in all_modules() if layer_of(name) == "face" and "." in name}
    assert not set(rc.__all__) & submodules
    for name in rc.__all__:
        assert getattr(rc, name) is not None, name


def _module_level_imports(module: str, path: str) -> Tuple[set, set]:
    """(imports at module level, imports inside functions) of one module, resolved to modules."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    in_functions = {
        id(node)
        for func in ast.walk(tree)
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(func)
    }
    at_top, inside = set(), set()
    lines = {line for line, _ in imports_of(module, path)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno in lines:
            names = [name for line, name in imports_of(module, path) if line == node.lineno]
            (inside if id(node) in in_functions else at_top).update(_resolve(n) for n in names)
    return at_top, inside


def test_no_import_hides_in_a_function_to_dodge_a_cycle():
    # a function-level import is fine (a lazy optional dependency, a fast start), but not when
    # the module it imports leads back, at module level, to the importer: that is a cycle
    modules = dict(all_modules())
    top, inner = {}, {}
    for module, path in modules.items():
        top[module], inner[module] = _module_level_imports(module, path)

    def reached_from(start: str) -> set:
        seen, todo = set(), [start]
        while todo:
            for name in top.get(todo.pop(), ()):
                # importing a module runs its parent packages' __init__ first
                for m in [name] + [name.rsplit(".", i)[0] for i in range(1, name.count("."))]:
                    if m not in seen:
                        seen.add(m)
                        todo.append(m)
        return seen

    dodges = [
        f"{m} imports {t} inside a function, and {t} leads back to {m}"
        for m in sorted(inner)
        for t in sorted(inner[m])
        if m in reached_from(t)
    ]
    assert not dodges, "\n".join(dodges)
