"""Revisited Oxford/Paris (revisitop semantics, mP@k quirk and corrected) and GLDv2 mAP@100.

Golden values: ``golden/landmark_roxford.json`` and ``golden/landmark_gldv2.json``, exact
fractions derived by hand (each case's ``provenance`` holds the derivation).  Beyond them,
an independent float64 re-statement of revisitop's ``compute_map`` loop and of the Kaggle
metric checks the exact reference on generated cases.
"""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from importlib.resources import files

import numpy as np
import pytest
from retrieval_conformance.reference.protocols.landmark import (
    corrected_precision_at_k,
    evaluate_landmark,
    gldv2_ap_at_k,
    oxford_ap_exact,
    revisitop_ap,
    revisitop_positions,
    revisitop_precision_at_k,
    roxford_split,
)

GOLDEN = files("retrieval_conformance.golden")


def _load(name):
    doc = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    assert doc["schema"] == 1 and doc["source"]
    return doc["cases"]


CASES = _load("landmark_roxford.json") + _load("landmark_gldv2.json")


def _value(text):
    return None if text is None else (math.nan if text == "nan" else Fraction(text))


def _same(expected, got):
    if expected is None:
        return got is None
    if isinstance(expected, float):  # nan: nothing counted / undefined
        return got is None
    return got == expected


def test_golden_files_are_complete():
    assert len(CASES) >= 15
    for case in CASES:
        assert case["kind"] == "landmark"  # kept out of rc.evaluate's golden loop
        assert case["provenance"].strip() and case["clauses"] and case["expected"]
    protocols = {c["call"]["protocol"] for c in CASES}
    assert protocols == {"roxford-easy", "roxford-medium", "roxford-hard", "gldv2"}
    # cases where revisitop's mP@k and the corrected one differ, and one where they agree
    differ = [
        c
        for c in CASES
        if "mp_at_k" in c["expected"] and c["expected"]["mp_at_k"] != c["expected"]["mp_at_k_corrected"]
    ]
    same = [
        c
        for c in CASES
        if "mp_at_k" in c["expected"] and c["expected"]["mp_at_k"] == c["expected"]["mp_at_k_corrected"]
    ]
    assert len(differ) >= 5 and len(same) >= 1


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_golden_fractions(case):
    args = (case["input"]["ranked_lists"], case["input"]["ground_truth"])
    call = dict(case["call"])
    expected = case["expected"]
    if "raises" in expected:
        with pytest.raises(ValueError, match="revisitop"):
            evaluate_landmark(*args, **call)
        return
    res = evaluate_landmark(*args, **call)
    assert res.ap_exact == [_value(v) for v in expected["ap"]]
    assert _same(_value(expected["map"]), res.map_exact)
    if expected["map"] == "nan":
        assert math.isnan(res.map)
    else:
        assert res.map == float(Fraction(expected["map"]))
    # float per-query values carry NaN where the query is left out
    assert [None if math.isnan(a) else Fraction(a) for a in res.ap] == [
        None if v is None else Fraction(float(Fraction(v))) for v in expected["ap"]
    ]
    for key, got in (("mp_at_k", res.mp_at_k_exact), ("mp_at_k_corrected", res.mp_at_k_corrected_exact)):
        if key in expected:
            assert sorted(got) == sorted(int(k) for k in expected[key])
            for k, v in expected[key].items():
                assert _same(_value(v), got[int(k)]), (key, k)


