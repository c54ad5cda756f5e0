"""nDCG@k, RR@k, AP@R and the hit rate of the numpy and torch implementations against the
exact reference, bit for bit (spec §7 nDCG, §7 MRR, §7 MAP@R, §7 recall=hit, §7 gain=linear,
§7 discount=log2).

Random small problems: distances from a few levels (many ties, float64 and float32), Hamming
codes, single ids (with cameras), multi-hot labels, boolean and graded relevance (grades
0..5), junk, empty queries; k absent, inside and beyond the gallery; every tie policy, both
gains, both discounts, both recall senses, several block sizes.  The vectorised code computes
in double-double and rounds once, so each value is the float64 nearest the reference's
``Fraction`` (``np.array_equal`` with NaN equal).  Large tie groups under ``expected`` are
checked for finiteness and against the reference to 1e-12.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from retrieval_conformance.conformance.crosscheck import run_both
from retrieval_conformance.conformance.support.requirements import require_implementation
from retrieval_conformance.implementations.numpy_backend import NumpyImplementation
from retrieval_conformance.implementations.torch_backend import TorchImplementation
from retrieval_conformance.reference.backend import ReferenceImplementation
from retrieval_conformance.reference.contract.conventions import (
    AP_AT_K_DENOMINATORS,
    AP_RULES,
    DISCOUNTS,
    GAINS,
    RECALL_SENSES,
    TIE_POLICIES,
)
from retrieval_conformance.reference.contract.evaluate import build_problem
from retrieval_conformance.reference.contract.problem import Options

FIELDS = ("ndcg", "rr", "ap_at_r", "recall_at_k")
REFERENCE = ReferenceImplementation()


def implementations(n_gallery: int):
    """numpy with one query per block, two per block and the default; torch (CPU) with one
    query per block and the default."""
    out = []
    try:
        require_implementation("torch")
        have_torch = True
    except pytest.skip.Exception:
        have_torch = False
    for block in (1, 2 * 8 * n_gallery, None):
        out.append(NumpyImplementation(block_bytes=block))
        if have_torch and block != 2 * 8 * n_gallery:
            out.append(TorchImplementation(device="cpu", block_bytes=block))
    return out


def random_inputs(rng: np.random.Generator) -> dict:
    """Keyword inputs of ``build_problem``: tiny, tie-heavy, junk, empty queries."""
    nq, n = int(rng.integers(1, 6)), int(rng.integers(1, 15))
    out: dict = {}
    kind = rng.choice(["levels", "float32", "codes", "bits"])
    if kind in ("codes", "bits"):
        bits = int(rng.integers(1, 7))
        values = [-1, 1] if kind == "codes" else [0, 1]
        out["query_codes"] = rng.choice(values, size=(nq, bits))
        out["db_codes"] = rng.choice(values, size=(n, bits))
    else:
        levels = rng.choice([0.0, -0.0, 0.25, 0.5, 1.0, 3.0], size=int(rng.integers(1, 5)), replace=False)
        d = rng.choice(levels, size=(nq, n))
        out["distances"] = d.astype(np.float32) if kind == "float32" else d
    rel = rng.choice(["ids", "multi", "binary", "graded", "graded"])
    if rel == "ids":
        out["query_labels"] = rng.integers(0, 3, size=nq)
        out["db_labels"] = rng.integers(0, 3, size=n)
        if rng.random() < 0.4:
            out["query_cams"] = rng.integers(0, 2, size=nq)
            out["db_cams"] = rng.integers(0, 2, size=n)
    elif rel == "multi":
        out["query_labels"] = rng.integers(0, 2, size=(nq, 3)).astype(np.uint8)
        out["db_labels"] = rng.integers(0, 2, size=(n, 3)).astype(np.uint8)
    elif rel == "binary":
        out["relevance"] = rng.random((nq, n)) < 0.4
    else:
        grades = rng.integers(0, 6, size=(nq, n)) * (rng.random((nq, n)) < 0.6)
        grades[0, 0] = 5 if n > 1 else grades[0, 0]  # some grade above 1: graded relevance
        if rng.random() < 0.3:
            grades[int(rng.integers(0, nq))] = 0  # an empty query
        out["relevance"] = grades
    if rng.random() < 0.3:
        out["junk"] = rng.random((nq, n)) < 0.25
    return out


def random_options(rng: np.random.Generator, n: int, ties: str) -> Options:
    k = [None, 1, int(rng.integers(1, n + 1)), n, n + 3][int(rng.integers(0, 5))]
    return Options(
        ties=ties,
        k=k,
        ap_rule=str(rng.choice(AP_RULES)),
        ap_at_k=str(rng.choice(AP_AT_K_DENOMINATORS)),
        max_rank=int(rng.integers(1, 6)),
        gain=str(rng.choice(GAINS)),
        recall=str(rng.choice(RECALL_SENSES)),
        discount=str(rng.choice(DISCOUNTS)),
    )


def differences(want, got, label: str) -> list:
    bad = []
    for field in FIELDS + ("ap", "n_relevant", "cmc"):
        a, b = getattr(want, field), getattr(got, field)
        if not np.array_equal(a, b, equal_nan=True):
            bad.append(f"{label} {field}: reference {a.tolist()} != {b.tolist()}")
    return bad


@pytest.mark.parametrize("ties", TIE_POLICIES)
def test_rank_metrics_equal_the_reference_bit_for_bit(ties):
    rng = np.random.default_rng(1300 + TIE_POLICIES.index(ties))
    bad, graded, checked = [], 0, 0
    for case in range(36):
        problem = build_problem(**random_inputs(rng))
        graded += problem.grades is not None
        for _ in range(2):
            opts = random_options(rng, problem.n_gallery, ties)
            for impl in implementations(problem.n_gallery):
                want, got = run_both(REFERENCE.compute, impl.compute, problem, opts)
                if want is None:  # grouped with k inside a tie group: both refuse it
                    assert "tie group" in got[0] and "tie group" in got[1], got
                    continue
                checked += 1
                bad += differences(want, got, f"case {case} {impl.name} block={impl.block_bytes} {opts}")
    assert bad == [], "\n".join(bad[:10])
    assert graded > 6 and checked > 100


@pytest.mark.parametrize("implementation", ["numpy", "torch"])
def test_front_end_options_reach_the_implementation(implementation):
    """Through ``rc.evaluate``: gain, discount and recall act as on the reference (per query;
    the means, computed by the shared aggregation, to 1e-12)."""
    import retrieval_conformance as rc

    if implementation == "torch":
        require_implementation("torch")
    d = np.array([[0.0, 1.0, 1.0, 2.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0, 0.0, 0.0], [0.0] * 6])
    grades = np.array([[0, 3, 1, 2, 0, 5], [2, 0, 0, 1, 0, 0], [0] * 6])
    for ties in TIE_POLICIES:
        for kw in (
            {"gain": "exponential", "recall": "hit", "k": 4},
            {"gain": "linear", "discount": "trec_eval_9.0a3", "k": None},
            {"recall": "hit", "k": 2, "discount": "log2"},
        ):
            if ties == "grouped" and kw["k"] is not None:  # k inside a tie group
                continue
            args = dict(distances=d, relevance=grades, ties=ties, empty="zero", **kw)
            ref = rc.evaluate(**args, implementation="reference")
            got = rc.evaluate(**args, implementation=implementation)
            assert differences(ref.per_query, got.per_query, f"{ties} {kw}") == []
            for mean in ("ndcg_at_k", "mrr", "map_at_r", "recall_at_k"):  # the shared aggregation
                a, b = getattr(ref, mean), getattr(got, mean)
                assert (a is None and b is None) or abs(a - b) <= 1e-12, (ties, kw, mean, a, b)


def large_group_problem(n: int, rng: np.random.Generator):
    """Four queries over one tie group of ``n`` items (a small group before it in query 1, the
    gallery split in two in query 3): 3 relevant items (grades up to 52), ~30% relevant, every
    item relevant, 40 relevant."""
    d = np.zeros((4, n))
    d[1, :5] = -1.0
    d[3, n // 2 :] = 1.0
    grades = np.zeros((4, n), dtype=np.int64)
    grades[0, rng.choice(n, 3, replace=False)] = [52, 1, 7]
    many = int(0.3 * n)
    grades[1, rng.choice(n, many, replace=False)] = rng.integers(1, 53, many)
    grades[2] = rng.integers(1, 4, n)
    grades[3, rng.choice(n, 40, replace=False)] = 2
    return build_problem(distances=d, relevance=grades)


def close_to_reference(want, got, label: str) -> list:
    """Finite, within 1e-12 of the exact value, and equal to it where it is a float64."""
    bad = []
    for field in FIELDS:
        values = getattr(got, field)
        for q, exact in enumerate(want.exact[field]):
            x = float(values[q])
            if (
                not np.isfinite(x)
                or abs(x - float(exact)) > 1e-12
                or (Fraction(float(exact)) == exact and x != float(exact))
            ):
                bad.append(f"{label} {field}[{q}]: {x!r} vs {float(exact)!r}")
    return bad


@pytest.mark.parametrize("gain", GAINS)
def test_expected_large_tie_groups_are_finite_and_accurate(gain):
    """Groups of 1200 items, k absent, small, inside and beyond: within 1e-12 of the reference
    (bit for bit where it is a float64), no NaN."""
    problem = large_group_problem(1200, np.random.default_rng(7))
    bad = []
    for k in (None, 1, 9, 700, 1201):
        opts = Options(ties="expected", k=k, gain=gain, ap_at_k="r", recall="hit", max_rank=3)
        want = REFERENCE.compute(problem, opts)
        for impl in implementations(1200):
            bad += close_to_reference(want, impl.compute(problem, opts), f"{impl.name} k={k}")
    assert bad == [], "\n".join(bad[:10])


@pytest.mark.slow
def test_expected_tie_groups_of_ten_thousand_items():
    """10**4 items in one tie group (exponential gains up to 2**52 - 1, 3000 relevant items,
    every item relevant): no NaN or overflow, the reference's values (~10 s of Fractions)."""
    problem = large_group_problem(10_000, np.random.default_rng(8))
    opts = Options(ties="expected", k=2500, gain="exponential", ap_at_k="r", recall="hit", max_rank=3)
    want = REFERENCE.compute(problem, opts)
    results = [impl.compute(problem, opts) for impl in implementations(10_000)]
    bad = []
    for impl, got in zip(implementations(10_000), results):
        bad += close_to_reference(want, got, impl.name)
        bad += differences(results[0], got, f"{impl.name} against numpy:")
    assert bad == [], "\n".join(bad[:10])


def test_binary_and_graded_relevance_of_one_grade_agree():
    """Grades all 0/2 with linear gain are twice binary relevance: nDCG (a ratio) is equal."""
    rng = np.random.default_rng(3)
    d = rng.integers(0, 3, size=(6, 11)).astype(np.float64)
    rel = rng.random((6, 11)) < 0.4
    for ties in TIE_POLICIES:
        opts = Options(ties=ties, k=None)
        for impl in implementations(11)[:2]:
            a = impl.compute(build_problem(distances=d, relevance=rel), opts)
            b = impl.compute(build_problem(distances=d, relevance=rel.astype(np.int64) * 2), opts)
            for field in FIELDS:
                assert np.array_equal(getattr(a, field), getattr(b, field)), (ties, impl.name, field)
