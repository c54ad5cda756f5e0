"""The zoo's nDCG, MAP@R and threshold-AP templates compute what their recipes say (values derived
by hand below); a field with a convention of its own, and exceptions on their own triggers, are
written as recipes say, and the round trip judges them: each field's convention, each exception
with the input kind that triggers it.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from retrieval_conformance.conformance.zoo.catalogue import FIELD_OPTIONS, RAISE_TRIGGERS
from retrieval_conformance.conformance.zoo.recipes import Recipe, draw
from retrieval_conformance.conformance.zoo.roundtrip import Found, compile_recipe, judge, round_trip

L3 = math.log2(3)
# one row: grades [1, 0, 2, 0], scores [4, 3, 3, 1]: items 1 and 2 tie (grades 0 and 2)
GRADES = np.array([[1, 0, 2, 0]])
SCORES = np.array([[4.0, 3.0, 3.0, 1.0]])
NDCG = [
    # stable: grades ranked 1, 0, 2, 0: DCG 1 + 2/log2(4); ideal 2, 1: 2 + 1/log2(3)
    ((("ties", "stable"),), 2 / (2 + 1 / L3)),
    # reverse (and optimistic: the higher grade first): 1, 2, 0, 0
    ((("ties", "reverse"),), (1 + 2 / L3) / (2 + 1 / L3)),
    ((("ties", "optimistic"),), (1 + 2 / L3) / (2 + 1 / L3)),
    # the protocol's averaged ties: the tied pair's mean gain 1 at ranks 2 and 3
    ((), (1 + 1 / L3 + 1 / 2) / (2 + 1 / L3)),
    # gains 2**g - 1 = 1, 0, 3, 0 in stable order: 1 + 3/2 over 3 + 1/log2(3)
    ((("gain", "exponential"), ("ties", "stable")), (1 + 3 / 2) / (3 + 1 / L3)),
    # trec_eval 9.0a3: discounts 1, 1, 1/log2(3), 1/2: 1 + 2/log2(3) over 2 + 1
    ((("discount", "trec_eval_9.0a3"), ("ties", "stable")), (1 + 2 / L3) / 3),
]


@pytest.mark.parametrize("style", [0, 1])
@pytest.mark.parametrize("options,value", NDCG, ids=[str(o) for o, _ in NDCG])
def test_ndcg_zoo_function_computes_its_recipe(options, value, style):
    f = compile_recipe(Recipe("sklearn-ndcg", "sklearn-ndcg", tuple(sorted(options)), style=style))
    assert math.isclose(f(GRADES, SCORES), value, rel_tol=1e-12)


def test_ndcg_zoo_function_cut_empty_rows_and_the_ideal_of_the_top_k():
    grades = np.vstack([GRADES, np.zeros((1, 4), dtype=np.int64)])
    scores = np.vstack([SCORES, SCORES])
    stable = (("ties", "stable"),)
    zero = compile_recipe(Recipe("sklearn-ndcg", "sklearn-ndcg", stable))
    skip = compile_recipe(Recipe("sklearn-ndcg", "sklearn-ndcg", (("empty", "skip"), ("ties", "stable"))))
    one = compile_recipe(Recipe("sklearn-ndcg", "sklearn-ndcg", stable, ("empty-scores-one",)))
    full = 2 / (2 + 1 / L3)
    assert math.isclose(zero(grades, scores), full / 2) and math.isclose(skip(grades, scores), full)
    assert math.isclose(one(grades, scores), (full + 1) / 2)
    # k = 2: grades 1, 0 retrieved; the ideal of every relevant item is 2, 1; of the top 2 only 1
    assert math.isclose(zero(GRADES, SCORES, k=2), 1 / (2 + 1 / L3))
    top = compile_recipe(Recipe("sklearn-ndcg", "sklearn-ndcg", stable, ("ndcg-ideal-from-retrieved",)))
    assert top(GRADES, SCORES, k=2) == 1.0


# pml: one-dimensional embeddings; squared distances 0, 0, 1, 4 to the query, labels 0, 1, 0, 1
QUERY, QUERY_LABELS = np.array([[0.0], [5.0]]), np.array([1, 2])  # the second query has no match
REFERENCE, REFERENCE_LABELS = np.array([[0.0], [0.0], [1.0], [2.0]]), np.array([0, 1, 0, 1])


def test_pml_zoo_function_computes_map_at_r_r_precision_and_p1():
    def values(recipe):
        out = compile_recipe(recipe)(QUERY, QUERY_LABELS, REFERENCE, REFERENCE_LABELS)
        return [
            Fraction(out[k]).limit_denominator(100)
            for k in ("mean_average_precision_at_r", "r_precision", "precision_at_1")
        ]

    # stable: relevant at ranks 2 and 4; R = 2: MAP@R (1/2)/2, R-precision 1/2, P@1 0
    assert values(Recipe("pml", "pml")) == [Fraction(1, 4), Fraction(1, 2), 0]
    # reverse: relevant at ranks 1 and 4: MAP@R 1/2, R-precision 1/2, P@1 1
    assert values(Recipe("pml", "pml", (("ties", "reverse"),))) == [Fraction(1, 2), Fraction(1, 2), 1]
    # P@1 alone in reverse order and over every query (the unmatched one counts 0)
    own = (("P@1", "empty", "zero"), ("P@1", "ties", "reverse"))
    assert values(Recipe("pml", "pml", field_options=own)) == [Fraction(1, 4), Fraction(1, 2), Fraction(1, 2)]


def test_threshold_ap_counts_a_tie_group_at_its_end_rank():
    # relevant items 1 and 3; items 1 and 2 tie: thresholds give (1/3 + 2/4) / 2, a stable sort (1/2 + 2/4) / 2
    y_true, y_score = np.array([0, 1, 0, 1]), np.array([3.0, 2.0, 2.0, 1.0])
    for style in (0, 1):
        grouped = compile_recipe(Recipe("sklearn", "hashing", (("ties", "grouped"),), style=style))
        assert math.isclose(grouped(y_true, y_score), 5 / 12)
    assert math.isclose(compile_recipe(Recipe("sklearn", "hashing"))(y_true, y_score), 1 / 2)


def test_field_options_are_drawn_only_where_a_field_can_differ():
    rng = random.Random(7)
    recipes = [draw(rng, "pml", max_behaviours=3) for _ in range(300)]
    own = [r for r in recipes if r.field_options]
    assert own and all(f in FIELD_OPTIONS["pml"][0] for r in own for f, _, _ in r.field_options)
    for r in own:
        for f, option, value in r.field_options:
            assert value != r.option(option) and r.for_field(f).option(option) == value
        assert "empty-scores-one" not in r.bugs or all(o != "empty" for _, o, _ in r.field_options)


def _label(ties: str, empty: str = "skip"):
    return (("ties", ties), ("empty", empty), ("bugs", ()))


def test_judge_wants_each_field_named_with_its_own_convention():
    recipe = Recipe("pml", "pml", field_options=(("P@1", "ties", "reverse"),))
    fields = (("MAP@R", _label("stable")), ("R-precision", _label("stable")), ("P@1", _label("reverse")))
    assert judge(recipe, Found((_label("stable"),), True, "", fields)).how == "exact, field by field"
    one = judge(recipe, Found((_label("stable"),), False, "matches `pml`"))
    assert not one.ok and one.how == "one convention named for fields computed differently"
    wrong = fields[:2] + (("P@1", _label("pessimistic")),)
    assert judge(recipe, Found((_label("stable"),), True, "", wrong)).how == "field(s) P@1 named otherwise"


@pytest.mark.parametrize(
    "recipe",
    [
        Recipe("pml", "pml", field_options=(("P@1", "ties", "reverse"),)),
        Recipe("pml", "pml", (), ("rounded[3]",), field_options=(("R-precision", "empty", "zero"),)),
        Recipe("sklearn-ndcg", "sklearn-ndcg", (("gain", "exponential"), ("ties", "pessimistic"))),
        Recipe("sklearn", "hashing", (("ties", "grouped"),), ("descending",), style=1),
    ],
    ids=["pml-p1-reverse", "pml-r-precision-over-every-query", "ndcg-pessimistic-exponential", "threshold-ap"],
)
def test_round_trip_names_the_new_templates_behaviours(recipe):
    tally = round_trip([recipe])
    assert not tally.failures, tally.failures[0].failure_text()


def test_raise_checks_come_first_each_with_its_own_exception():
    f = compile_recipe(Recipe("distances-relevance", "hashing", raises=("k-beyond", "k-one")))
    distances, relevance = np.array([[0.0, 1.0, 2.0]]), np.array([[False, True, False]])
    with pytest.raises(ValueError):
        f(distances, relevance, 1)
    with pytest.raises(IndexError):
        f(distances, relevance, 4)
    assert f(distances, relevance, 3) == 0.5 and f(distances, relevance, None) == 0.5


def test_judge_wants_each_exception_named_with_its_trigger():
    recipe = Recipe("distances-relevance", "hashing", raises=("k-beyond", "k-one"))
    label = (("ties", "stable"), ("ap_rule", "precision_sum"), ("ap_at_k", "hits"), ("empty", "zero"), ("bugs", ()))
    both = tuple(sorted(((RAISE_TRIGGERS[t][1], RAISE_TRIGGERS[t][0]) for t in recipe.raises), key=str))
    assert judge(recipe, Found((label,), False, "", raises=both)).how == "exact"
    merged = (("IndexError", None),)  # one exception for both triggers, no kind named
    assert (
        judge(recipe, Found((label,), False, "", raises=merged)).how
        == "exceptions named: IndexError on no one kind of input"
    )
    assert not judge(Recipe("distances-relevance", "hashing"), Found((label,), False, "", raises=both)).ok


@pytest.mark.parametrize(
    "recipe",
    [
        Recipe("distances-relevance", "hashing", raises=("k-beyond", "k-one")),
        Recipe("hashing-codes", "hashing", (("ap_at_k", "r"),), raises=("k-beyond", "k-one")),
        Recipe("mrr", "hashing", (("ties", "reverse"),), raises=("k-one",)),
        Recipe("torchmetrics", "hashing", (), ("rounded[4]",), raises=("k-beyond",)),
    ],
    ids=["two-triggers", "two-triggers-ap-at-k-r", "mrr-k-one", "torchmetrics-k-beyond"],
)
def test_round_trip_names_each_exception_with_its_trigger(recipe):
    tally = round_trip([recipe])
    assert not tally.failures, tally.failures[0].failure_text()


@pytest.mark.parametrize("style", [0, 1])
def test_oxford_zoo_function_follows_its_name_rules(style):
    # a name both positive and junk (img1), ranked second of four; img4 a positive at place 3
    positives, junk, ranked = ["img1", "img4"], ["img1"], ["img2", "img1", "img4", "img3"]
    oxford = compile_recipe(Recipe("oxford", "oxford", style=style))
    # compute_ap.cpp: img1 skipped as junk yet counted in |P| = 2; img4 a hit at rank 2: ((0/1 + 1/2) / 2) / 2
    assert math.isclose(oxford(positives, junk, ranked), 1 / 8)
    uncounted = compile_recipe(Recipe("oxford", "oxford", name_rules=(("overlap", "uncounted"),), style=style))
    assert math.isclose(uncounted(positives, junk, ranked), 1 / 4)  # |P| = 1
    # revisitop: img1 a hit at rank 2, and junk for img4, which shares rank 2: ((0 + 1/2)/2 + (1 + 2/2)/2) / 2
    positive = compile_recipe(Recipe("oxford", "oxford", name_rules=(("overlap", "positive"),), style=style))
    assert math.isclose(positive(positives, junk, ranked), (1 / 4 + 1) / 2)
    # a positive ranked twice: a hit each time (compute_ap.cpp), or a miss at its second place (GLDv2)
    twice = ["img1", "img2", "img1", "img4"]
    each = (1 + (1 / 2 + 2 / 3) / 2 + (2 / 3 + 3 / 4) / 2) / 2  # hits at ranks 1, 3, 4
    assert math.isclose(oxford(["img1", "img4"], [], twice), each)
    once = compile_recipe(Recipe("oxford", "oxford", name_rules=(("repeats", "once"),), style=style))
    assert math.isclose(once(["img1", "img4"], [], twice), (1 + (1 / 3 + 2 / 4) / 2) / 2)  # hits at 1 and 4


@pytest.mark.parametrize(
    "recipe",
    [
        Recipe("oxford", "oxford", (), ("percent",), style=1),
        Recipe("oxford", "oxford", (), ("rounded[3]",), name_rules=(("overlap", "uncounted"), ("repeats", "once"))),
        Recipe("oxford", "oxford", (("ap_rule", "precision_sum"),), ("junk-kept",), name_rules=(("count", "found"),)),
        Recipe("oxford", "oxford", (), ("previous-hit-trapezoid", "rounded[4]"), name_rules=(("overlap", "positive"),)),
    ],
    ids=["percent", "rounded-uncounted-once", "precision-sum-no-junk-found", "previous-hit-rounded-revisitop"],
)
def test_round_trip_names_a_landmark_function_rules_under_its_own_scale(recipe):
    tally = round_trip([recipe])
    assert not tally.failures, tally.failures[0].failure_text()


@pytest.mark.parametrize(
    "recipe",
    [
        Recipe("mrr", "hashing", (), ("default-cutoff[1000]", "descending")),
        Recipe("recall-at-k", "hashing", (), ("default-cutoff[1000]", "descending")),
        Recipe("hashing-codes", "hashing", (("ap_at_k", "dcmh"),), ("default-cutoff[100]", "rounded[3]")),
    ],
    ids=["mrr-descending-past-1000", "recall-descending-past-1000", "dcmh-past-100-rounded"],
)
def test_round_trip_long_inputs_reach_past_a_default_cut_off_either_way(recipe):
    # misidentified before the long inputs held a query whose first relevant item lies past 1000
    # when sorted the wrong way, and one whose AP over its first 100 relevant items differs from
    # its AP over all of them by more than a rounding to 3 decimals hides
    tally = round_trip([recipe])
    assert not tally.failures, tally.failures[0].failure_text()


@pytest.mark.parametrize(
    "recipe",
    [
        Recipe("recall-at-k", "hashing", (("recall", "hit"),), ("first-item-dropped",)),
        Recipe("recall-at-k", "hashing", (("ties", "unstable"), ("recall", "hit")), ("first-item-dropped",)),
        Recipe("recall-at-k", "hashing", (), ("first-item-dropped", "descending")),
        Recipe("mrr", "hashing", (("ties", "reverse"),), ("first-item-dropped",)),
        Recipe("mrr", "hashing", (("empty", "skip"),), ("first-item-dropped", "rounded[5]")),
    ],
    ids=["hit-rate", "hit-rate-unstable", "recall-descending", "mrr-reverse", "mrr-skip-rounded-5"],
)
def test_round_trip_names_the_first_item_dropped_as_the_query_itself(recipe):
    """Metric learning's leave-one-out (``topk(k + 1)[:, 1:]``) on a query set that is not the
    gallery drops each query's best item (Proxy-Anchor's Recall@K, a held-out example): named
    as ``first-item-dropped``, beside the tie order, a sort the wrong way and BEIR's rounding."""
    tally = round_trip([recipe])
    assert not tally.failures, tally.failures[0].failure_text()


