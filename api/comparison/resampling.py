"""The paired permutation test, vectorised: every sign flip for small n, seeded chunks otherwise.

Under H0 the two runs are exchangeable on each query, so each per-query difference
:math:`d_i = b_i - a_i` is as likely to have either sign.  The null distribution of the
statistic :math:`T = \\frac1n \\sum d_i` is that of :math:`T_s = \\frac1n \\sum s_i d_i` over
sign vectors :math:`s \\in \\{\\pm 1\\}^n`.  With a flip mask :math:`m_i \\in \\{0, 1\\}`
(:math:`s_i = 1 - 2 m_i`), :math:`n T_s = \\sum d_i - 2\\, m \\cdot d`: one matrix-vector
product per resample, computed eight queries at a time from a table (one random byte
flips eight), so 10,000 resamples of 3,000 queries take tens of milliseconds.

The p-value follows ``scipy.stats.permutation_test(..., permutation_type="samples")``: two-sided
:math:`p = \\min(1, 2 \\min(p_\\le, p_\\ge))` with a relative tolerance of 100 machine epsilons
around the observed value (so sign vectors whose sums differ only by rounding count as
ties), exact over all :math:`2^n` sign vectors when :math:`2^n \\le` ``n_resamples``, and
otherwise :math:`p_\\le = (\\#\\{T_s \\le T\\} + 1) / (N + 1)` over N random sign vectors.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

__all__ = ["permutation_p"]

#: queries whose 2**n sign sums one table holds; the exact test walks the other queries' sums
#: against it, so its memory stays at 8 MiB for any n
_TABLE_QUERIES = 20
#: sign bits drawn at once by one chunk of random resamples (bounds memory at any n)
_CHUNK_BITS = 1 << 23
#: the tolerance of scipy.stats.permutation_test, in units of float64 epsilon
_TOLERANCE_EPS = 100


def _null_sums_exact(d: np.ndarray) -> np.ndarray:
    """:math:`\\sum_i s_i d_i` for every sign vector s, the all-plus one first (2**n values)."""
    sums = np.zeros(1)
    for value in d:  # each step doubles the table: the sums with +d_i, then with -d_i
        sums = np.concatenate((sums + value, sums - value))
    return sums


def _exact_counts(d: np.ndarray) -> Tuple[int, int, int]:
    """Over all 2**n sign vectors: (#sums <= observed, #sums >= observed, 2**n), within the tolerance.

    The sums of the first queries fill one table; each sign vector of the remaining queries
    adds its sum to the whole table.  The observed sum is the all-plus entry, computed by
    the same additions, so it is one of the null sums to the last bit.
    """
    table = _null_sums_exact(d[:_TABLE_QUERIES])
    rest = _null_sums_exact(d[_TABLE_QUERIES:])
    observed = rest[0] + table[0]
    gamma = abs(observed) * _TOLERANCE_EPS * np.finfo(np.float64).eps
    less = greater = 0
    for offset in rest:
        null = offset + table
        less += int(np.count_nonzero(null <= observed + gamma))
        greater += int(np.count_nonzero(null >= observed - gamma))
    return less, greater, table.shape[0] * rest.shape[0]


#: bit j of byte value v, for every v: the flips one random byte encodes
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.float64)


def _null_sums_random(d: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """``n_resamples`` sums over random sign vectors, drawn chunk by chunk.

    Each random byte flips eight queries at once: a table holds, for every group of eight
    queries and every byte value, the sum of the differences it flips, so one resample costs
    n/8 look-ups.  The chunk length depends only on n, so the same seed gives the same sums.
    """
    n = d.shape[0]
    groups = -(-n // 8)
    padded = np.zeros(groups * 8)
    padded[:n] = d  # the padding differences are 0: flipping them changes nothing
    flipped = padded.reshape(groups, 8) @ _BYTE_BITS.T  # (groups, 256)
    rows = max(1, _CHUNK_BITS // (groups * 8))
    total = float(np.sum(d))
    group_index = np.arange(groups)
    out = np.empty(n_resamples)
    done = 0
    while done < n_resamples:
        count = min(rows, n_resamples - done)
        draws = rng.integers(0, 256, size=(count, groups), dtype=np.uint8)
        out[done : done + count] = total - 2.0 * flipped[group_index, draws].sum(axis=1)
        done += count
    return out


def permutation_p(run: np.ndarray, base: np.ndarray, n_resamples: int, seed: Optional[int]) -> Tuple[float, bool]:
    """Two-sided paired permutation test of the mean difference.

    Parameters
    ----------
    run, base : ndarray of float64, shape (n,)
        The paired per-query values, :math:`b_i` and :math:`a_i`; finite.
    n_resamples : int
        Random sign vectors, when :math:`2^n` exceeds it; otherwise all :math:`2^n` are used.
    seed : int or None
        Seed of ``numpy.random.default_rng`` (unused by the exact test).

    Returns
    -------
    p : float
        The two-sided p-value (NaN when n < 1).
    exact : bool
        True when every sign vector was enumerated.
    """
    d = np.asarray(run, dtype=np.float64) - np.asarray(base, dtype=np.float64)
    n = d.shape[0]
    if n == 0:
        return float("nan"), False
    if 2**n <= n_resamples:  # every sign vector, as scipy does when they fit the budget
        less, greater, total = _exact_counts(d)
        return float(min(1.0, 2.0 * min(less / total, greater / total))), True
    null = _null_sums_random(d, n_resamples, np.random.default_rng(seed))
    observed = float(np.sum(d))
    gamma = abs(observed) * _TOLERANCE_EPS * np.finfo(np.float64).eps
    p_less = (np.count_nonzero(null <= observed + gamma) + 1) / (null.shape[0] + 1)
    p_greater = (np.count_nonzero(null >= observed - gamma) + 1) / (null.shape[0] + 1)
    return float(min(1.0, 2.0 * min(p_less, p_greater))), False
