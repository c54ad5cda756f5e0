"""Relevance and junk of a query block as numpy boolean matrices (stage 3, vectorised).

The numpy implementation and the harness's expected values read relevance and junk
through these; the exact reference has its own per-query version (``reference/relevance.py``).
"""
from __future__ import annotations

import numpy as np
from retrieval_conformance.reference.contract.problem import Problem


def relevance_block(problem: Problem, start: int, stop: int) -> np.ndarray:
    """Relevance of the gallery to queries ``start:stop``: bool (stop-start, N)."""
    if problem.relevance is not None:
        return problem.relevance[start:stop]
    ql = problem.query_labels[start:stop]
    if problem.multi_label:
        # the number of shared labels, a sum of 0/1 products at most L: exact in float32 while
        # L < 2**24, and BLAS does it many times faster than an int64 product
        kind = np.float32 if ql.shape[1] < 2**24 else np.int64
        return (ql.astype(kind) @ problem.db_labels.astype(kind).T) > 0
    return ql[:, None] == problem.db_labels[None, :]


def junk_block(problem: Problem, start: int, stop: int) -> np.ndarray:
    """Junk marks for queries ``start:stop``: bool (stop-start, N) (§3: mask, same id and
    camera, junk ids)."""
    out = np.zeros((stop - start, problem.n_gallery), dtype=bool)
    if problem.junk is not None:
        out |= problem.junk[start:stop]
    if problem.query_cams is not None:
        same_id = problem.query_labels[start:stop, None] == problem.db_labels[None, :]
        same_cam = problem.query_cams[start:stop, None] == problem.db_cams[None, :]
        out |= same_id & same_cam
    if problem.junk_ids:
        out |= np.isin(problem.db_labels, np.asarray(problem.junk_ids))[None, :]
    return out
