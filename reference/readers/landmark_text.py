"""The VGG text layouts of landmark retrieval: ground-truth files and ranked lists.

Two formats are read:

* the VGG text layout of Oxford5k / Paris6k (``<query>_query.txt``, ``<query>_good.txt``,
  ``<query>_ok.txt``, ``<query>_junk.txt``, one image name per line);
* ranked-list files (one name per line, best first).

Lines are read the way the original ``compute_ap.cpp`` reads them with ``std::getline``:
the bytes are split on ``b"\\n"`` only, so a ``"\\r"`` (a file written on Windows) or a
trailing space stays part of the name, an empty line is a name (the empty string), and a
final line without a newline still counts; a final newline does not add an empty name.
Bytes are decoded as UTF-8 with ``surrogateescape``, which is one-to-one: two names are
equal as ``str`` exactly when their bytes are equal, as in the C++ program.

Files are opened and bounded as :mod:`~retrieval_conformance.reference.readers.limits` says
(``max_bytes``, ``max_lines``; only regular files).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from retrieval_conformance.reference.readers.limits import (
    MAX_FILE_BYTES,
    MAX_LINES,
    FileRefusedError,
    PathLike,
    _clip,
    _read_file,
)

__all__ = [
    "GroundTruthQuery",
    "decode_name",
    "read_gt_folder",
    "read_gt_query",
    "read_lines",
    "read_ranked_list",
    "split_lines",
]


# --------------------------------------------------------------------------- lines
def decode_name(raw: bytes) -> str:
    """Decode one raw name; UTF-8 with ``surrogateescape`` keeps bytes equality."""
    return raw.decode("utf-8", "surrogateescape")


def _count_lines(data: bytes) -> int:
    """How many names :func:`split_lines` makes of ``data`` (without building them)."""
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def split_lines(data: bytes) -> List[str]:
    """Split file contents into names exactly as repeated ``std::getline`` calls do.

    Parameters
    ----------
    data : bytes
        Whole file contents.

    Returns
    -------
    list of str
        ``data.split(b"\\n")`` without the empty piece after a final newline.  ``b""`` gives
        ``[]``, ``b"\\n"`` gives ``[""]``, ``b"a\\r\\nb"`` gives ``["a\\r", "b"]``.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    if not data:
        return []
    pieces = bytes(data).split(b"\n")
    if pieces[-1] == b"":
        # getline stops at end of file without producing a name for the empty tail
        pieces.pop()
    return [decode_name(p) for p in pieces]


def read_lines(path: PathLike, *, max_bytes: int = MAX_FILE_BYTES, max_lines: int = MAX_LINES) -> List[str]:
    """Names in a text file, one per line, read raw (see :func:`split_lines`).

    A directory reads as an empty file: that is what ``std::ifstream`` does on Linux (the
    open succeeds, the first read fails), and the command-line twin of ``compute_ap``
    relies on it.  Any byte is accepted in a name (binary garbage reads as names, as in
    the C++ program).

    Parameters
    ----------
    path : path
    max_bytes : int
        Largest file read (default :data:`MAX_FILE_BYTES`, 1 GiB).
    max_lines : int
        Most names returned (default :data:`MAX_LINES`, 10**7), checked before any name is
        built.

    Raises
    ------
    OSError
        When the file cannot be opened: ``FileNotFoundError`` when it does not exist.
    FileRefusedError
        For a FIFO, device or socket (which could block or never end), or a file beyond
        ``max_bytes`` or ``max_lines``.
    """
    data = _read_file(path, max_bytes, empty_dir=True)
    n = _count_lines(data)
    if n > max_lines:
        raise FileRefusedError(
            path, f"more than {max_lines:,} lines ({n:,})", "pass max_lines=... to read more names", limit="max_lines"
        )
    return split_lines(data)


def read_ranked_list(path: PathLike, *, max_bytes: int = MAX_FILE_BYTES, max_lines: int = MAX_LINES) -> List[str]:
    """A ranked list (best first), one name per line, read raw like ``compute_ap.cpp``.

    Limits and errors as :func:`read_lines`.
    """
    return read_lines(path, max_bytes=max_bytes, max_lines=max_lines)


# --------------------------------------------------------------------------- VGG layout
_QUERY_SUFFIXES = ("_query.txt", "_good.txt", "_ok.txt", "_junk.txt")


