"""Opening and reading files within limits, and the error a refused file raises.

Everything the readers of :mod:`retrieval_conformance.reference.readers` open goes through
here: only regular files, read within a byte limit, with messages that name the file and
the limit and never print more than a short excerpt of its data.

Limits
------
Every reader bounds what a file can make it build or wait for, so that a small or hostile
file gives a clean error naming the file and the limit instead of exhausting memory, time
or the process (each limit is a keyword argument of the readers that apply it):

``MAX_FILE_BYTES`` = 1 GiB (``max_bytes``)
    Largest text or pickle file read.  The size is checked before reading and the read
    itself stops one byte past the limit (a file may grow, or report no size).
``MAX_LINES`` = 10**7 (``max_lines``)
    Most names (lines) in one text file: a 1 GiB file of newlines would otherwise become a
    list of a billion names.
``MAX_ITEMS`` = 10**7 (``max_items``)
    Most container elements a pickle may build (list and tuple items, dict entries, set
    items), and most elements of the data expanded as a tree, i.e. with a shared object
    counted at every place it appears (what printing or copying the data visits: 24
    nested tuples that each hold the previous one twice are under 200 bytes but 2**25
    elements).
``MAX_IDS`` = 10**7 (``max_ids``)
    Most image names and ids :func:`~retrieval_conformance.reference.readers.pickles.revisitop_gnd.
    read_revisitop_gnd` returns, all lists together (arrays become lists of Python ints,
    about 30 bytes each).
``MAX_ARRAY_BYTES`` = 2 GiB (``max_array_bytes`` for pickles, ``max_bytes`` for
``.npy``/``.npz``)
    Total bytes of the numpy arrays one file may produce.  For ``.npy``/``.npz`` files the
    size each header declares is checked against this limit and against the data actually
    present before any array is allocated.
``MAX_ARRAY_ELEMENTS`` = 2**31 (``max_elements`` for ``.npy``/``.npz``)
    Most elements of the arrays one file may produce, counted from the headers before
    anything is allocated: the byte limit alone lets through an array whose items take no
    bytes (numpy's ``<U0``), which costs nothing to read and gigabytes to sort.
``MAX_DEPTH`` = 32 (``max_depth``)
    Deepest nesting of containers in a pickle.
``MAX_NPZ_MEMBERS`` = 1024 (``max_members``)
    Most arrays in one ``.npz`` file.

Text files compressed with gzip (first bytes ``1f 8b``) are read by :func:`_read_text_data`
for the readers that accept them (TREC runs and qrels, JSON Lines): ``max_bytes`` then bounds
the *decompressed* bytes, so a few kilobytes inflating to gigabytes (a gzip bomb) are refused
as a plain file of that size would be, after at most ``max_bytes + 1`` bytes are produced.

Only regular files are read, after following symbolic links: a FIFO would block forever
and a device such as ``/dev/zero`` never ends.  Such a file, or one beyond a limit, raises
:class:`FileRefusedError` (a ``ValueError``); a directory keeps reading as an empty file in
:func:`~retrieval_conformance.reference.readers.landmark_text.read_lines` (see there) and raises
:class:`IsADirectoryError` elsewhere; a missing file raises :class:`FileNotFoundError`.
Refused pickle content raises :class:`pickle.UnpicklingError`; error messages never print
the file's data beyond a short excerpt (type names and lengths instead).
"""

from __future__ import annotations

import errno
import io
import os
import stat
import zlib
from typing import Any, Optional, Union

import numpy as np

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "MAX_ARRAY_BYTES",
    "MAX_ARRAY_ELEMENTS",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_IDS",
    "MAX_ITEMS",
    "MAX_LINES",
    "MAX_NPZ_MEMBERS",
    "FileRefusedError",
    "PathLike",
]

MAX_FILE_BYTES = 1 << 30
MAX_LINES = 10**7
MAX_ITEMS = 10**7
MAX_IDS = 10**7
MAX_ARRAY_BYTES = 2 << 30
MAX_ARRAY_ELEMENTS = 1 << 31
MAX_DEPTH = 32
MAX_NPZ_MEMBERS = 1024