# --------------------------------------------------------------------------- revisitop
def _revisitop_float(ranked, positives, junk, kappas):
    """revisitop's compute_map for one query, re-stated in float64 (independent of the
    reference): membership marks, junk shift by a running counter, trapezoid with
    1/n steps, mP@k with k_q = min(last positive, k) and a ValueError when none is found."""
    pos = [i for i, x in enumerate(ranked) if x in set(positives)]
    junk_idx = [i for i, x in enumerate(ranked) if x in set(junk)]
    shifted, k, ij = [], 0, 0
    for p in pos:
        while ij < len(junk_idx) and p > junk_idx[ij]:
            k += 1
            ij += 1
        shifted.append(p - k)
    ap, step = 0.0, 1.0 / len(positives)
    for j, r in enumerate(shifted):
        p0 = 1.0 if r == 0 else j / r
        ap += (p0 + (j + 1) / (r + 1)) * step / 2.0
    one_based = [r + 1 for r in shifted]
    prs = []
    for kap in kappas:
        kq = min(max(one_based), kap)  # ValueError on an empty list, as revisitop
        prs.append(sum(1 for r in one_based if r <= kq) / kq)
    return ap, prs


def _random_revisitop_query(rng):
    n_db = rng.randint(1, 40)
    ranked = list(range(n_db))
    rng.shuffle(ranked)
    if rng.random() < 0.2:
        ranked = ranked[: rng.randint(0, n_db)]  # truncated
    if rng.random() < 0.15 and ranked:
        ranked.insert(rng.randint(0, len(ranked)), rng.choice(ranked))  # a repeat
    ids = list(range(n_db + 3))  # some ids never ranked
    gt = {key: rng.sample(ids, min(len(ids), rng.choice([0, 1, 2, 3, 6]))) for key in ("easy", "hard", "junk")}
    return ranked, gt


def test_reference_matches_float_restatement_on_generated_queries():
    rng = random.Random(7)
    compared = raised = 0
    for _ in range(600):
        ranked, gt = _random_revisitop_query(rng)
        for difficulty in ("easy", "medium", "hard"):
            positives, junk = roxford_split(gt, difficulty)
            if not positives:
                continue
            positions = revisitop_positions(ranked, positives, junk)
            ap = revisitop_ap(positions, len(positives))
            try:
                ap_f, prs_f = _revisitop_float(ranked, positives, junk, (1, 5, 10))
            except ValueError:
                raised += 1
                with pytest.raises(ValueError):
                    revisitop_precision_at_k(positions, 5)
                assert ap == 0
                continue
            compared += 1
            assert abs(float(ap) - ap_f) < 1e-12
            for kap, pf in zip((1, 5, 10), prs_f):
                assert abs(float(revisitop_precision_at_k(positions, kap)) - pf) < 1e-12
    assert compared > 800 and raised > 20


def test_quirk_is_never_below_corrected_and_equal_beyond_last_positive():
    rng = random.Random(11)
    differ = 0
    for _ in range(400):
        positions = sorted(rng.sample(range(rng.choice([8, 12, 30])), rng.randint(1, 8)))
        for k in (1, 5, 10):
            quirk = revisitop_precision_at_k(positions, k)
            fixed = corrected_precision_at_k(positions, k)
            assert quirk >= fixed
            if max(positions) + 1 >= k:
                assert quirk == fixed
            else:
                differ += 1
                assert quirk == Fraction(len(positions), max(positions) + 1)
    assert differ > 50


def test_quirk_examples_from_conventions():
    # two positives at ranks 1-2: revisitop P@10 = 1.0, P@10 = 0.2
    assert revisitop_precision_at_k([0, 1], 10) == 1
    assert corrected_precision_at_k([0, 1], 10) == Fraction(1, 5)
    with pytest.raises(ValueError, match="no positive"):
        revisitop_precision_at_k([], 10)
    assert corrected_precision_at_k([], 10) == 0


def test_revisitop_equals_oxford_exact_without_overlaps():
    """With no repeated item and no positive in the junk list, revisitop's AP and the
    Oxford trapezoid (exact) are the same number."""
    rng = random.Random(3)
    for _ in range(300):
        n = rng.randint(1, 50)
        ranked = rng.sample(range(100), n)
        positives = rng.sample(range(100), rng.randint(1, 10))
        junk = rng.sample([i for i in range(100) if i not in positives], rng.randint(0, 10))
        positions = revisitop_positions(ranked, positives, junk)
        assert revisitop_ap(positions, len(positives)) == oxford_ap_exact(ranked, positives, [], junk)


