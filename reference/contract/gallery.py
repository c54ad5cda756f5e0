"""The gallery side of an evaluation, validated once for every query block (§0 gallery).

``evaluate`` streams query blocks against one gallery.  What depends only on the gallery (its
codes as packed words, unpacked to bits only for implementations that read bits; its ids as
int64 or the vocabulary of its string ids, its multi-hot rows, its embeddings) is checked and
converted here once; each block then checks only its query side and how it fits the gallery.
Whatever does not fit (another code format, strings on one side only, another number of bits
or labels, any invalid value) goes to the pair checks of ``validation``/``ids`` with the user's
gallery array, so the error is word for word the one a single call raises, and a gallery that
cannot be prepared is simply checked per block as before.

Also the gallery ``rc.Accumulator`` is given before its queries: its arrays and size, checked
at construction (:func:`fixed_gallery_arrays`, :func:`fixed_gallery_size`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

import numpy as np
from retrieval_conformance.reference.contract import validation as v
from retrieval_conformance.reference.contract.arrays import to_numpy
from retrieval_conformance.reference.contract.codes import CodeScan, scan_codes, unpack_words
from retrieval_conformance.reference.contract.ids import exact_ids, is_text
from retrieval_conformance.reference.contract.presets import get_preset

__all__ = ["Gallery", "prepare_gallery"]


@dataclass
class _Codes:
    scan: CodeScan  # the packed words, and whether the values are ±1 or 0/1 codes
    bits: Optional[np.ndarray] = None  # (N, B) uint8, unpacked once if an implementation reads bits

    def side(self, packed: bool) -> np.ndarray:
        """The gallery as the implementation reads it: the packed words, or the bits."""
        if packed:
            return self.scan.words
        if self.bits is None:
            self.bits = unpack_words(self.scan.words, self.scan.n_bits)
        return self.bits


@dataclass
class _Ids:
    values: np.ndarray  # (N,) int64: the ids, or the codes of string ids
    vocabulary: Optional[np.ndarray] = None  # sorted distinct strings, when the ids are strings


@dataclass
class Gallery:
    """The user's gallery arrays (``raw``) and the parts of them prepared so far."""

    raw: Dict[str, Any]
    codes: Optional[_Codes] = None
    embeddings: Optional[np.ndarray] = None
    #: the embeddings cut into exact slices (``embedding_dots``), made by the first query block
    embedding_slices: Dict[Any, Any] = field(default_factory=dict)
    ids: Optional[_Ids] = None
    multi_hot: Optional[np.ndarray] = None
    cams: Optional[_Ids] = None

    # -- one query block against the prepared gallery ------------------------------------
    def codes_pair(
        self, query_codes: Any, signed_elsewhere: bool = False, packed: bool = False
    ) -> Tuple[np.ndarray, np.ndarray]:
        """``validation.codes_pair(query_codes, db_codes, signed_elsewhere, packed)``, with the
        gallery side done once."""
        c, q = self.codes, _code_scan(query_codes)
        if c is not None and q is not None and q.n_bits == c.scan.n_bits > 0:
            signed = c.scan.minus_one or signed_elsewhere or q.minus_one
            if q.first_invalid(signed) is None and c.scan.first_invalid(signed) is None:
                return unpack_words(q.words, q.n_bits), c.side(packed)
        return v.codes_pair(query_codes, self.raw["db_codes"], signed_elsewhere, packed)

    def labels_pair(self, query_labels: Any) -> Tuple[np.ndarray, np.ndarray]:
        """``ids.labels_pair(query_labels, db_labels)``, with the gallery side done once."""
        q = _array(query_labels)
        if q is not None and self.ids is not None and q.ndim == 1:
            codes = _id_codes("query_labels", q, self.ids)
            if codes is not None:
                return codes, self.ids.values
        if q is not None and self.multi_hot is not None and q.ndim == 2 and q.shape[1] == self.multi_hot.shape[1]:
            if q.dtype.kind in "fiub" and ((q == 0) | (q == 1)).all():
                return np.ascontiguousarray(q != 0, dtype=np.uint8), self.multi_hot
        return v.labels_pair(query_labels, self.raw["db_labels"])

    def cams_pair(self, query_cams: Any, n_queries: int, n_gallery: int) -> Tuple[np.ndarray, np.ndarray]:
        """``validation.cams_pair``, with the gallery side done once."""
        q, c = _array(query_cams), self.cams
        if (
            q is not None
            and c is not None
            and q.ndim == 1
            and q.shape[0] == n_queries
            and c.values.shape[0] == n_gallery
        ):
            codes = _id_codes("query_cams", q, c, camera=True)
            if codes is not None:
                return codes, c.values
        return v.cams_pair(query_cams, self.raw["db_cams"], n_queries, n_gallery)


