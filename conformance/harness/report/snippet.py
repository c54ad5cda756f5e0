"""A runnable Python snippet reproducing one deviation: the user's call and the reference's."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

import numpy as np
from retrieval_conformance.conformance.harness.adapters.base import Adapter, Call


def function_import(func: Callable, target: Optional[str]) -> Tuple[str, str]:
    """(import line, name to call) for ``func``; a comment placeholder when not importable."""
    if target and ":" in target:
        module, _, attr = target.rpartition(":")
        if module.endswith(".py"):
            return (
                f"import importlib.util, sys\n"
                f"_spec = importlib.util.spec_from_file_location('_user_module', {module!r})\n"
                f"_mod = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(_mod)\n"
                f"f = _mod.{attr}",
                "f",
            )
        if "." in attr:
            head = attr.split(".")[0]
            return f"from {module} import {head}", attr
        return f"from {module} import {attr}", attr
    module = getattr(func, "__module__", None)
    qual = getattr(func, "__qualname__", None)
    if module and qual and module != "__main__" and "<" not in qual:
        head = qual.split(".")[0]
        return f"from {module} import {head}", qual
    return "f = ...  # your function", "f"


def _literal(arr: Any, arrays: str) -> str:
    if isinstance(arr, np.ndarray):
        dtype = arr.dtype
        body = repr(arr.tolist())
        if arrays == "torch":
            tdtype = {
                "float32": "torch.float32",
                "float64": "torch.float64",
                "int64": "torch.int64",
                "bool": "torch.bool",
            }.get(str(dtype), "None")
            return f"torch.tensor({body}, dtype={tdtype})"
        return f"np.array({body}, dtype=np.{dtype})"
    return repr(arr)


def _protocol_kwargs(protocol: str, overrides: dict) -> str:
    parts = [f"protocol={protocol!r}"]
    for name, value in overrides.items():
        if value is not None:
            parts.append(f"{name}={value!r}")
    return ", ".join(parts)


def make_snippet(
    func: Callable,
    target: Optional[str],
    adapter: Adapter,
    call: Call,
    arrays: str,
    protocol: str,
    overrides: dict,
    user_text: str,
    ref_text: str,
    reference: bool = True,
) -> str:
    """Python source that calls the user's function on the failing input and prints both values
    (the reference's lines are the adapter's, :meth:`~..adapters.base.Adapter.reference_lines`; without
    ``reference``, a comment with ``ref_text``: what a candidate the reference cannot compute gives)."""
    imp, name = function_import(func, target)
    lines: List[str] = ["import numpy as np"]
    if arrays == "torch":
        lines.append("import torch")
    lines.append("import retrieval_conformance as rc")
    lines.append(imp)
    for arg_name, value in zip(call.names, call.args):
        if isinstance(value, np.ndarray):
            lines.append(f"{arg_name} = {_literal(value, arrays)}")
    call_args = []
    for arg_name, value in zip(call.names, call.args):
        call_args.append(arg_name if isinstance(value, np.ndarray) else repr(value))
    for key, value in call.kwargs.items():
        call_args.append(f"{key}={value!r}")
    lines.append(f"print({name}({', '.join(call_args)}))  # yours: {user_text}")
    if reference:
        lines += adapter.reference_lines(call, _protocol_kwargs(protocol, overrides), ref_text)
    else:
        lines.append(f"# {ref_text}")
    return "\n".join(lines) + "\n"