def test_revisitop_positive_also_junk_exceeds_one():
    # spec §5: a positive that is junk counts and shifts the next: AP 5/4
    positions = revisitop_positions([1, 4, 0], [1, 4], [1])
    assert positions == [0, 0]
    assert revisitop_ap(positions, 2) == Fraction(5, 4)


def test_revisitop_positives_not_deduplicated():
    assert revisitop_ap(revisitop_positions([0, 1], [0, 0], []), 2) == Fraction(1, 2)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: revisitop_ap([0], 0), ValueError, "n_positives"),
        (lambda: revisitop_ap([-1], 1), ValueError, "positions"),
        (lambda: revisitop_ap([0.5], 1), TypeError, "positions"),
        (lambda: revisitop_precision_at_k([0], 0), ValueError, "k"),
        (lambda: corrected_precision_at_k([0], 2.0), TypeError, "k"),
        (lambda: roxford_split({"easy": [1]}, "easy"), ValueError, "hard"),
        (lambda: roxford_split({"easy": [1], "hard": []}, "extreme"), ValueError, "difficulty"),
    ],
)
def test_revisitop_helpers_reject_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_roxford_accepts_numpy_ranks_rows_are_queries():
    # revisitop's ranks are (n_db, n_queries): the transpose has one row per query
    ranks = np.array([[2, 1], [3, 4], [7, 0], [0, 2], [5, 3], [1, 5], [4, 6], [6, 7], [8, 8], [9, 9]])
    gnd = [
        {"easy": np.array([2, 5]), "hard": np.array([7]), "junk": np.array([3])},
        {"easy": [1, 4], "hard": [], "junk": [1]},
    ]
    res = evaluate_landmark(ranks.T, gnd, protocol="roxford-medium")
    assert res.ap_exact[0] == Fraction(65, 72)
    with pytest.raises(ValueError, match=r"ranks\.T"):
        evaluate_landmark(ranks, gnd, protocol="roxford-medium")


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(k=0), ValueError, "k"),
        (dict(k="10"), TypeError, "k"),
        (dict(k=[]), ValueError, "k"),
        (dict(k=[1, 2.5]), TypeError, "k"),
    ],
)
def test_roxford_k_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        evaluate_landmark([[0]], [{"easy": [0], "hard": []}], protocol="roxford-easy", **kwargs)


def test_roxford_custom_k_and_ground_truth_type():
    res = evaluate_landmark({"q": [0, 1]}, {"q": {"easy": [1], "hard": []}}, protocol="roxford-easy", k=2)
    assert res.k == (2,) and res.mp_at_k_exact == {2: Fraction(1, 2)}
    assert res.summary()["mp_at_k"] == {"2": 0.5}
    with pytest.raises(TypeError, match="easy"):
        evaluate_landmark([[0]], [[0]], protocol="roxford-easy")


# --------------------------------------------------------------------------- gldv2
def _kaggle_float(predictions, solution, k):
    """The Kaggle metric for one query, re-stated in floats (independent of the reference)."""
    seen, hits, ap = set(), 0, 0.0
    for i, p in enumerate(predictions[:k]):
        if p in seen:
            continue
        if p in solution:
            hits += 1
            ap += hits / (i + 1)
        seen.add(p)
    return ap / min(len(solution), k)


def test_gldv2_matches_float_restatement():
    rng = random.Random(5)
    for _ in range(500):
        sol = rng.sample(range(60), rng.randint(1, 30))
        preds = [rng.randrange(80) for _ in range(rng.randint(0, 150))]
        k = rng.choice([1, 5, 10, 100])
        assert abs(float(gldv2_ap_at_k(preds, sol, k)) - _kaggle_float(preds, sol, k)) < 1e-12


def test_gldv2_min_k_r_differs_from_hits_and_r():
    # R = 150 relevant, the first 100 predictions all relevant: 1 (R would give 2/3)
    sol = list(range(150))
    assert gldv2_ap_at_k(list(range(100)), sol) == 1
    # hits denominator would give 1 here; min(k, R) = 3 gives 1/3
    assert gldv2_ap_at_k([0], [0, 1, 2], k=100) == Fraction(1, 3)


