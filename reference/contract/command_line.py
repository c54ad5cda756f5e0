"""What every command of retrieval-conformance does at its edges: exit statuses, argument
errors, lost output and Ctrl-C.

Every entry point (``retrieval-conformance`` and its subcommands, and each ``python -m`` main)
runs through :func:`run_command`, and every argument parser is a :class:`CommandParser`, so
no edge ends in a traceback:

==========  ==================================================================================
status      meaning
==========  ==================================================================================
0           done (``check``: the function conforms; ``golden``: every case passed)
1           the verdict is negative (a deviation, a mismatch, a regression), or the output
            could not be written (standard output closed, full or failing: one ``error:``
            line on stderr, as Unix tools do)
2           usage error: the last line on stderr is ``error: ...``, naming the argument, what
            was given and what to do
130         interrupted (Ctrl-C): one line on stderr
141         the reader of standard output went away (``| head -1``): silent, as a program
            killed by SIGPIPE appears in a shell
==========  ==================================================================================

(``compute-ap`` keeps the exit status 255 of the program it reproduces.)

Lives in the contract so that the commands of every layer can share it.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import re
import sys
from typing import Any, Callable, List, NoReturn, Optional, Sequence

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
#: every exit status a command of this project may return (compute-ap's 255 included)
EXIT_STATUSES = (EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE, 255)


class OutputLost(BaseException):
    """Standard output cannot be written any more.

    A ``BaseException`` (like ``KeyboardInterrupt``) so that a command's ``except Exception``
    around other work cannot swallow it and carry on writing into the void.
    """

    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause


class _GuardedStream:
    """A stream whose failed writes raise :class:`OutputLost` (every other attribute is the stream's)."""

    def __init__(self, stream: Any):
        self._stream = stream

    def _guard(self, method: str, *args: Any) -> Any:
        if self._stream is None:
            raise OutputLost(OSError(errno.EBADF, "standard output is closed"))
        try:
            return getattr(self._stream, method)(*args)
        except (OSError, ValueError) as exc:  # ValueError: I/O operation on a closed file
            raise OutputLost(exc) from None

    def write(self, data: Any) -> Any:
        return self._guard("write", data)

    def writelines(self, lines: Any) -> Any:
        return self._guard("writelines", lines)

    def flush(self) -> None:
        if self._stream is not None:
            self._guard("flush")

    @property
    def buffer(self) -> "_GuardedStream":
        return _GuardedStream(getattr(self._stream, "buffer", None))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _say(line: str) -> None:
    """One line on stderr, if stderr can take it."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _discard_stdout(stream: Any) -> None:
    """Point the file descriptor of ``stream`` at the null device, so the interpreter's own flush
    at exit finds nowhere to fail (the buffered text is lost anyway)."""
    try:
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except (AttributeError, OSError, ValueError):  # not a real file (captured, StringIO)
        pass


def run_command(main: Callable[[Optional[List[str]]], int], argv: Optional[Sequence[str]] = None) -> int:
    """Run ``main(argv)`` and return its exit status, turning the edges into statuses (module table).

    ``argv`` None reads ``sys.argv[1:]`` (in ``main``).  A usage error that ``main`` raises as
    ``SystemExit`` keeps its status.  A failure inside ``main`` that is none of these (a bug)
    still raises: hiding it would hide the bug.
    """
    real = sys.stdout
    if real is None:
        _say("error: standard output is closed; give the command somewhere to write (e.g. > out.txt)")
        return EXIT_FAILED
    sys.stdout = _GuardedStream(real)
    try:
        try:
            status = main(None if argv is None else list(argv))
        except SystemExit:  # argparse's --help, --version and usage errors: their output counts too
            sys.stdout.flush()
            raise
        sys.stdout.flush()
        return int(status or 0)
    except OutputLost as lost:
        _discard_stdout(real)
        cause = lost.cause
        if isinstance(cause, BrokenPipeError):
            return EXIT_BROKEN_PIPE
        reason = cause.strerror if isinstance(cause, OSError) and cause.strerror else str(cause)
        _say(f"error: cannot write to standard output ({reason}); the output is incomplete")
        return EXIT_FAILED
    except KeyboardInterrupt:
        _say("interrupted (Ctrl-C); nothing more was done")
        return EXIT_INTERRUPTED
    finally:
        if isinstance(sys.stdout, _GuardedStream):
            sys.stdout = real


def exit_with(main: Callable[[Optional[List[str]]], int]) -> NoReturn:
    """``sys.exit(run_command(main))``: the body of a module's ``if __name__ == "__main__":``."""
    sys.exit(run_command(main))


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors end in one line ``error: ...`` (status 2).

    argparse's own last line is ``PROG: error: ...``; scripts and the fuzz campaign look for the
    line that starts with ``error:``.  Subparsers inherit the class.
    """

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"error: {self.prog}: {message}; see {self.prog} --help\n")


# argparse ``type=`` converters: the message says what was expected; argparse adds the option


def integer(text: str) -> int:
    """Any integer within int64 (the command checks its range and says why)."""
    return _integer(text, -MAX_OPTION_INTEGER, "a whole number")


def positive_int(text: str) -> int:
    """An integer >= 1."""
    return _integer(text, 1, "a whole number >= 1")


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    return _integer(text, 0, "a whole number >= 0")


#: the largest integer an option takes: int64's, the widest field a count or a cut-off is stored in
MAX_OPTION_INTEGER = 2**63 - 1
#: an integer as an option writes it: ASCII decimal digits with an optional sign, nothing else
#: (Python's ``int`` also reads ``1_0`` as 10 and Arabic-Indic ``٥`` as 5, which no user means)
_DECIMAL = re.compile(r"[+-]?[0-9]{1,19}")


def parse_integer(text: str, least: int = 0, most: int = MAX_OPTION_INTEGER) -> Optional[int]:
    """The integer ``text`` writes in ASCII decimal digits, within ``least .. most``; None otherwise.

    The one reading of an integer option on every command line (``--k``, ``--max-rank``,
    ``--resamples``...): surrounding whitespace is allowed, underscores, other scripts' digits,
    and integers beyond int64 are not.
    """
    text = text.strip()
    if not _DECIMAL.fullmatch(text):
        return None
    value = int(text)
    return value if least <= value <= most else None


def _integer(text: str, least: int, expected: str) -> int:
    value = parse_integer(text, least)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {_shown(text)} (ASCII digits, within int64)")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0 (e.g. 10), got {_shown(text)}")
    return value


def non_negative_number(text: str) -> float:
    """A finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {_shown(text)}")
    return value


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "...")


def writable_file(option: str, path: str) -> None:
    """Raise ``ValueError`` naming ``option`` when ``path`` cannot be written, before any work is done.

    Nothing is created: the folder must exist and be writable, and an existing ``path`` must be
    a writable regular file.
    """
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        problem = "it is a folder"
    elif not os.path.isdir(folder):
        problem = f"its folder {folder} does not exist"
    elif os.path.exists(path) and not os.access(path, os.W_OK):
        problem = "the file is not writable"
    elif not os.path.exists(path) and not os.access(folder, os.W_OK | os.X_OK):
        problem = f"its folder {folder} is not writable"
    else:
        return
    raise ValueError(f"{option} {path}: cannot write the report there ({problem}); give a writable path")
