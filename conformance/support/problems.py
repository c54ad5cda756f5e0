"""Generated problems for the implementation tests (numpy, torch, C), from a seeded numpy
Generator: small tie-heavy validated :class:`Problem` objects, their :class:`Options`
(random, or a grid over every option), and two medium problems for determinism checks.

``crosscheck.random_problem`` draws keyword inputs of ``rc.evaluate`` instead (its stream is
fixed by the main job's seeds); ``strategies.tie_heavy_problems`` draws the same shapes
with hypothesis.
"""
from __future__ import annotations

import itertools
from typing import Dict, List

import numpy as np
from retrieval_conformance.reference.contract.conventions import AP_AT_K_DENOMINATORS, AP_RULES
from retrieval_conformance.reference.contract.problem import Options, Problem

#: distance levels, a prefix of which a tie-heavy problem draws from (-0.0 ties with 0.0)
LEVELS = (-0.0, 0.0, 0.5, -1.5, 2.0, 0.25, 0.1)


def _ranking(rng, Q: int, N: int, wide: bool) -> Dict[str, np.ndarray]:
    """Few distinct distances (float32 or float64), continuous ones, or bit codes."""
    kind = rng.choice(["levels", "continuous", "codes"], p=[0.5, 0.15, 0.35])
    if kind == "codes":
        B = int(rng.integers(65, 141)) if wide else int(rng.integers(1, 9))
        return {"query_bits": rng.integers(0, 2, (Q, B)).astype(np.uint8),
                "db_bits": rng.integers(0, 2, (N, B)).astype(np.uint8)}
    if kind == "levels":
        d = rng.choice(np.array(LEVELS[: int(rng.integers(1, len(LEVELS) + 1))]), size=(Q, N))
    else:
        d = rng.standard_normal((Q, N))
    return {"distances": np.ascontiguousarray(d.astype(rng.choice([np.float32, np.float64])))}


def _relevance(rng, Q: int, N: int, wide: bool) -> Dict[str, object]:
    """A relevance matrix, single ids (with cameras and junk ids), or multi-hot labels."""
    kind = rng.choice(["matrix", "ids", "multi"])
    if kind == "matrix":
        return {"relevance": rng.random((Q, N)) < rng.random()}
    if kind == "multi":
        L = 70 if wide else int(rng.integers(1, 5))
        return {"query_labels": (rng.random((Q, L)) < 0.4).astype(np.uint8),
                "db_labels": (rng.random((N, L)) < 0.4).astype(np.uint8)}
    out: Dict[str, object] = {"query_labels": rng.integers(-1, 3, Q).astype(np.int64),
                              "db_labels": rng.integers(-1, 3, N).astype(np.int64)}
    if rng.random() < 0.5:
        out.update(query_cams=rng.integers(0, 2, Q).astype(np.int64), db_cams=rng.integers(0, 2, N).astype(np.int64))
    if rng.random() < 0.35:
        out["junk_ids"] = (-1,)
    return out


def tie_heavy_problem(rng: np.random.Generator, max_queries: int = 4, max_gallery: int = 10,
                      wide: bool = False) -> Problem:
    """Every ranking input (few distinct distances with -0.0 and 0.0, continuous float32/64,
    codes), every relevance input, every kind of junk, queries without relevant items.

    ``wide``: codes of 65-140 bits and multi-hot rows of 70 labels (several uint64 words).
    """
    Q, N = int(rng.integers(1, max_queries + 1)), int(rng.integers(1, max_gallery + 1))
    kw = dict(_ranking(rng, Q, N, wide), **_relevance(rng, Q, N, wide))
    if rng.random() < 0.3:
        kw["junk"] = rng.random((Q, N)) < 0.25
    return Problem(n_queries=Q, n_gallery=N, **kw)


def random_options(rng: np.random.Generator, ties: str, n_gallery: int) -> Options:
    """Every option drawn, for one tie policy; k up to two beyond the gallery."""
    return Options(
        ties=ties, ap_rule=str(rng.choice(AP_RULES)),
        k=None if rng.random() < 0.3 else int(rng.integers(1, n_gallery + 3)),
        ap_at_k=str(rng.choice(AP_AT_K_DENOMINATORS)), max_rank=int(rng.integers(1, 12)),
        radius=None if rng.random() < 0.5 else float(rng.integers(0, 6)) * 0.5,
    )


def option_grid(ties: str, ks=(None, 1, 2, 3, 5, 12), max_rank: int = 6) -> List[Options]:
    """Every ap_rule x k x ap_at_k for one tie policy (radius on half of them)."""
    out = []
    for n, (rule, k) in enumerate(itertools.product(AP_RULES, ks)):
        for den in ("hits",) if k is None else AP_AT_K_DENOMINATORS:
            out.append(Options(ties=ties, ap_rule=rule, k=k, ap_at_k=den, max_rank=max_rank,
                               radius=(None, 0.0, 0.5, 3.0)[n % 4]))
    return out


def medium_problems() -> Dict[str, Problem]:
    """40 queries x 3000 items: 24-bit codes with multi-hot labels, and float32 distances on
    50 levels with ids, cameras and junk id -1 (determinism of threads and blocks)."""
    rng = np.random.default_rng(11)
    Q, N, B = 40, 3000, 24
    codes = Problem(n_queries=Q, n_gallery=N, query_bits=rng.integers(0, 2, (Q, B)).astype(np.uint8),
                    db_bits=rng.integers(0, 2, (N, B)).astype(np.uint8),
                    query_labels=(rng.random((Q, 5)) < 0.3).astype(np.uint8),
                    db_labels=(rng.random((N, 5)) < 0.3).astype(np.uint8))
    ids_q, ids_g = rng.integers(0, 60, Q), rng.integers(-1, 60, N)
    floats = Problem(n_queries=Q, n_gallery=N,
                     distances=np.round(rng.random((Q, N)) * 50).astype(np.float32) / 50,
                     query_labels=ids_q, db_labels=ids_g, query_cams=rng.integers(0, 3, Q),
                     db_cams=rng.integers(0, 3, N), junk_ids=(-1,))
    return {"codes": codes, "floats": floats}
