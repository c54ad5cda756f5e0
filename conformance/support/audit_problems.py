"""Problems for the audit's tests whose answers are known, and the hand computations that know them.

``ap_by_hand`` and ``previous_hit_trapezoid`` compute AP from a ranked relevance row (a numpy
sort made by the test), independently of the audit, the harness and the implementations.
"""

from __future__ import annotations

import json
import os

import numpy as np
from retrieval_conformance import golden
from retrieval_conformance.conformance.problems.choices import NumpyChoices
from retrieval_conformance.conformance.problems.tie_heavy import integer_level_problem


def seed000(case_id: str):
    """The inputs of one of seed 000's golden cases (``seed000-map-all``, ``seed000-map-at-5``)."""
    with open(os.path.join(os.path.dirname(golden.__file__), "seed000.json"), encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    case = next(c for c in cases if c["id"] == case_id)
    return {key: np.array(value) for key, value in case["input"].items()}


def ap_by_hand(order_rel: np.ndarray, k=None, divide_by=None) -> float:
    """Precision-sum AP of a ranked relevance row: sum of i / r_i over the hits (in the top k),
    over the hits, or over ``divide_by``."""
    rel = order_rel if k is None else order_rel[:k]
    ranks = np.flatnonzero(rel) + 1
    if ranks.size == 0:
        return 0.0
    total = sum((i + 1) / r for i, r in enumerate(ranks))
    return total / (divide_by if divide_by is not None else ranks.size)


def tied_problem(seed=3, n_q=12, n_g=40, levels=5):
    """Distances on a few integer levels (ties everywhere) and a relevance matrix, every query
    with a relevant item (the shared builder's, from a seeded numpy Generator)."""
    return integer_level_problem(NumpyChoices(np.random.default_rng(seed)), n_q, n_g, levels)


def previous_hit_trapezoid(order_rel: np.ndarray) -> float:
    """The trapezoid whose left side is the precision at the previous hit (1 before the first)."""
    ranks = np.flatnonzero(order_rel) + 1
    old, total = 1.0, 0.0
    for i, r in enumerate(ranks, start=1):
        total += (old + i / r) / 2
        old = i / r
    return total / ranks.size if ranks.size else 0.0
