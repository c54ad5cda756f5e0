"""Random valid problems as keyword arguments of ``rc.evaluate``: every input kind, every option.

A problem is small and tie-heavy, with every kind of ranking input (distances, scores, ±1 and
0/1 codes, embeddings), relevance input (ids, multi-hot rows, a matrix, integer grades), junk,
cameras, every option drawn; a rare one holds a tie group of thousands of items.  Every choice
comes from a source of :mod:`.choices`, so the fuzz campaign, hypothesis and seeded tests
build the same classes of problems.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

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
from retrieval_conformance.reference.contract.presets import PRESETS
from retrieval_conformance.reference.contract.validation import MAX_GRADE

from .choices import Choices

# The draws pick from these tuples by index, so their order (the table's and PRESETS') fixes the
# problem a seed builds: a new value or preset, or a reordering, changes a fuzz seed's cases.
#: presets that take no cameras (passing cameras with them is an error), in PRESETS order
PLAIN_PROTOCOLS = tuple(name for name, p in PRESETS.items() if "same_id_cam" not in p.junk)
#: the ReID presets (junk rule same_id_cam, so they take cameras), in PRESETS order
REID_PROTOCOLS = tuple(name for name, p in PRESETS.items() if "same_id_cam" in p.junk)
#: query-side (Q rows) and gallery-side (N rows) array arguments of ``evaluate``
MATRICES = ("distances", "scores", "relevance", "junk")
CODES = ("query_codes", "db_codes")
EMBEDDINGS = ("query_embeddings", "db_embeddings")
LABELS = ("query_labels", "db_labels")
CAMS = ("query_cams", "db_cams")
ARRAYS = MATRICES + CODES + EMBEDDINGS + LABELS + CAMS
#: the values a tie-heavy distance or score matrix draws its few levels from
SCORE_LEVELS = (0.0, 0.25, 0.5, 1.0, 3.0, -2.0)


def evaluate_problem(c: Choices) -> Dict[str, Any]:
    """A valid, tie-heavy problem with every kind of ranking and relevance input, and options.

    Returns the keyword arguments of ``rc.evaluate`` (no ``implementation``).
    """
    arrays = c.arrays()
    big = c.chance(0.002)  # a rare large tie group (hypergeometric terms of ~10^3 items)
    nq = c.integer(1, 2 if big else 4)
    n = c.integer(500, 2500) if big else c.integer(1, 12)
    kw: Dict[str, Any] = _ranking(c, arrays, nq, n, big)
    relevance = c.choice(("ids", "ids", "multi", "matrix", "graded"))
    protocol = c.choice(PLAIN_PROTOCOLS)
    if relevance == "ids":
        kw["query_labels"] = arrays.integers(0, 3, size=nq)
        kw["db_labels"] = arrays.integers(-1, 3, size=n)
        if c.chance(0.4):
            protocol = c.choice(REID_PROTOCOLS)
            kw["query_cams"] = arrays.integers(0, 2, size=nq)
            kw["db_cams"] = arrays.integers(0, 2, size=n)
    elif relevance == "multi":
        width = c.integer(1, 3)
        kw["query_labels"] = arrays.integers(0, 2, size=(nq, width))
        kw["db_labels"] = arrays.integers(0, 2, size=(n, width))
    elif relevance == "matrix":
        kw["relevance"] = arrays.random((nq, n)) < 0.4
    else:
        kw["relevance"] = graded_relevance(c, arrays, (nq, n))
    if c.chance(0.25):
        kw["junk"] = arrays.random((nq, n)) < 0.2
    kw["protocol"] = protocol
    kw.update(evaluate_options(c, big))
    return kw


def _ranking(c: Choices, arrays: Any, nq: int, n: int, big: bool) -> Dict[str, Any]:
    """Distances or scores on a few levels (float64, float32, int64, float16), ±1 or 0/1 codes,
    or small integer embeddings (euclidean or cosine)."""
    kw: Dict[str, Any] = {}
    ranking = c.choice(("distances", "distances", "scores", "codes", "codes01", "embeddings"))
    if ranking in ("distances", "scores"):
        count = 1 if big else c.integer(1, 5)
        levels = arrays.choice(list(SCORE_LEVELS), size=count, replace=False)
        values = arrays.choice(levels, size=(nq, n))
        dtype = c.choice((np.float64, np.float64, np.float32, np.int64, np.float16))
        kw[ranking] = values.astype(dtype) if dtype is not np.int64 else (values * 4).astype(np.int64)
    elif ranking.startswith("codes"):
        bits = c.integer(1, 8)
        alphabet = [-1, 1] if ranking == "codes" else [0, 1]
        kw["query_codes"] = arrays.choice(alphabet, size=(nq, bits))
        kw["db_codes"] = arrays.choice(alphabet, size=(n, bits))
    else:
        dim = c.integer(1, 4)
        kw["query_embeddings"] = arrays.integers(-2, 3, size=(nq, dim)).astype(np.float64)
        kw["db_embeddings"] = arrays.integers(-2, 3, size=(n, dim)).astype(np.float64)
        kw["metric"] = c.choice(("euclidean", "cosine"))
        if kw["metric"] == "cosine":  # no zero vectors: their cosine is undefined
            for side in EMBEDDINGS:
                first = kw[side][:, 0]
                first[first == 0] = 1.0
    return kw


def evaluate_options(c: Choices, big: bool = False) -> Dict[str, Any]:
    """Every option of ``rc.evaluate`` drawn (those of the preset left out at times)."""
    out: Dict[str, Any] = {
        "ties": "expected" if big else c.choice(TIE_POLICIES),
        "ap_rule": c.choice(AP_RULES),
        "ap_at_k": c.choice(AP_AT_K_DENOMINATORS),
        "empty": c.choice(EMPTY_POLICIES_WITH_A_MEAN),  # not "error": a valid problem gives a value
        "max_rank": c.integer(1, 8),
    }
    for name, vocabulary in (("gain", GAINS), ("discount", DISCOUNTS), ("recall", RECALL_SENSES)):
        if c.chance(0.4):  # else the preset's
            out[name] = c.choice(vocabulary)
    if c.chance(0.8):
        out["k"] = None if c.chance(0.3) else c.integer(1, 15)
    if c.chance(0.2):
        out["radius"] = c.choice((0, 0.5, 1, 2, 3.5))
    if c.chance(0.2):
        out["block_size"] = c.integer(1, 3)
    return out


def graded_relevance(c: Choices, arrays: Any, shape: Tuple[int, ...]) -> np.ndarray:
    """Integer grades 0 .. top (0 = not relevant), top up to the largest allowed grade, in an
    integer or float dtype (both hold grades); about half the items are not relevant."""
    top = c.choice((2, 3, MAX_GRADE))
    grades = arrays.integers(0, top + 1, size=shape)
    grades[arrays.random(shape) < 0.5] = 0  # most items are not relevant, as in real judgements
    return grades.astype(c.choice((np.int64, np.uint8, np.int32, np.float64)))


def crosscheck_problem(c: Choices) -> Dict[str, Any]:
    """The main job's cross-check inputs of ``rc.evaluate``: small and tie-heavy (distances on a
    few levels, float32 or float64, or ±1 codes), ids with cameras, multi-hot rows, a matrix or
    grades 0..4, junk, empty queries.  Fewer input kinds than :func:`evaluate_problem`: the
    stream of each seed is the one the cross-check has always run."""
    arrays = c.arrays()
    nq, n = c.integer(1, 4), c.integer(1, 12)
    kind = c.choice(("levels", "codes", "float32"))
    out: Dict[str, Any] = {}
    if kind == "codes":
        bits = c.integer(2, 8)
        out["query_codes"] = arrays.choice([-1, 1], size=(nq, bits))
        out["db_codes"] = arrays.choice([-1, 1], size=(n, bits))
    else:
        count = c.integer(1, 4)
        levels = arrays.choice(list(SCORE_LEVELS[:5]), size=count, replace=False)
        d = arrays.choice(levels, size=(nq, n))
        out["distances"] = d.astype(np.float32) if kind == "float32" else d
    label_kind = c.choice(("ids", "multi", "matrix", "graded"))
    if label_kind == "ids":
        out["query_labels"] = arrays.integers(0, 3, size=nq)
        out["db_labels"] = arrays.integers(-1, 3, size=n)
        if c.chance(0.5):
            out["query_cams"] = arrays.integers(0, 2, size=nq)
            out["db_cams"] = arrays.integers(0, 2, size=n)
            out["protocol"] = c.choice(REID_PROTOCOLS)
    elif label_kind == "multi":
        out["query_labels"] = arrays.integers(0, 2, size=(nq, 3))
        out["db_labels"] = arrays.integers(0, 2, size=(n, 3))
    elif label_kind == "matrix":
        out["relevance"] = arrays.random((nq, n)) < 0.4
    else:  # graded relevance: grades 0..4, most items 0
        out["relevance"] = np.where(arrays.random((nq, n)) < 0.5, 0, arrays.integers(1, 5, size=(nq, n)))
    if c.chance(0.3):
        out["junk"] = arrays.random((nq, n)) < 0.2
    return out


def crosscheck_options(c: Choices) -> Dict[str, Any]:
    """Every option of the cross-check drawn (no preset: the conventions directly)."""
    return {
        "ties": c.choice(TIE_POLICIES),
        "ap_rule": c.choice(AP_RULES),
        "ap_at_k": c.choice(AP_AT_K_DENOMINATORS),
        "k": None if c.chance(0.3) else c.integer(1, 14),
        "max_rank": c.integer(1, 7),
        "radius": None if c.chance(0.7) else float(c.choice((0, 1, 2, 0.5))),
        "gain": c.choice(GAINS),
        "discount": c.choice(DISCOUNTS),
        "recall": c.choice(RECALL_SENSES),
    }


def curve_inputs(c: Choices, nq: int, n: int, codes: bool = False) -> Dict[str, Any]:
    """Inputs of ``build_problem`` and ``rc.curves`` (no options): many ties, some junk, queries
    without relevant items, and wide inputs: ±1 codes up to 130 bits (three words), multi-hot rows
    of up to 70 labels (two words), camera junk.  ``codes``: the ranking input is always codes."""
    arrays = c.arrays()
    shape = 0 if codes else c.integer(0, 3)
    out: Dict[str, Any] = {}
    if shape == 0:
        bits = c.integer(1, 8)
        out["query_codes"] = arrays.integers(0, 2, size=(nq, bits))
        out["db_codes"] = arrays.integers(0, 2, size=(n, bits))
        if c.boolean():
            bits = c.choice((bits, 64, 130))
            out["query_codes"] = arrays.choice([-1, 1], size=(nq, bits))
            out["db_codes"] = arrays.choice([-1, 1], size=(n, bits))
    elif shape == 1:
        out["distances"] = arrays.integers(0, 4, size=(nq, n)).astype(np.float64)
    elif shape == 2:
        out["distances"] = (arrays.integers(-3, 3, size=(nq, n)) / 4).astype(np.float32)
    else:
        out["scores"] = arrays.random((nq, n)).round(1)
    if c.boolean():
        out["relevance"] = arrays.random((nq, n)) < c.choice((0.0, 0.2, 0.6))
    elif c.boolean():
        out["query_labels"] = arrays.integers(0, 3, size=nq)
        out["db_labels"] = arrays.integers(0, 3, size=n)
    else:  # multi-hot: relevant when a label is shared
        n_labels = c.choice((3, 70))
        out["query_labels"] = (arrays.random((nq, n_labels)) < 2 / n_labels).astype(np.uint8)
        out["db_labels"] = (arrays.random((n, n_labels)) < 2 / n_labels).astype(np.uint8)
    if c.boolean():
        out["junk"] = arrays.random((nq, n)) < 0.2
    elif "query_labels" in out and out["query_labels"].ndim == 1 and c.boolean():  # camera junk
        out["query_cams"] = arrays.integers(0, 2, size=nq)
        out["db_cams"] = arrays.integers(0, 2, size=n)
    return out
