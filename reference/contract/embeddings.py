"""Distances from embeddings, computed once in the front end for every implementation.

Stage 1 of the pipeline for ``query_embeddings`` / ``db_embeddings`` (specification §1
float distances): the matrix computed here is what every implementation ranks.
"""
from __future__ import annotations

import numpy as np
from retrieval_conformance.reference.contract.validation import float_matrix

#: the metrics ``embedding_distances`` computes
METRICS = ("euclidean", "cosine")


def embedding_distances(query_embeddings, db_embeddings, metric: str = "euclidean", row0: int = 0,
                        db_checked: bool = False) -> np.ndarray:
    """Distance matrix (Q, N) from embeddings, computed once for all implementations.

    ``euclidean``: ``sqrt(max(|q|^2 + |r|^2 - 2 q·r, 0))``; ``cosine``: ``1 - q·r / (|q| |r|)``
    (a zero vector has no direction and is rejected).  Two float32 inputs give float32
    distances (as ReID code computes them, without a float64 copy of the gallery); anything
    else is computed in float64.  ``row0``: index of the first query row (for messages).
    ``db_checked``: ``db_embeddings`` is the array ``float_matrix`` returned for it already.

    Raises
    ------
    ValueError
        When finite embeddings give non-finite intermediate values (squared norms, dot
        products, norm products that overflow): the distances would be inf or NaN, or, for
        cosine, a silently wrong 1.  The message names the first query rows affected.
    """
    q = float_matrix("query_embeddings", query_embeddings, "one embedding per query")
    d = db_embeddings if db_checked else float_matrix("db_embeddings", db_embeddings, "one embedding per gallery item")
    if not (q.dtype == d.dtype == np.float32):
        q, d = q.astype(np.float64), d.astype(np.float64)
    if q.shape[1] != d.shape[1]:
        raise ValueError(
            f"db_embeddings: expected dimension {q.shape[1]} like query_embeddings, got {d.shape[1]}"
        )
    # overflow is detected below, on the values, and reported with what to do; numpy's
    # RuntimeWarnings would only add noise (and are lost in BLAS threads anyway)
    with np.errstate(over="ignore", invalid="ignore"):
        if metric == "euclidean":
            sq = (q * q).sum(1)[:, None] + (d * d).sum(1)[None, :] - 2.0 * (q @ d.T)
            _check_overflow(np.isfinite(sq), q.dtype, metric, row0)  # an inf term leaves inf or NaN here
            out = np.sqrt(np.maximum(sq, 0))
        elif metric == "cosine":
            nq, nd = np.linalg.norm(q, axis=1), np.linalg.norm(d, axis=1)
            for name, norms in (("query_embeddings", nq), ("db_embeddings", nd)):
                if (norms == 0).any():
                    raise ValueError(f"{name}: row {int(np.argmin(norms))} is all zeros; cosine distance is undefined")
            dot, scale = q @ d.T, nq[:, None] * nd[None, :]
            # an infinite norm (or product of norms) makes q·r / inf = 0: a finite, wrong distance
            _check_overflow(np.isfinite(dot) & np.isfinite(scale), q.dtype, metric, row0)
            out = 1 - dot / scale
        else:
            raise ValueError(f"metric: expected 'euclidean' or 'cosine', got {metric!r}")
    _check_overflow(np.isfinite(out), q.dtype, metric, row0)
    return np.ascontiguousarray(out)


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