def prepare_gallery(gallery_side: Dict[str, Any]) -> Gallery:
    """Check and convert what depends only on the gallery; a part that fails is left unprepared
    (its error is then raised by the block's pair check, in the usual order)."""
    g = Gallery(raw=dict(gallery_side))
    db_codes, db_labels, db_cams = (gallery_side.get(k) for k in ("db_codes", "db_labels", "db_cams"))
    if db_codes is not None:
        scan = _code_scan(db_codes)
        if scan is not None:
            g.codes = _Codes(scan)
    if gallery_side.get("db_embeddings") is not None:
        g.embeddings = _quietly(
            v.float_matrix, "db_embeddings", gallery_side["db_embeddings"], "one embedding per gallery item"
        )
    if db_labels is not None:
        d = _array(db_labels)
        if d is not None and d.ndim == 1:
            g.ids = _prepared_ids("db_labels", d)
        elif d is not None and d.ndim == 2 and d.dtype.kind in "fiub" and ((d == 0) | (d == 1)).all():
            g.multi_hot = np.ascontiguousarray(d != 0, dtype=np.uint8)
    if db_cams is not None:
        d = _array(db_cams)
        if d is not None and d.ndim == 1:
            g.cams = _prepared_ids("db_cams", d, camera=True)
    return g


# -- helpers ----------------------------------------------------------------------------------
def _quietly(check, *args):
    """``check(*args)``, or None where it raises (the block's own check raises it in order)."""
    try:
        return check(*args)
    except (ValueError, TypeError):
        return None


def _array(value: Any) -> Optional[np.ndarray]:
    return _quietly(to_numpy, "", value)


def _code_scan(value: Any) -> Optional[CodeScan]:
    """The scan of codes given as a finite numeric 2-D array, or None (left to
    ``validation.codes_pair``)."""
    arr = _array(value)
    if arr is None or arr.ndim != 2 or arr.dtype.kind not in "fiub":
        return None
    scan = scan_codes(arr)
    return scan if scan.nonfinite is None else None


def _prepared_ids(name: str, arr: np.ndarray, camera: bool = False) -> Optional[_Ids]:
    if is_text(arr):
        vocabulary, codes = np.unique(arr.astype(str), return_inverse=True)
        return _Ids(codes.astype(np.int64).reshape(-1), vocabulary)
    checked = _quietly(_id_values, name, arr, camera)
    return None if checked is None else _Ids(checked)


def _id_values(name: str, arr: np.ndarray, camera: bool) -> np.ndarray:
    if camera:  # cameras go through id_vector, which also refuses non-integer floats by type
        return v.id_vector(name, arr, arr.shape[0], "")
    return exact_ids(name, arr)


def _id_codes(name: str, arr: np.ndarray, ids: _Ids, camera: bool = False) -> Optional[np.ndarray]:
    """The query side's ids coded like the gallery's, or None (left to the pair check)."""
    if ids.vocabulary is None:
        return None if is_text(arr) else _quietly(_id_values, name, arr, camera)
    if not is_text(arr):
        return None
    text = arr.astype(str)
    at = np.searchsorted(ids.vocabulary, text)
    inside = at < ids.vocabulary.shape[0]
    known = np.zeros(text.shape, dtype=bool)
    known[inside] = ids.vocabulary[at[inside]] == text[inside]
    # a string the gallery does not hold gets a code no gallery item has: ids are only ever
    # compared query against gallery, so every equality and inequality is kept
    return np.where(known, at, ids.vocabulary.shape[0]).astype(np.int64)


def fixed_gallery_arrays(given: Dict[str, Any], protocol: str) -> Dict[str, Any]:
    """A gallery given before its queries (``rc.Accumulator``): the inputs as numpy arrays (tensors
    moved to the CPU), checked for what is known before any query arrives."""
    arrays = {name: v.array_input(name, value) for name, value in given.items() if value is not None}
    if "db_embeddings" in arrays and "db_codes" in arrays:
        raise ValueError(
            "db_embeddings, db_codes: expected one gallery ranking input, got both; pass db_embeddings= "
            "for blocks of query_embeddings, or db_codes= for blocks of query_codes"
        )
    for name in ("db_embeddings", "db_codes"):
        if name in arrays:
            v.check_ndim(name, arrays[name], 2, "one row per gallery item")
    if "db_cams" in arrays and "same_id_cam" not in get_preset(protocol).junk:
        raise ValueError(
            f"db_cams: protocol {protocol!r} has no camera junk rule; use protocol='reid' or 'reid-matlab', "
            "or leave db_cams out and pass junk= masks to update()"
        )
    return arrays


def fixed_gallery_size(arrays: Dict[str, Any]) -> Optional[int]:
    """Rows of the gallery arrays (None when none was given); every array must agree."""
    if not arrays:
        return None
    sizes: Tuple[Tuple[str, int], ...] = tuple((name, arr.shape[0]) for name, arr in arrays.items())
    first, n = sizes[0]
    for name, size in sizes[1:]:
        if size != n:
            raise ValueError(f"{name}: expected {n} rows (one per gallery item, as {first}), got {size}")
    if n == 0:
        raise ValueError(f"{first}: expected at least one gallery item (row), got an empty gallery")
    return n
