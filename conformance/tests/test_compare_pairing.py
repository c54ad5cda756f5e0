"""``rc.compare`` pairs queries by id, compares one definition only, and never drops a value silently.

Each test starts from the minimal reproduction of a way a comparison went wrong: runs over
different topics paired by position, runs evaluated under different options compared as
one metric, infinite or NaN per-query values dropped without a word.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import retrieval_conformance as rc
from hypothesis import given, settings
from hypothesis import strategies as st
from retrieval_conformance.reference.contract.conventions import OPTIONS, values

QRELS = {"1": {"a": 1, "b": 0, "c": 1}, "2": {"a": 1, "d": 1}, "3": {"b": 1}, "4": {"c": 1, "e": 1}}
#: run A answers topics 1, 2, 3; run B topics 1, 2, 4 (a run without results for a topic is common)
RUN_A = {"1": {"a": 3.0, "b": 2.0, "c": 1.0}, "2": {"d": 2.0, "a": 1.0}, "3": {"a": 2.0, "b": 1.0}}
RUN_B = {"1": {"c": 3.0, "a": 2.0, "b": 1.0}, "2": {"b": 2.0, "a": 1.0}, "4": {"c": 2.0, "a": 1.0}}


def _trec(run, **kw):
    return rc.evaluate_run(run, QRELS, implementation="reference", **kw)


# -- pairing by query id -------------------------------------------------------------------
def test_trec_runs_over_different_topics_pair_by_topic_and_say_what_was_dropped():
    a, b = _trec(RUN_A), _trec(RUN_B)
    assert a.extras["query_ids"] == ["1", "2", "3"] and b.extras["query_ids"] == ["1", "2", "4"]
    with pytest.warns(
        UserWarning,
        match=r"paired on the 2 queries every run answers, dropped 1 of 3 from 'A', "
        r"1 of 3 from 'B'",
    ):
        cmp = rc.compare({"A": a, "B": b}, metrics=["map", "recip_rank"], n_resamples=100)
    row = cmp.row("B", "map")
    assert row.n_queries == 2 and cmp.query_ids == ["1", "2"] and cmp.dropped == {"A": 1, "B": 1}
    # topic 1: A ranks a, b, c (AP = (1 + 2/3)/2), B c, a, b (AP = 1); topic 2: A d, a (AP = 1), B b, a (AP = 1/4)
    assert row.mean_baseline == pytest.approx((5 / 6 + 1) / 2, abs=1e-15)
    assert row.mean_run == pytest.approx((1 + 1 / 4) / 2, abs=1e-15)
    assert cmp.means["A"]["map"] == row.mean_baseline
    text = cmp.to_text()
    assert "paired by query id" in text and "dropped: 1 from 'A', 1 from 'B'" in text
    assert cmp.to_dict()["dropped"] == {"A": 1, "B": 1}


def test_complete_trec_runs_drop_nothing():
    # trec_eval -c: every qrels query is evaluated, 0 for a run without results for it
    a, b = _trec(RUN_A, complete=True), _trec(RUN_B, complete=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cmp = rc.compare({"A": a, "B": b}, metrics="map", n_resamples=100)
    assert cmp.rows[0].n_queries == 4 and cmp.dropped == {"A": 0, "B": 0}
    assert cmp.means["A"]["map"] == pytest.approx(a.map, abs=1e-15)
    assert cmp.means["B"]["map"] == pytest.approx(b.map, abs=1e-15)


def test_mappings_pair_by_key_in_the_first_runs_order():
    a = {"q3": 0.5, "q1": 0.25, "q2": 1.0}
    b = {"q2": 0.75, "q9": 0.0, "q3": 1.0}
    with pytest.warns(UserWarning, match="dropped 1 of 3 from 'a', 1 of 3 from 'b'"):
        cmp = rc.compare({"a": a, "b": b}, metrics="ndcg", n_resamples=100)
    row = cmp.rows[0]
    assert cmp.query_ids == ["q3", "q2"] and row.n_queries == 2
    assert (row.mean_baseline, row.mean_run) == (0.75, 0.875)


class _Series:
    """What compare reads of a pandas Series: one dimension, values by index (``to_dict``), an array."""

    ndim = 1

    def __init__(self, data):
        self._data = dict(data)

    def to_dict(self):
        return dict(self._data)

    def __array__(self, dtype=None, copy=None):
        return np.array(list(self._data.values()), dtype=dtype)


def test_a_series_pairs_by_its_index_not_by_position():
    a = _Series({"q1": 0.2, "q2": 0.4, "q3": 0.6})
    b = _Series({"q3": 0.9, "q1": 0.3})  # another order, and no result for q2
    with pytest.warns(UserWarning, match="dropped 1 of 3 from 'a', 0 of 2 from 'b'"):
        cmp = rc.compare({"a": a, "b": b}, metrics="ndcg", n_resamples=100)
    assert cmp.query_ids == ["q1", "q3"] and cmp.rows[0].difference == pytest.approx(0.2, abs=1e-15)


def test_runs_with_and_without_ids_or_repeated_ids_are_refused():
    with pytest.raises(TypeError, match=r"runs\['b'\]: has no query ids while runs\['a'\] has"):
        rc.compare({"a": {"1": 0.5, "2": 0.1}, "b": [0.5, 0.1]})
    with pytest.raises(ValueError, match=r"runs: no query is answered by every run"):
        rc.compare({"a": {"1": 0.5}, "b": {"2": 0.5}})


def test_arrays_of_different_lengths_are_refused_by_name():
    with pytest.raises(
        ValueError,
        match=r"runs\['b'\]: 2 queries, but runs\['a'\] has 3; runs without query ids "
        "are paired by position",
    ):
        rc.compare({"a": [0.1, 0.2, 0.3], "b": [0.1, 0.2]})


# -- one definition ----------------------------------------------------------------------
def _reid(recall="fraction", protocol="hashing", **kw):
    rng = np.random.default_rng(3)
    q, db = rng.integers(0, 4, 12), rng.integers(0, 4, 30)
    return rc.evaluate(
        scores=rng.normal(size=(12, 30)),
        query_labels=q,
        db_labels=db,
        protocol=protocol,
        recall=recall,
        implementation="numpy",
        **kw,
    )


def test_a_recall_definition_change_is_not_a_significant_gain():
    # R@5 as H(5)/R and as "a hit in the top 5" are different metrics: +0.55 would be a definition change
    with pytest.raises(
        ValueError,
        match=r"runs\['hit'\]: evaluated with recall='hit', but runs\['fraction'\] "
        r"with recall='fraction'",
    ):
        rc.compare({"fraction": _reid(k=5), "hit": _reid(recall="hit", k=5)}, metrics="recall_at_k")


def test_a_different_protocol_is_named():
    with pytest.raises(
        ValueError,
        match=r"evaluated with protocol='hashnet', but runs\['A'\] with "
        r"protocol='hashing'",
    ):
        rc.compare({"A": _reid(k=5, empty="zero"), "B": _reid(protocol="hashnet", k=5, empty="zero")})


def _other_value(option, value):
    """A value of ``option`` other than ``value``: the conventions table's, or a number."""
    if option in OPTIONS:
        return next(v for v in values(option) if v != value)
    return {"k": 7, "max_rank": 10, "radius": 2.0}[option]


