"""Readers for landmark-retrieval ground truth and ranked lists.

Three formats are read:

* the VGG text layout of Oxford5k / Paris6k (``<query>_query.txt``, ``<query>_good.txt``,
  ``<query>_ok.txt``, ``<query>_junk.txt``, one image name per line);
* ranked-list files (one name per line, best first);
* the ground-truth pickles of revisitop (``gnd_roxford5k.pkl``: ``easy``/``hard``/``junk``)
  and cirtorch (``gnd_oxford5k.pkl``: ``ok``/``junk``), through :class:`RestrictedUnpickler`.

Lines are read the way the original ``compute_ap.cpp`` reads them with ``std::getline``:
the bytes are split on ``b"\\n"`` only, so a ``"\\r"`` (a file written on Windows) or a
trailing space stays part of the name, an empty line is a name (the empty string), and a
final line without a newline still counts; a final newline does not add an empty name.
Bytes are decoded as UTF-8 with ``surrogateescape``, which is one-to-one: two names are
equal as ``str`` exactly when their bytes are equal, as in the C++ program.

A pickle can run arbitrary code when loaded.  Ground-truth pickles are therefore only ever
opened through :class:`RestrictedUnpickler`, which resolves no global except the few that
numpy arrays and plain containers need; never hand an untrusted file to the standard
library's unrestricted loader.
"""
from __future__ import annotations

import _compat_pickle
import builtins
import io
import os
import pickle
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "GroundTruthQuery",
    "RestrictedUnpickler",
    "decode_name",
    "load_restricted_pickle",
    "read_gt_folder",
    "read_gt_query",
    "read_lines",
    "read_ranked_list",
    "read_revisitop_gnd",
    "split_lines",
]


# --------------------------------------------------------------------------- lines
def decode_name(raw: bytes) -> str:
    """Decode one raw name; UTF-8 with ``surrogateescape`` keeps bytes equality."""
    return raw.decode("utf-8", "surrogateescape")


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


def read_lines(path: PathLike) -> List[str]:
    """Names in a text file, one per line, read raw (see :func:`split_lines`).

    A directory reads as an empty file: that is what ``std::ifstream`` does on Linux (the
    open succeeds, the first read fails), and the command-line twin of ``compute_ap``
    relies on it.

    Raises
    ------
    FileNotFoundError
        When the file does not exist or cannot be opened.
    """
    if os.path.isdir(path):
        return []
    with open(path, "rb") as f:
        return split_lines(f.read())


def read_ranked_list(path: PathLike) -> List[str]:
    """A ranked list (best first), one name per line, read raw like ``compute_ap.cpp``."""
    return read_lines(path)


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
        raise ValueError(
            f"{path}: expected '<image> x1 y1 x2 y2' on the first line, got {lines[0]!r}")
    try:
        bbox = tuple(float(v) for v in fields[1:])
    except ValueError:
        raise ValueError(f"{path}: the query box must be 4 numbers, got {lines[0]!r}") from None
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
            raise ValueError(
                f"query {q!r} in {folder!r} lacks " + ", ".join(f"{q}_{m}.txt" for m in missing))
        out[q] = read_gt_query(os.path.join(folder, q))
    if not out:
        raise ValueError(f"no <query>_good/_ok/_junk.txt files in {folder!r}")
    return out


