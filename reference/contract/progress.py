"""Progress of long work on stderr, for every command: shown only when stderr is a terminal.

A command opens :func:`reporting` around its work; the code doing the work calls :func:`tick`
after each unit (an evaluation of the audit, a check of the harness, a run of ``compare``),
without knowing whether anyone shows it.  Nothing is written when stderr is a file or a pipe, so
logs and ``2>&1 | ...`` stay clean; on a terminal one line is rewritten in place and ended when
the work ends.
"""

from __future__ import annotations

import contextlib
import sys
from contextvars import ContextVar
from typing import IO, Iterator, Optional

__all__ = ["Progress", "reporting", "tick"]


class Progress:
    """One line ``LABEL: N[/TOTAL] UNIT`` on ``stream`` (default: the current ``sys.stderr``), written
    only when ``stream`` is a terminal."""

    def __init__(self, label: str, unit: str, total: Optional[int] = None, stream: Optional[IO] = None):
        self.label, self.unit, self.total = label, unit, total
        self.stream = sys.stderr if stream is None else stream  # at call time: this run's stderr
        try:
            self.shown = bool(self.stream.isatty())
        except (AttributeError, ValueError):  # no isatty, or closed
            self.shown = False
        self.done = 0

    def tick(self, count: int = 1) -> None:
        self.done += count
        if self.shown:
            of = f"/{self.total}" if self.total is not None else ""
            self.stream.write(f"\r{self.label}: {self.done}{of} {self.unit}")
            self.stream.flush()

    def close(self) -> None:
        if self.shown and self.done:
            self.stream.write("\n")  # the next line (the report, an error) starts on its own
            self.stream.flush()


_CURRENT: ContextVar[Optional[Progress]] = ContextVar("rc_progress", default=None)


@contextlib.contextmanager
def reporting(label: str, unit: str, total: Optional[int] = None, stream: Optional[IO] = None) -> Iterator[Progress]:
    """Show the :func:`tick` calls made inside the block as one progress line (on a terminal)."""
    progress = Progress(label, unit, total, stream)
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)
        progress.close()


def tick(count: int = 1) -> None:
    """One more unit of work done, shown where a command reports progress (else nothing)."""
    progress = _CURRENT.get()
    if progress is not None:
        progress.tick(count)
