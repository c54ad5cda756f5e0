"""``retrieval-conformance compute-ap GTQUERY RANKEDLIST``: the VGG ``compute_ap`` in Python.

Behaves like the C++ program (``golden/tools/compute_ap.cpp``, the original tool's
command line): it reads ``RANKEDLIST``, then ``GTQUERY_good.txt``, ``GTQUERY_ok.txt`` and
``GTQUERY_junk.txt`` (raw lines, see :mod:`retrieval_conformance.reference.readers`),
prints the query's AP as ``std::cout << float`` would (:func:`~retrieval_conformance.
reference.protocols.landmark.format_cpp_float`) and returns 0.  A file that cannot be opened prints
``File <path> not found!`` on stderr and returns 255 (the first missing file in that order
is the one reported, nothing is printed on stdout); a wrong number of arguments prints the
usage line on stdout and returns 255.  The output bytes and the status equal the
program's, but for ``--help`` (or ``-h``) alone, which prints the usage and what the program
does and returns 0, as every other command's help does.

Where the program would hang or exhaust memory, this twin stops cleanly instead: a file
that is not a regular file (a FIFO, on which the program blocks forever, or a device such
as ``/dev/zero``, which it reads until memory runs out; symbolic links are followed), or
one beyond the readers' limits (more than ``MAX_FILE_BYTES`` = 1 GiB or ``MAX_LINES`` =
10**7 names, see :mod:`retrieval_conformance.reference.readers`), prints
``File <path> not read: <reason>`` on stderr (e.g. ``not a regular file (a FIFO)``) and
returns 255, nothing on stdout, in the same order of files.  A directory still reads as an
empty file, as in the program.  Binary garbage reads as names, byte for byte.
"""

from __future__ import annotations

import io
import os
import sys
from typing import IO, List, Optional, Sequence

from retrieval_conformance.reference.protocols.landmark import format_cpp_float, oxford_ap
from retrieval_conformance.reference.readers import FileRefusedError, read_lines

USAGE = "Usage: ./compute_ap [GROUNDTRUTH QUERY] [RANKED LIST]\n"
FAILURE_STATUS = 255  # the original exits with -1, i.e. status byte 255
#: what ``--help`` adds to the usage line
HELP = (
    "Prints the average precision of RANKED LIST (one image name per line) for the query whose\n"
    "ground truth is GROUNDTRUTH QUERY_good.txt, _ok.txt and _junk.txt, as the VGG program does;\n"
    "status 255 when a file cannot be read or the arguments are not two.\n"
)

__all__ = ["FAILURE_STATUS", "USAGE", "compute_ap_main", "main"]


def _write(stream: Optional[IO], data: bytes, default: IO) -> None:
    stream = default if stream is None else stream
    if isinstance(stream, io.TextIOBase) or hasattr(stream, "encoding"):
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            # bytes as the program writes them (a path need not be valid UTF-8)
            stream.flush()
            buffer.write(data)
            buffer.flush()
        else:
            stream.write(data.decode("utf-8", "replace"))
            stream.flush()
    else:
        stream.write(data)


def _load(path: str, stderr: Optional[IO]) -> Optional[List[str]]:
    try:
        return read_lines(path)
    except FileRefusedError as exc:
        # where the program would block (FIFO) or exhaust memory (/dev/zero, a huge file)
        _write(
            stderr,
            b"File " + os.fsencode(path) + b" not read: " + exc.reason.encode("utf-8", "replace") + b"\n",
            sys.stderr,
        )
        return None
    except OSError:
        _write(stderr, b"File " + os.fsencode(path) + b" not found!\n", sys.stderr)
        return None


def compute_ap_main(
    argv: Optional[Sequence[str]] = None, *, stdout: Optional[IO] = None, stderr: Optional[IO] = None
) -> int:
    """Run ``compute_ap GTQUERY RANKEDLIST``; returns the exit status (0 or 255).

    ``--help`` or ``-h`` alone prints the usage line and what the program does (status 0).

    A missing file prints ``File <path> not found!`` (status 255), as the program does; a
    FIFO, device or oversize file prints ``File <path> not read: <reason>`` (status 255)
    where the program would block or run out of memory (see the module docstring).

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the command name (default ``sys.argv[1:]``): exactly two.
    stdout, stderr : text or binary streams, optional
        Where to write (default ``sys.stdout`` / ``sys.stderr``).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--help"], ["-h"]):  # asked for: the usage and what it does, status 0 (the program has no help)
        _write(stdout, (USAGE + HELP).encode("ascii"), sys.stdout)
        return 0
    if len(args) != 2:
        _write(stdout, USAGE.encode("ascii"), sys.stdout)
        return FAILURE_STATUS
    gt_prefix, ranked_path = (os.fsdecode(a) for a in args)
    lists = []
    # Same order as the program: ranked list first, then good, ok, junk.
    for path in (ranked_path, gt_prefix + "_good.txt", gt_prefix + "_ok.txt", gt_prefix + "_junk.txt"):
        names = _load(path, stderr)
        if names is None:
            return FAILURE_STATUS
        lists.append(names)
    ranked, good, ok, junk = lists
    value = oxford_ap(ranked, good, ok, junk)
    _write(stdout, (format_cpp_float(value) + "\n").encode("ascii"), sys.stdout)
    return 0


def main() -> None:  # pragma: no cover - thin wrapper
    """``python -m retrieval_conformance.reference.protocols.landmark.cli GTQUERY RANKEDLIST``."""
    from retrieval_conformance.reference.contract.command_line import exit_with

    exit_with(compute_ap_main)


if __name__ == "__main__":  # pragma: no cover
    main()
