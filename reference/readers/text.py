"""Small text files of the command line, read within limits: query ids, known deviations, baselines.

Every file a command reads that is not data for a metric (``evaluate --query-ids``, ``check
--known-deviations``, ``bench gate``'s JSON) goes through :func:`read_text_file`, so that a FIFO,
a device such as ``/dev/zero``, a huge file or bytes that are not UTF-8 give one named error
instead of a hang, a ``MemoryError`` or a ``UnicodeDecodeError`` traceback.

Errors
------
:class:`~.limits.FileRefusedError` (a ``ValueError``): not a regular file, or beyond a limit.
:class:`TextFileError` (a ``ValueError``): bytes that are not UTF-8 text, or a NUL byte; the
message names the file and the line.  ``FileNotFoundError`` / ``IsADirectoryError`` /
``OSError``: the file cannot be opened.  A command catches ``(OSError, ValueError)`` and prints
the message.
"""

from __future__ import annotations

from typing import List

from retrieval_conformance.reference.readers.limits import MAX_LINES, FileRefusedError, PathLike, _read_file

__all__ = ["MAX_TEXT_BYTES", "TextFileError", "read_text_file", "read_text_lines"]

#: largest command-line text file read (``max_bytes``): query-id lists and baselines are far smaller
MAX_TEXT_BYTES = 256 << 20

_BOM = b"\xef\xbb\xbf"


class TextFileError(ValueError):
    """A text file whose bytes are not UTF-8 text (or hold a NUL byte): the message names the line."""


def read_text_file(path: PathLike, *, max_bytes: int = MAX_TEXT_BYTES, max_lines: int = MAX_LINES) -> str:
    """The content of a regular UTF-8 text file of at most ``max_bytes`` bytes and ``max_lines`` lines.

    A leading UTF-8 byte-order mark is dropped (editors on Windows write one); line ends stay as
    they are (``str.splitlines`` reads ``\\n`` and ``\\r\\n`` alike).

    Parameters
    ----------
    path : str or os.PathLike
        A regular file (a FIFO, a device or a socket is refused before reading).
    max_bytes, max_lines : int
        Largest file and most lines read (256 MiB and 10**7 by default).

    Returns
    -------
    str

    Raises
    ------
    FileRefusedError
        Not a regular file, or beyond ``max_bytes`` / ``max_lines``.
    TextFileError
        Bytes that are not UTF-8, or a NUL byte (a binary file); the message names the line.
    FileNotFoundError, IsADirectoryError, OSError
        The file cannot be opened.
    """
    where = str(path)
    data = _read_file(path, max_bytes)
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    if lines > max_lines:
        raise FileRefusedError(
            path,
            f"more than {max_lines:,} lines ({lines:,})",
            "pass max_lines=... to read a longer file",
            limit="max_lines",
        )
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise TextFileError(f"{where}: line {line}: NUL byte (is it a binary or compressed file?); expected UTF-8 text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TextFileError(
            f"{where}: line {line}: byte 0x{data[exc.start]:02x} is not UTF-8 text; save the file as UTF-8"
        ) from None


def read_text_lines(
    path: PathLike, *, max_bytes: int = MAX_TEXT_BYTES, max_lines: int = MAX_LINES, comments: bool = False
) -> List[str]:
    """The non-blank lines of a text file (:func:`read_text_file`), each stripped of surrounding whitespace.

    Parameters
    ----------
    comments : bool
        Drop everything from a ``#`` to the end of its line first (known-deviations files).
    """
    out = []
    for line in read_text_file(path, max_bytes=max_bytes, max_lines=max_lines).splitlines():
        if comments:
            line = line.split("#", 1)[0]
        line = line.strip()
        if line:
            out.append(line)
    return out
