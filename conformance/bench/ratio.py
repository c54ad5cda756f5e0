"""The ratio gate: candidate/anchor time ratios, the run's noise, and the verdict against history.

Statistic (per benchmark, per run): the candidate's time divided by the anchor's time of the
same round (:mod:`.anchor`), and the median of those ratios over the rounds.  A load that
slows the whole machine slows both and leaves the ratio alone; a slower candidate moves it.

Noise of a run: the relative half-width of the 95% bootstrap interval of the median ratio
(:data:`BOOTSTRAP` resamples of the rounds from a fixed seed); unknown with fewer than
:data:`MIN_NOISE_ROUNDS` rounds (the slow candidates run once).

Verdict (:func:`judge`): the reference is the median of the median ratios of the last
``depth`` saved runs that have one; the change is ``now / reference - 1``; the noise of the
comparison is the larger of the two runs' noises combined (``sqrt(now**2 + then**2)``, the
saved runs' noise taken as the median of theirs) and the spread of the saved medians
themselves (1.4826 x their median absolute deviation in log, with three or more saved runs:
run-to-run noise that rounds inside one run do not show).  The run fails when the change
exceeds ``max(floor, k x noise)``; when no noise is known, the floor doubled.  Only a
slowdown fails; a speed-up is reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

#: bootstrap resamples of the rounds (fixed seed: the same times give the same noise)
BOOTSTRAP = 2000
#: rounds needed to measure a run's noise
MIN_NOISE_ROUNDS = 3
#: defaults of ``bench run``: the floor of the threshold, the noise multiple, the saved runs read
FLOOR, K_NOISE, DEPTH = 0.10, 3.0, 5
#: with no noise measured at all, the threshold is the floor times this
UNMEASURED_FACTOR = 2.0


def bootstrap_noise(ratios: Sequence[float], resamples: int = BOOTSTRAP, seed: int = 0) -> Optional[float]:
    """Relative half-width of the 95% bootstrap interval of the median of ``ratios`` (None: too few)."""
    r = np.asarray(ratios, dtype=np.float64)
    if r.size < MIN_NOISE_ROUNDS:
        return None
    rng = np.random.default_rng(seed)
    medians = np.median(r[rng.integers(0, r.size, size=(resamples, r.size))], axis=1)
    low, high = np.percentile(medians, [2.5, 97.5])
    return float((high - low) / 2 / np.median(r))


def ratio_stats(candidate_times: Sequence[float], anchor_times: Sequence[float]) -> Dict[str, Any]:
    """``ratios`` per round, ``ratio_median``, ``ratio_noise`` (relative; None with few rounds)."""
    if len(candidate_times) != len(anchor_times) or not candidate_times:
        raise ValueError(
            f"expected one anchor time per candidate round, got {len(anchor_times)} anchor and "
            f"{len(candidate_times)} candidate times"
        )
    ratios = [c / a for c, a in zip(candidate_times, anchor_times)]
    return {
        "ratios": ratios,
        "ratio_median": float(np.median(ratios)),
        "ratio_noise": bootstrap_noise(ratios),
        "ratio_rounds": len(ratios),
    }


def _robust_log_spread(values: Sequence[float]) -> Optional[float]:
    """1.4826 x the median absolute deviation of log(values): a relative spread (None below 3 values)."""
    if len(values) < 3:
        return None
    logs = np.log(np.asarray(values, dtype=np.float64))
    return float(1.4826 * np.median(np.abs(logs - np.median(logs))))


@dataclass
class Verdict:
    """The gate's decision on one benchmark."""

    key: Tuple[str, str]
    status: str  # "new", "pass", "FAIL", "faster"
    ratio: float
    reference: Optional[float] = None
    change: Optional[float] = None
    noise: Optional[float] = None
    threshold: Optional[float] = None
    history: int = 0
    run_noise: Optional[float] = None

    def line(self) -> str:
        name = f"{self.key[0]} / {self.key[1]}"
        noise = "unknown" if self.noise is None else f"{self.noise:.1%}"
        if self.status == "new":
            return f"  new   {name}: ratio {self.ratio:.4g} (no saved ratio to compare with)"
        return (
            f"  {self.status:<5} {name}: ratio {self.ratio:.4g} vs {self.reference:.4g} "
            f"(median of {self.history} saved) {self.change:+.1%}, threshold {self.threshold:.1%} "
            f"(noise {noise})"
        )


