"""Finding the user's function from a command-line target, and reading a known-deviations file.

Targets::

    package.module:function        imported like ``python -m package.module`` would (the
                                   current folder first on ``sys.path``)
    path/to/file.py:function       loaded like ``python path/to/file.py`` would (the file's
                                   folder first on ``sys.path``, so ``import sibling`` works)
    ...:Class.method               a dotted attribute path inside the module

Every failure raises :class:`~..adapters.base.UsageError` naming the target, what was found and what
to do about it.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import itertools
import os
import sys
import traceback
from types import ModuleType
from typing import Any, Callable, List, Optional

from retrieval_conformance.conformance.harness.adapters.base import UsageError
from retrieval_conformance.reference.readers.text import read_text_lines

_EXAMPLE = "e.g. mylab.eval:calc_map or scripts/eval.py:calc_map"
_private_names = itertools.count(1)


def load_function(target: str) -> Callable:
    """``package.module:function`` (or ``path/to/file.py:function``) -> the function.

    Raises :class:`~..adapters.base.UsageError` with the reason and a remedy when it cannot be loaded.
    """
    if not isinstance(target, str) or ":" not in target:
        hint = ""
        if isinstance(target, str) and target.endswith(".py"):
            hint = f"; name the function too: {target}:function_name"
        raise UsageError(f"target {target!r}: expected 'module:function' or 'file.py:function' ({_EXAMPLE}){hint}")
    module_part, _, attr = target.rpartition(":")
    if not module_part or not attr or not all(p.isidentifier() for p in attr.split(".")):
        raise UsageError(
            f"target {target!r}: expected 'module:function' or 'file.py:function' ({_EXAMPLE}); "
            f"got module {module_part!r} and function {attr!r}"
        )
    # what the module prints or warns while it is imported belongs to it, not to our report
    import contextlib
    import io
    import warnings

    printed = io.StringIO()
    with (
        contextlib.redirect_stdout(printed),
        contextlib.redirect_stderr(printed),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        if module_part.endswith(".py") or os.sep in module_part or "/" in module_part:
            module = _load_file(target, module_part)
        else:
            module = _import_module(target, module_part)
    IMPORT_OUTPUT[target] = printed.getvalue() + "".join(f"{w.category.__name__}: {w.message}\n" for w in caught)
    return _resolve(target, module, attr)


IMPORT_OUTPUT: dict = {}  # target -> what importing it printed or warned (shown with -v)


# -- modules -----------------------------------------------------------------------------------


def _put_first_on_path(folder: str) -> None:
    if not sys.path or sys.path[0] != folder:
        sys.path.insert(0, folder)


def _import_module(target: str, name: str) -> ModuleType:
    if not all(p.isidentifier() for p in name.split(".")):
        raise UsageError(f"target {target!r}: {name!r} is neither a dotted module name nor a .py file ({_EXAMPLE})")
    _put_first_on_path(os.getcwd())  # as `python -m` does
    try:
        return importlib.import_module(name)
    except BaseException as exc:  # anything the user's module does on import
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise UsageError(_import_failure(target, name, exc)) from None


def _same_file(a: Optional[str], b: str) -> bool:
    if not a:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _load_file(target: str, path: str) -> ModuleType:
    if not path.endswith(".py"):
        alt = f" (did you mean {path}.py?)" if os.path.isfile(path + ".py") else ""
        raise UsageError(
            f"target {target!r}: {path!r} is not a .py file{alt}; give 'path/to/file.py:function' "
            f"or a dotted module name 'package.module:function'"
        )
    if not os.path.isfile(path):
        what = "is a folder, not a file" if os.path.isdir(path) else "does not exist"
        raise UsageError(
            f"target {target!r}: the file {path!r} {what} (looked in {os.getcwd()}); give a path "
            f"relative to the current folder, or an absolute one"
        )
    real = os.path.realpath(path)
    _put_first_on_path(os.path.dirname(real))  # as `python path/to/file.py` does (symlinks resolved)
    stem = os.path.splitext(os.path.basename(real))[0]
    try:
        if stem.isidentifier():
            existing = sys.modules.get(stem)
            if existing is not None and _same_file(getattr(existing, "__file__", None), real):
                return existing  # loaded before (e.g. imported by a sibling, or the same target twice)
            if existing is None:
                try:
                    spec = importlib.util.find_spec(stem)
                except (ImportError, ValueError):
                    spec = None
                if spec is not None and _same_file(spec.origin, real):
                    return importlib.import_module(stem)  # the plain name is free: importable as `import stem`
        # the name belongs to another module (e.g. a file called json.py or test.py): a private name
        name = f"_rc_user_{stem if stem.isidentifier() else 'module'}_{next(_private_names)}"
        spec = importlib.util.spec_from_file_location(name, real)
        if spec is None or spec.loader is None:
            raise UsageError(f"target {target!r}: {path!r} cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
    except UsageError:
        raise
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise UsageError(_import_failure(target, path, exc)) from None


def _where(exc: BaseException) -> str:
    """' (at file.py, line 12)' for the innermost frame of the failure, or ''."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f" (at {exc.filename}, line {exc.lineno})"
    frames = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in frames if "importlib" not in f.filename and not f.filename.startswith("<frozen")]
    if not frames:
        return ""
    last = frames[-1]
    return f" (at {last.filename}, line {last.lineno})"


