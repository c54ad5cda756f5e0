"""The ratio gate on synthetic timings: a slowdown fails, identical code under noise and load passes.

No test here times anything: the candidate and anchor times are drawn from a fixed-seed
generator that models a shared machine (a load factor per run that slows candidate and
anchor alike, and independent jitter per round).
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
from retrieval_conformance.conformance.bench import ratio as R

CANDIDATE, ANCHOR = 0.20, 0.05  # seconds per round on a quiet machine


def simulated_times(rng, rounds=15, slowdown=1.0, load=1.0, jitter=0.08):
    """Candidate and anchor times of one run: both scaled by the run's load, each round jittered."""
    cand = CANDIDATE * slowdown * load * rng.lognormal(0.0, jitter, rounds)
    anch = ANCHOR * load * rng.lognormal(0.0, jitter, rounds)
    return list(cand), list(anch)


def simulated_run(rng, slowdown=1.0, load=1.0, rounds=15, jitter=0.08, candidates=("c",)):
    benches = []
    for cand in candidates:
        c, a = simulated_times(rng, rounds, slowdown, load, jitter)
        info = {
            "workload": "scores-map",
            "candidate": cand,
            "loadavg": [1.9 * load, 1.5, 1.2],
            "loadavg_before": [1.8 * load, 1.5, 1.2],
        }
        info.update(R.ratio_stats(c, a))
        benches.append(
            {
                "group": "scores-map 1000x50000",
                "name": f"test_full_scale[scores-map-{cand}]",
                "extra_info": info,
                "stats": {"median": float(np.median(c)), "rounds": rounds},
            }
        )
    return {"benchmarks": benches, "datetime": "2026-01-01T00:00:00", "machine_info": {}, "commit_info": {}}


def history(seed=0, runs=5, **kw):
    rng = np.random.default_rng(seed)
    # the saved runs met different loads: quiet, busy, very busy (1.0 .. 1.8x slower machine)
    return [simulated_run(rng, load=load, **kw) for load in (1.0, 1.4, 1.1, 1.8, 1.2)[:runs]]


def test_bootstrap_noise_measures_the_spread_of_the_rounds():
    assert R.bootstrap_noise([2.0, 2.0, 2.0, 2.0]) == 0.0
    assert R.bootstrap_noise([2.0, 2.1]) is None  # too few rounds to say
    rng = np.random.default_rng(1)
    quiet = R.bootstrap_noise(rng.lognormal(0, 0.02, 15))
    noisy = R.bootstrap_noise(rng.lognormal(0, 0.20, 15))
    assert 0 < quiet < noisy < 0.5
    assert R.bootstrap_noise([1.0, 1.2, 0.9, 1.1]) == R.bootstrap_noise([1.0, 1.2, 0.9, 1.1])  # fixed seed
    stats = R.ratio_stats([0.2, 0.4, 0.3], [0.1, 0.1, 0.1])
    assert stats["ratios"] == pytest.approx([2.0, 4.0, 3.0]) and stats["ratio_median"] == pytest.approx(3.0)
    assert stats["ratio_rounds"] == 3 and stats["ratio_noise"] > 0
    with pytest.raises(ValueError, match="one anchor time per candidate round"):
        R.ratio_stats([0.2, 0.3], [0.1])


def test_a_2x_slowdown_fails():
    saved = history()
    now = simulated_run(np.random.default_rng(9), slowdown=2.0, load=1.3)
    (v,) = R.ratio_gate(now, saved)
    assert v.status == "FAIL" and v.change > 0.8 and v.history == 5
    assert v.threshold >= R.FLOOR and v.noise is not None


def test_identical_code_with_noise_and_load_passes():
    """The same code on a machine 1.6x busier: the median gate would fail (+60%), the ratio gate passes."""
    saved = history()
    for seed in range(20):
        now = simulated_run(np.random.default_rng(100 + seed), load=1.6, jitter=0.10)
        (v,) = R.ratio_gate(now, saved)
        assert v.status == "pass", v.line()
        median_change = now["benchmarks"][0]["stats"]["median"] / saved[-1]["benchmarks"][0]["stats"]["median"] - 1
        assert median_change > 0.10  # what --gate median would have failed on


def test_the_threshold_follows_the_measured_noise():
    saved = history(jitter=0.30)  # a very noisy machine: wide intervals
    now = simulated_run(np.random.default_rng(5), slowdown=1.25, jitter=0.30)
    (v,) = R.ratio_gate(now, saved)
    assert v.noise > 0.05 and v.threshold == pytest.approx(R.K_NOISE * v.noise)
    assert v.threshold > 0.25 and v.status == "pass"  # 25% slower is within this machine's noise
    quiet = history(jitter=0.01)
    (v,) = R.ratio_gate(simulated_run(np.random.default_rng(5), slowdown=1.25, jitter=0.01), quiet)
    assert v.threshold == R.FLOOR and v.status == "FAIL"  # on a quiet machine the floor decides