def test_gldv2_errors():
    with pytest.raises(ValueError, match="empty"):
        gldv2_ap_at_k(["a"], [])
    with pytest.raises(ValueError, match="not in ground_truth"):
        evaluate_landmark({"x": ["a"]}, {"q": ["a"]}, protocol="gldv2")
    with pytest.raises(TypeError, match="list of relevant"):
        evaluate_landmark({"q": ["a"]}, {"q": {"ok": ["a"]}}, protocol="gldv2")
    with pytest.raises(TypeError, match="sequence"):
        evaluate_landmark({"q": "abc"}, {"q": ["a"]}, protocol="gldv2")
    with pytest.raises(ValueError, match="k"):
        evaluate_landmark({"q": ["a"]}, {"q": ["a"]}, protocol="gldv2", k=0)
    with pytest.raises(ValueError, match="lists but ground_truth"):
        evaluate_landmark([["a"]], [["a"], ["b"]], protocol="gldv2")


def test_gldv2_all_queries_empty_gives_nan():
    res = evaluate_landmark({"q": ["a"]}, {"q": []}, protocol="gldv2")
    assert math.isnan(res.map) and res.map_exact is None and res.n_counted == 0


# --------------------------------------------------------------------------- vs rc.evaluate
def _as_distances(ranked, n):
    d = np.zeros((len(ranked), n))
    for q, order in enumerate(ranked):
        d[q, order] = np.arange(n)  # the rank position is the distance
    return d


def test_roxford_equals_distance_based_trapezoid_skip():
    """Without overlaps or repeats, revisitop's AP is the suite's trapezoid AP with junk
    removed and empty queries skipped (the distance-based reference, exact)."""
    import retrieval_conformance as rc

    rng = random.Random(2)
    n_q, n = 10, 30
    ranked = [rng.sample(range(n), n) for _ in range(n_q)]
    gnd = []
    for _ in range(n_q):
        ids = rng.sample(range(n), 12)
        gnd.append(
            {
                "easy": ids[: rng.randint(0, 4)],
                "hard": ids[4 : 4 + rng.randint(0, 4)],
                "junk": ids[8 : 8 + rng.randint(0, 4)],
            }
        )
    for difficulty in ("easy", "medium", "hard"):
        rel = np.zeros((n_q, n), dtype=bool)
        junk = np.zeros((n_q, n), dtype=bool)
        for q in range(n_q):
            p, j = roxford_split(gnd[q], difficulty)
            rel[q, p] = True
            junk[q, j] = True
        ref = rc.evaluate(
            distances=_as_distances(ranked, n),
            relevance=rel,
            junk=junk,
            protocol="reid-matlab",
            empty="skip",
            implementation="reference",
        )
        res = evaluate_landmark(ranked, gnd, protocol=f"roxford-{difficulty}")
        assert res.ap_exact == ref.exact.ap
        assert res.map_exact == ref.exact.map


def test_gldv2_equals_distance_based_gldv2_preset():
    """On full rankings without repeats the ranked-list gldv2 equals rc.evaluate's preset."""
    import retrieval_conformance as rc

    rng = random.Random(1)
    n_q, n = 8, 40
    ranked = [rng.sample(range(n), n) for _ in range(n_q)]
    sol = [rng.sample(range(n), rng.randint(0, 8)) for _ in range(n_q)]
    rel = np.zeros((n_q, n), dtype=bool)
    for q in range(n_q):
        rel[q, sol[q]] = True
    for k in (5, 10, 100):
        ref = rc.evaluate(
            distances=_as_distances(ranked, n), relevance=rel, protocol="gldv2", k=k, implementation="reference"
        )
        res = evaluate_landmark(ranked, sol, protocol="gldv2", k=k)
        assert res.ap_exact == ref.exact.ap
        assert res.map_exact == ref.exact.map
