"""Capturing what a call writes to stdout and stderr.

* :class:`PythonCapture` (``thread``/``none`` isolation): the Python-level writes of the calling
  thread go to the call's buffers, every other thread's writes to the original streams.
* :class:`FdCapture` (``process`` isolation, in the worker): file descriptors 1 and 2 point to the
  worker's capture files during the call, so C code writing to them is captured too.
"""

from __future__ import annotations

import io
import os
import sys
import threading
from typing import Any, Callable, Dict, Optional, Tuple

from retrieval_conformance.conformance.harness.calling.outcome import OUTPUT_LIMIT, clip_output

_ROUTES_LOCK = threading.Lock()
_ROUTES: Dict[int, Tuple[io.StringIO, io.StringIO]] = {}  # thread id -> (stdout, stderr) buffers


class _ThreadRoutedStream:
    """Stands in for ``sys.stdout``/``sys.stderr`` while calls run in this process: writes of a
    thread running a call go to that call's buffer, all other writes to the original stream.
    (Replacing ``sys.stdout`` outright would swallow the harness's own output while a call
    runs in a thread, and forever after a call hangs.)"""

    def __init__(self, original: Any, index: int):
        self._original = original
        self._index = index

    def _target(self) -> Any:
        bufs = _ROUTES.get(threading.get_ident())
        return bufs[self._index] if bufs is not None else self._original

    def write(self, text: str) -> int:
        target = self._target()
        if target is None:  # no console (pythonw)
            return len(text)
        return target.write(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        target = self._target()
        if target is not None:
            target.flush()

    def isatty(self) -> bool:
        target = self._target()
        if target is None or target is not self._original:
            return False  # captured: progress bars should not draw for a terminal
        try:
            return bool(target.isatty())
        except Exception:
            return False

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:
        return getattr(self._original, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self._original, "errors", None) or "strict"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


# Routers are kept alive after they are taken out of ``sys.stdout``: CPython's print() (before
# 3.12) holds a *borrowed* reference to sys.stdout while it writes, so a router freed because a
# call's thread put the original stream back would crash a print() running in another thread.
_ROUTERS: Dict[Tuple[int, int], _ThreadRoutedStream] = {}


def _router_for(original: Any, index: int) -> _ThreadRoutedStream:
    key = (id(original), index)
    router = _ROUTERS.get(key)
    if router is None or router._original is not original:
        router = _ROUTERS[key] = _ThreadRoutedStream(original, index)
        while len(_ROUTERS) > 256:  # long gone streams (e.g. pytest's per-test captures)
            del _ROUTERS[next(iter(_ROUTERS))]
    return router


class PythonCapture:
    """Captures ``sys.stdout``/``sys.stderr`` writes of the current thread (``thread``/``none`` mode)."""

    stdout = ""
    stderr = ""

    def __enter__(self) -> "PythonCapture":
        self._ident = threading.get_ident()
        self._bufs = (io.StringIO(), io.StringIO())
        with _ROUTES_LOCK:
            _ROUTES[self._ident] = self._bufs
            for index, name in enumerate(("stdout", "stderr")):
                if not isinstance(getattr(sys, name), _ThreadRoutedStream):
                    setattr(sys, name, _router_for(getattr(sys, name), index))
        return self

    def __exit__(self, *exc) -> None:
        with _ROUTES_LOCK:
            _ROUTES.pop(self._ident, None)
            if not _ROUTES:  # no call running any more: put the original streams back
                for name in ("stdout", "stderr"):
                    stream = getattr(sys, name)
                    if isinstance(stream, _ThreadRoutedStream):
                        setattr(sys, name, stream._original)
        self.stdout = clip_output(self._bufs[0].getvalue())
        self.stderr = clip_output(self._bufs[1].getvalue())


_LIBC: Any = None


def flush_c_stdio() -> None:
    """``fflush(NULL)``: C code's buffered ``printf`` output reaches its file descriptor now."""
    global _LIBC
    try:
        if _LIBC is None:
            import ctypes

            _LIBC = ctypes.CDLL(None)
        _LIBC.fflush(None)
    except Exception:
        _LIBC = False  # not available here; do not try again


def flush_python_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def read_back(fd: int, budget: int = 4 * OUTPUT_LIMIT + 16, trim: Optional[Callable[[str], str]] = None) -> str:
    """What a call wrote to the capture file ``fd`` (the last ``budget`` bytes, ``trim``-med and
    clipped), read without moving the file offset."""
    try:
        size = os.fstat(fd).st_size
        tail = min(size, budget)
        data = os.pread(fd, tail, size - tail) if tail else b""
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    if trim is not None:
        return clip_output(trim(text), cut=size - tail)  # dropped frames are not "cut" output
    return clip_output(text, cut=size - tail)


class FdCapture:
    """Captures a call's output in the worker process at the OS level: file descriptors 1 and 2
    point to the worker's capture files during the call, and ``sys.stdout``/``sys.stderr`` write
    straight to them (so Python and C output keep their order)."""

    stdout = ""
    stderr = ""

    def __init__(self, files: Tuple[Any, Any]):
        self.fds = (files[0].fileno(), files[1].fileno())
        # made once and kept: a thread of the function may still be inside print() when they are swapped out
        self._streams = (self._text_stream(1), self._text_stream(2))

    def __enter__(self) -> "FdCapture":
        flush_python_streams()
        flush_c_stdio()
        for fd in self.fds:  # empty the files: each call's output starts at offset 0
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
        self._saved_fds = (os.dup(1), os.dup(2))
        self._saved_streams = (sys.stdout, sys.stderr)
        os.dup2(self.fds[0], 1)
        os.dup2(self.fds[1], 2)
        sys.stdout, sys.stderr = self._streams
        return self

    @staticmethod
    def _text_stream(fd: int) -> io.TextIOWrapper:
        # unbuffered: every write reaches the descriptor at once, interleaved correctly with C output
        return io.TextIOWrapper(
            io.FileIO(fd, "w", closefd=False), encoding="utf-8", errors="backslashreplace", write_through=True
        )

    def __exit__(self, *exc) -> None:
        flush_python_streams()
        flush_c_stdio()
        sys.stdout, sys.stderr = self._saved_streams
        for fd, saved in zip((1, 2), self._saved_fds):
            os.dup2(saved, fd)
            os.close(saved)
        self.stdout = read_back(self.fds[0])
        self.stderr = read_back(self.fds[1])
