"""The zoo: its functions compute what their recipes say (hand-derived values), the memo reuses a
verdict only for identical answers, and ``identify`` names the behaviours of 2,000 zoo functions.

``RC_ZOO_COUNT`` changes the number of functions of the round trip (the long profile:
``python -m retrieval_conformance.conformance.zoo``, 20,000 functions of 1 to 3 behaviours).
"""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np
import pytest
from retrieval_conformance.conformance.harness.candidates.predict import _scale
from retrieval_conformance.conformance.zoo.__main__ import main as zoo_main
from retrieval_conformance.conformance.zoo.catalogue import TEMPLATES, WRITABLE
from retrieval_conformance.conformance.zoo.memo import Memo
from retrieval_conformance.conformance.zoo.recipes import Recipe, unwritten, zoo_recipes
from retrieval_conformance.conformance.zoo.roundtrip import Found, check_exit, compile_recipe, judge, round_trip

# one query ranked by distances [0, 1, 1, 2] with relevant items 1 and 3 (tied at distance 1:
# items 1 and 2), and a second query without a relevant item
D = np.array([[0.0, 1.0, 1.0, 2.0], [0.0, 1.0, 2.0, 3.0]], dtype=np.float32)
REL = np.array([[False, True, False, True], [False] * 4])

# hand arithmetic: stable ties rank the relevant items 2 and 4, reverse (and pessimistic) 3 and 4
HAND = [
    # (options, bugs, k, first query's value, the mean under the recipe's empty-query handling)
    ((), (), None, Fraction(1, 2), Fraction(1, 4)),  # (1/2 + 2/4) / 2; the empty query counts 0
    ((("ties", "reverse"),), (), None, Fraction(5, 12), Fraction(5, 24)),  # (1/3 + 2/4) / 2
    ((("ties", "pessimistic"),), (), None, Fraction(5, 12), Fraction(5, 24)),
    ((("ties", "optimistic"),), (), None, Fraction(1, 2), Fraction(1, 4)),
    # trapezoid: ((1/2 + 0/1)/2 + (2/4 + 1/3)/2) / 2
    ((("ap_rule", "trapezoid"),), (), None, Fraction(1, 3), Fraction(1, 6)),
    ((("empty", "skip"),), (), None, Fraction(1, 2), Fraction(1, 2)),
    ((), ("empty-scores-one",), None, Fraction(1, 2), Fraction(3, 4)),
    ((), ("percent",), None, Fraction(50), Fraction(25)),
    ((), ("divided-by-k",), 4, Fraction(1, 4), Fraction(1, 8)),  # (1/2 + 2/4) / 4
    ((), (), 2, Fraction(1, 2), Fraction(1, 4)),  # top 2: one hit at rank 2, divided by 1 hit
    ((("ap_at_k", "r"),), (), 2, Fraction(1, 4), Fraction(1, 8)),  # (1/2) / R = 2
    ((("ap_at_k", "dcmh"),), (), 1, Fraction(1, 2), Fraction(1, 4)),  # first min(1, 2) relevant: 1/2
    # largest distance first, ties stable: items 3, 1, 2, 0, relevant at ranks 1 and 2
    ((), ("descending",), None, Fraction(1), Fraction(1, 2)),
    # descending, ties reversed: items 3, 2, 1, 0, relevant at ranks 1 and 3: (1/1 + 2/3) / 2
    ((("ties", "reverse"),), ("descending",), None, Fraction(5, 6), Fraction(5, 12)),
]


@pytest.mark.parametrize("options,bugs,k,first,mean", HAND, ids=[str(h[:3]) for h in HAND])
@pytest.mark.parametrize("style", [0, 1])
def test_zoo_function_computes_its_recipe(options, bugs, k, first, mean, style):
    recipe = Recipe("distances-relevance", "hashing", options, bugs, style=style)
    func = compile_recipe(recipe)
    assert func(D[:1], REL[:1], k) == pytest.approx(float(first), abs=1e-12)
    assert func(D, REL, k) == pytest.approx(float(mean), abs=1e-12)


