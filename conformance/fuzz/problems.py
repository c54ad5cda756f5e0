"""The valid problems the fuzz campaign starts from, and the :class:`Case` it runs.

A problem is small and tie-heavy, with every kind of ranking input (distances, scores, ±1 and
0/1 codes, embeddings), relevance input (ids, multi-hot rows, a matrix), junk, cameras, and
graded relevance, every option drawn; a rare one holds a tie group of thousands of items.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

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

# The draws pick from these tuples by index, so their order (the table's and PRESETS') fixes the
# problem of each case index: a new value or preset, or a reordering, changes a seed's cases.
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


@dataclass
class Case:
    """One input of the campaign: ``kwargs`` for ``rc.evaluate`` (without ``implementation``)."""

    kwargs: Dict[str, Any]
    change: str = "none"
    expect: str = "value"  # "value", "error" or "either"
    twin: Optional[Dict[str, Any]] = None
    relation: str = "same"  # how the result relates to the twin's
    notes: List[str] = field(default_factory=list)

    def describe(self) -> str:
        """A short, bounded description (never the repr of a possibly huge or hostile value)."""
        parts = []
        for key, value in self.kwargs.items():
            parts.append(f"{key}={short_repr(value)}")
        return f"[{self.change}] " + ", ".join(parts)


def short_repr(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, (int, float)):
        return f"<{type(value).__name__} {getattr(value, 'dtype', '')} {tuple(shape)}>"
    if isinstance(value, (list, tuple)):
        return f"<{type(value).__name__} of {len(value)}>"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_TORCH: Any = None


def torch_or_none():
    """torch if installed (imported once, only when a change needs it), else None."""
    global _TORCH
    if _TORCH is None:
        try:
            import torch
        except ImportError:
            torch = False
        _TORCH = torch
    return _TORCH or None


# --------------------------------------------------------------------------- the valid problem
def base_problem(d) -> Dict[str, Any]:
    """A valid, tie-heavy problem with every kind of ranking and relevance input, and options."""
    rng = np.random.default_rng(d.integer(0, 2**32 - 1))
    big = d.chance(0.002)  # a rare large tie group (hypergeometric terms of ~10^3 items)
    nq = d.integer(1, 2 if big else 4)
    n = d.integer(500, 2500) if big else d.integer(1, 12)
    kw: Dict[str, Any] = {}
    ranking = d.choice(("distances", "distances", "scores", "codes", "codes01", "embeddings"))
    if ranking in ("distances", "scores"):
        count = 1 if big else d.integer(1, 5)
        levels = rng.choice([0.0, 0.25, 0.5, 1.0, 3.0, -2.0], size=count, replace=False)
        values = rng.choice(levels, size=(nq, n))
        dtype = d.choice((np.float64, np.float64, np.float32, np.int64, np.float16))
        kw[ranking] = values.astype(dtype) if dtype is not np.int64 else (values * 4).astype(np.int64)
    elif ranking.startswith("codes"):
        bits = d.integer(1, 8)
        alphabet = [-1, 1] if ranking == "codes" else [0, 1]
        kw["query_codes"] = rng.choice(alphabet, size=(nq, bits))
        kw["db_codes"] = rng.choice(alphabet, size=(n, bits))
    else:
        dim = d.integer(1, 4)
        kw["query_embeddings"] = rng.integers(-2, 3, size=(nq, dim)).astype(np.float64)
        kw["db_embeddings"] = rng.integers(-2, 3, size=(n, dim)).astype(np.float64)
        kw["metric"] = d.choice(("euclidean", "cosine"))
        if kw["metric"] == "cosine":  # no zero vectors: their cosine is undefined
            for side in EMBEDDINGS:
                first = kw[side][:, 0]
                first[first == 0] = 1.0
    relevance = d.choice(("ids", "ids", "multi", "matrix", "graded"))
    protocol = d.choice(PLAIN_PROTOCOLS)
    if relevance == "ids":
        kw["query_labels"] = rng.integers(0, 3, size=nq)
        kw["db_labels"] = rng.integers(-1, 3, size=n)
        if d.chance(0.4):
            protocol = d.choice(REID_PROTOCOLS)
            kw["query_cams"] = rng.integers(0, 2, size=nq)
            kw["db_cams"] = rng.integers(0, 2, size=n)
    elif relevance == "multi":
        width = d.integer(1, 3)
        kw["query_labels"] = rng.integers(0, 2, size=(nq, width))
        kw["db_labels"] = rng.integers(0, 2, size=(n, width))
    elif relevance == "matrix":
        kw["relevance"] = rng.random((nq, n)) < 0.4
    else:
        kw["relevance"] = graded_relevance(d, rng, (nq, n))
    if d.chance(0.25):
        kw["junk"] = rng.random((nq, n)) < 0.2
    kw["protocol"] = protocol
    kw.update(base_options(d, big))
    return kw


def base_options(d, big: bool = False) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "ties": "expected" if big else d.choice(TIE_POLICIES),
        "ap_rule": d.choice(AP_RULES),
        "ap_at_k": d.choice(AP_AT_K_DENOMINATORS),
        "empty": d.choice(EMPTY_POLICIES_WITH_A_MEAN),  # not "error": a valid problem gives a value
        "max_rank": d.integer(1, 8),
    }
    for name, vocabulary in (("gain", GAINS), ("discount", DISCOUNTS), ("recall", RECALL_SENSES)):
        if d.chance(0.4):  # else the preset's
            out[name] = d.choice(vocabulary)
    if d.chance(0.8):
        out["k"] = None if d.chance(0.3) else d.integer(1, 15)
    if d.chance(0.2):
        out["radius"] = d.choice((0, 0.5, 1, 2, 3.5))
    if d.chance(0.2):
        out["block_size"] = d.integer(1, 3)
    return out


def graded_relevance(d, rng, shape) -> np.ndarray:
    """Integer grades 0 .. top (0 = not relevant), top up to the largest allowed grade, in an
    integer or float dtype (both hold grades)."""
    top = d.choice((2, 3, MAX_GRADE))
    grades = rng.integers(0, top + 1, size=shape)
    grades[rng.random(shape) < 0.5] = 0  # most items are not relevant, as in real judgements
    return grades.astype(d.choice((np.int64, np.uint8, np.int32, np.float64)))

