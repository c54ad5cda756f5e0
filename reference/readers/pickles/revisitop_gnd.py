"""Reading the ground-truth pickles of revisitop and cirtorch (:func:`read_revisitop_gnd`).

The pickle is loaded with :func:`~retrieval_conformance.reference.readers.pickles.restricted.load_restricted_pickle`;
its structure is then checked and its name and id lists are returned as plain Python lists,
within a budget of ``max_ids`` names and ids (see :mod:`retrieval_conformance.reference.readers.limits`).
"""

from __future__ import annotations

import io
from typing import Any, Dict, List, Tuple, Union

import numpy as np
from retrieval_conformance.reference.readers.limits import (
    MAX_ARRAY_BYTES,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_IDS,
    MAX_ITEMS,
    PathLike,
    _clip,
    _describe,
)
from retrieval_conformance.reference.readers.pickles.restricted import _limits, load_restricted_pickle

__all__ = ["read_revisitop_gnd"]


def _keys_summary(mapping: Dict[Any, Any], limit: int = 8) -> str:
    """Up to ``limit`` keys of a dict, each clipped; other key types by type name."""
    keys = []
    for i, key in enumerate(mapping):
        if i == limit:
            keys.append(f"... {len(mapping) - limit} more")
            break
        keys.append(_clip(key, 40))
    return "[" + ", ".join(keys) + "]"


def _as_id_list(value: Any, where: str, budget: List[int]) -> List[Any]:
    """A list of ground-truth ids (ints or names) from a list/tuple/1-D numpy array.

    ``budget`` holds how many more ids may be returned (a one-element list, decremented).
    """
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ValueError(f"{where} must be 1-D, got shape {value.shape}")
        _spend(budget, value.size, where)
        return value.tolist()
    if isinstance(value, (list, tuple)):
        _spend(budget, len(value), where)
        out = [v.item() if isinstance(v, np.generic) else v for v in value]
        for v in out:
            if isinstance(v, bool) or not isinstance(v, (int, str, bytes)):
                raise ValueError(f"{where} must hold ids (ints or names), got an item of type {type(v).__name__}")
        return out
    raise ValueError(f"{where} must be a list or 1-D array of ids, got {_describe(value)}")


def _spend(budget: List[int], n: int, where: str) -> None:
    budget[0] -= n
    if budget[0] < 0:
        raise ValueError(
            f"{where}: the ground truth holds more ids and names than the limit (max_ids); pass max_ids=... to read it"
        )


def _as_name_list(value: Any, where: str, budget: List[int]) -> List[Any]:
    """Image names (str or bytes) from a list/tuple or a 1-D ``S``/``U`` numpy array."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1 or value.dtype.kind not in "SU":
            raise ValueError(f"{where} must be a list of image names, got {_describe(value)}")
        _spend(budget, value.size, where)
        return value.tolist()
    if not isinstance(value, (list, tuple)):
        # bytes or str would read as a list of ints or characters: 10**8 bytes, 10**8 ints
        raise ValueError(f"{where} must be a list of image names, got {_describe(value)}")
    _spend(budget, len(value), where)
    if all(type(v) is str for v in value):  # the usual case, checked at C speed
        return list(value)
    out = []
    for i, v in enumerate(value):
        if isinstance(v, np.generic) and v.dtype.kind in "SU":
            v = v.item()
        if not isinstance(v, (str, bytes)):
            raise ValueError(f"{where}[{i}] must be an image name (str or bytes), got {_describe(v)}")
        out.append(v)
    return out


def read_revisitop_gnd(
    source: Union[PathLike, bytes, io.IOBase],
    *,
    max_bytes: int = MAX_FILE_BYTES,
    max_items: int = MAX_ITEMS,
    max_array_bytes: int = MAX_ARRAY_BYTES,
    max_depth: int = MAX_DEPTH,
    max_ids: int = MAX_IDS,
) -> Dict[str, Any]:
    """Read a revisitop (``gnd_roxford5k.pkl``) or cirtorch (``gnd_oxford5k.pkl``) pickle.

    Expected content: a dict with ``imlist`` (database image names), ``qimlist`` (query image
    names) and ``gnd``, a list with one dict per query holding lists or arrays of database
    indices: ``easy``, ``hard``, ``junk`` (revisitop) or ``ok``, ``junk`` (cirtorch), plus
    ``bbx``.

    Parameters
    ----------
    source : path, bytes or binary file object
    max_bytes, max_items, max_array_bytes, max_depth : int
        Limits of the pickle, see :mod:`retrieval_conformance.reference.readers.limits`.
    max_ids : int
        Most names and ids returned, all lists together (default :data:`MAX_IDS`).

    Returns
    -------
    dict
        ``{"imlist": [...], "qimlist": [...], "gnd": [{"easy": [...], ...}, ...],
        "kind": "revisitop" | "cirtorch"}`` with index lists as plain Python lists (the
        query dicts keep every other key they had, e.g. ``bbx``).

    Raises
    ------
    pickle.UnpicklingError
        If the pickle references anything beyond plain data and plain numpy arrays, or
        exceeds a limit.
    ValueError
        If the structure is not the one described above (the message names the part).
    FileRefusedError, OSError
        For a file that is not read (see :func:`load_restricted_pickle`).
    """
    data = load_restricted_pickle(source, **_limits(max_bytes, max_items, max_array_bytes, max_depth))
    if not isinstance(data, dict):
        raise ValueError(f"ground-truth pickle must hold a dict, got {_describe(data)}")
    for key in ("imlist", "qimlist", "gnd"):
        if key not in data:
            raise ValueError(f"ground-truth pickle lacks the {key!r} entry (has {_keys_summary(data)})")
    budget = [max_ids]
    imlist = _as_name_list(data["imlist"], "'imlist'", budget)
    qimlist = _as_name_list(data["qimlist"], "'qimlist'", budget)
    gnd = data["gnd"]
    if not isinstance(gnd, (list, tuple)):
        raise ValueError(f"'gnd' must be a list of per-query dicts, got {_describe(gnd)}")
    if len(gnd) != len(qimlist):
        raise ValueError(f"'gnd' has {len(gnd)} entries but 'qimlist' has {len(qimlist)}")
    kinds = set()
    queries = []
    for i, g in enumerate(gnd):
        if not isinstance(g, dict):
            raise ValueError(f"gnd[{i}] must be a dict, got {_describe(g)}")
        if "easy" in g and "hard" in g:
            kinds.add("revisitop")
            keys: Tuple[str, ...] = ("easy", "hard", "junk")
        elif "ok" in g:
            kinds.add("cirtorch")
            keys = ("ok", "junk")
        else:
            raise ValueError(f"gnd[{i}] has neither 'easy'/'hard' nor 'ok' (has {_keys_summary(g)})")
        q = dict(g)
        for key in keys:
            q[key] = _as_id_list(g.get(key, []), f"gnd[{i}][{key!r}]", budget)
        queries.append(q)
    if len(kinds) > 1:
        raise ValueError("'gnd' mixes revisitop (easy/hard) and cirtorch (ok) entries")
    return {
        "imlist": imlist,
        "qimlist": qimlist,
        "gnd": queries,
        "kind": kinds.pop() if kinds else "revisitop",
    }
