"""The paired tests behind :func:`retrieval_conformance.compare`, and the Holm correction.

Each test takes one metric's values on the n >= 2 queries counted in both runs, ``run``
(:math:`b_i`) and ``base`` (:math:`a_i`), and looks at the mean of the per-query
differences :math:`d_i = b_i - a_i` with scipy: the paired permutation test, the paired
t-test and the bootstrap interval.  The t-test and the interval also return a note when
they meet a degenerate case, saying what was done.  scipy is imported on first use, not
with the package.

This module also holds the vocabulary of tests and corrections (:data:`TESTS`,
:data:`TEST_LABELS`, :data:`CORRECTIONS`) that the rest of ``compare`` uses.
"""
from __future__ import annotations

import warnings
from typing import Dict, NamedTuple, Optional, Sequence, Tuple

import numpy as np

__all__ = ["CORRECTIONS", "TESTS", "TEST_LABELS", "PairedTestLabel", "bootstrap_interval", "holm",
           "paired_t_p", "permutation_p"]


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
#: the multiple-comparison corrections ``compare`` can apply (None: no correction)
CORRECTIONS = (None, "holm")
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


def _mean_difference(x, y, axis=-1):
    """The statistic of every test here: the mean of the paired differences (vectorized)."""
    return np.mean(x - y, axis=axis)


def _batch(n: int) -> int:
    """Resamples per scipy batch for n pairs (at most ``_BATCH_VALUES`` values at once)."""
    return max(1, _BATCH_VALUES // max(n, 1))


def permutation_p(run: np.ndarray, base: np.ndarray, n_resamples: int, seed: Optional[int]) -> Tuple[float, bool]:
    """Two-sided paired permutation test of the mean difference (scipy, sign flips).

    Returns
    -------
    p : float
        The p-value of ``scipy.stats.permutation_test(..., permutation_type="samples")``
        with a fresh ``numpy.random.default_rng(seed)``.
    exact : bool
        True when scipy enumerated all ``2**n`` sign flips (``2**n <= n_resamples``).
    """
    from scipy import stats

    n = run.shape[0]
    res = stats.permutation_test((run, base), _mean_difference, permutation_type="samples",
                                 vectorized=True, n_resamples=n_resamples, alternative="two-sided",
                                 batch=_batch(n), rng=np.random.default_rng(seed))
    return float(res.pvalue), n <= 62 and 2**n <= n_resamples


def paired_t_p(run: np.ndarray, base: np.ndarray) -> Tuple[float, Optional[str]]:
    """Two-sided paired t-test (``scipy.stats.ttest_rel``): the p-value and a note, or None.

    When every difference is 0 scipy gives NaN; this gives 1.0 with a note.  When every
    difference is the same non-zero value, t is infinite and p is 0 (with a note).
    """
    from scipy import stats

    if np.all(run == base):
        return 1.0, "all differences are 0: t-test p-value set to 1.0 (scipy gives NaN)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant non-zero differences: t = inf
        p = float(stats.ttest_rel(run, base).pvalue)
    if np.ptp(run - base) == 0:
        return p, "every difference is equal (no variance): t-test p-value is 0"
    return p, None


def bootstrap_interval(run: np.ndarray, base: np.ndarray, n_resamples: int, confidence: float,
                       seed: Optional[int]) -> Tuple[float, float, str, Optional[str]]:
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
    from scipy import stats

    for method in ("BCa", "percentile"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ci = stats.bootstrap((run, base), _mean_difference, paired=True, vectorized=True,
                                 n_resamples=n_resamples, confidence_level=confidence, method=method,
                                 batch=_batch(run.shape[0]), rng=np.random.default_rng(seed)).confidence_interval
        low, high = float(ci.low), float(ci.high)
        degenerate = any(issubclass(w.category, stats.DegenerateDataWarning) for w in caught)
        if np.isfinite([low, high]).all() and not (degenerate and method == "BCa"):
            note = "BCa interval degenerate (e.g. every difference equal): percentile interval" \
                if method == "percentile" else None
            return low, high, method, note
    return float("nan"), float("nan"), "none", "bootstrap interval undefined"
