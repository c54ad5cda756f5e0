"""Problems for the implementation tests (numpy, torch, C): small tie-heavy validated
:class:`Problem` objects and their :class:`Options` from a seeded numpy Generator (built by
:mod:`retrieval_conformance.conformance.problems`), a grid over every option, and two medium
problems for determinism checks.
"""

from __future__ import annotations

import itertools
from typing import Dict, List

import numpy as np
from retrieval_conformance.conformance.problems.choices import NumpyChoices
from retrieval_conformance.conformance.problems.tie_heavy import engine_options, tie_heavy_inputs
from retrieval_conformance.reference.contract.conventions import AP_AT_K_DENOMINATORS, AP_RULES
from retrieval_conformance.reference.contract.problem import Options, Problem


def tie_heavy_problem(
    rng: np.random.Generator, max_queries: int = 4, max_gallery: int = 10, wide: bool = False
) -> Problem:
    """A tie-heavy :class:`Problem` drawn from ``rng`` (:func:`~retrieval_conformance.conformance.
    problems.tie_heavy.tie_heavy_inputs`: every ranking and relevance input, junk, queries without
    relevant items; ``wide``: codes of 65-140 bits and multi-hot rows of 70 labels)."""
    return Problem(**tie_heavy_inputs(NumpyChoices(rng), max_queries, max_gallery, wide))


def random_options(rng: np.random.Generator, ties: str, n_gallery: int) -> Options:
    """Every option drawn from ``rng``, for one tie policy; k up to two beyond the gallery."""
    return engine_options(NumpyChoices(rng), ties, n_gallery)


def option_grid(ties: str, ks=(None, 1, 2, 3, 5, 12), max_rank: int = 6) -> List[Options]:
    """Every ap_rule x k x ap_at_k for one tie policy (radius on half of them)."""
    out = []
    for n, (rule, k) in enumerate(itertools.product(AP_RULES, ks)):
        for den in ("hits",) if k is None else AP_AT_K_DENOMINATORS:
            out.append(
                Options(
                    ties=ties, ap_rule=rule, k=k, ap_at_k=den, max_rank=max_rank, radius=(None, 0.0, 0.5, 3.0)[n % 4]
                )
            )
    return out


def medium_problems() -> Dict[str, Problem]:
    """40 queries x 3000 items: 24-bit codes with multi-hot labels, and float32 distances on
    50 levels with ids, cameras and junk id -1 (determinism of threads and blocks)."""
    rng = np.random.default_rng(11)
    Q, N, B = 40, 3000, 24
    codes = Problem(
        n_queries=Q,
        n_gallery=N,
        query_bits=rng.integers(0, 2, (Q, B)).astype(np.uint8),
        db_bits=rng.integers(0, 2, (N, B)).astype(np.uint8),
        query_labels=(rng.random((Q, 5)) < 0.3).astype(np.uint8),
        db_labels=(rng.random((N, 5)) < 0.3).astype(np.uint8),
    )
    ids_q, ids_g = rng.integers(0, 60, Q), rng.integers(-1, 60, N)
    floats = Problem(
        n_queries=Q,
        n_gallery=N,
        distances=np.round(rng.random((Q, N)) * 50).astype(np.float32) / 50,
        query_labels=ids_q,
        db_labels=ids_g,
        query_cams=rng.integers(0, 3, Q),
        db_cams=rng.integers(0, 3, N),
        junk_ids=(-1,),
    )
    return {"codes": codes, "floats": floats}