@pytest.mark.parametrize(
    "recipe",
    [
        Recipe("sklearn-ndcg", "sklearn-ndcg", (("ties", "stable"),), ("grades-binarised",)),
        Recipe("sklearn-ndcg", "sklearn-ndcg", (("ties", "unstable"), ("empty", "skip")), ("grades-binarised",)),
    ],
    ids=["stable", "unstable-skip"],
)
def test_round_trip_names_grades_read_as_a_set(recipe):
    """sentence-transformers' and RecBole's nDCG read relevance as a set (every grade above 0
    gains 1; held-out examples): named as ``grades-binarised``, beside the options."""
    tally = round_trip([recipe])
    assert not tally.failures, tally.failures[0].failure_text()


@pytest.mark.parametrize(
    "recipe",
    [
        Recipe("reid", "reid", (("ties", "stable"),), ("junk-judged-by-relevance",), cmc_length="max_rank"),
        Recipe("reid", "reid", (("ties", "unstable"),), ("junk-judged-by-relevance",), cmc_length="gallery"),
    ],
    ids=["stable", "unstable-gallery"],
)
def test_round_trip_names_junk_judged_by_relevance(recipe):
    """Vehicle ReID code with ``remove = False`` (a held-out example) ranks the query's own-camera
    views as matches: named as ``junk-judged-by-relevance``, not as ``junk-kept`` (every junk a miss)."""
    tally = round_trip([recipe])
    assert not tally.failures, tally.failures[0].failure_text()


@pytest.mark.parametrize(
    "recipe",
    [
        Recipe("oxford", "roxford-medium", (("ap_rule", "trapezoid"),), name_rules=(("count", "positions"),)),
        Recipe("oxford", "oxford", (), ("rounded[5]",), name_rules=(("count", "positions"), ("repeats", "once"))),
    ],
    ids=["revisited", "oxford-once-rounded-5"],
)
def test_round_trip_names_a_count_of_positive_positions(recipe):
    """DELF's revisited-dataset AP (a held-out example) counts |P| as the ranked positions that
    hold a positive: named as the count rule ``positions``, beside the protocol's other rules."""
    tally = round_trip([recipe])
    assert not tally.failures, tally.failures[0].failure_text()