@pytest.mark.parametrize(
    "options,bugs,value",
    [
        ((), (), Fraction(1, 2)),  # stable: ranked [0, 1, 0, 1], hits at 2 and 4: (1/2 + 2/4) / 2
        ((("ties", "reverse"),), (), Fraction(5, 12)),  # items 1 and 2 swap: hits at 3 and 4
        ((), ("cut-at-r",), Fraction(1, 4)),  # the top R = 2: one hit at 2, divided by R
        ((), ("percent",), Fraction(50)),
    ],
)
def test_sklearn_zoo_function_ranks_by_score_largest_first(options, bugs, value):
    func = compile_recipe(Recipe("sklearn", "hashing", options, bugs))
    y_true, y_score = np.array([0, 1, 0, 1]), np.array([0.9, 0.8, 0.8, 0.1])
    assert func(y_true, y_score) == pytest.approx(float(value), abs=1e-12)
    assert func(np.zeros(4, dtype=int), y_score) == 0.0


def test_reid_zoo_function_removes_same_camera_items_and_cuts_its_cmc():
    # query id 1, camera 0; gallery ids [1, 2, 1], cameras [0, 1, 1]: item 0 is junk (same id
    # and camera), so the ranking by distance is item 1 (id 2), item 2 (id 1): AP 1/2, CMC [0, 1]
    d = np.array([[0.0, 1.0, 2.0]])
    args = (d, np.array([1]), np.array([1, 2, 1]), np.array([0]), np.array([0, 1, 1]), 3)
    cmc, mean_ap, minp = compile_recipe(Recipe("reid", "reid", cmc_length="gallery"))(*args)
    assert list(cmc) == [0.0, 1.0] and mean_ap == 0.5 and minp == 0.5  # cut at the 2 ranked items
    cmc, _, _ = compile_recipe(Recipe("reid", "reid", cmc_length="max_rank"))(*args[:5], 5)
    assert list(cmc) == [0.0, 1.0, 1.0, 1.0, 1.0]  # flat past the two ranked items


def test_a_value_rounded_on_a_half_may_be_either_neighbour():
    """0.2875 = 23/80 is no float: round(float, 3) gives 0.287 or 0.288 by the function's own last bit."""
    assert _scale((Fraction(23, 80), Fraction(23, 80)), (1, 3)) == (Fraction(287, 1000), Fraction(288, 1000))
    assert _scale((Fraction(1, 3), Fraction(1, 3)), (1, 3)) == (Fraction(333, 1000), Fraction(333, 1000))
    assert _scale((Fraction(1, 8), Fraction(1, 8)), (100, 1)) == (Fraction(25, 2), Fraction(25, 2))  # 12.5 exact


