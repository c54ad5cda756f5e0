"""``rc.compare``: paired significance between runs.

The expected p-values and intervals are computed here with scipy directly, on per-query
arrays read from ``rc.evaluate`` results (or written by hand), never through the module
under test; the exact permutation p-value is also enumerated by hand.  The problem and the
evaluated runs (the fixtures ``problem`` and ``results``) are shared with
``test_compare_output`` (the regression gate, the tables and ``retrieval-conformance compare``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.comparison import holm
from scipy import stats

Q, N = 48, 60
RESAMPLES = 2000


def _mean_diff(x, y, axis=-1):
    return np.mean(x - y, axis=axis)


@pytest.fixture(scope="module")
def problem():
    """Queries with labels 0..7 (8 and 9: no relevant item), gallery labels 0..7, cameras 0..3."""
    rng = np.random.default_rng(12345)
    q_labels = rng.integers(0, 10, Q)
    db_labels = rng.integers(0, 8, N)
    q_cams, db_cams = rng.integers(0, 4, Q), rng.integers(0, 4, N)
    rel = q_labels[:, None] == db_labels[None, :]
    base = rng.normal(size=(Q, N)) + 1.0 * rel
    return {
        "rng": rng,
        "q": q_labels,
        "db": db_labels,
        "qc": q_cams,
        "dc": db_cams,
        "rel": rel,
        "A": base,
        # B = A plus noise plus a lift of the relevant items: a known positive effect
        "B": base + rng.normal(scale=0.5, size=(Q, N)) + 0.6 * rel,
        # W = A with relevant items pushed down: a known negative effect
        "W": base + rng.normal(scale=0.5, size=(Q, N)) - 0.8 * rel,
        # P = every relevant item first: the largest possible effect
        "P": 10.0 * rel + rng.normal(scale=0.1, size=(Q, N)),
    }


def _eval(problem, name, protocol="reid", **kw):
    if protocol == "reid":  # same id and same camera: junk
        kw.update(query_cams=problem["qc"], db_cams=problem["dc"])
    return rc.evaluate(
        scores=problem[name],
        query_labels=problem["q"],
        db_labels=problem["db"],
        protocol=protocol,
        implementation="numpy",
        **kw,
    )


@pytest.fixture(scope="module")
def results(problem):
    return {name: _eval(problem, name) for name in ("A", "B", "W", "P")}


def agrees_with_resampled(p, expected, n_resamples):
    """Two resampled p-values of the same test agree within Monte Carlo error (5 standard errors of
    their difference: each is a binomial proportion over n_resamples draws)."""
    q = (p + expected) / 2
    return abs(p - expected) <= 5 * np.sqrt(2 * q * (1 - q) / n_resamples) + 2 / (n_resamples + 1)


def _expected(b, a, seed, n_resamples=RESAMPLES, confidence=0.95):
    """p-values and BCa interval from scipy on the paired arrays."""
    perm = stats.permutation_test(
        (b, a),
        _mean_diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    ).pvalue
    t = stats.ttest_rel(b, a).pvalue
    ci = stats.bootstrap(
        (b, a),
        _mean_diff,
        paired=True,
        vectorized=True,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="BCa",
        rng=np.random.default_rng(seed),
    ).confidence_interval
    return perm, t, (ci.low, ci.high)


# -- the statistics equal scipy's -----------------------------------------------------------
def test_p_values_and_interval_equal_scipy(results):
    ra, rb = results["A"], results["B"]
    cmp = rc.compare({"A": ra, "B": rb}, metrics=["map", "rank1", "minp"], n_resamples=RESAMPLES, seed=3)
    arrays = {  # per-query values read from the results; NaN = not counted (reid skips empty queries)
        "map": (ra.ap, rb.ap),
        "rank1": (
            np.where(ra.counted, ra.per_query.cmc[:, 0], np.nan),
            np.where(rb.counted, rb.per_query.cmc[:, 0], np.nan),
        ),
        "minp": (ra.inp, rb.inp),
    }
    assert [r.metric for r in cmp.rows] == ["map", "rank1", "minp"]
    for metric, (a, b) in arrays.items():
        keep = ~np.isnan(a) & ~np.isnan(b)
        assert 0 < keep.sum() < Q  # queries labelled 8 or 9 have no relevant item
        perm, t, (low, high) = _expected(b[keep], a[keep], seed=3)
        row = cmp.row("B", metric)
        assert row.n_queries == keep.sum()
        assert agrees_with_resampled(row.p_permutation, perm, RESAMPLES) and row.p_t == t
        assert (row.ci_low, row.ci_high) == (low, high) and row.ci_method == "BCa"
        assert row.mean_run == pytest.approx(b[keep].mean(), abs=1e-12)
        assert row.difference == pytest.approx(np.mean(b[keep] - a[keep]), abs=1e-12)
        assert not row.permutation_exact
    assert cmp.row("B", "map").difference > 0  # the known effect has the right sign
    assert cmp.row("B", "map").label == "mAP"


def test_default_seed_and_resamples_are_documented_ones(results):
    ra, rb = results["A"], results["B"]
    row = rc.compare({"A": ra, "B": rb}, metrics="map").rows[0]
    keep = ~np.isnan(ra.ap) & ~np.isnan(rb.ap)
    perm, t, (low, high) = _expected(rb.ap[keep], ra.ap[keep], seed=0, n_resamples=10_000)
    assert (row.p_t, row.ci_low, row.ci_high) == (t, low, high)
    assert agrees_with_resampled(row.p_permutation, perm, 10_000)


def test_exact_permutation_test_enumerates_every_sign_flip():
    a = np.array([0.2, 0.5, 0.1, 0.9, 0.4, 0.3, 0.6, 0.7])
    b = np.array([0.3, 0.7, 0.1, 0.95, 0.2, 0.6, 0.8, 0.75])
    row = rc.compare({"a": a, "b": b}, metrics="ap", n_resamples=1000).rows[0]
    d = b - a
    null = np.array([np.mean(np.array(s) * d) for s in itertools.product((1, -1), repeat=d.size)])
    obs = d.mean()
    tol = abs(obs) * 1e-12
    expected = min(1.0, 2 * min(np.mean(null <= obs + tol), np.mean(null >= obs - tol)))
    assert row.permutation_exact and 2**8 <= 1000
    assert row.p_permutation == pytest.approx(expected, abs=1e-15)
    assert row.label == "ap" and row.n_queries == 8
    assert "exact permutation test: all 2**8 = 256 sign flips" in row.notes


def test_run_against_itself_has_no_difference_and_p_one(results):
    cmp = rc.compare({"A": results["A"], "A again": results["A"]})
    # the default metrics without a cut-off (P@k and R@k need k)
    assert [r.metric for r in cmp.rows] == ["map", "rank1", "minp", "r_precision"]
    for row in cmp.rows:
        assert row.difference == 0 and row.p_permutation == 1.0 and row.p_t == 1.0
        assert (row.ci_low, row.ci_high) == (0.0, 0.0) and row.ci_method == "percentile"
        assert any("all differences are 0" in note for note in row.notes)
    assert not cmp.regressions(0.0)


def test_large_known_effect_is_significant(results):
    cmp = rc.compare({"A": results["A"], "perfect": results["P"]}, metrics=["map", "r_precision"])
    row = cmp.row("perfect", "map")
    assert row.mean_run == 1.0  # every relevant item first: AP = 1 on every counted query
    assert row.p_permutation < 0.01 and row.p_t < 0.01
    assert 0 < row.ci_low <= row.difference <= row.ci_high
    assert row.significant(0.01)


def test_bootstrap_interval_contains_difference_and_is_seeded(results):
    runs = {"A": results["A"], "B": results["B"]}
    one = rc.compare(runs, metrics=["map", "minp"], n_resamples=RESAMPLES, seed=5)
    again = rc.compare(runs, metrics=["map", "minp"], n_resamples=RESAMPLES, seed=5)
    other = rc.compare(runs, metrics=["map", "minp"], n_resamples=RESAMPLES, seed=6)
    for r1, r2, r3 in zip(one.rows, again.rows, other.rows):
        assert r1.ci_low <= r1.difference <= r1.ci_high
        assert (r1.ci_low, r1.ci_high, r1.p_permutation) == (r2.ci_low, r2.ci_high, r2.p_permutation)
        assert (r1.ci_low, r1.ci_high) != (r3.ci_low, r3.ci_high)  # the seed is really used


def test_wider_confidence_gives_wider_interval(results):
    runs = {"A": results["A"], "B": results["B"]}
    r95 = rc.compare(runs, metrics="map", n_resamples=RESAMPLES).rows[0]
    r99 = rc.compare(runs, metrics="map", n_resamples=RESAMPLES, confidence=0.99).rows[0]
    assert r99.ci_low < r95.ci_low and r95.ci_high < r99.ci_high


# -- pairing over counted queries ---------------------------------------------------------
def test_uncounted_queries_are_excluded_pairwise(problem):
    # hashnet skips queries without a hit in the top k: each run skips different queries
    ra = _eval(problem, "A", protocol="hashnet", k=3)
    rw = _eval(problem, "W", protocol="hashnet", k=3)
    assert (ra.counted != rw.counted).any()
    both = ra.counted & rw.counted
    cmp = rc.compare({"A": ra, "W": rw}, metrics=["map", "precision_at_k"], n_resamples=RESAMPLES)
    row = cmp.row("W", "map")
    assert row.n_queries == both.sum() and row.label == "mAP@3"
    assert row.mean_baseline == pytest.approx(ra.per_query.ap[both].mean(), abs=1e-12)
    assert row.mean_run == pytest.approx(rw.per_query.ap[both].mean(), abs=1e-12)
    perm, t, _ = _expected(rw.ap[both], ra.ap[both], seed=0)
    assert row.p_t == t and agrees_with_resampled(row.p_permutation, perm, RESAMPLES)
    # the tables of runs show each run's own mean, as evaluate reports it
    assert cmp.means["A"]["map"] == pytest.approx(ra.map, abs=1e-12)
    assert cmp.means["W"]["precision_at_k"] == pytest.approx(rw.precision_at_k, abs=1e-12)


def test_nan_in_arrays_is_excluded_pairwise():
    rng = np.random.default_rng(7)
    a = rng.random(30)
    b = a + rng.normal(0.05, 0.1, 30)
    a[[2, 5]] = np.nan
    b[[5, 11, 17]] = np.nan
    keep = np.ones(30, bool)
    keep[[2, 5, 11, 17]] = False
    row = rc.compare({"a": a, "b": b}, metrics="ndcg@10", n_resamples=RESAMPLES, seed=1).rows[0]
    perm, t, (low, high) = _expected(b[keep], a[keep], seed=1)
    assert row.n_queries == 26 and row.metric == "ndcg@10"
    assert (row.p_t, row.ci_low, row.ci_high) == (t, low, high)
    assert agrees_with_resampled(row.p_permutation, perm, RESAMPLES)
    assert row.mean_baseline == pytest.approx(a[keep].mean(), abs=1e-12)


def test_fewer_than_two_pairs_gives_nan_with_a_note():
    row = rc.compare({"a": [0.5, np.nan, 0.2], "b": [np.nan, 0.4, 0.3]}).rows[0]
    assert row.n_queries == 1 and np.isnan(row.p_permutation) and np.isnan(row.p_t)
    assert row.ci_method == "none" and "needs at least 2" in row.notes[0]


# -- errors --------------------------------------------------------------------------------
def test_mismatched_query_counts_name_the_run(problem, results):
    fewer = rc.evaluate(
        scores=problem["B"][:40],
        query_labels=problem["q"][:40],
        db_labels=problem["db"],
        query_cams=problem["qc"][:40],
        db_cams=problem["dc"],
        protocol="reid",
        implementation="numpy",
    )
    with pytest.raises(ValueError, match=r"runs\['short'\]: 40 queries, but runs\['A'\] has 48"):
        rc.compare({"A": results["A"], "short": fewer})
    with pytest.raises(ValueError, match=r"runs\['b'\]: 2 queries"):
        rc.compare({"a": [0.1, 0.2, 0.3], "b": [0.1, 0.2]})


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"metrics": ["map", "bpref_x"]}, "metrics: unknown metric 'bpref_x' for run 'A'; it offers"),
        ({"metrics": ["map", "bpref"]}, "metrics: 'bpref' needs the judgments of a TREC run"),
        ({"metrics": ["precision_at_k"]}, "metrics: 'precision_at_k' needs a cut-off"),
        ({"metrics": ["rank51"]}, "beyond run 'A''s CMC of 50 ranks"),
        ({"baseline": "C"}, "baseline: 'C' is not a run"),
        ({"tests": ("permutation", "wilcoxon")}, "tests: expected one of"),
        ({"n_resamples": 0}, "n_resamples: expected a positive integer"),
        ({"confidence": 95}, "confidence: expected a number strictly between 0 and 1"),
        ({"correction": "bonferroni"}, "correction: expected one of"),
        ({"seed": -1}, "seed: expected a non-negative integer"),
    ],
)
def test_bad_arguments_are_named(results, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        rc.compare({"A": results["A"], "B": results["B"]}, **kwargs)


def test_runs_with_other_options_or_mixed_kinds_are_refused(problem, results):
    at5 = _eval(problem, "B", k=5)
    with pytest.raises(ValueError, match=r"runs\['B'\]: evaluated with k=5, but runs\['A'\] with k=None"):
        rc.compare({"A": results["A"], "B": at5})
    with pytest.raises(TypeError, match=r"runs\['B'\]: mixes"):
        rc.compare({"A": results["A"], "B": results["B"].ap})
    with pytest.raises(ValueError, match="runs: expected at least 1 run"):
        rc.compare({})


# -- multiple comparisons ----------------------------------------------------------------
def test_holm_of_fixed_p_values():
    # sorted: 0.01, 0.03, 0.04, 0.2 (m = 4) -> 4*0.01, max(0.04, 3*0.03), max(0.09, 2*0.04), max(0.09, 0.2)
    assert holm([0.01, 0.04, 0.03, 0.2]).tolist() == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert holm([0.5, np.nan, 0.3]).tolist()[::2] == pytest.approx([0.6, 0.6])  # NaN not counted in m
    assert holm([0.9, 0.8]).tolist() == [1.0, 1.0]


def test_holm_correction_matches_hand_computation(results):
    runs = {"A": results["A"], "B": results["B"], "W": results["W"]}
    metrics = ["map", "minp"]
    plain = rc.compare(runs, metrics=metrics, n_resamples=RESAMPLES)
    held = rc.compare(runs, metrics=metrics, n_resamples=RESAMPLES, correction="holm")
    for test in ("permutation", "t"):
        raw = [r.p_value(test, adjusted=False) for r in plain.rows]
        assert [r.p_value(test, adjusted=False) for r in held.rows] == raw
        assert [r.p_value(test) for r in plain.rows] == raw  # no correction: adjusted == raw
        order = sorted(range(4), key=lambda i: raw[i])
        by_hand = [0.0] * 4
        running = 0.0
        for rank, i in enumerate(order):  # m = 4 tests: (3 runs - 1) x 2 metrics
            running = max(running, min(1.0, (4 - rank) * raw[i]))
            by_hand[i] = running
        assert [r.p_value(test) for r in held.rows] == pytest.approx(by_hand, rel=1e-12)
    assert "Holm" in held.to_text() and "Holm--Bonferroni" in held.to_latex()
