"""The statistics behind :func:`retrieval_conformance.compare`: tests, intervals, corrections, effect size.

Each paired test takes one metric's values on the n >= 2 queries counted in both runs,
``run`` (:math:`b_i`) and ``base`` (:math:`a_i`), and looks at the mean of the per-query
differences :math:`d_i = b_i - a_i`: the paired t-test and the bootstrap interval (scipy),
the paired permutation test (:mod:`~retrieval_conformance.comparison.resampling`) and the
effect size :func:`cohens_dz`.  One run alone gets an interval of its mean
(:func:`mean_intervals`).  Each also returns a note when it meets a degenerate case, saying
what was done.  scipy is imported on first use, not with the package.

This module also holds the vocabulary of tests and corrections (:data:`TESTS`,
:data:`TEST_LABELS`, :data:`CORRECTIONS`) that the rest of ``compare`` uses.
"""

from __future__ import annotations

import warnings
from typing import Any, Dict, NamedTuple, Optional, Sequence, Tuple

import numpy as np
from retrieval_conformance.comparison.resampling import permutation_p
from retrieval_conformance.reference.contract.install_hints import install_hint

__all__ = [
    "CORRECTIONS",
    "TESTS",
    "TEST_LABELS",
    "MeanInterval",
    "PairedTestLabel",
    "adjust",
    "benjamini_hochberg",
    "bootstrap_interval",
    "cohens_dz",
    "holm",
    "mean_intervals",
    "paired_t_p",
    "permutation_p",
]


class PairedTestLabel(NamedTuple):
    """How the output names one test.

    Attributes
    ----------
    name : str
        In sentences: ``"permutation test"``.
    column : str
        The header of its p-value column: ``"p (perm.)"``.
    """

    name: str
    column: str


#: the tests ``compare`` can run: name -> how the output names it
TEST_LABELS: Dict[str, PairedTestLabel] = {
    "permutation": PairedTestLabel(name="permutation test", column="p (perm.)"),
    "t": PairedTestLabel(name="t-test", column="p (t)"),
}
#: the tests ``compare`` can run, by name
TESTS = tuple(TEST_LABELS)
#: the multiple-comparison corrections ``compare`` can apply (None: no correction):
#: Holm--Bonferroni (family-wise error rate) and Benjamini--Hochberg (false discovery rate)
CORRECTIONS = (None, "holm", "bh")
#: values held at once by one batch of resamples (bounds the memory of the scipy calls)
_BATCH_VALUES = 2**20


def holm(pvalues: Sequence[float]) -> np.ndarray:
    r"""Holm--Bonferroni adjusted p-values (NaN stays NaN and is not counted in m).

    With the m p-values sorted, :math:`p_{(1)} \le \dots \le p_{(m)}`,

    .. math:: \tilde p_{(i)} = \max_{j \le i} \min\bigl(1, (m - j + 1)\, p_{(j)}\bigr)

    and rejecting where :math:`\tilde p < \alpha` controls the family-wise error rate at
    alpha.  Returned in the input order.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (order.size - i) * p[j]))
        out[j] = running
    return out


def benjamini_hochberg(pvalues: Sequence[float]) -> np.ndarray:
    r"""Benjamini--Hochberg adjusted p-values (NaN stays NaN and is not counted in m).

    With the m p-values sorted, :math:`p_{(1)} \le \dots \le p_{(m)}`,

    .. math:: \tilde p_{(i)} = \min_{j \ge i} \min\bigl(1, \tfrac{m}{j}\, p_{(j)}\bigr)

    and rejecting where :math:`\tilde p < \alpha` keeps the expected share of false
    discoveries among the rejections at alpha (for independent or positively dependent
    tests).  Returned in the input order.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    m = order.size
    running = 1.0
    for i in range(m - 1, -1, -1):
        running = min(running, min(1.0, m / (i + 1) * p[order[i]]))
        out[order[i]] = running
    return out


def adjust(pvalues: Sequence[float], correction: Optional[str]) -> np.ndarray:
    """The p-values after ``correction`` (one of :data:`CORRECTIONS`; None: unchanged)."""
    if correction is None:
        return np.asarray(pvalues, dtype=np.float64)
    return holm(pvalues) if correction == "holm" else benjamini_hochberg(pvalues)


def cohens_dz(run: np.ndarray, base: np.ndarray) -> Tuple[float, Optional[str]]:
    r"""Paired effect size: Cohen's :math:`d_z = \bar d / s_d`, and a note, or None.

    :math:`s_d` is the sample standard deviation of the differences (n - 1 in the
    denominator), the same as the paired t-test's, so :math:`t = d_z \sqrt n`.  Rough
    reading (Cohen): 0.2 small, 0.5 medium, 0.8 large.  NaN with a note when every
    difference is equal (no spread beyond the rounding of the subtraction) or n < 2.
    """
    d = run - base
    # differences equal but for the rounding of b_i - a_i (a constant shift): no spread either
    noise = 16 * np.finfo(np.float64).eps * float(np.max(np.abs(np.concatenate((run, base))), initial=0.0))
    if d.shape[0] < 2 or np.ptp(d) <= noise:
        return float("nan"), "every difference is equal: effect size d_z undefined"
    return float(np.mean(d) / np.std(d, ddof=1)), None


