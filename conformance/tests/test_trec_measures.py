"""The run measures trec_eval prints beyond the engine's (spec §7 bpref, §7 success, §7 map_cut)
and those it lacks (§7 R_cap, §7 Judged), and the run options ``depth`` (-M), ``judged_only``
(-J) and ``ignore_identical_ids`` (BEIR), on a hand-checked query with every implementation.

The query ``q1``: the run scores q1 5, a 3, b 2, c 1, x 0.5; the qrels grade q1 1, a 0, b 1,
c 2, y 0, z 1 (x unjudged).  Ranking q1, a, b, c, x; R = 4 (q1, b, c, z); N = 2 judged
non-relevant (a, y).
"""

from __future__ import annotations

from fractions import Fraction as F
from importlib.resources import files

import pytest
from retrieval_conformance.conformance.support.requirements import implementation_params, require_implementation
from retrieval_conformance.reference.contract.discounts import discount_table
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run

RUN = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0, "q1": 5.0, "x": 0.5}}
QRELS = {"q1": {"a": 0, "b": 1, "c": 2, "q1": 1, "y": 0, "z": 1}}

HAND = [
    # bpref: q1 has no judged non-relevant above it (1); b and c have a above: 1 - min(1, 4)/min(2, 4) = 1/2
    # each: (1 + 1/2 + 1/2) / 4.  top 5: H = 3; R_cap_5 = 3 / min(4, 5); Judged_5 = 4 judged of 5.
    (
        "plain",
        {},
        5,
        {
            "bpref": F(1, 2),
            "R_cap_5": F(3, 4),
            "Judged_5": F(4, 5),
            "success_5": F(1),
            "map_cut_5": (F(1) + F(2, 3) + F(3, 4)) / 4,
            "num_ret": 5,
        },
    ),
    # top 1 is q1 (relevant): success 1, R_cap_1 = 1 / min(4, 1), map_cut_1 = (1/1) / 4
    ("plain", {}, 1, {"success_1": F(1), "R_cap_1": F(1), "Judged_1": F(1), "map_cut_1": F(1, 4)}),
    # q1 dropped from the run (not from the qrels): a, b, c, x; top 1 is a (grade 0)
    ("self", {"ignore_identical_ids": True}, 1, {"success_1": F(0), "R_cap_1": F(0), "map_cut_1": F(0), "num_ret": 4}),
    # a, b, c, x: bpref (1/2 + 1/2) / 4; Judged_5 = 3 judged of 5 (divides by k)
    ("self", {"ignore_identical_ids": True}, 5, {"bpref": F(1, 4), "Judged_5": F(3, 5), "R_cap_5": F(2, 4)}),
    # -M 2: q1, a; AP = (1/1) / 4
    ("depth", {"depth": 2}, 5, {"num_ret": 2, "map": F(1, 4), "P_5": F(1, 5), "Judged_5": F(2, 5)}),
    # -J: x (unjudged) dropped: q1, a, b, c
    ("judged", {"judged_only": True}, 5, {"num_ret": 4, "Judged_5": F(4, 5), "map": (F(1) + F(2, 3) + F(3, 4)) / 4}),
]


@pytest.mark.parametrize("implementation", implementation_params())
@pytest.mark.parametrize("label, options, k, expected", HAND, ids=[f"{c[0]}-k{c[2]}" for c in HAND])
def test_hand_checked_measures(label, options, k, expected, implementation):
    require_implementation(implementation)
    res = evaluate_run(RUN, QRELS, k=k, implementation=implementation, **options)
    per_query = res.extras["trec_eval_per_query"]
    for name, want in expected.items():
        assert per_query[name][0] == pytest.approx(float(want), abs=1e-15), name
        assert res.extras["trec_eval"][name] == pytest.approx(float(want), abs=1e-15), name
        if implementation == "reference" and not name.startswith("num_"):
            assert res.extras["trec_eval_exact"][name][0] == want, name


def test_map_and_map_cut_are_named_apart():
    """``map`` is never cut (trec_eval's ``map``); ``map_cut_k`` is."""
    res = evaluate_run(RUN, QRELS, k=1, implementation="reference")
    measures = res.extras["trec_eval"]
    assert measures["map"] == float((F(1) + F(2, 3) + F(3, 4)) / 4) and measures["map_cut_1"] == 0.25


def test_complete_summary_num_rel_counts_positive_grades_whatever_the_level():
    """trec_eval -c -l 2: per query num_rel follows -l, the summary counts every grade > 0."""
    res = evaluate_run(RUN, QRELS, relevance_level=2, complete=True, implementation="reference")
    assert res.extras["trec_eval_per_query"]["num_rel"].tolist() == [1]
    assert res.extras["trec_eval"]["num_rel"] == 4  # q1, b, c, z
    plain = evaluate_run(RUN, QRELS, relevance_level=2, implementation="reference")
    assert plain.extras["trec_eval"]["num_rel"] == 1


@pytest.mark.parametrize(
    "options, error, message",
    [
        (dict(depth=0), ValueError, "depth"),
        (dict(depth=2.5), TypeError, "depth"),
        (dict(judged_only="yes"), TypeError, "judged_only: expected True or False"),
        (dict(ignore_identical_ids=1), TypeError, "ignore_identical_ids: expected True or False"),
    ],
)
def test_bad_run_options_are_named(options, error, message):
    with pytest.raises(error, match=message):
        evaluate_run(RUN, QRELS, **options)