# --------------------------------------------------------------------------- pickles
def _latin1_encode(obj: Any, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    """Stand-in for ``_codecs.encode`` limited to the text codecs pickle itself uses.

    Protocol-2 pickles written by Python 3 store ``bytes`` (numpy array buffers among them)
    as ``_codecs.encode(text, "latin1")``; other codecs are refused.
    """
    enc = encoding.lower().replace("_", "-")
    if enc not in ("latin1", "latin-1", "iso-8859-1", "utf-8", "utf8", "ascii"):
        raise pickle.UnpicklingError(f"refused _codecs.encode with codec {encoding!r}")
    if not isinstance(obj, str):
        raise pickle.UnpicklingError("refused _codecs.encode of a non-str object")
    return obj.encode(encoding, errors)


def _numpy_globals() -> Dict[Tuple[str, str], Any]:
    import numpy as np

    try:  # numpy >= 2
        from numpy._core import multiarray as _ma
        from numpy._core import numeric as _num
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray as _ma  # type: ignore[no-redef]
        from numpy.core import numeric as _num  # type: ignore[no-redef]
    out: Dict[Tuple[str, str], Any] = {
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
    }
    # numpy 1.x pickles name numpy.core.*, numpy 2.x numpy._core.*: both map to the
    # installed functions without importing the deprecated alias module.
    for mod in ("numpy.core", "numpy._core"):
        out[(f"{mod}.multiarray", "_reconstruct")] = _ma._reconstruct
        out[(f"{mod}.multiarray", "scalar")] = _ma.scalar  # numpy scalars (numbers)
        if hasattr(_num, "_frombuffer"):  # protocol-5 arrays
            out[(f"{mod}.numeric", "_frombuffer")] = _num._frombuffer
    return out


# Harmless builtins that only build data (no attribute access, no import, no I/O).
_SAFE_BUILTINS = {
    name: getattr(builtins, name)
    for name in ("set", "frozenset", "bytearray", "bytes", "complex", "int", "float", "bool",
                 "str", "list", "dict", "tuple", "slice", "range")
}


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that builds only plain data and numpy arrays.

    Dicts, lists, tuples, strings, bytes and numbers need no global at all.  The globals
    resolved are exactly: ``numpy.ndarray``, ``numpy.dtype``,
    ``numpy{.core,._core}.multiarray._reconstruct`` (arrays, protocols 0-4),
    ``numpy{.core,._core}.numeric._frombuffer`` (arrays, protocol 5),
    ``numpy{.core,._core}.multiarray.scalar`` (numpy scalars), ``_codecs.encode`` with a
    text codec only (bytes in protocol 2), and data-only builtins (``set``, ``frozenset``,
    ``bytearray``, ``bytes``, ``complex``, ``int``, ``float``, ``bool``, ``str``, ``list``,
    ``dict``, ``tuple``, ``slice``, ``range``).  Any other global -- ``os.system``,
    ``builtins.eval``, ``subprocess.Popen``, a user class -- raises
    :class:`pickle.UnpicklingError` naming it, before anything is called.

    Python 2 pickles are read with ``encoding="latin1"`` by default (what numpy arrays
    pickled by Python 2 need).

    Examples
    --------
    >>> import io
    >>> RestrictedUnpickler(io.BytesIO(data)).load()        # doctest: +SKIP
    """

    def __init__(self, file, *, encoding: str = "latin1", **kwargs):
        super().__init__(file, encoding=encoding, **kwargs)
        self._allowed: Optional[Dict[Tuple[str, str], Any]] = None

    def find_class(self, module: str, name: str) -> Any:  # noqa: D102 (pickle hook)
        # Python 2 names (__builtin__, copy_reg, ...) read as Python 3 names, as the standard
        # unpickler does for protocols < 3 (harmless for newer ones: the result still has
        # to pass the allow-list below).
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        if module in ("builtins", "__builtin__") and name in _SAFE_BUILTINS:
            return _SAFE_BUILTINS[name]
        if (module, name) == ("_codecs", "encode"):
            return _latin1_encode
        if module.split(".", 1)[0] == "numpy":
            if self._allowed is None:
                self._allowed = _numpy_globals()
            if (module, name) in self._allowed:
                return self._allowed[(module, name)]
        raise pickle.UnpicklingError(
            f"refused global {module}.{name}: this unpickler only builds plain data and "
            "numpy arrays (a pickle can run code when loaded)")

    def persistent_load(self, pid: Any) -> Any:  # noqa: D102 (pickle hook)
        raise pickle.UnpicklingError(f"refused persistent id {pid!r}")


def load_restricted_pickle(source: Union[PathLike, bytes, io.IOBase]) -> Any:
    """Load a pickle with :class:`RestrictedUnpickler`.

    Parameters
    ----------
    source : path, bytes or binary file object
    """
    if isinstance(source, (bytes, bytearray)):
        return RestrictedUnpickler(io.BytesIO(bytes(source))).load()
    if hasattr(source, "read"):
        return RestrictedUnpickler(source).load()
    with open(source, "rb") as f:
        return RestrictedUnpickler(f).load()


def _as_id_list(value: Any, where: str) -> List[Any]:
    """A list of ground-truth ids (ints or names) from a list/tuple/1-D numpy array."""
    import numpy as np

    if hasattr(value, "tolist") and hasattr(value, "ndim"):
        if value.ndim != 1:
            raise ValueError(f"{where} must be 1-D, got shape {value.shape}")
        return value.tolist()
    if isinstance(value, (list, tuple)):
        out = [v.item() if isinstance(v, np.generic) else v for v in value]
        for v in out:
            if isinstance(v, bool) or not isinstance(v, (int, str, bytes)):
                raise ValueError(f"{where} must hold ids (ints or names), got an item of type "
                                 f"{type(v).__name__}")
        return out
    raise ValueError(f"{where} must be a list or 1-D array of ids, got {type(value).__name__}")


def read_revisitop_gnd(source: Union[PathLike, bytes, io.IOBase]) -> Dict[str, Any]:
    """Read a revisitop (``gnd_roxford5k.pkl``) or cirtorch (``gnd_oxford5k.pkl``) pickle.

    Expected content: a dict with ``imlist`` (database image names), ``qimlist`` (query image
    names) and ``gnd``, a list with one dict per query holding lists or arrays of database
    indices: ``easy``, ``hard``, ``junk`` (revisitop) or ``ok``, ``junk`` (cirtorch), plus
    ``bbx``.

    Returns
    -------
    dict
        ``{"imlist": [...], "qimlist": [...], "gnd": [{"easy": [...], ...}, ...],
        "kind": "revisitop" | "cirtorch"}`` with index lists as plain Python lists (the
        query dicts keep every other key they had, e.g. ``bbx``).

    Raises
    ------
    pickle.UnpicklingError
        If the pickle references anything beyond plain data and numpy arrays.
    ValueError
        If the structure is not the one described above (the message names the part).
    """
    data = load_restricted_pickle(source)
    if not isinstance(data, dict):
        raise ValueError(f"ground-truth pickle must hold a dict, got {type(data).__name__}")
    for key in ("imlist", "qimlist", "gnd"):
        if key not in data:
            raise ValueError(f"ground-truth pickle lacks the {key!r} entry "
                             f"(has {sorted(map(str, data))})")
    gnd = data["gnd"]
    if not isinstance(gnd, (list, tuple)):
        raise ValueError(f"'gnd' must be a list of per-query dicts, got {type(gnd).__name__}")
    if len(gnd) != len(data["qimlist"]):
        raise ValueError(f"'gnd' has {len(gnd)} entries but 'qimlist' has "
                         f"{len(data['qimlist'])}")
    kinds = set()
    queries = []
    for i, g in enumerate(gnd):
        if not isinstance(g, dict):
            raise ValueError(f"gnd[{i}] must be a dict, got {type(g).__name__}")
        if {"easy", "hard"} <= set(g):
            kinds.add("revisitop")
            keys: Tuple[str, ...] = ("easy", "hard", "junk")
        elif "ok" in g:
            kinds.add("cirtorch")
            keys = ("ok", "junk")
        else:
            raise ValueError(f"gnd[{i}] has neither 'easy'/'hard' nor 'ok' (has {sorted(g)})")
        q = dict(g)
        for key in keys:
            q[key] = _as_id_list(g.get(key, []), f"gnd[{i}][{key!r}]")
        queries.append(q)
    if len(kinds) > 1:
        raise ValueError("'gnd' mixes revisitop (easy/hard) and cirtorch (ok) entries")
    return {
        "imlist": list(data["imlist"]),
        "qimlist": list(data["qimlist"]),
        "gnd": queries,
        "kind": kinds.pop() if kinds else "revisitop",
    }

