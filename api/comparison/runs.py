"""``compare(runs)``: runs against a baseline (or every pair), metric by metric, query by query.

:func:`compare` checks its arguments, lines the runs up by query id
(:mod:`~retrieval_conformance.comparison.pairing`), gives each run's mean its confidence
intervals, runs the tests of :mod:`~retrieval_conformance.comparison.stats` on each pair of
runs over the queries both count, applies the multiple-comparison correction and returns a
:class:`~retrieval_conformance.comparison.tables.Comparison`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, cast

import numpy as np
from retrieval_conformance.comparison.arguments import (
    check_choice,
    check_level,
    check_names,
    check_resamples,
    check_seed,
)
from retrieval_conformance.comparison.pairing import pair_runs
from retrieval_conformance.comparison.stats import (
    CORRECTIONS,
    TESTS,
    adjust,
    bootstrap_interval,
    cohens_dz,
    mean_intervals,
    paired_t_p,
    permutation_p,
)
from retrieval_conformance.comparison.tables import Comparison, ComparisonRow
from retrieval_conformance.reference.contract import progress
from retrieval_conformance.reference.contract.aggregation import float_mean

__all__ = ["PAIRS", "compare"]

#: which pairs of runs are compared: each run with the baseline, or every pair
PAIRS = ("baseline", "all")


def compare(
    runs: Mapping[str, Any],
    *,
    metrics: Any = None,
    baseline: Optional[str] = None,
    tests: Sequence[str] = ("permutation", "t"),
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: Optional[int] = 0,
    correction: Optional[str] = None,
    pairs: str = "baseline",
) -> Comparison:
    r"""Compare runs query by query, with paired significance tests and confidence intervals.

    The runs are lined up by query id: a TREC run's qids (``evaluate_run``), a mapping's keys,
    or the position for arrays and ``evaluate`` results.  Queries not answered by every run
    are left out, with a warning saying how many from each run (``Comparison.dropped``).

    For each run and metric, over the queries the run counts: its mean with a t interval
    and a bootstrap interval (``Comparison.intervals``: "mean ± half-width" for one run
    alone).  For each pair of runs (each run with the baseline, or every pair) and each
    metric, over the n queries counted in both runs (value :math:`b_i` for the run,
    :math:`a_i` for the baseline, :math:`d_i = b_i - a_i`):

    * means :math:`\bar a = \frac1n\sum a_i`, :math:`\bar b = \frac1n\sum b_i`, and the
      difference :math:`\Delta = \bar b - \bar a = \bar d`;
    * **paired permutation test** (randomization test): under H0 the two runs are
      exchangeable on each query, so each :math:`d_i` is equally likely to have either sign.
      With :math:`\Delta_s = \frac1n\sum s_i d_i` for sign vectors :math:`s \in \{\pm1\}^n`,
      the two-sided p-value is :math:`2\min(P(\Delta_s \le \Delta), P(\Delta_s \ge \Delta))`
      (capped at 1), from ``scipy.stats.permutation_test(..., permutation_type="samples")``:
      exact over all :math:`2^n` flips when :math:`2^n \le` ``n_resamples``, otherwise
      ``n_resamples`` random flips with :math:`p = (\#\{\text{as extreme}\} + 1)/(N + 1)`;
    * **paired t-test**: :math:`t = \bar d / (s_d/\sqrt n)` with n - 1 degrees of freedom
      (``scipy.stats.ttest_rel``); when every :math:`d_i = 0` scipy gives NaN, and this
      gives p = 1.0 with a note;
    * **bootstrap interval** of :math:`\bar d`: ``scipy.stats.bootstrap`` resampling
      queries (pairs kept together), BCa, or percentile when BCa is degenerate (a note says
      so);
    * **effect size**: paired Cohen's :math:`d_z = \bar d / s_d` (:func:`~.stats.cohens_dz`).

    Parameters
    ----------
    runs : mapping of str to Result, ResultsAtK, 1-D array or mapping
        Name -> what :func:`retrieval_conformance.evaluate` returned (every run on the same
        queries in the same order), what :func:`retrieval_conformance.evaluate_run`
        returned (a ``Result``, or a ``ResultsAtK`` for several cut-offs; paired by qid), or
        per-query values of one metric: a 1-D array (paired by position) or a mapping
        ``{query id: value}`` or a pandas Series (paired by id, the Series by its index);
        higher is better.  Every ``Result`` run must
        have one definition: the same protocol, every ``Options`` field (ties, ap_rule, k,
        ap_at_k, empty, gain, discount, recall, max_rank, ...) and a TREC run's
        settings (relevance_level, complete, score_dtype, depth, judged_only,
        ignore_identical_ids, gains, float_grades).  A query counts when the run's
        empty-query policy counts it (``res.counted``, and not NaN under ``empty="nan"``);
        in arrays NaN marks a query not counted (``Comparison.not_counted`` says how many)
        and ±inf is refused.  A pair is used when both runs count it.  One run alone gives
        its intervals only.
    metrics : str or sequence of str, optional
        For ``evaluate`` results: names of ``Result``'s means (``"map"`` (mAP or mAP@k),
        ``"precision_at_k"``, ``"recall_at_k"``, ``"minp"``, ``"r_precision"``,
        ``"ndcg_at_k"`` (or ``"ndcg"``), ``"mrr"``, ``"map_at_r"``, ...) and ``"rank1"`` ...
        ``"rankN"`` (CMC); default mAP, P@k and R@k with a cut-off, Rank-1, mINP,
        R-precision.  For ``evaluate_run`` results: trec_eval's names (``"map"``,
        ``"P_10"``, ``"ndcg_cut_10"``, ``"recip_rank"``, ``"Rprec"``, ...); default every
        measure the run reports.  For arrays: the metric's name (default ``"value"``).
    baseline : str, optional
        The run the others are compared with (default: the first).
    tests : str or sequence of {"permutation", "t"}
        Which p-values to compute.
    n_resamples : int
        Random sign flips of the permutation test (exact when :math:`2^n \le` n_resamples)
        and bootstrap resamples: 1 to 1,000,000 (``MAX_RESAMPLES``; more are refused).
    confidence : float
        Level of the bootstrap interval, in (0, 1).
    seed : int or None
        Seed of ``numpy.random.default_rng``.  Every test and interval starts from a fresh
        generator with this seed, so a row depends only on its two runs (not on which other
        runs or metrics are compared); None: not reproducible.
    correction : {None, "holm", "bh"}
        Multiple comparisons.  Comparing several runs on several metrics runs many tests,
        and some come out "significant" by chance.  The p-values of each test are adjusted
        over the family of every row (pairs x metrics): ``"holm"`` (Holm--Bonferroni,
        :func:`~.stats.holm`) keeps the chance of any false "significant" at alpha; ``"bh"``
        (Benjamini--Hochberg, :func:`~.stats.benjamini_hochberg`) keeps the expected share
        of false ones among the "significant" at alpha.  The raw p-values stay in
        ``p_permutation``/``p_t``; the adjusted ones (``*_adjusted``) drive the markers and
        :meth:`Comparison.regressions`.
    pairs : {"baseline", "all"}
        Compare each run with the baseline, or every pair of runs (in each row the later
        run of the pair is compared with the earlier one, which is the row's baseline).

    Returns
    -------
    Comparison
        ``.rows``, ``.to_text()``, ``.to_markdown()``, ``.to_latex()``, ``.to_dict()``,
        ``.regressions(margin, alpha)``.

    Raises
    ------
    ValueError
        No run; runs with another definition (the option and both values named); runs
        without query ids of different lengths; no query common to every run; an infinite
        per-query value; an unknown metric, baseline, test, correction or pairs; a setting
        out of range.
    TypeError
        ``runs`` not a mapping with str names, ``Result`` runs mixed with arrays, runs with
        and without query ids, a run that is neither, ``metrics`` or ``tests`` not names.

    Warns
    -----
    UserWarning
        Queries dropped because not every run answers them (how many from each run).
    """
    tests = tuple(check_names("tests", tests))
    for t in tests:
        check_choice("tests", t, TESTS)
    n_resamples = check_resamples("n_resamples", n_resamples)
    confidence = check_level("confidence", confidence)
    seed = check_seed(seed)
    check_choice("correction", correction, CORRECTIONS)
    check_choice("pairs", pairs, PAIRS)
    paired = pair_runs(runs, metrics)
    names = paired.names
    baseline = names[0] if baseline is None else baseline
    if baseline not in names:
        raise ValueError(f"baseline: {baseline!r} is not a run; expected one of {list(names)}")
    if pairs == "baseline":
        couples = [(name, baseline) for name in names if name != baseline]
    else:  # every pair, in the order given: the later run against the earlier one
        couples = [(names[j], names[i]) for i in range(len(names)) for j in range(i + 1, len(names))]
    rows = []
    for name, base in couples:
        for metric, label in paired.labels.items():
            b, b_counted = paired.values[name][metric]
            a, a_counted = paired.values[base][metric]
            both = a_counted & b_counted
            rows.append(_paired_row(metric, label, name, base, b[both], a[both], tests, n_resamples, confidence, seed))
            progress.tick()  # one paired comparison: shown by the command line on a terminal
    means = {name: {m: float_mean(v[counted]) for m, (v, counted) in paired.values[name].items()} for name in names}
    intervals = {name: _intervals(paired.values[name], confidence, n_resamples, seed) for name in names}
    return Comparison(
        rows=_apply_correction(rows, correction),
        baseline=baseline,
        runs=names,
        metrics=dict(paired.labels),
        means=means,
        n_queries=paired.n_queries,
        tests=tests,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        correction=correction,
        pairs=pairs,
        intervals=intervals,
        dropped=paired.dropped,
        not_counted=paired.not_counted,
        query_ids=paired.query_ids,
    )


def _paired_row(
    metric: str,
    label: str,
    run: str,
    baseline: str,
    b: np.ndarray,
    a: np.ndarray,
    tests: Sequence[str],
    n_resamples: int,
    confidence: float,
    seed: Optional[int],
) -> ComparisonRow:
    """One row: the means, the difference, the asked tests and the interval on the n pairs (b_i, a_i)."""
    n = a.shape[0]
    notes: List[str] = []
    p_perm = p_t = None
    exact = False
    effect = float("nan")
    low = high = float("nan")
    ci_method = "none"
    if n < 2:
        notes.append(f"{n} quer{'y' if n == 1 else 'ies'} counted in both runs: no test or interval (needs at least 2)")
        p_perm = float("nan") if "permutation" in tests else None
        p_t = float("nan") if "t" in tests else None
    else:
        if "permutation" in tests:
            p_perm, exact = permutation_p(b, a, n_resamples, seed)
            if exact:
                notes.append(f"exact permutation test: all 2**{n} = {2**n} sign flips")
        if "t" in tests:
            p_t, note = paired_t_p(b, a)
            notes += [note] if note else []
        low, high, ci_method, note = bootstrap_interval(b, a, n_resamples, confidence, seed)
        notes += [note] if note else []
        effect, note = cohens_dz(b, a)
        notes += [note] if note else []
    mean_a, mean_b = float_mean(a), float_mean(b)
    return ComparisonRow(
        metric=metric,
        label=label,
        run=run,
        baseline=baseline,
        n_queries=int(n),
        mean_baseline=mean_a,
        mean_run=mean_b,
        difference=mean_b - mean_a,
        ci_low=low,
        ci_high=high,
        ci_method=ci_method,
        p_permutation=p_perm,
        p_t=p_t,
        p_permutation_adjusted=p_perm,
        p_t_adjusted=p_t,
        permutation_exact=exact,
        effect_size=effect,
        notes=tuple(notes),
    )


def _apply_correction(rows: List[ComparisonRow], correction: Optional[str]) -> List[ComparisonRow]:
    """The correction over the family of every row (pairs x metrics), separately for each test."""
    if correction is None or not rows:
        return rows
    changes: List[Dict[str, Any]] = [{} for _ in rows]  # keyword arguments of replace()
    for test in TESTS:
        raw = [r.p_value(test, adjusted=False) for r in rows]
        if raw[0] is None:  # not run
            continue
        # a test is run for every row or for none
        for change, value in zip(changes, adjust(cast(List[float], raw), correction)):
            change[f"p_{test}_adjusted"] = float(value)
    return [replace(r, **change) for r, change in zip(rows, changes)]


def _intervals(values: Mapping[str, Any], confidence: float, n_resamples: int, seed: Optional[int]) -> Dict[str, Any]:
    """The intervals of one run's mean of every metric (a bootstrap each: a unit of progress each)."""
    out = {}
    for metric, (v, counted) in values.items():
        out[metric] = mean_intervals(v[counted], confidence, n_resamples, seed)
        progress.tick()
    return out