@dataclass
class GroundTruthQuery:
    """Ground truth of one Oxford/Paris query in the VGG layout.

    Attributes
    ----------
    name : str
        Query name (``all_souls_1``); the file prefix.
    image : str or None
        Query image from ``<query>_query.txt`` (``oxc1_all_souls_000013``), None if absent.
    bbox : tuple of 4 float or None
        Query box (x1, y1, x2, y2) from ``<query>_query.txt``.
    good, ok, junk : list of str
        Names as listed (duplicates kept; the protocol de-duplicates).
    """

    name: str
    image: Optional[str] = None
    bbox: Optional[Tuple[float, float, float, float]] = None
    good: List[str] = field(default_factory=list)
    ok: List[str] = field(default_factory=list)
    junk: List[str] = field(default_factory=list)

    def as_dict(self) -> Dict[str, List[str]]:
        """``{"good": ..., "ok": ..., "junk": ...}``, the ``oxford`` preset's input."""
        return {"good": list(self.good), "ok": list(self.ok), "junk": list(self.junk)}


def _parse_query_line(names: List[str], path: str) -> Tuple[Optional[str], Optional[tuple]]:
    lines = [n for n in names if n.strip()]
    if not lines:
        return None, None
    fields = lines[0].split()
    image = fields[0]
    if len(fields) == 1:
        return image, None
    if len(fields) != 5:
        raise ValueError(f"{path}: expected '<image> x1 y1 x2 y2' on the first line, got {_clip(lines[0])}")
    try:
        bbox = tuple(float(v) for v in fields[1:])
    except ValueError:
        raise ValueError(f"{path}: the query box must be 4 numbers, got {_clip(lines[0])}") from None
    return image, bbox


def read_gt_query(prefix: PathLike, *, require_query_file: bool = False) -> GroundTruthQuery:
    """Read one query's ground truth from ``prefix + "_good.txt"`` and friends.

    Parameters
    ----------
    prefix : path
        The GTQUERY prefix of ``compute_ap`` (``gt/all_souls_1``).
    require_query_file : bool
        Raise when ``<prefix>_query.txt`` is missing (default: tolerate it; ``compute_ap``
        never reads it).

    Raises
    ------
    FileNotFoundError
        When ``_good.txt``, ``_ok.txt`` or ``_junk.txt`` is missing (the three files
        ``compute_ap`` needs), naming the file.
    FileRefusedError
        When one of them is a FIFO or device, or beyond the limits of :func:`read_lines`.
    """
    prefix = os.fspath(prefix)
    out = GroundTruthQuery(name=os.path.basename(prefix))
    for kind in ("good", "ok", "junk"):
        path = f"{prefix}_{kind}.txt"
        if not os.path.exists(path):
            raise FileNotFoundError(f"ground-truth file {path!r} not found")
        setattr(out, kind, read_lines(path))
    qpath = f"{prefix}_query.txt"
    if os.path.exists(qpath):
        out.image, out.bbox = _parse_query_line(read_lines(qpath), qpath)
    elif require_query_file:
        raise FileNotFoundError(f"query file {qpath!r} not found")
    return out


_GT_FILE = re.compile(r"^(?P<q>.+)_(?P<kind>query|good|ok|junk)\.txt$")


def read_gt_folder(folder: PathLike) -> Dict[str, GroundTruthQuery]:
    """Read every query of a VGG ground-truth folder.

    A query is a prefix ``q`` for which ``q_good.txt``, ``q_ok.txt`` and ``q_junk.txt``
    exist (``q_query.txt`` is read when present).  Other files (``imlist.txt``) are ignored.

    Returns
    -------
    dict
        Query name -> :class:`GroundTruthQuery`, in sorted name order.

    Raises
    ------
    FileNotFoundError
        If ``folder`` is not a directory.
    ValueError
        If a query has some but not all of the three gt files, or the folder holds no query.
    """
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"ground-truth folder {folder!r} not found")
    kinds: Dict[str, set] = {}
    for entry in os.listdir(folder):
        m = _GT_FILE.match(entry)
        if m:
            kinds.setdefault(m.group("q"), set()).add(m.group("kind"))
    out: Dict[str, GroundTruthQuery] = {}
    for q in sorted(kinds):
        have = kinds[q] & {"good", "ok", "junk"}
        if not have:
            continue
        if have != {"good", "ok", "junk"}:
            missing = sorted({"good", "ok", "junk"} - have)
            raise ValueError(f"query {q!r} in {folder!r} lacks " + ", ".join(f"{q}_{m}.txt" for m in missing))
        out[q] = read_gt_query(os.path.join(folder, q))
    if not out:
        raise ValueError(f"no <query>_good/_ok/_junk.txt files in {folder!r}")
    return out