@pytest.mark.parametrize(
    "recipe",
    [
        Recipe("distances-relevance", "hashing", (("ap_rule", "trapezoid"),), ("default-cutoff[50]", "rounded[3]")),
        Recipe("reid", "reid", (("ties", "reverse"),), ("descending",), cmc_length="gallery"),
        Recipe("sklearn", "hashing", (), ("cut-at-r", "zero-based-ranks")),
        Recipe("distances-relevance", "hashing", (), ("cut-at-r", "zero-based-ranks")),
        # one bug more than the simplest description, told apart only on generated inputs
        Recipe("distances-relevance", "hashing", (), ("topk-ignored", "zero-based-ranks")),
        Recipe("recall-at-k", "hashing", (("recall", "hit"),), ("first-query-only[first-relevant,own]", "percent")),
        # the hit that decides whether a query counts is read from the ranking with the junk in it
        Recipe("mrr", "hashing", (("empty", "skip_no_hit"),), ("mrr-counting-junk",)),
        Recipe("mrr", "hashing", (("empty", "skip_no_hit"),), ("mrr-counting-junk",), style=1),
        # numpy's default sort behind 0-based ranks: values infinite wherever a relevant item comes first
        Recipe("distances-relevance", "hashing", (("ap_at_k", "hits"), ("ties", "unstable")), ("zero-based-ranks",)),
        # ... and with a cut-off inside a tie group, where the hits in the top k change with the order
        Recipe("torchmetrics", "hashing", (("ap_at_k", "r"), ("ties", "unstable")), ("zero-based-ranks",), style=1),
        # a cut-off of its own behind torchmetrics' signature: shown by a call that leaves top_k out
        Recipe("torchmetrics", "hashing", (), ("default-cutoff[20]",)),
        # the first query with a hit, where which query that is depends on the order of tied items
        Recipe(
            "distances-relevance",
            "hashing",
            (("ap_at_k", "r"), ("ties", "unstable")),
            ("first-query-only[first-hit,own]",),
        ),
        Recipe("mrr", "hashing", (("ties", "unstable"),), ("first-query-only[first-hit,divided]", "percent")),
        # a hit rate shows its tie order only at a cut-off inside a tie group
        Recipe("recall-at-k", "hashing", (("recall", "hit"), ("ties", "unstable")), ("percent",), style=1),
        # one unstable sort behind mAP, CMC and mINP (left out of the writable ties: 25 s a function)
        Recipe("reid", "reid", (("ties", "unstable"),), ()),
    ],
    ids=[
        "trapezoid-rounded-on-a-half",
        "descending-reversed-ties",
        "map-at-r-zero-based",
        "map-at-r-dists",
        "topk-ignored-not-dcmh",
        "first-query-not-hashnet",
        "mrr-junk-skip-no-hit",
        "mrr-junk-skip-no-hit-style-1",
        "unstable-zero-based",
        "unstable-zero-based-cut-in-a-tie-group",
        "torchmetrics-own-top-k",
        "unstable-first-hit-own",
        "unstable-first-hit-divided-percent",
        "unstable-hit-rate",
        "reid-one-unstable-sort",
    ],
)
def test_round_trip_of_compositions_missed_before(recipe):
    tally = round_trip([recipe], memo=None)
    assert not tally.failures, tally.failures[0].failure_text()


def test_the_long_profile_draws_no_behaviour_another_one_hides():
    for recipe in zoo_recipes(3000, seed=5):
        ids = {b.split("[")[0] for b in recipe.bugs}
        assert not {"default-cutoff", "last-item-dropped"} <= ids, recipe
        assert not ("topk-ignored" in ids and ids & {"default-cutoff", "last-item-dropped"}), recipe
        assert not ("cut-at-r" in ids and ids & {"default-cutoff", "last-item-dropped"}), recipe
        assert not (recipe.adapter == "mrr" and {"default-cutoff[1000]", "rounded[2]"} <= set(recipe.bugs)), recipe
        assert not ("empty-scores-one" in ids and any(b.startswith("first-query-only[first-") for b in recipe.bugs))
        dcmh = recipe.option("ap_at_k") == "dcmh"
        assert not (dcmh and any(b.startswith("first-query-only[first-hit") for b in recipe.bugs)), recipe
        assert not {"ndcg-ideal-from-retrieved", "topk-ignored"} <= ids, recipe
        skip_no_hit = recipe.option("empty") == "skip_no_hit"
        assert not (recipe.adapter == "recall-at-k" and "topk-ignored" in ids and skip_no_hit), recipe
        assert not (recipe.adapter == "recall-at-k" and {"topk-ignored", "descending"} <= ids), recipe
        assert not ("k-beyond" in recipe.raises and "default-cutoff" in ids), recipe
        assert not (recipe.raises and "divided-by-k" in ids), recipe
        assert not ("cut-at-r" in ids and skip_no_hit), recipe
        own_ties = any(o == "ties" for _, o, _ in recipe.field_options)
        assert not (own_ties and recipe.option("ties") == "unstable"), recipe


def test_every_adapter_with_a_template_is_registered_and_its_gaps_are_listed():
    gaps = unwritten()
    assert set(gaps) == set(TEMPLATES) == set(WRITABLE)
    # the tie policies that average over orders are not written yet: the list says so
    assert "ties=expected" in gaps["hashing-codes"] and "ties=grouped" in gaps["hashing-codes"]


