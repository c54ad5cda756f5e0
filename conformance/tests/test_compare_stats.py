"""The statistics of ``rc.compare`` agree with ``scipy.stats`` on the same per-query arrays.

The permutation test is ours (vectorised); scipy's ``permutation_test`` with
``permutation_type="samples"`` is the independent check: equal p-values when both enumerate
every sign flip, agreement within Monte Carlo error when both resample.  The intervals of
one run's mean are checked against ``scipy.stats.t`` and ``scipy.stats.bootstrap``, the
corrections and the effect size against hand arithmetic.
"""

from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.comparison import benjamini_hochberg, cohens_dz, mean_intervals, permutation_p, resampling
from retrieval_conformance.comparison.stats import seeded
from retrieval_conformance.conformance.tests.test_compare import agrees_with_resampled
from scipy import stats


def _mean_diff(x, y, axis=-1):
    return np.mean(x - y, axis=axis)


def _scipy_p(b, a, n_resamples, seed=0):
    return stats.permutation_test(
        (b, a),
        _mean_diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="two-sided",
        **seeded(stats.permutation_test, seed),  # scipy before 1.15 (Python 3.9, 3.10): random_state
    ).pvalue


def _pairs(n, seed, grid=None):
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    b = a + rng.normal(0.05, 0.2, n)
    if grid:  # values on a grid: many differences of equal size, sums that tie
        a, b = np.round(a * grid) / grid, np.round(b * grid) / grid
    return b, a


# -- the permutation test --------------------------------------------------------------
@pytest.mark.parametrize("n, grid", [(2, None), (3, None), (5, None), (9, 4), (12, None), (13, 10)])
def test_exact_permutation_p_equals_scipy(n, grid):
    for seed in range(3):
        b, a = _pairs(n, seed, grid)
        p, exact = permutation_p(b, a, 10_000, seed=0)
        assert exact and p == _scipy_p(b, a, 10_000)


def test_exact_permutation_p_equals_enumeration_by_hand():
    b, a = _pairs(10, 4, grid=5)
    d = b - a
    null = np.array([np.dot(s, d) for s in itertools.product((1, -1), repeat=d.size)])
    obs, tol = d.sum(), abs(d.sum()) * 1e-12
    expected = min(1.0, 2 * min(np.mean(null <= obs + tol), np.mean(null >= obs - tol)))
    assert permutation_p(b, a, 1024, None) == (pytest.approx(expected, abs=1e-15), True)
    assert permutation_p(b, a, 1023, 0)[1] is False  # 2**10 > 1023: resampled


def test_exact_test_over_a_split_table_is_the_same_test(monkeypatch):
    # beyond 20 queries the exact test walks the sums of the other queries against one table:
    # the same counts as one table of every sign vector (checked at n = 12 and n = 21, split and not)
    for n, split in ((12, 3), (21, 7)):
        b, a = _pairs(n, n, grid=10)
        monkeypatch.setattr(resampling, "_TABLE_QUERIES", 64)
        whole = permutation_p(b, a, 2**n, None)
        monkeypatch.setattr(resampling, "_TABLE_QUERIES", split)
        assert permutation_p(b, a, 2**n, None) == whole and whole[1]
    monkeypatch.setattr(resampling, "_TABLE_QUERIES", 3)
    b, a = _pairs(10, 4, grid=5)
    d = b - a
    null = np.array([np.dot(s, d) for s in itertools.product((1, -1), repeat=d.size)])
    obs, tol = d.sum(), abs(d.sum()) * 1e-12
    expected = min(1.0, 2 * min(np.mean(null <= obs + tol), np.mean(null >= obs - tol)))
    assert permutation_p(b, a, 1024, None) == (pytest.approx(expected, abs=1e-15), True)


@pytest.mark.parametrize("n, effect", [(25, 0.0), (60, 0.05), (200, 0.02), (3000, 0.004)])
def test_resampled_permutation_p_agrees_with_scipy(n, effect):
    rng = np.random.default_rng(n)
    a = rng.random(n)
    b = a + rng.normal(effect, 0.2, n)
    p, exact = permutation_p(b, a, 20_000, seed=1)
    assert not exact and agrees_with_resampled(p, _scipy_p(b, a, 20_000, seed=2), 20_000)


def test_resampled_p_is_seeded_and_bounded_below():
    b, a = _pairs(40, 1)
    assert permutation_p(b, a, 500, 3) == permutation_p(b, a, 500, 3)
    assert permutation_p(b, a, 500, 3) != permutation_p(b, a, 500, 4)
    p, _ = permutation_p(a + 1.0, a, 500, 0)  # every flip is below the observed sum
    assert p == 2 / 501


def test_chunks_bound_memory_and_keep_the_distribution(monkeypatch):
    # chunks of 3 resamples: the same test, other draws (the chunk length depends only on n)
    b, a = _pairs(300, 9)
    big = permutation_p(b, a, 4000, 0)[0]
    monkeypatch.setattr(resampling, "_CHUNK_BITS", 3 * 38 * 8)
    small = permutation_p(b, a, 4000, 0)[0]
    assert agrees_with_resampled(small, big, 4000)


