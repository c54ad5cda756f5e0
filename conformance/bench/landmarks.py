"""Landmark retrieval workload (Oxford5k): relevance and junk matrices.

11 landmarks x 5 queries; per-landmark numbers of positives and junk items of the same order
as the real ground truth; similarity-like float32 distances.
"""

from __future__ import annotations

import numpy as np
from retrieval_conformance.conformance.bench.workload import SEEDS, Workload

#: positives and junk per landmark, of the order of the real Oxford5k ground truth
_OXFORD_COUNTS = [
    (78, 111),
    (25, 31),
    (12, 18),
    (24, 9),
    (78, 133),
    (9, 13),
    (54, 30),
    (7, 11),
    (54, 49),
    (6, 15),
    (221, 127),
]


def oxford5k(scale: str) -> Workload:
    """``oxford5k`` at ``scale``."""
    n_land, per_land, n_g = (11, 5, 5063) if scale == "full" else (11, 1, 400)
    counts = _OXFORD_COUNTS if scale == "full" else [(max(2, p // 10), max(1, j // 10)) for p, j in _OXFORD_COUNTS]
    rng = np.random.default_rng(SEEDS["oxford5k"])
    members = rng.permutation(n_g)
    pos_sets, junk_sets, at = [], [], 0
    for n_pos, n_junk in counts:  # disjoint positives and junk per landmark; the rest is clutter
        pos_sets.append(members[at : at + n_pos])
        junk_sets.append(members[at + n_pos : at + n_pos + n_junk])
        at += n_pos + n_junk
    q_land = np.repeat(np.arange(n_land), per_land)
    n_q = q_land.size
    relevance = np.zeros((n_q, n_g), dtype=bool)
    junk = np.zeros((n_q, n_g), dtype=bool)
    for q, land in enumerate(q_land):
        relevance[q, pos_sets[land]] = True
        junk[q, junk_sets[land]] = True
    # distance = 1 - cosine similarity: positives closer on average, junk in between,
    # per-query difficulty (some queries are hard, as in Oxford: mAP spreads 0.2 .. 1)
    difficulty = rng.uniform(0.3, 1.6, size=n_q)[:, None]
    sim = rng.normal(0.1, 0.1, size=(n_q, n_g))
    sim += relevance * rng.normal(0.45, 0.2 * difficulty, size=(n_q, n_g)) / difficulty
    sim += junk * rng.normal(0.2, 0.15, size=(n_q, n_g))
    dist = (1.0 - sim).astype(np.float32)
    title = f"Oxford5k landmarks: {n_q} x {n_g:,} float32 distances, relevance and junk matrices, trapezoid AP"
    return Workload(
        "oxford5k",
        scale,
        title,
        "distances",
        {"distances": dist, "relevance": relevance, "junk": junk},
        "hashing",
        {"ap_rule": "trapezoid"},
        SEEDS["oxford5k"],
    )