def test_noise_and_load_are_reported():
    saved = history(candidates=("c", "numpy"))
    now = simulated_run(np.random.default_rng(3), slowdown=2.0, candidates=("c", "numpy"))
    now["benchmarks"][1]["extra_info"].update(R.ratio_stats([0.2] * 15, [0.05] * 15))  # numpy unchanged
    verdicts = R.ratio_gate(now, saved)
    text = R.format_verdicts(verdicts, now, R.FLOOR, R.K_NOISE)
    assert re.search(r"load average \(1 min\) during the run: \d+\.\d\d \.\. \d+\.\d\d", text)
    first, second = text.splitlines()[2:4]
    assert first.startswith("  FAIL  scores-map 1000x50000 / c: ratio") and "noise " in first
    assert re.search(r"noise \d+\.\d%\)", first) and "(median of 5 saved)" in first
    assert second.startswith("  pass ")
    assert text.endswith("ratio gate: FAILED, 1 slower (2 benchmarks)")


def test_first_run_single_rounds_and_speedups():
    now = simulated_run(np.random.default_rng(0))
    (v,) = R.ratio_gate(now, [])
    assert v.status == "new" and "no saved ratio" in v.line()
    # one round now and one saved run: no noise known, the floor doubled
    one = R.judge(("g", "c"), {"ratio_median": 4.5, "ratio_noise": None}, [{"ratio_median": 4.0, "ratio_noise": None}])
    assert one.noise is None and one.threshold == pytest.approx(R.UNMEASURED_FACTOR * R.FLOOR)
    assert one.status == "pass" and "noise unknown" in one.line()
    fast = R.judge(("g", "c"), {"ratio_median": 2.0, "ratio_noise": 0.01}, [{"ratio_median": 4.0, "ratio_noise": 0.01}])
    assert fast.status == "faster" and fast.change == pytest.approx(-0.5)
    # runs saved before the ratio gate (no ratio) are no history; only the last `depth` count
    old = {"benchmarks": [{"group": "scores-map 1000x50000", "extra_info": {"candidate": "c"}, "stats": {}}]}
    (v,) = R.ratio_gate(now, [old])
    assert v.status == "new"
    (v,) = R.ratio_gate(now, history(), depth=2)
    assert v.history == 2


def test_gate_kind_follows_the_options():
    from retrieval_conformance.conformance.bench.gate import gate_kind

    assert gate_kind(SimpleNamespace(gate=None, compare_fail=None)) == "ratio"
    assert gate_kind(SimpleNamespace(gate=None, compare_fail="median:10%")) == "median"
    assert gate_kind(SimpleNamespace(gate=None, compare_fail="none")) == "none"
    assert gate_kind(SimpleNamespace(gate="ratio", compare_fail="median:5%")) == "ratio"


def test_bench_run_applies_the_ratio_gate_and_saves_only_a_passing_run(tmp_path, monkeypatch, capsys):
    """``bench run`` end to end with pytest replaced by a writer of synthetic runs."""
    from retrieval_conformance.conformance.bench import cli, gate, runs

    storage = str(tmp_path / "store")
    planned = iter([history()[0], history()[1], simulated_run(np.random.default_rng(7), slowdown=2.0)])
    commands = []

    def fake_pytest(cmd, env=None):
        commands.append(cmd)
        (path,) = [c.split("=", 1)[1] for c in cmd if c.startswith("--benchmark-json=")]
        with open(path, "w") as fh:
            json.dump(next(planned), fh)
        return 0

    monkeypatch.setattr(gate.subprocess, "call", fake_pytest)
    args = ["run", "--storage", storage, "--no-memory", "-k", "scores-map"]
    assert cli.bench_main(args) == 0
    out = capsys.readouterr().out
    assert "this run becomes the baseline" in out and "saved as" in out and "load average at the start" in out
    assert cli.bench_main(args) == 0  # same code, another load
    out = capsys.readouterr().out
    assert "ratio gate: passed (1 benchmarks)" in out and "/anchor ±noise" in out
    assert cli.bench_main(args) == 1  # 2x slower
    out = capsys.readouterr().out
    assert "FAIL  scores-map 1000x50000 / c" in out and "not saved" in out
    assert len(runs.saved_runs(storage)) == 2
    assert not any(c.startswith("--benchmark-compare") for cmd in commands for c in cmd)
    # the median gate stays selectable: pytest-benchmark's own comparison
    planned = iter([history()[1]])
    assert cli.bench_main(args + ["--gate", "median", "--compare-fail", "median:5%"]) == 0
    assert "--benchmark-compare-fail=median:5%" in commands[-1] and "--benchmark-compare" in commands[-1]


def test_bench_gate_command_on_runs_of_your_own_tests(tmp_path, capsys):
    """``bench gate``: a run written by ``--benchmark-json`` (or the latest saved) against the saved runs."""
    from retrieval_conformance.conformance.bench import cli, runs

    storage = str(tmp_path / "store")
    assert cli.bench_main(["gate", "--storage", storage]) == 2
    for data in history():
        runs.save_run(storage, data)
    capsys.readouterr()
    assert cli.bench_main(["gate", "--storage", storage]) == 0  # the latest saved run against the 4 before it
    assert "(median of 4 saved)" in capsys.readouterr().out
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(simulated_run(np.random.default_rng(4), slowdown=2.0)))
    assert cli.bench_main(["gate", str(slow), "--storage", storage, "--save"]) == 1
    assert "FAIL" in capsys.readouterr().out and len(runs.saved_runs(storage)) == 5  # a failed run is not saved
    same = tmp_path / "same.json"
    same.write_text(json.dumps(simulated_run(np.random.default_rng(4), load=1.5)))
    assert cli.bench_main(["gate", str(same), "--storage", storage, "--save"]) == 0
    assert "saved as" in capsys.readouterr().out and len(runs.saved_runs(storage)) == 6