# -- intervals, effect size, corrections --------------------------------------------------
def test_intervals_of_one_run_equal_scipy():
    values = np.random.default_rng(5).random(80)
    one = mean_intervals(values, 0.9, 2000, seed=4)
    t_low, t_high = stats.t.interval(0.9, 79, loc=values.mean(), scale=stats.sem(values))
    boot = stats.bootstrap(
        (values,), np.mean, confidence_level=0.9, n_resamples=2000, method="BCa", **seeded(stats.bootstrap, 4)
    ).confidence_interval
    assert one.n_queries == 80 and one.mean == values.mean()
    assert (one.t_low, one.t_high) == (pytest.approx(t_low, abs=1e-14), pytest.approx(t_high, abs=1e-14))
    assert (one.bootstrap_low, one.bootstrap_high, one.bootstrap_method) == (boot.low, boot.high, "BCa")


def test_one_run_alone_gets_its_intervals_for_every_metric():
    values = np.random.default_rng(6).random(30)
    cmp = rc.compare({"only": values}, metrics="ndcg", n_resamples=500)
    assert cmp.rows == []
    one = cmp.intervals["only"]["ndcg"]
    assert one == mean_intervals(values, 0.95, 500, 0)
    text = cmp.to_text()
    assert "95% t CI" in text and f"{one.t_high - one.mean:.4f}" in text
    latex = cmp.to_latex(plus_minus=True)
    assert rf"{one.mean:.4f} $\pm$ {one.t_high - one.mean:.4f}" in latex and "significantly" not in latex
    assert mean_intervals(values[:1], 0.95, 500, 0).bootstrap_method == "none"


def test_effect_size_is_paired_cohens_d():
    b, a = _pairs(50, 2)
    d = b - a
    dz, note = cohens_dz(b, a)
    assert note is None and dz == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-14)
    assert dz * np.sqrt(50) == pytest.approx(stats.ttest_rel(b, a).statistic, rel=1e-12)
    assert np.isnan(cohens_dz(a + 0.1, a)[0])
    row = rc.compare({"a": a, "b": b}, metrics="x", n_resamples=100).rows[0]
    assert row.effect_size == dz and "d_z" in rc.compare({"a": a, "b": b}, n_resamples=100).to_text()


def test_benjamini_hochberg_by_hand():
    # sorted 0.01, 0.02, 0.03, 0.5 (m = 4): 4*0.01/1, 4*0.02/2, 4*0.03/3, 4*0.5/4, then running minima from the top
    assert benjamini_hochberg([0.03, 0.01, 0.5, 0.02]).tolist() == pytest.approx([0.04, 0.04, 0.5, 0.04])
    assert benjamini_hochberg([0.2, np.nan, 0.9]).tolist()[::2] == pytest.approx([0.4, 0.9])


def test_all_pairs_with_a_correction_over_the_family():
    rng = np.random.default_rng(8)
    base = rng.random(40)
    runs = {"A": base, "B": base + rng.normal(0.1, 0.1, 40), "C": base + rng.normal(0, 0.1, 40)}
    cmp = rc.compare(runs, metrics="ndcg", pairs="all", correction="bh", n_resamples=500)
    assert [(r.run, r.baseline) for r in cmp.rows] == [("B", "A"), ("C", "A"), ("C", "B")]
    raw = [r.p_t for r in cmp.rows]
    assert [r.p_t_adjusted for r in cmp.rows] == pytest.approx(benjamini_hochberg(raw).tolist(), rel=1e-15)
    assert cmp.row("B", "ndcg", baseline="C") is cmp.rows[2]
    assert "p-values (Benjamini-Hochberg-adjusted over 3 rows)" in cmp.to_text()
    with pytest.raises(ValueError, match="pairs: expected one of"):
        rc.compare(runs, pairs="some")


def test_intervals_with_a_scipy_whose_bootstrap_takes_random_state(monkeypatch):
    """scipy before 1.15 seeds ``bootstrap`` by ``random_state`` (it has no ``rng``), and those
    releases are the newest on Python 3.9 and 3.10: the intervals are the same there."""
    from retrieval_conformance.comparison import stats as comparison_stats

    new = stats.bootstrap

    key = "rng" if "rng" in inspect.signature(new).parameters else "random_state"

    def older_bootstrap(data, statistic, *, random_state=None, **kw):  # the signature of scipy 1.13
        if "rng" in kw:
            raise TypeError("bootstrap() got an unexpected keyword argument 'rng'")
        return new(data, statistic, **{key: random_state}, **kw)

    values = np.random.default_rng(3).random(12)
    expected = mean_intervals(values, 0.95, 200, seed=7)
    expected_pair = comparison_stats.bootstrap_interval(values, values[::-1], 200, 0.95, 7)
    monkeypatch.setattr(stats, "bootstrap", older_bootstrap)
    assert mean_intervals(values, 0.95, 200, seed=7) == expected
    assert comparison_stats.bootstrap_interval(values, values[::-1], 200, 0.95, 7) == expected_pair
