"""Relevance and junk of a query block as numpy boolean matrices (stage 3, vectorised).

The numpy implementation and the harness's expected values read relevance and junk
through these; the exact reference has its own per-query version (``reference/relevance.py``).
"""

from __future__ import annotations

from typing import cast

import numpy as np
from numpy.typing import DTypeLike
from retrieval_conformance.reference.contract.problem import Problem


def relevance_block(problem: Problem, start: int, stop: int) -> np.ndarray:
    """Relevance of the gallery to queries ``start:stop``: bool (stop-start, N)."""
    if problem.relevance is not None:
        return problem.relevance[start:stop]
    # without a relevance matrix, the labels give relevance (one relevance input is set)
    ql, db_labels = cast(np.ndarray, problem.query_labels)[start:stop], cast(np.ndarray, problem.db_labels)
    if problem.multi_label:
        # the number of shared labels, a sum of 0/1 products at most L: exact in float32 while
        # L < 2**24, and BLAS does it many times faster than an int64 product
        kind: DTypeLike = np.float32 if ql.shape[1] < 2**24 else np.int64
        return (ql.astype(kind) @ db_labels.astype(kind).T) > 0
    return ql[:, None] == db_labels[None, :]


def junk_block(problem: Problem, start: int, stop: int) -> np.ndarray:
    """Junk marks for queries ``start:stop``: bool (stop-start, N) (§3: mask, same id and
    camera, junk ids)."""
    out = np.zeros((stop - start, problem.n_gallery), dtype=bool)
    if problem.junk is not None:
        out |= problem.junk[start:stop]
    # cameras come with single-id labels on both sides
    db_labels, db_cams = cast(np.ndarray, problem.db_labels), cast(np.ndarray, problem.db_cams)
    if problem.query_cams is not None:
        same_id = cast(np.ndarray, problem.query_labels)[start:stop, None] == db_labels[None, :]
        same_cam = problem.query_cams[start:stop, None] == db_cams[None, :]
        out |= same_id & same_cam
    if problem.junk_ids:
        out |= np.isin(db_labels, np.asarray(problem.junk_ids))[None, :]
    return out
