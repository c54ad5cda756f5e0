"""A verdict reused only where the function behaved identically on every call the harness made.

``identify`` and ``check`` are deterministic in what the function returns: the inputs are fixed
or seeded, and each further input is chosen from the values returned so far.  So the calls of
one run form a path in a tree whose nodes are the harness's calls and whose branches are the
function's answers (a value, bit for bit, or an exception's type and text).  :class:`Memo`
keeps that tree per harness run kind, adapter, protocol and signature.  A new function is
walked down it, called on each node's arguments; where its answer has no branch the walk stops
and the harness runs it for real (recording its path); where the walk reaches a verdict, the
function gave every answer that run got, so the harness would give it that verdict.

The zoo uses it to run thousands of generated functions, many of which compute the same values
through different code; the long profile can turn it off (``--no-memo``) to check it.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np


def answer_key(value: Any) -> Any:
    """A hashable, exact key of what a call returned (arrays by dtype, shape and bytes)."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(answer_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), answer_key(v)) for k, v in value.items())))
    if isinstance(value, (float, np.floating)):
        return (type(value).__name__, float(value).hex())
    return (type(value).__name__, repr(value))


def _feed(h: Any, key: Any) -> None:
    """Feed an :func:`answer_key` to a hash, arrays' bytes as they are (their ``repr`` is the
    slow part of a digest of a 1,000-item list)."""
    if isinstance(key, tuple):
        h.update(b"(%d" % len(key))
        for part in key:
            _feed(h, part)
        h.update(b")")
    elif isinstance(key, bytes):
        h.update(b"b%d:" % len(key))
        h.update(key)
    else:
        text = repr(key).encode()
        h.update(b"r%d:" % len(text))
        h.update(text)


def _digest(args: Tuple, kwargs: Dict[str, Any]) -> str:
    h = hashlib.sha256()
    _feed(h, (answer_key(list(args)), answer_key(kwargs)))
    return h.hexdigest()


@dataclass
class _Node:
    args: Tuple
    kwargs: Dict[str, Any]
    digest: str
    children: Dict[Any, "_Node"] = field(default_factory=dict)
    verdict: Any = None  # set on the node after a run's last call


def _call(func: Callable, args: Tuple, kwargs: Dict[str, Any]) -> Tuple[Any, Optional[BaseException], Any]:
    """(value, exception, key) of one call on copies of the arguments."""
    try:
        value = func(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    except Exception as exc:  # the function's own error is an answer like any value
        return None, exc, ("raised", type(exc).__name__, str(exc))
    return value, None, answer_key(value)


class Memo:
    """The trees of recorded runs; :meth:`run` gives a verdict, reused or computed."""

    def __init__(self) -> None:
        self.roots: Dict[Tuple, _Node] = {}
        self.hits = 0
        self.misses = 0
        self.unrecorded = 0  # runs whose calls did not follow one recorded path (never reused)

    def run(self, kind: Tuple, func: Callable, compute: Callable[[Callable], Any]) -> Any:
        """The verdict of ``compute(func)``, reused where ``func`` answers as a recorded run's function did.

        ``kind``: what else the verdict depends on (the harness entry point, adapter, protocol);
        the signature of ``func`` is added to it.
        """
        key = kind + (str(inspect.signature(func)),)
        node = self.roots.get(key)
        while node is not None:
            if node.verdict is not None and not node.children:
                self.hits += 1
                return node.verdict
            _, _, answer = _call(func, node.args, node.kwargs)
            node = node.children.get(answer)
        self.misses += 1
        path: List[Tuple[Tuple, Dict[str, Any], Any]] = []

        @functools.wraps(func)
        def recorded(*args, **kwargs):
            saved = (copy.deepcopy(args), copy.deepcopy(kwargs))
            try:
                value = func(*args, **kwargs)
            except Exception as exc:
                path.append((*saved, ("raised", type(exc).__name__, str(exc))))
                raise
            path.append((*saved, answer_key(value)))
            return value

        verdict = compute(recorded)
        self._insert(key, path, verdict)
        return verdict

    def _insert(self, key: Tuple, path: List[Tuple[Tuple, Dict[str, Any], Any]], verdict: Any) -> None:
        if not path:
            self.unrecorded += 1
            return
        args, kwargs, _ = path[0]
        node = self.roots.setdefault(key, _Node(args, kwargs, _digest(args, kwargs)))
        for i, (args, kwargs, answer) in enumerate(path):
            if node.digest != _digest(args, kwargs) or (node.verdict is not None and not node.children):
                self.unrecorded += 1  # the harness asked something else here: keep nothing of this run
                return
            if i + 1 == len(path):
                if node.children.get(answer) is not None:
                    self.unrecorded += 1  # a recorded run went on after this answer
                    return
                node.children[answer] = _Node((), {}, "", verdict=verdict)
                return
            nxt = path[i + 1]
            node = node.children.setdefault(answer, _Node(nxt[0], nxt[1], _digest(nxt[0], nxt[1])))
