"""Small tie-heavy problems for the engine's tests: validated ``Problem`` inputs, bare matrices, options.

Few distinct distances, so that ties are everywhere, with every ranking input of a
:class:`~retrieval_conformance.reference.contract.problem.Problem` (distances on a few levels
with -0.0 and 0.0, continuous float32/float64, bit codes), every relevance input (a matrix, ids
with cameras and junk ids, multi-hot rows), junk, and queries without relevant items.  Every
choice comes from a source of :mod:`.choices` (a numpy Generator in the implementation tests,
hypothesis in the property tests).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np
from retrieval_conformance.reference.contract.conventions import (
    AP_AT_K_DENOMINATORS,
    AP_RULES,
    DISCOUNTS,
    EMPTY_POLICIES_WITH_A_MEAN,
    GAINS,
    RECALL_SENSES,
    TIE_POLICIES,
)
from retrieval_conformance.reference.contract.problem import Options

from .choices import Choices

#: distance levels, a prefix of which a tie-heavy problem draws from (-0.0 ties with 0.0)
LEVELS = (-0.0, 0.0, 0.5, -1.5, 2.0, 0.25, 0.1)
#: the tie policies that accept any k (ties=grouped rejects a k inside a tie group, §4 ties=grouped)
TIES_ANY_K = tuple(t for t in TIE_POLICIES if t != "grouped")
#: graded relevance: mostly 0, grades 1..4 (spec §2 relevance matrix)
GRADES = (0, 0, 0, 1, 2, 3, 4)


def tie_heavy_inputs(c: Choices, max_queries: int = 4, max_gallery: int = 10, wide: bool = False) -> Dict[str, Any]:
    """The fields of a tie-heavy ``Problem`` (``n_queries``, ``n_gallery`` and its inputs).

    ``wide``: codes of 65-140 bits and multi-hot rows of 70 labels (several uint64 words).
    """
    arrays = c.arrays()
    Q, N = c.integer(1, max_queries), c.integer(1, max_gallery)
    kw: Dict[str, Any] = dict(_ranking(c, arrays, Q, N, wide), **_relevance(c, arrays, Q, N, wide))
    if c.chance(0.3):
        kw["junk"] = arrays.random((Q, N)) < 0.25
    return dict(n_queries=Q, n_gallery=N, **kw)


def _ranking(c: Choices, arrays: Any, Q: int, N: int, wide: bool) -> Dict[str, np.ndarray]:
    """Few distinct distances (float32 or float64), continuous ones, or bit codes."""
    kind = c.choice(("levels", "levels", "levels", "codes", "codes", "continuous"))
    if kind == "codes":
        B = c.integer(65, 140) if wide else c.integer(1, 8)
        return {
            "query_bits": arrays.integers(0, 2, (Q, B)).astype(np.uint8),
            "db_bits": arrays.integers(0, 2, (N, B)).astype(np.uint8),
        }
    if kind == "levels":
        d = arrays.choice(np.array(LEVELS[: c.integer(1, len(LEVELS))]), size=(Q, N))
    else:
        d = arrays.random((Q, N)) * 4 - 2  # continuous from a numpy Generator, in steps cell by cell
    return {"distances": np.ascontiguousarray(d.astype(c.choice((np.float32, np.float64))))}


def _relevance(c: Choices, arrays: Any, Q: int, N: int, wide: bool) -> Dict[str, Any]:
    """A relevance matrix, single ids (with cameras and junk ids), or multi-hot labels."""
    kind = c.choice(("matrix", "ids", "multi"))
    if kind == "matrix":
        return {"relevance": arrays.random((Q, N)) < c.integer(0, 10) / 10}
    if kind == "multi":
        L = 70 if wide else c.integer(1, 4)
        return {
            "query_labels": (arrays.random((Q, L)) < 0.4).astype(np.uint8),
            "db_labels": (arrays.random((N, L)) < 0.4).astype(np.uint8),
        }
    out: Dict[str, Any] = {
        "query_labels": arrays.integers(-1, 3, Q).astype(np.int64),
        "db_labels": arrays.integers(-1, 3, N).astype(np.int64),
    }
    if c.chance(0.5):
        out.update(
            query_cams=arrays.integers(0, 2, Q).astype(np.int64), db_cams=arrays.integers(0, 2, N).astype(np.int64)
        )
    if c.chance(0.35):
        out["junk_ids"] = (-1,)
    return out


def tie_heavy_matrices(
    c: Choices,
    max_queries: int = 3,
    max_gallery: int = 9,
    levels: Sequence[float] = LEVELS,
    junk: bool = True,
    graded: bool = False,
) -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
    """``(distances, relevance, junk)`` on the distance ``levels``, cell by cell.

    ``graded``: relevance is booleans or, half the time, integer grades (:data:`GRADES`);
    ``junk``: half the time a junk mask, else None.
    """
    q, n = c.integer(1, max_queries), c.integer(1, max_gallery)
    cells = range(q * n)
    dist = np.array([c.choice(levels) for _ in cells]).reshape(q, n)
    if graded and c.boolean():
        rel = np.array([c.choice(GRADES) for _ in cells], dtype=np.int64).reshape(q, n)
    else:
        rel = np.array([c.boolean() for _ in cells]).reshape(q, n)
    mask = np.array([c.boolean() for _ in cells]).reshape(q, n) if junk and c.boolean() else None
    return dist, rel, mask


def integer_level_problem(
    c: Choices, n_queries: int, n_gallery: int, levels: int = 5, share: float = 0.25
) -> Tuple[np.ndarray, np.ndarray]:
    """``(distances, relevance)``: float64 distances on ``levels`` integer levels (ties
    everywhere) and a relevance matrix with about ``share`` relevant items, the first item
    relevant for every query (so no query is empty)."""
    arrays = c.arrays()
    dist = arrays.integers(0, levels, (n_queries, n_gallery)).astype(np.float64)
    rel = arrays.random((n_queries, n_gallery)) < share
    rel[:, 0] = True
    return dist, rel


def engine_options(c: Choices, ties: str, n_gallery: int) -> Options:
    """Every option of the engine drawn, for one tie policy; k up to two beyond the gallery."""
    return Options(
        ties=ties,
        ap_rule=c.choice(AP_RULES),
        k=None if c.chance(0.3) else c.integer(1, n_gallery + 2),
        ap_at_k=c.choice(AP_AT_K_DENOMINATORS),
        max_rank=c.integer(1, 11),
        radius=None if c.chance(0.5) else c.integer(0, 5) * 0.5,
    )


def option_overrides(
    c: Choices, ties: Optional[Sequence[str]] = None, with_k: bool = True, max_k: int = 12
) -> Dict[str, Any]:
    """Keyword overrides of ``rc.evaluate``: every option drawn (``ties`` from ``ties``, by
    default those that take any k)."""
    out = {
        "ties": c.choice(tuple(ties or TIES_ANY_K)),
        "ap_rule": c.choice(AP_RULES),
        "ap_at_k": c.choice(AP_AT_K_DENOMINATORS),
        "empty": c.choice(EMPTY_POLICIES_WITH_A_MEAN),
        "max_rank": c.integer(1, 6),
        "gain": c.choice(GAINS),
        "discount": c.choice(DISCOUNTS),
        "recall": c.choice(RECALL_SENSES),
    }
    out["k"] = (None if not c.boolean() else c.integer(1, max_k)) if with_k else None
    return out