def test_memo_reuses_a_verdict_only_for_identical_answers():
    memo = Memo()
    computed = []

    def compute(func):
        computed.append(func)
        return func(1.0), func(2.0)

    def twice(x):
        return 2 * x

    def doubled(x):  # other code, the same answers
        return x + x

    def squared(x):
        return x * x  # the same answer on 2.0, another on 1.0

    assert memo.run(("k",), twice, compute) == (2.0, 4.0)
    assert memo.run(("k",), doubled, compute) == (2.0, 4.0)
    assert memo.run(("k",), squared, compute) == (1.0, 4.0)
    assert len(computed) == 2 and (memo.hits, memo.misses) == (1, 2)
    assert memo.run(("other",), doubled, compute) == (2.0, 4.0)  # another kind never shares
    assert memo.misses == 3


def test_judge_accepts_a_stated_equivalence_class_only():
    recipe = Recipe("distances-relevance", "hashing", (("ties", "reverse"),))
    base = (("ties", "stable"), ("ap_rule", "precision_sum"), ("ap_at_k", "hits"), ("empty", "zero"))
    other = (("ties", "reverse"), *base[1:])
    stated = "  equally consistent with: ties=reverse (no input tried tells them apart)"
    assert judge(recipe, Found((base + (("bugs", ()),), other + (("bugs", ()),)), False, stated)).how == "class"
    unstated = judge(recipe, Found((base + (("bugs", ()),), other + (("bugs", ()),)), False, "matches `hashing`"))
    assert not unstated.ok and unstated.how == "other behaviours named"
    assert judge(recipe, Found((other + (("bugs", ()),),), False, "")).how == "exact"


def test_default_profile_draws_one_behaviour_of_the_whole_catalogue():
    recipes = zoo_recipes(500, seed=3, profile="default")
    assert len(recipes) == 500 and {r.adapter for r in recipes} == set(TEMPLATES)
    assert all(len(r.behaviours) <= 2 for r in recipes)  # one behaviour, plus reid's CMC length rule
    # the built-in cut-offs past every short input are drawn too (the long inputs reach past them)
    drawn = {(r.adapter, b) for r in recipes for b in r.bugs}
    assert ("mrr", "default-cutoff[100]") in drawn or ("mrr", "default-cutoff[50]") in drawn
    assert any(b == "default-cutoff[1000]" for _, b in drawn)
    assert any(r.option("ties") == "unstable" for r in recipes)  # numpy's default sort
    with pytest.raises(ValueError, match="profile: expected 'long' or 'default'"):
        zoo_recipes(1, profile="short")


def test_zoo_command_reports_its_rate_and_refuses_a_bad_count(capsys):
    assert zoo_main(["--count", "2", "--adapter", "distances-relevance", "--show", "0"]) == 0
    out = capsys.readouterr().out
    assert "zoo round trip: " in out and "identified" in out
    with pytest.raises(SystemExit) as exc:
        zoo_main(["--count", "0"])
    assert exc.value.code == 2
    assert "--count: expected a positive number of functions, got 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    "recipe,status",
    [
        (Recipe("hashing-codes", "hashing", style=1), 0),
        (Recipe("hashing-codes", "hashing", (), ("percent",)), 1),
        (Recipe("recall-at-k", "hashing", (("ties", "reverse"),)), 1),
    ],
    ids=["correct", "percent", "reverse-ties"],
)
def test_check_passes_the_correct_zoo_function_and_flags_the_others(recipe, status):
    assert check_exit(recipe, compile_recipe(recipe), max_examples=5) == status


ZOO_COUNT = int(os.environ.get("RC_ZOO_COUNT", "2000"))


@pytest.mark.slow
def test_identify_names_the_behaviours_of_every_default_zoo_function():
    tally = round_trip(zoo_recipes(ZOO_COUNT, seed=0, profile="default"), memo=Memo())
    failures = tally.failures
    families = sorted({f"{f.recipe.adapter}: {', '.join(f.recipe.behaviours)}" for f in failures})
    assert not failures, "\n".join(
        [tally.summary(), "misidentified:", *families, ""] + [f.failure_text() for f in failures[:3]]
    )
    assert len(tally.outcomes) == ZOO_COUNT