def judge(
    key: Tuple[str, str],
    now: Dict[str, Any],
    history: Sequence[Dict[str, Any]],
    floor: float = FLOOR,
    k: float = K_NOISE,
) -> Verdict:
    """The verdict on one benchmark: ``now`` and each of ``history`` carry ``ratio_median`` and ``ratio_noise``."""
    ratio = float(now["ratio_median"])
    if not history:
        return Verdict(key, "new", ratio, run_noise=now.get("ratio_noise"))
    medians = [float(h["ratio_median"]) for h in history]
    reference = float(np.median(medians))
    change = ratio / reference - 1.0
    then = [h["ratio_noise"] for h in history if h.get("ratio_noise") is not None]
    parts = [x for x in (now.get("ratio_noise"), float(np.median(then)) if then else None) if x is not None]
    within = math.sqrt(sum(x * x for x in parts)) if parts else None
    between = _robust_log_spread(medians)
    known = [x for x in (within, between) if x is not None]
    noise = max(known) if known else None
    threshold = max(floor, k * noise) if noise is not None else UNMEASURED_FACTOR * floor
    status = "FAIL" if change > threshold else "faster" if change < -threshold else "pass"
    return Verdict(key, status, ratio, reference, change, noise, threshold, len(history), now.get("ratio_noise"))


def _ratios_of(data: Dict[str, Any]) -> Dict[Tuple[str, str], Dict[str, Any]]:
    """{(group, candidate): extra_info} of the benchmarks of one run that carry a ratio."""
    out = {}
    for bench in data.get("benchmarks", []):
        info = bench.get("extra_info") or {}
        if info.get("ratio_median") is not None:
            out[(bench.get("group") or "?", info.get("candidate") or bench.get("name", "?"))] = info
    return out


def ratio_gate(
    run: Dict[str, Any], saved: Iterable[Dict[str, Any]], floor: float = FLOOR, k: float = K_NOISE, depth: int = DEPTH
) -> List[Verdict]:
    """Verdicts on every benchmark of ``run`` against the ``saved`` runs (oldest first; the last
    ``depth`` with a ratio for the benchmark are read)."""
    saved_ratios = [_ratios_of(data) for data in saved]
    verdicts = []
    for key, info in sorted(_ratios_of(run).items()):
        history = [s[key] for s in saved_ratios if key in s][-depth:] if depth > 0 else []
        verdicts.append(judge(key, info, history, floor, k))
    return verdicts


def load_range(run: Dict[str, Any]) -> Optional[Tuple[float, float]]:
    """The lowest and highest 1-minute load average seen by the run's benchmarks (None: not recorded)."""
    values = []
    for bench in run.get("benchmarks", []):
        info = bench.get("extra_info") or {}
        for key in ("loadavg_before", "loadavg"):
            if info.get(key):
                values.append(float(info[key][0]))
    return (min(values), max(values)) if values else None


def format_verdicts(verdicts: Sequence[Verdict], run: Dict[str, Any], floor: float, k: float) -> str:
    """The gate's report: one line per benchmark, the failures first, and the load average."""
    order = {"FAIL": 0, "faster": 1, "pass": 2, "new": 3}
    lines = [
        f"ratio gate: candidate / anchor time per round; fails when the median ratio grew by more than "
        f"max({floor:.0%}, {k:g} x noise) against the saved history"
    ]
    load = load_range(run)
    if load is not None:
        lines.append(f"load average (1 min) during the run: {load[0]:.2f} .. {load[1]:.2f}")
    lines += [v.line() for v in sorted(verdicts, key=lambda v: (order[v.status], v.key))]
    failed = sum(v.status == "FAIL" for v in verdicts)
    lines.append(
        f"ratio gate: {'FAILED, ' + str(failed) + ' slower' if failed else 'passed'} ({len(verdicts)} benchmarks)"
    )
    return "\n".join(lines)