# reads past a file's reported size go in chunks of this size, so that a file reporting
# size 0 (/proc) or growing while read never makes us allocate the whole limit up front
_READ_CHUNK = 1 << 24
# numpy dtype kinds that hold no pointer: bool, ints, floats, complex, bytes and str (the
# only dtypes read from a pickle or a .npy/.npz file)
_PLAIN_KINDS = "biufcSU"


# --------------------------------------------------------------------------- messages
def _clip(text: Any, limit: int = 60) -> str:
    """A short, bounded rendering of a name from a file (never the whole thing)."""
    if isinstance(text, (bytes, bytearray)):
        shown = repr(bytes(text[:limit]))
    elif isinstance(text, str):
        shown = repr(text[:limit])
    else:
        return type(text).__name__
    return shown + ("..." if len(text) > limit else "")


def _describe(value: Any) -> str:
    """Type and size of a value, in bounded time and length (never its ``repr``).

    The ``repr`` of data from a file can be exponentially long (shared sub-objects are
    printed at every place they appear), so messages describe values by type and length.
    """
    name = type(value).__name__
    if isinstance(value, np.ndarray):
        return f"numpy array of shape {value.shape} and dtype {value.dtype.str}"
    if isinstance(value, (str, bytes, bytearray)):
        return f"{name} of length {len(value)}"
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return f"{name} of length {len(value)}"
    return name


