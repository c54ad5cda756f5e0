"""The C implementation's nDCG@k, RR, AP@R and hit rate (spec §7 nDCG, §7 MRR, §7 MAP@R,
§7 recall=hit) against the exact reference, bit for bit.

Random small problems through ``rc.evaluate``: float64 / float32 distances on a few levels
(many ties), Hamming codes (±1 and {0, 1}), single ids (with cameras: ReID junk), multi-hot
labels, boolean and graded (0 .. 5) relevance matrices, junk, empty queries; every tie policy,
k absent / inside / beyond the gallery, both gains, both discounts, both recall senses.  Then:
thread counts, large tie groups and large grades, and the checks made in Python before C runs.

Skipped when the C library is not built (a failure with ``RC_REQUIRE=c``).
"""

from __future__ import annotations

import ctypes
import os
import re
from fractions import Fraction

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.crosscheck import same_bits
from retrieval_conformance.conformance.support.c_test_support import TIES
from retrieval_conformance.reference.contract.conventions import AP_AT_K_DENOMINATORS, AP_RULES, DISCOUNTS
from retrieval_conformance.reference.contract.problem import VALUE_FIELDS, Options, Problem

#: the per-query arrays compared bit for bit (``recall_at_k`` is the hit rate under recall="hit")
COMPARED = ("ndcg", "rr", "ap_at_r", "recall_at_k", "n_relevant")


def _ranking(rng, nq: int, n: int) -> dict:
    kind = rng.choice(["levels", "float32", "codes_pm1", "codes_01"])
    if kind.startswith("codes"):
        bits = int(rng.integers(1, 7))
        low = -1 if kind == "codes_pm1" else 0
        return {"query_codes": rng.choice([low, 1], size=(nq, bits)), "db_codes": rng.choice([low, 1], size=(n, bits))}
    levels = rng.choice([0.0, 0.25, 0.5, 1.0, 3.0], size=int(rng.integers(1, 5)), replace=False)
    d = rng.choice(levels, size=(nq, n))
    return {"distances": d.astype(np.float32) if kind == "float32" else d}


def _relevance(rng, nq: int, n: int) -> dict:
    kind = rng.choice(["ids", "ids_cams", "multi", "matrix", "graded", "graded"])
    if kind.startswith("ids"):
        out = {"query_labels": rng.integers(0, 3, size=nq), "db_labels": rng.integers(-1, 3, size=n)}
        if kind == "ids_cams":
            out.update(
                query_cams=rng.integers(0, 2, size=nq),
                db_cams=rng.integers(0, 2, size=n),
                protocol=str(rng.choice(["reid", "reid-matlab"])),
            )  # reid-matlab: junk id -1
        return out
    if kind == "multi":
        return {"query_labels": rng.integers(0, 2, size=(nq, 3)), "db_labels": rng.integers(0, 2, size=(n, 3))}
    if kind == "matrix":
        return {"relevance": rng.random((nq, n)) < 0.4}
    grades = rng.integers(0, 6, size=(nq, n)) * (rng.random((nq, n)) < 0.5)
    grades[0, 0] = max(grades[0, 0], 2)  # at least one grade above 1: graded relevance
    if nq > 1:
        grades[-1] = 0  # an empty query
    return {"relevance": grades}


def random_case(rng, ties: str) -> tuple:
    """(evaluate keyword arguments, options) of one small tie-heavy problem."""
    nq, n = int(rng.integers(1, 5)), int(rng.integers(1, 14))
    kwargs = {**_ranking(rng, nq, n), **_relevance(rng, nq, n)}
    if rng.random() < 0.3:
        kwargs["junk"] = rng.random((nq, n)) < 0.2
    options = {
        "ties": ties,
        "ap_rule": str(rng.choice(AP_RULES)),
        "ap_at_k": str(rng.choice(AP_AT_K_DENOMINATORS)),
        "k": None if rng.random() < 0.3 else int(rng.integers(1, n + 4)),
        "gain": str(rng.choice(["linear", "exponential"])),
        "recall": str(rng.choice(["fraction", "hit"])),
        "discount": str(rng.choice(DISCOUNTS)),
        "empty": str(rng.choice(["zero", "skip", "nan"])),
        "max_rank": int(rng.integers(1, 6)),
    }
    return kwargs, options