def _d(r: int) -> F:
    """spec §7 discount=log2: the float64 nearest to 1 / log2(r + 1), exactly."""
    return F(float(discount_table(r)[r - 1]))


@pytest.mark.parametrize("implementation", implementation_params())
def test_gain_map(implementation):
    """gains {1: 3, 2: 9}: ranked grades 1, 0, 1, 2, unjudged; the ideal 9, 3, 3, 3 (c; b, q1, z)."""
    require_implementation(implementation)
    gains = {1: 3, 2: 9}
    full = evaluate_run(RUN, QRELS, gains=gains, implementation=implementation)
    want = (3 * _d(1) + 3 * _d(3) + 9 * _d(4)) / (9 * _d(1) + 3 * _d(2) + 3 * _d(3) + 3 * _d(4))
    assert full.extras["trec_eval"]["ndcg"] == pytest.approx(float(want), abs=1e-15)
    cut = evaluate_run(RUN, QRELS, k=2, gains=gains, implementation=implementation)
    assert cut.extras["trec_eval"]["ndcg_cut_2"] == pytest.approx(float(3 / (9 + 3 * _d(2))), abs=1e-15)
    if implementation == "reference":
        assert full.extras["trec_eval_exact"]["ndcg"] == [want] and full.per_query.exact["ndcg"] == [want]
    plain = evaluate_run(RUN, QRELS, implementation=implementation)  # the grades as gains differ
    assert plain.extras["trec_eval"]["ndcg"] != pytest.approx(float(want))


@pytest.mark.parametrize(
    "gains, error, message",
    [
        ([1, 3], TypeError, "gains: expected a dict"),
        ({-1: 2}, ValueError, "gains: expected integer grades >= 0"),
        ({1.5: 2}, ValueError, "gains: expected integer grades >= 0"),
        ({1: float("nan")}, ValueError, "gains: expected a finite number as the gain of grade 1"),
        ({1: "3"}, ValueError, "gains: expected a finite number"),
    ],
)
def test_bad_gain_maps_are_named(gains, error, message):
    with pytest.raises(error, match=message):
        evaluate_run(RUN, QRELS, gains=gains)


@pytest.mark.parametrize("implementation", implementation_params())
def test_summary_names_the_results_own_means(implementation):
    """extras["trec_eval"] and the Result's fields are one number each, not two computations."""
    require_implementation(implementation)
    data = files("retrieval_conformance.golden") / "data" / "trec"
    for k in (None, 5):
        res = evaluate_run(
            str(data / "generated.run"), str(data / "generated.qrels"), k=k, implementation=implementation
        )
        named = res.extras["trec_eval"]
        assert (named["map"], named["Rprec"], named["recip_rank"]) == (res.map, res.r_precision, res.mrr)
        assert named["ndcg" if k is None else f"ndcg_cut_{k}"] == res.ndcg_at_k
        if k is not None:
            assert (named[f"P_{k}"], named[f"recall_{k}"]) == (res.precision_at_k, res.recall_at_k)


@pytest.mark.parametrize("implementation", implementation_params())
def test_grades_above_the_engines_limit_are_their_own_gains(implementation, tmp_path):
    """Grades 53 and 100 (the engine takes 0..52): trec_eval reads any integer grade as its gain.
    ``trec_eval -q -m ndcg -m ndcg_cut.2 -m map g.qrels g.run``, 9.0.8 and 10.0 built from source,
    print q1 ndcg 0.2026, ndcg_cut_2 0.0047, map 0.3889; all 0.6013, 0.5024, 0.6944."""
    require_implementation(implementation)
    (tmp_path / "g.run").write_text("q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.5 t\nq1 Q0 d3 3 0.4 t\nq2 Q0 d9 1 1.0 t\n")
    (tmp_path / "g.qrels").write_text("q1 0 d2 1\nq1 0 d4 100\nq1 0 d3 53\nq2 0 d9 1\n")
    full = evaluate_run(tmp_path / "g.run", tmp_path / "g.qrels", implementation=implementation)
    cut = evaluate_run(tmp_path / "g.run", tmp_path / "g.qrels", k=2, implementation=implementation)
    printed = [
        f"{full.extras['trec_eval_per_query']['ndcg'][0]:.4f}",
        f"{cut.extras['trec_eval_per_query']['ndcg_cut_2'][0]:.4f}",
        f"{full.extras['trec_eval']['ndcg']:.4f}",
        f"{cut.extras['trec_eval']['ndcg_cut_2']:.4f}",
        f"{full.extras['trec_eval']['map']:.4f}",
    ]
    assert printed == ["0.2026", "0.0047", "0.6013", "0.5024", "0.6944"]
    # by hand: ranked grades 0 (d1), 1 (d2), 53 (d3); ideal 100, 53, 1
    want = (_d(2) + 53 * _d(3)) / (100 * _d(1) + 53 * _d(2) + _d(3))
    assert full.extras["trec_eval_per_query"]["ndcg"][0] == pytest.approx(float(want), abs=1e-15)
