"""Distances from embeddings, computed once in the front end for every implementation.

Stage 1 of the pipeline for ``query_embeddings`` / ``db_embeddings`` (specification §1
float distances): the matrix computed here is what every implementation ranks.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np
from retrieval_conformance.reference.contract import embedding_rounding as rounding
from retrieval_conformance.reference.contract.embedding_dots import SlicedRows, item_chunks, slice_plan, slice_rows
from retrieval_conformance.reference.contract.validation import float_matrix

#: a gallery's slices by plan (slices, bits per slice), kept across query blocks
SliceCache = Dict[Tuple[int, int], SlicedRows]

#: the metrics ``embedding_distances`` computes
METRICS = ("euclidean", "cosine")


def embedding_distances(
    query_embeddings,
    db_embeddings,
    metric: str = "euclidean",
    row0: int = 0,
    db_checked: bool = False,
    sliced: Optional[SliceCache] = None,
) -> np.ndarray:
    """Distance matrix (Q, N) from embeddings, computed once for all implementations.

    ``euclidean``: ``sqrt(max(|q|^2 + |r|^2 - 2 q·r, 0))``; ``cosine``: ``1 - q·r / (|q| |r|)``
    (a zero vector has no direction and is rejected).  The dot products and squared norms are
    the exact-slice sums of :mod:`.embedding_dots`: one (query, item) pair gets the same bits
    whatever block of queries, batch, thread count or BLAS computes it.  They are combined in
    float64 (a gallery chunk at a time, never a float64 copy of the whole gallery) and rounded
    once to float32 when both inputs are float32, as ReID code keeps its distances.  For float32
    inputs cut into two slices, one float64 product gives the distances instead, each certified
    to round to that same float32 (:mod:`.embedding_rounding`; the few others come from the
    slices): the same matrix, at about a third of the products.
    ``row0``: index of the first query row (for messages).  ``db_checked``: ``db_embeddings``
    is the array ``float_matrix`` returned for it already.  ``sliced``: a dict the caller keeps
    for one gallery across query blocks, where the gallery's slices are kept once made.

    Raises
    ------
    ValueError
        When finite embeddings give distances that overflow: a euclidean distance beyond
        float32's range (~3.4e38) for float32 inputs, or a squared norm beyond float64's for
        float64 inputs (cosine divides the scales out and never overflows).  The message names
        the first query rows affected.
    """
    q = float_matrix("query_embeddings", query_embeddings, "one embedding per query")
    d = db_embeddings if db_checked else float_matrix("db_embeddings", db_embeddings, "one embedding per gallery item")
    out_dtype = np.float32 if q.dtype == d.dtype == np.float32 else np.float64
    if q.shape[1] != d.shape[1]:
        raise ValueError(f"db_embeddings: expected dimension {q.shape[1]} like query_embeddings, got {d.shape[1]}")
    if metric not in METRICS:
        raise ValueError(f"metric: expected 'euclidean' or 'cosine', got {metric!r}")
    n_slices, width = slice_plan(q.shape[1], out_dtype)
    queries = slice_rows(q, n_slices, width)
    _check_directions(metric, "query_embeddings", queries, 0)
    gallery = _kept_gallery(d, n_slices, width, sliced)  # None: cut a chunk of items at a time
    out = np.empty((q.shape[0], d.shape[0]), dtype=out_dtype)
    certified = rounding.applies(q.dtype, d.dtype, n_slices)
    if certified:
        q_side = rounding.prepared(queries, metric, query=True)
        if gallery is not None:
            _check_directions(metric, "db_embeddings", gallery, 0)
            rounding.keep(gallery, metric)
    # an overflow leaves inf or NaN, found and reported below with what to do
    with np.errstate(over="ignore", invalid="ignore"):
        for lo, hi in item_chunks(d.shape[0], q.shape[0], q.shape[1], n_slices):
            items = gallery.rows(lo, hi) if gallery is not None else slice_rows(d[lo:hi], n_slices, width)
            _check_directions(metric, "db_embeddings", items, lo)
            if certified:
                rounding.certified_block(out[:, lo:hi], metric, queries, q_side, items)
            else:
                rounding.exact_block(out[:, lo:hi], metric, queries, items)
    _check_overflow(np.isfinite(out), q.dtype, metric, row0)
    return out


def _kept_gallery(d: np.ndarray, n_slices: int, width: int, sliced: Optional[SliceCache]) -> Optional[SlicedRows]:
    """The gallery's slices for this plan, made once and kept in ``sliced`` for the caller's next
    query blocks; None when the caller keeps none (then no whole-gallery copy is made)."""
    if sliced is None:
        return None
    if (n_slices, width) not in sliced:
        sliced[(n_slices, width)] = slice_rows(d, n_slices, width)
    return sliced[(n_slices, width)]


def _check_directions(metric: str, name: str, rows: SlicedRows, first: int) -> None:
    """Cosine needs a direction: a zero row (norm 0) is an error naming it (``first``: its offset)."""
    if metric == "cosine" and (rows.norms == 0).any():
        raise ValueError(f"{name}: row {first + int(np.argmin(rows.norms))} is all zeros; cosine distance is undefined")


def _check_overflow(finite: np.ndarray, dtype: np.dtype, metric: str, row0: int) -> None:
    """Raise unless every value of a (Q, N) intermediate of the distances is finite (``finite``).

    The embeddings were checked to be finite, so a non-finite value here is an overflow of
    ``dtype`` (float32 overflows at ~3.4e38: squares of entries of ~1.8e19 already do).
    """
    if finite.all():
        return
    rows = np.flatnonzero(~finite.all(axis=1))
    items = np.flatnonzero(~finite.all(axis=0))

    def first(indices: np.ndarray, offset: int = 0) -> str:
        return ", ".join(str(offset + int(i)) for i in indices[:5]) + (", ..." if indices.size > 5 else "")

    fix = "normalise the embeddings (e.g. x / np.linalg.norm(x, axis=1, keepdims=True)) or scale them down"
    if dtype == np.float32:
        fix += ", or pass float64 embeddings (x.astype(np.float64))"
    raise ValueError(
        f"query_embeddings, db_embeddings: the {metric} distances overflow {np.dtype(dtype)} for "
        f"{rows.size} quer{'y' if rows.size == 1 else 'ies'} (query row{'' if rows.size == 1 else 's'} "
        f"{first(rows, row0)}; gallery row{'' if items.size == 1 else 's'} {first(items)}) although every "
        f"embedding is finite; {fix}"
    )