def evaluate_both(kwargs: dict, options: dict):
    """(reference Result, C Result), or (None, None) once both raised the same ValueError."""
    try:
        ref = rc.evaluate(**kwargs, **options, implementation="reference")
    except ValueError as exc:
        with pytest.raises(ValueError) as got:
            rc.evaluate(**kwargs, **options, implementation="c")
        assert str(got.value) == str(exc)
        return None, None
    return ref, rc.evaluate(**kwargs, **options, implementation="c")


def differences(ref, res, label: str = "") -> list:
    out = []
    for name in COMPARED:
        x, y = getattr(ref.per_query, name), getattr(res.per_query, name)
        if not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            out.append(f"{label}{name}: reference {x.tolist()} != c {y.tolist()}")
    return out


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("ties", TIES)
def test_random_problems_bit_equal_to_reference(c_backend, ties):
    rng = np.random.default_rng(1300 + TIES.index(ties))
    compared = 0
    for case in range(120):
        kwargs, options = random_case(rng, ties)
        ref, res = evaluate_both(kwargs, options)
        if ref is None:
            continue
        compared += 1
        assert differences(ref, res, f"case {case} {options}: ") == []
    assert compared >= 60


@pytest.mark.parametrize("ties", TIES)
def test_tiny_problems_equal_the_independent_rank_oracle(c_backend, ties):
    """support/rank_oracle.py (50-digit discounts, brute-force tie arrangements) rounded once."""
    from retrieval_conformance.conformance.support import rank_oracle

    rng = np.random.default_rng(1600 + TIES.index(ties))
    impl = c_backend.CImplementation()
    for case in range(40):
        n = int(rng.integers(1, 8))
        dist = rng.choice([0.0, 1.0, 2.0], size=(2, n))
        grades = rng.integers(0, 4, size=(2, n))
        junk = rng.random((2, n)) < 0.2
        k = None if case % 3 == 0 else int(rng.integers(1, n + 3))
        gain, discount = ("linear", "exponential")[case % 2], DISCOUNTS[case // 2 % len(DISCOUNTS)]
        problem = Problem(n_queries=2, n_gallery=n, distances=dist, relevance=grades > 0, grades=grades, junk=junk)
        o = Options(ties=ties, k=k, gain=gain, discount=discount, recall="hit")
        try:
            res = impl.compute(problem, o)
        except ValueError:  # grouped: k inside a tie group
            continue
        for q in range(2):
            if not (grades[q] > 0)[~junk[q]].any():
                assert res.ndcg[q] == res.rr[q] == res.ap_at_r[q] == res.recall_at_k[q] == 0.0
                continue
            want = rank_oracle.query_metrics(
                dist[q].tolist(), grades[q].tolist(), junk[q].tolist(), ties, k, gain, discount
            )
            got = {"ndcg": res.ndcg[q], "rr": res.rr[q], "ap_at_r": res.ap_at_r[q], "hit": res.recall_at_k[q]}
            assert got == {f: float(v) for f, v in want.items()}, (case, q, o)


def _graded_problem(rng, Q: int, N: int, levels: int, max_grade: int = 5) -> Problem:
    grades = rng.integers(0, max_grade + 1, size=(Q, N)) * (rng.random((Q, N)) < 0.3)
    return Problem(
        n_queries=Q,
        n_gallery=N,
        distances=rng.integers(0, levels, size=(Q, N)).astype(np.float64),
        relevance=grades > 0,
        grades=grades.astype(np.int64),
    )


@pytest.mark.parametrize("ties", TIES)
def test_thread_counts_give_the_same_bits(c_backend, ties):
    rng = np.random.default_rng(1400 + TIES.index(ties))
    problem = _graded_problem(rng, 48, 600, levels=20)
    impl = c_backend.CImplementation()
    for k, gain, recall in ((None, "linear", "fraction"), (30, "exponential", "hit"), (5000, "linear", "hit")):
        o = Options(ties=ties, k=k, gain=gain, recall=recall)
        try:
            one = impl.compute(problem, o, num_threads=1)
        except ValueError:  # grouped: k inside a tie group
            continue
        assert same_bits(one, impl.compute(problem, o, num_threads=2), f"{ties} k={k}") == []


def _compare_problem(c_backend, problem: Problem, options: Options, label: str) -> None:
    from retrieval_conformance.reference.backend import ReferenceImplementation

    ref = ReferenceImplementation().compute(problem, options)
    res = c_backend.CImplementation().compute(problem, options, num_threads=1)
    for name in COMPARED:
        x, y = getattr(ref, name), getattr(res, name)
        assert np.array_equal(x, y), f"{label} {name}: reference {x.tolist()} != c {y.tolist()}"


@pytest.mark.parametrize("ties", TIES)
def test_large_tie_groups_and_large_grades(c_backend, ties):
    """A few hundred items at one distance (expected: long RR sums), grades up to 52 (gains of
    2**52 - 1, sums beyond 2**53), Hamming codes with graded relevance."""
    rng = np.random.default_rng(1500 + TIES.index(ties))
    Q, N = 3, 400
    dist = np.zeros((Q, N))
    dist[:, N // 2 :] = 1.0
    grades = np.zeros((Q, N), dtype=np.int64)
    grades[0, rng.choice(N, 3, replace=False)] = [1, 52, 7]
    grades[1, rng.choice(N, 120, replace=False)] = rng.integers(1, 53, 120)
    grades[2, N - 5 :] = [52, 52, 52, 3, 1]
    problem = Problem(n_queries=Q, n_gallery=N, distances=dist, relevance=grades > 0, grades=grades)
    bits = rng.integers(0, 2, size=(Q + N, 5)).astype(np.uint8)
    codes = Problem(
        n_queries=Q, n_gallery=N, query_bits=bits[:Q], db_bits=bits[Q:], relevance=grades > 0, grades=grades
    )
    for k in (None, N // 2, N + 7) if ties == "grouped" else (None, 1, 37, N // 2 + 3, N + 7):
        for gain in ("linear", "exponential"):
            o = Options(ties=ties, k=k, gain=gain, recall="hit" if k and k > 1 else "fraction")
            _compare_problem(c_backend, problem, o, f"{ties} k={k} {gain}")
            if ties != "grouped" or k is None:
                _compare_problem(c_backend, codes, o, f"codes {ties} k={k} {gain}")


def test_values_by_hand(c_backend):
    from retrieval_conformance.reference.contract.discounts import discount_table

    d = [Fraction(float(x)) for x in discount_table(4)]
    D = np.array([[0.0, 1.0, 2.0, 3.0]])
    ideal = rc.evaluate(distances=D, relevance=np.array([[3, 2, 1, 0]]), implementation="c", k=None)
    assert ideal.per_query.ndcg[0] == 1.0 and ideal.per_query.ap_at_r[0] == 1.0
    # grades 3, 2, 0, 1: DCG = 3 d(1) + 2 d(2) + d(4), IDCG = 3 d(1) + 2 d(2) + d(3)
    res = rc.evaluate(distances=D, relevance=np.array([[3, 2, 0, 1]]), implementation="c", k=None)
    assert res.per_query.ndcg[0] == float((3 * d[0] + 2 * d[1] + d[3]) / (3 * d[0] + 2 * d[1] + d[2]))
    assert res.per_query.rr[0] == 1.0
    assert res.per_query.ap_at_r[0] == float(Fraction(2, 3))  # (1/1 + 2/2) / 3: rank 4 > R
    exp = rc.evaluate(distances=D, relevance=np.array([[3, 2, 0, 1]]), implementation="c", k=2, gain="exponential")
    assert exp.per_query.ndcg[0] == 1.0
    # the grade-0 item first: no hit within k = 1; the first relevant at rank 2
    reverse = dict(distances=D[:, ::-1].copy(), relevance=np.array([[3, 2, 1, 0]]), implementation="c", recall="hit")
    hit = rc.evaluate(k=1, **reverse)
    assert hit.per_query.recall_at_k[0] == 0.0 and hit.per_query.rr[0] == 0.0
    hit = rc.evaluate(k=2, **reverse)
    assert hit.per_query.recall_at_k[0] == 1.0 and hit.per_query.rr[0] == 0.5


def test_grades_and_discounts_are_checked_before_the_c_call(c_backend):
    impl = c_backend.CImplementation()
    D = np.zeros((1, 3))
    grades = np.array([[0, 2, 53]])
    bad_range = Problem(n_queries=1, n_gallery=3, distances=D, relevance=grades > 0, grades=grades)
    with pytest.raises(ValueError, match="grades 0 .. 52"):
        impl.compute(bad_range, Options())
    mismatch = Problem(
        n_queries=1, n_gallery=3, distances=D, relevance=np.array([[True, True, False]]), grades=np.array([[0, 2, 1]])
    )
    with pytest.raises(ValueError, match="grades > 0"):
        impl.compute(mismatch, Options())
    wrong_dtype = Problem(
        n_queries=1,
        n_gallery=3,
        distances=D,
        relevance=np.array([[False, True, True]]),
        grades=np.array([[0, 2, 1]], dtype=np.int32),
    )
    with pytest.raises(TypeError, match="grades"):
        impl.compute(wrong_dtype, Options())
    with_labels = Problem(
        n_queries=1,
        n_gallery=3,
        distances=D,
        query_labels=np.array([1]),
        db_labels=np.array([1, 0, 1]),
        grades=np.array([[2, 0, 1]]),
    )
    with pytest.raises(ValueError, match="relevance matrix"):
        impl.compute(with_labels, Options())
    for o in (Options(gain="square"), Options(recall="top"), Options(discount="ln")):
        with pytest.raises(ValueError):
            impl.compute(bad_range, o)
    with pytest.raises(ValueError, match="at least 5 entries"):
        c_backend._discounts(5, "log2", np.ones(4))
    with pytest.raises(TypeError, match="float64"):
        c_backend._discounts(5, "log2", np.ones(5, dtype=np.float32))
    assert c_backend._discounts(0, "trec_eval_9.0a3").shape[0] >= 1


def _header_without_comments(c_backend) -> str:
    path = os.path.join(os.path.dirname(os.path.dirname(c_backend.__file__)), "csrc", "rc_core.h")
    with open(path, encoding="utf-8") as f:
        return re.sub(r"/\*.*?\*/", " ", f.read(), flags=re.S)


def test_the_value_enum_lists_the_contract_values_in_order(c_backend):
    # qres.v and rc_output.values are indexed by the RC_V_* enum while ctypes fills values[]
    # in VALUE_FIELDS order: a value added to the contract needs its entry at the same place
    header = _header_without_comments(c_backend)
    body = re.search(r"enum\s*\{([^}]*\bRC_N_VALUES\b[^}]*)\}", header).group(1)
    entries = [" ".join(e.split()) for e in body.split(",") if e.strip()]
    expected = [f"RC_V_{name.upper()}" for name in VALUE_FIELDS]
    assert entries == [expected[0] + " = 0"] + expected[1:] + ["RC_N_VALUES"]
    # the library actually loaded was built from such a header (c_library also checks at load)
    assert c_backend.c_library._require().rc_n_values() == len(VALUE_FIELDS)


def test_the_output_struct_has_the_values_then_the_other_arrays(c_backend):
    from retrieval_conformance.implementations.c.library import OTHER_FIELDS, STATUS_FIELDS

    header = _header_without_comments(c_backend)
    body = re.search(r"typedef struct \{([^}]*)\} rc_output;", header).group(1)
    assert re.search(r"\bdouble\s*\*\s*values\s*\[\s*RC_N_VALUES\s*\]\s*;", body)
    assert re.findall(r"\*\s*(\w+)", body) == ["values", *OTHER_FIELDS, *STATUS_FIELDS]
    assert ctypes.sizeof(c_backend._Output) == ctypes.sizeof(ctypes.c_void_p) * (
        len(VALUE_FIELDS) + len(OTHER_FIELDS) + len(STATUS_FIELDS)
    )