def _import_failure(target: str, what: str, exc: BaseException) -> str:
    head = f"target {target!r}: cannot import {what!r}: {type(exc).__name__}: {exc}"
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        missing = exc.name
        if not what.endswith(".py") and (what == missing or what.startswith(missing + ".")):
            return (
                f"{head}. The module {missing!r} itself was not found: run from the folder that contains "
                f"it (the current folder {os.getcwd()} is searched first), install it (pip install -e .), "
                f"or give the file instead: path/to/{what.replace('.', '/')}.py:function"
            )
        top = missing.split(".")[0]
        return (
            f"{head}{_where(exc)}. The module {missing!r} it imports must be installed (pip install {top}) "
            f"or be on the path (sys.path: the file's or the current folder comes first)"
        )
    if isinstance(exc, SystemExit):
        return (
            f"{head}{_where(exc)}. The module exits when imported (e.g. it parses the command line at "
            f"top level); put the script part under  if __name__ == '__main__':"
        )
    return f"{head}{_where(exc)}. Fix the error, or check that the module can be imported on its own"


# -- the attribute -----------------------------------------------------------------------------


def _callables(obj: Any, limit: int = 8) -> List[str]:
    """Public callables of ``obj``: for a module, those defined in it first."""
    try:
        items = [(k, v) for k, v in vars(obj).items() if not k.startswith("_") and callable(v)]
    except TypeError:
        items = [(k, getattr(obj, k, None)) for k in dir(obj) if not k.startswith("_")]
        items = [(k, v) for k, v in items if callable(v)]
    if inspect.ismodule(obj):
        items.sort(key=lambda kv: getattr(kv[1], "__module__", None) != obj.__name__)
    names = [k for k, _ in items]
    return names[:limit] + (["..."] if len(names) > limit else [])


def _resolve(target: str, module: ModuleType, attr: str) -> Callable:
    obj: Any = module
    where = f"module {module.__name__!r}"
    if getattr(module, "__file__", None):
        where += f" ({module.__file__})"
    done: List[str] = []
    for part in attr.split("."):
        if not hasattr(obj, part):
            owner = where if not done else repr(".".join(done))
            found = _callables(obj)
            has = f"; it has: {', '.join(found)}" if found else "; it defines no public callables"
            raise UsageError(f"target {target!r}: {owner} has no attribute {part!r}{has}")
        obj = getattr(obj, part)
        done.append(part)
    if not callable(obj):
        found = _callables(module)
        has = f"; callables in the module: {', '.join(found)}" if found else ""
        raise UsageError(f"target {target!r}: {attr!r} is a {type(obj).__name__}, not a function{has}")
    return obj


# -- known deviations --------------------------------------------------------------------------


def read_known_deviations(path: str) -> List[str]:
    """Check ids (or glob patterns) from a known-deviations file: one per line, ``#`` comments.

    An ``OSError`` propagates when the file cannot be opened, a ``ValueError`` (naming the file)
    for a FIFO, a device, a file beyond the limits or bytes that are not UTF-8.
    """
    return read_text_lines(path, comments=True)  # bounded; a byte-order mark is dropped