def _mean_difference(x, y, axis=-1):
    """The statistic of every test here: the mean of the paired differences (vectorized)."""
    return np.mean(x - y, axis=axis)


def _scipy_stats():
    """``scipy.stats``, or an ImportError saying which extra brings it."""
    try:
        from scipy import stats
    except ImportError:
        raise ImportError("compare's paired tests and intervals need scipy: " + install_hint("compare")) from None
    return stats


def seeded(resampler: Any, seed: Optional[int]) -> Dict[str, Any]:
    """The keyword seeding a resampling function of ``scipy.stats`` (``bootstrap``,
    ``permutation_test``): ``rng`` from scipy 1.15 on, ``random_state`` before (the newest scipy on
    Python 3.9 and 3.10 has only that one); the same generator either way."""
    import inspect

    name = "rng" if "rng" in inspect.signature(resampler).parameters else "random_state"
    return {name: np.random.default_rng(seed)}


def _batch(n: int) -> int:
    """Resamples per scipy batch for n pairs (at most ``_BATCH_VALUES`` values at once)."""
    return max(1, _BATCH_VALUES // max(n, 1))


def paired_t_p(run: np.ndarray, base: np.ndarray) -> Tuple[float, Optional[str]]:
    """Two-sided paired t-test (``scipy.stats.ttest_rel``): the p-value and a note, or None.

    When every difference is 0 scipy gives NaN; this gives 1.0 with a note.  When every
    difference is the same non-zero value, t is infinite and p is 0 (with a note).
    """
    stats = _scipy_stats()

    if np.all(run == base):
        return 1.0, "all differences are 0: t-test p-value set to 1.0 (scipy gives NaN)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant non-zero differences: t = inf
        p = float(stats.ttest_rel(run, base).pvalue)
    if np.ptp(run - base) == 0:
        return p, "every difference is equal (no variance): t-test p-value is 0"
    return p, None


class MeanInterval(NamedTuple):
    """One run's mean on one metric with its two confidence intervals (:func:`mean_intervals`)."""

    n_queries: int
    mean: float
    t_low: float
    t_high: float
    bootstrap_low: float
    bootstrap_high: float
    bootstrap_method: str


def mean_intervals(values: np.ndarray, confidence: float, n_resamples: int, seed: Optional[int]) -> MeanInterval:
    r"""Confidence intervals of one run's mean over its queries (for "mean ± half-width" in a paper).

    * t interval: :math:`\bar x \pm t_{(1+c)/2,\,n-1}\, s / \sqrt n` with s the sample
      standard deviation (``scipy.stats.t``); the half-width is what a paper prints after ±;
    * bootstrap interval: ``scipy.stats.bootstrap`` of the mean resampling queries, BCa, or
      percentile when BCa is degenerate (every value equal).

    NaN bounds when n < 2.
    """
    stats = _scipy_stats()

    n = values.shape[0]
    mean = float(np.mean(values)) if n else float("nan")
    if n < 2:
        return MeanInterval(n, mean, float("nan"), float("nan"), float("nan"), float("nan"), "none")
    half = float(stats.t.ppf((1 + confidence) / 2, n - 1) * np.std(values, ddof=1) / np.sqrt(n))
    low = high = float("nan")
    method = "none"
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ci = stats.bootstrap(
                (values,),
                np.mean,
                vectorized=True,
                n_resamples=n_resamples,
                confidence_level=confidence,
                method=method,
                batch=_batch(n),
                **seeded(stats.bootstrap, seed),
            ).confidence_interval
        low, high = float(ci.low), float(ci.high)
        degenerate = any(issubclass(w.category, stats.DegenerateDataWarning) for w in caught)
        if np.isfinite([low, high]).all() and not (degenerate and method == "BCa"):
            break
    else:
        low, high, method = float("nan"), float("nan"), "none"
    return MeanInterval(n, mean, mean - half, mean + half, low, high, method)


def bootstrap_interval(
    run: np.ndarray, base: np.ndarray, n_resamples: int, confidence: float, seed: Optional[int]
) -> Tuple[float, float, str, Optional[str]]:
    """Bootstrap interval of the mean difference, resampling the pairs (``scipy.stats.bootstrap``).

    Returns
    -------
    low, high : float
        The interval (NaN when neither method gives finite bounds).
    method : str
        ``"BCa"``; ``"percentile"`` when BCa is degenerate (e.g. every difference equal);
        ``"none"`` when the interval is undefined.
    note : str or None
        What was done, when the method is not BCa.
    """
    stats = _scipy_stats()

    for method in ("BCa", "percentile"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ci = stats.bootstrap(
                (run, base),
                _mean_difference,
                paired=True,
                vectorized=True,
                n_resamples=n_resamples,
                confidence_level=confidence,
                method=method,
                batch=_batch(run.shape[0]),
                **seeded(stats.bootstrap, seed),
            ).confidence_interval
        low, high = float(ci.low), float(ci.high)
        degenerate = any(issubclass(w.category, stats.DegenerateDataWarning) for w in caught)
        if np.isfinite([low, high]).all() and not (degenerate and method == "BCa"):
            note = (
                "BCa interval degenerate (e.g. every difference equal): percentile interval"
                if method == "percentile"
                else None
            )
            return low, high, method, note
    return float("nan"), float("nan"), "none", "bootstrap interval undefined"