@pytest.mark.parametrize("option", [f.name for f in dataclasses.fields(rc.Options) if f.name != "metrics"])
def test_every_option_must_agree(option):
    base = _reid(k=5)
    changed = _other_value(option, getattr(base.options, option))
    other = dataclasses.replace(base, options=dataclasses.replace(base.options, **{option: changed}))
    with pytest.raises(
        ValueError,
        match=rf"runs\['B'\]: evaluated with {option}={changed!r}, but runs\['A'\] "
        rf"with {option}={getattr(base.options, option)!r}",
    ):
        rc.compare({"A": base, "B": other}, metrics="map")


def test_runs_computed_with_other_metrics_compare_on_a_metric_both_have():
    # metrics= chooses what is computed, not what a number means: the shared metric pairs
    both, only_map = _reid(k=5), _reid(k=5, metrics=["map"])
    assert only_map.options.metrics is not None
    table = rc.compare({"A": both, "B": only_map}, metrics="map")
    assert table is not None
    with pytest.raises(Exception, match="minp"):
        rc.compare({"A": both, "B": only_map}, metrics="minp")


def test_the_checked_options_come_from_the_conventions_table():
    # every option of the conventions table is a field of Options, so the check above covers it
    assert set(OPTIONS) <= {f.name for f in dataclasses.fields(rc.Options)}


def test_trec_settings_must_agree():
    with pytest.raises(ValueError, match=r"evaluated with relevance_level=2, but runs\['A'\] with relevance_level=1"):
        rc.compare({"A": _trec(RUN_A), "B": _trec(RUN_B, relevance_level=2)}, metrics="map")