def _size(n: int) -> str:
    """``1073741824`` -> ``"1,073,741,824 bytes (1 GiB)"``."""
    for unit, shift in (("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n:,} bytes ({n / (1 << shift):.3g} {unit})"
    return f"{n:,} bytes"


class FileRefusedError(ValueError):
    """A file that exists but is not read: not a regular file, or beyond a limit.

    Attributes
    ----------
    path : str
        The file as given.
    reason : str
        Short reason (``"not a regular file (a FIFO)"``, ``"more than 10,000,000 lines"``),
        what ``compute-ap`` prints.
    limit : str or None
        The keyword argument that raises the limit (``"max_bytes"``, ``"max_lines"``), or
        None when no limit is involved.
    """

    def __init__(self, path: Any, reason: str, advice: str, limit: Optional[str] = None):
        self.path = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path)
        self.reason = reason
        self.limit = limit
        super().__init__(f"{self.path}: {reason}; {advice}")


# --------------------------------------------------------------------------- files
def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse_irregular(path: Any, mode: int) -> FileRefusedError:
    return FileRefusedError(
        path,
        f"not a regular file ({_file_kind(mode)})",
        "only regular files are read (a FIFO can block forever and a device such as "
        "/dev/zero never ends): copy the data into a regular file",
    )


def _open_regular(path: PathLike, *, empty_dir: bool = False) -> Optional[io.BufferedReader]:
    """Open a regular file for binary reading, refusing anything else before reading.

    ``os.stat`` follows symbolic links, so a link to ``/dev/zero`` is refused as the device
    it is.  The file is opened with ``O_NONBLOCK`` (opening a FIFO swapped in after the
    check cannot block) and checked again with ``fstat`` on the open descriptor.

    Returns
    -------
    file object, or None for a directory when ``empty_dir`` is true.

    Raises
    ------
    FileNotFoundError
        When the path does not exist (or is a dangling link).
    IsADirectoryError
        For a directory, unless ``empty_dir``.
    FileRefusedError
        For a FIFO, device or socket.
    """
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        if empty_dir:
            return None
        raise IsADirectoryError(errno.EISDIR, "is a directory", os.fsdecode(os.fspath(path)))
    if not stat.S_ISREG(st.st_mode):
        raise _refuse_irregular(path, st.st_mode)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse_irregular(path, st.st_mode)
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def _read_bounded(f: Any, max_bytes: int, path: Any, size_hint: int = 0) -> bytes:
    """At most ``max_bytes`` from a binary file object; one byte more raises."""
    parts = []
    total = 0
    if 0 < size_hint <= max_bytes:
        # a regular file in one read; +1 notices a file that grew since it was measured
        first = f.read(size_hint + 1)
        if len(first) <= size_hint:
            return first
        parts.append(first)
        total = len(first)
    while total <= max_bytes:
        chunk = f.read(min(_READ_CHUNK, max_bytes + 1 - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    if total > max_bytes:
        raise FileRefusedError(
            path,
            f"larger than the limit of {_size(max_bytes)}",
            "pass max_bytes=... to read a larger file",
            limit="max_bytes",
        )
    return b"".join(parts)


def _read_file(path: PathLike, max_bytes: int, *, empty_dir: bool = False) -> bytes:
    """The whole content of a regular file of at most ``max_bytes`` (see the module doc)."""
    f = _open_regular(path, empty_dir=empty_dir)
    if f is None:
        return b""
    with f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise FileRefusedError(
                path,
                f"{_size(size)}, more than the limit of {_size(max_bytes)}",
                "pass max_bytes=... to read a larger file",
                limit="max_bytes",
            )
        return _read_bounded(f, max_bytes, os.fspath(path), size)


GZIP_MAGIC = b"\x1f\x8b"


def _gunzip_bounded(data: bytes, max_bytes: int, path: Any) -> bytes:
    """The decompressed bytes of gzip ``data`` (every member), at most ``max_bytes`` of them."""
    parts = []
    total = 0
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)  # 31: a gzip header and trailer
        try:
            while True:
                # max_length bounds each call's output: a bomb never inflates past the limit + 1
                chunk = inflater.decompress(rest, min(_READ_CHUNK, max_bytes + 1 - total))
                rest = inflater.unconsumed_tail
                parts.append(chunk)
                total += len(chunk)
                if total > max_bytes:
                    raise FileRefusedError(
                        path,
                        f"decompresses to more than the limit of {_size(max_bytes)}",
                        "pass max_bytes=... to read a larger file",
                        limit="max_bytes",
                    )
                if inflater.eof or not chunk and not rest:
                    break
        except zlib.error as exc:
            raise ValueError(
                f"{os.fsdecode(path)}: not a readable gzip file ({exc}); expected gzip-compressed text or plain text"
            ) from None
        if not inflater.eof:
            raise ValueError(
                f"{os.fsdecode(path)}: truncated gzip file (the compressed data ends early); expected a whole gzip file"
            )
        rest = inflater.unused_data
        if rest.strip(b"\0") == b"":  # padding after the last member, as gzip itself allows
            break
    return b"".join(parts)


def _read_text_data(path: PathLike, max_bytes: int) -> bytes:
    """The bytes of a regular text file, decompressed when it is gzip, within ``max_bytes`` either way."""
    data = _read_file(path, max_bytes)
    if data.startswith(GZIP_MAGIC):
        return _gunzip_bounded(data, max_bytes, os.fspath(path))
    return data


def _refuse_bare_cr(data: bytes, path: Any) -> None:
    """Raise when a line of ``data`` holds a carriage return inside it, not just before its ``\\n``.

    Lines split on ``\\n`` (``\\r\\n`` ends read as they should); a file whose lines end in a
    bare ``\\r`` (classic Mac OS) would be one line, read as its first record and the rest lost
    without a word, so it is refused, naming the line.
    """
    if b"\r" not in data:
        return
    for number, line in enumerate(data.split(b"\n"), 1):
        if b"\r" in line.strip():
            raise ValueError(
                f"{os.fsdecode(path)}: line {number}: a carriage return (\\r) inside the line: its lines end "
                "in a bare \\r (classic Mac OS line ends) or it holds a stray \\r, and what follows would be "
                "read as more of this line; convert the line ends to \\n (e.g. tr '\\r' '\\n' < FILE)"
            )
