"""Shared by the C implementation's tests (``test_c_backend*.py``): the library loaded or the test
skipped, random validated problems and options, and array-for-array comparison of results.
"""
from __future__ import annotations

import numpy as np
import pytest
from retrieval_conformance.conformance.requirements import require_implementation
from retrieval_conformance.reference.contract.problem import Options, Problem

TIES = ("stable", "reverse", "optimistic", "pessimistic", "expected", "grouped")
RULES = ("precision_sum", "trapezoid")
DENOMINATORS = ("hits", "r", "min_k_r", "dcmh")
TOL = 1e-12


def load_c_backend():
    """``implementations.c_backend``; the test is skipped when the library is not built (fails
    with ``RC_REQUIRE=c``)."""
    require_implementation("c")
    from retrieval_conformance.implementations import c_backend as module

    return module


# ---------------------------------------------------------------------------------------------
# random problems, built directly as validated Problem objects
# ---------------------------------------------------------------------------------------------
def random_problem(rng, max_gallery=10, max_queries=4, wide=False) -> Problem:
    """Tie-heavy or continuous distances (float32/64) or codes; every relevance and junk input.

    ``wide``: codes of 65-140 bits and multi-hot rows of 70 labels (several uint64 words).
    """
    Q, N = int(rng.integers(1, max_queries + 1)), int(rng.integers(1, max_gallery + 1))
    kw = {}
    kind = rng.choice(["levels", "continuous", "codes"])
    if kind == "levels":
        d = rng.integers(0, int(rng.integers(1, 5)), size=(Q, N)) * 0.25
        kw["distances"] = d.astype(rng.choice([np.float32, np.float64]))
    elif kind == "continuous":
        kw["distances"] = rng.standard_normal((Q, N)).astype(rng.choice([np.float32, np.float64]))
    else:
        B = int(rng.integers(65, 141)) if wide else int(rng.integers(1, 9))
        kw["query_bits"] = rng.integers(0, 2, (Q, B)).astype(np.uint8)
        kw["db_bits"] = rng.integers(0, 2, (N, B)).astype(np.uint8)
    rel_kind = rng.choice(["matrix", "ids", "multi"])
    if rel_kind == "matrix":
        kw["relevance"] = rng.random((Q, N)) < rng.random()
    elif rel_kind == "ids":
        kw["query_labels"] = rng.integers(-1, 3, Q).astype(np.int64)
        kw["db_labels"] = rng.integers(-1, 3, N).astype(np.int64)
        if rng.random() < 0.5:
            kw["query_cams"] = rng.integers(0, 2, Q).astype(np.int64)
            kw["db_cams"] = rng.integers(0, 2, N).astype(np.int64)
        if rng.random() < 0.4:
            kw["junk_ids"] = (-1,)
    else:
        L = 70 if wide else int(rng.integers(1, 5))
        kw["query_labels"] = (rng.random((Q, L)) < 0.3).astype(np.uint8)
        kw["db_labels"] = (rng.random((N, L)) < 0.3).astype(np.uint8)
    if rng.random() < 0.3:
        kw["junk"] = rng.random((Q, N)) < 0.25
    return Problem(n_queries=Q, n_gallery=N, **kw)


def random_options(rng, ties, n_gallery) -> Options:
    return Options(
        ties=ties, ap_rule=str(rng.choice(RULES)),
        k=None if rng.random() < 0.3 else int(rng.integers(1, n_gallery + 3)),
        ap_at_k=str(rng.choice(DENOMINATORS)), max_rank=int(rng.integers(1, 12)),
        radius=None if rng.random() < 0.5 else float(rng.integers(0, 6)) * 0.5,
    )


def run_both(fn_ref, fn_c, p, o):
    """(ref, c) results of ``fn(p, o)``, or (None, both ValueError messages) when the
    reference raises (then the C implementation must raise too)."""
    try:
        ref = fn_ref(p, o)
    except ValueError as exc:
        with pytest.raises(ValueError) as info:
            fn_c(p, o)
        return None, (str(exc), str(info.value))
    return ref, fn_c(p, o)


# ---------------------------------------------------------------------------------------------
# identical results
# ---------------------------------------------------------------------------------------------
def _arrays(pq):
    out = {name: getattr(pq, name) for name in ("ap", "n_relevant", "hits_at_k", "precision_at_k",
                                                 "recall_at_k", "cmc", "inp", "r_precision")}
    if pq.precision_at_radius is not None:
        out["precision_at_radius"] = pq.precision_at_radius
        out["recall_at_radius"] = pq.recall_at_radius
    return out


def assert_identical(a, b, label):
    for name, arr in _arrays(a).items():
        other = _arrays(b)[name]
        assert arr.dtype == other.dtype and np.array_equal(arr, other), f"{label}: {name} differs"


def medium_problems():
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