# -- values screened -------------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_infinite_values_are_refused_by_name(bad):
    with pytest.raises(ValueError, match=rf"runs\['b'\]: value is {bad} at query 1 \(1 infinite value\)"):
        rc.compare({"a": [0.1, 0.2, 0.3], "b": [0.2, bad, 0.1]})
    with pytest.raises(ValueError, match=r"runs\['b'\]: ndcg is .*inf at query 'q2'"):
        rc.compare({"a": {"q1": 0.1, "q2": 0.2}, "b": {"q1": 0.3, "q2": bad}}, metrics="ndcg")


def test_infinite_value_in_a_result_is_refused():
    base = _reid(k=5)
    ap = base.per_query.ap.copy()
    ap[3] = np.inf
    broken = dataclasses.replace(base, per_query=dataclasses.replace(base.per_query, ap=ap))
    with pytest.raises(ValueError, match=r"runs\['B'\]: mAP@5 is inf at query 3"):
        rc.compare({"A": base, "B": broken}, metrics="map")


def test_nan_values_are_reported_not_dropped_silently():
    cmp = rc.compare({"a": [0.1, np.nan, 0.3, 0.4], "b": [0.2, 0.5, np.nan, np.nan]}, metrics="ndcg", n_resamples=100)
    assert cmp.not_counted == {"a": {"ndcg": 1}, "b": {"ndcg": 2}}
    assert cmp.rows[0].n_queries == 1
    assert "NaN per-query values, not counted: 1 ndcg in 'a', 2 ndcg in 'b'." in cmp.to_text()
    assert cmp.to_dict()["not_counted"] == {"a": {"ndcg": 1}, "b": {"ndcg": 2}}


# -- generated inputs: a named error or the right pairing, never anything else -------------
_VALUES = st.one_of(st.floats(0, 1), st.sampled_from([np.nan, np.inf, -np.inf, 0.0, 1.0]))
_RUN = st.dictionaries(st.sampled_from([f"q{i}" for i in range(8)]), _VALUES, max_size=8)


@settings(max_examples=150, deadline=None)
@given(runs=st.lists(_RUN, min_size=1, max_size=3), as_arrays=st.booleans())
def test_generated_runs_pair_by_id_or_fail_by_name(runs, as_arrays):
    named = {f"r{i}": (list(run.values()) if as_arrays else run) for i, run in enumerate(runs)}
    # what must happen: the queries every run answers (positions for arrays), in the first run's order
    if as_arrays:
        common = list(range(len(runs[0])))
        refusal = "paired by position" if len({len(run) for run in runs}) > 1 else None
        aligned = [list(run.values()) for run in runs] if refusal is None else []
    else:
        common = [q for q in runs[0] if all(q in run for run in runs[1:])]
        refusal = None if common else "no query is answered by every run"
        aligned = [[run[q] for q in common] for run in runs]
    values = np.array(aligned, dtype=np.float64).reshape(len(runs) if refusal is None else 0, len(common))
    # an infinite value is refused wherever it is, also on a query other runs lack
    if refusal is None and any(np.isinf(v) for run in runs for v in run.values()):
        refusal = "infinite value"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if refusal is not None:
            with pytest.raises(ValueError, match=refusal):
                rc.compare(named, metrics="m", n_resamples=64)
            return
        cmp = rc.compare(named, metrics="m", n_resamples=64)
    assert cmp.n_queries == len(common)
    for i, name in enumerate(named):
        assert cmp.not_counted[name]["m"] == int(np.isnan(values[i]).sum())
    for row in cmp.rows:
        i, j = list(named).index(row.run), list(named).index(row.baseline)
        assert row.n_queries == int((~np.isnan(values[i]) & ~np.isnan(values[j])).sum())
        assert row.p_permutation is not None and (np.isnan(row.p_permutation) or 0 < row.p_permutation <= 1)


def test_several_cut_offs_of_evaluate_are_refused_with_what_to_pass():
    rng = np.random.default_rng(4)
    at_k = rc.evaluate(
        scores=rng.normal(size=(6, 20)), relevance=rng.random((6, 20)) < 0.3, k=(5, 10), implementation="numpy"
    )
    with pytest.raises(
        TypeError,
        match=r"runs\['A'\]: a ResultsAtK of evaluate\(\) holds one mAP per cut-off .* "
        r"e.g. res\[10\]",
    ):
        rc.compare({"A": at_k, "B": at_k})
    cmp = rc.compare({"A": at_k[10], "B": at_k[10]}, metrics=["map", "ndcg"], n_resamples=50)
    assert list(cmp.metrics.values()) == ["mAP@10", "nDCG@10"]
