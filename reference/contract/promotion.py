"""One promotion rule for embeddings given in parts: the blocks of an ``Accumulator``, the ranks
of a distributed one, and ``evaluate`` on their concatenation all compute the same bits.

The parts are read as ``np.concatenate`` joins them: in numpy's ``result_type`` of every
non-empty part (an empty part holds no value and takes no part, as an empty ``update()`` block
changes nothing).  Distances are then computed in float32 only when those embeddings and the
gallery's are float32, else in float64 (:func:`distance_dtype`, the rule of
:func:`~.embeddings.embedding_distances` after :func:`~.validation.float_matrix`).
"""

from __future__ import annotations

from typing import Iterable, Optional

import numpy as np

__all__ = ["block_dtype", "concatenated_dtype", "distance_dtype"]


def concatenated_dtype(dtypes: Iterable[np.dtype]) -> Optional[np.dtype]:
    """numpy's ``result_type`` of ``dtypes`` (those of the non-empty parts); None when there are none."""
    given = list(dtypes)
    return np.result_type(*given) if given else None


def distance_dtype(queries: np.dtype, gallery: np.dtype) -> np.dtype:
    """The dtype distances of embeddings of these dtypes are computed in: float32 when both are
    float32 (integers, float16 and long double are read as float64)."""
    return np.dtype(np.float32 if np.dtype(queries) == np.dtype(gallery) == np.float32 else np.float64)


def block_dtype(block: np.dtype, before: Optional[np.dtype], gallery: np.dtype) -> np.dtype:
    """The dtype a new block of query embeddings is read in when blocks of dtype ``before`` (their
    concatenation's; None: no block yet) were already evaluated against a ``gallery`` of that dtype:
    the concatenation's, ``result_type(before, block)``.

    Raises ``ValueError`` when that changes the precision of the distances of the blocks already
    evaluated (float32 blocks, then a float64 one): their values were kept, not their embeddings,
    so the one way to give the concatenation's bits is to refuse the block.
    """
    if before is None:
        return np.dtype(block)
    joined = np.result_type(before, block)
    if distance_dtype(joined, gallery) != distance_dtype(before, gallery):
        raise ValueError(
            f"query_embeddings: a block of {np.dtype(block).name} after blocks of {np.dtype(before).name} would "
            f"compute every distance in {distance_dtype(joined, gallery).name} (the blocks concatenated are "
            f"{joined.name}; the gallery is {np.dtype(gallery).name}), but the earlier blocks were evaluated in "
            f"{distance_dtype(before, gallery).name} and are not kept; cast every block to one dtype "
            "before update() (.astype(np.float32) or np.float64), or reset() and start over"
        )
    return joined
