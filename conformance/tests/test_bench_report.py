"""The benchmark tooling: peak memory in a child process, the summary, the plot, the regression gate."""

from __future__ import annotations

import json
import os
from typing import Any, Dict

import numpy as np
import pytest
from retrieval_conformance.conformance.bench import workloads as W


def allocate_256_mib(workload):
    """A stand-in for a lab's evaluation function: holds 256 MiB while it runs."""
    block = np.ones(256 * 2**20, dtype=np.uint8)
    return int(block[::4096].sum())


def test_peak_memory_is_measured_in_a_child_process(tmp_path):
    from retrieval_conformance.conformance.bench.memory import measure_peak_memory

    w = W.build("oxford5k", "smoke")
    directory = w.save(str(tmp_path / "w"))
    big = measure_peak_memory(
        directory, "py:retrieval_conformance.conformance.tests.test_bench_report:allocate_256_mib"
    )
    assert big.get("memory_error") is None, big
    assert 250 <= big["peak_extra_mib"] < 400, big
    small = measure_peak_memory(directory, "numpy")
    assert small["peak_extra_mib"] < 100, small
    broken = measure_peak_memory(directory, "py:no_such_module_rc:f")
    assert broken["peak_extra_mib"] is None and "no_such_module_rc" in broken["memory_error"]


def _fake_run(medians: Dict[str, Dict[str, float]], memory=None) -> Dict[str, Any]:
    benches = []
    for workload, cands in medians.items():
        for cand, med in cands.items():
            info = {
                "workload": workload,
                "candidate": cand,
                "title": f"{workload} title",
                "queries": 10,
                "peak_extra_mib": (memory or {}).get((workload, cand)),
            }
            benches.append(
                {
                    "group": f"{workload} 10x20",
                    "name": f"test_full_scale[{workload}-{cand}]",
                    "fullname": f"x::test_full_scale[{workload}-{cand}]",
                    "extra_info": info,
                    "stats": {"median": med, "rounds": 1},
                }
            )
    return {"benchmarks": benches, "datetime": "2026-01-01T00:00:00", "machine_info": {}, "commit_info": {}}


def test_report_prints_ratios_memory_and_targets():
    from retrieval_conformance.conformance.bench.report import format_report

    run = _fake_run(
        {
            "cifar10-all": {"c": 0.1, "loop": 7.6, "numpy": 0.5},
            "market1501": {"c": 0.2, "argsort": 0.6, "full-matrix": 0.7, "loop": 5.0},
        },
        memory={("market1501", "c"): 250.0},
    )
    text = format_report(run)
    assert "76.0x" in text  # 7.6 / 0.1
    assert "0.33x" in text  # c / argsort at Market scale
    assert "250 MiB" in text
    assert "PASS  C >= 50x the per-query loop at CIFAR-10 scale (mAP@ALL): 76.0x" in text
    assert "PASS  C <= 0.5x a bare np.argsort" in text
    assert "MISS  C >= 4x faster than the torchreid-style evaluator (Market-1501): 3.5x" in text
    assert "MISS  C peak extra memory < 200 MB" in text


def test_report_names_the_headline_metric_of_each_workload():
    from retrieval_conformance.conformance.bench.report import format_report

    run = _fake_run({"graded-ndcg10": {"c": 0.1, "full-matrix": 1.2}, "oxford5k": {"c": 0.01}})
    for bench in run["benchmarks"]:
        graded = bench["extra_info"]["workload"] == "graded-ndcg10"
        bench["extra_info"].update({"metric": "ndcg_at_k", "value": 0.5889} if graded else {"map": 0.75})
    text = format_report(run)
    assert text.count("nDCG@k") == 1 and "0.5889" in text and "12.0x" in text  # 1.2 / 0.1 vs full-matrix
    assert text.count("   mAP") == 1 and "0.7500" in text  # runs saved before "value" carry "map"


def test_report_and_plot_commands(tmp_path, capsys):
    from retrieval_conformance.conformance.bench import cli, runs

    storage = tmp_path / "store"
    assert cli.bench_main(["report", "--storage", str(storage)]) == 2
    assert cli.bench_main(["plot", "--storage", str(storage)]) == 2
    for c_median in [0.10, 0.11, 0.30]:
        runs.save_run(str(storage), _fake_run({"market1501": {"c": c_median, "argsort": 0.6}}))
    assert [os.path.basename(p)[:4] for p in runs.saved_runs(str(storage))] == ["0001", "0002", "0003"]
    capsys.readouterr()
    assert cli.bench_main(["report", "--storage", str(storage)]) == 0
    assert "0003_" in capsys.readouterr().out
    page = tmp_path / "results.md"
    assert cli.bench_main(["report", "--storage", str(storage), "--markdown", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Benchmark results") and "## 0003_" in text and "speed goals:" in text
    assert "issue" not in text  # product output never speaks of the project's issues
    out = tmp_path / "history.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:  # the missing extra is a usage error naming its install command
        assert cli.bench_main(["plot", "--storage", str(storage), "--out", str(out)]) == 2
        assert "pip install 'retrieval-conformance[plot]'" in capsys.readouterr().err
        assert not out.exists()
    else:
        assert cli.bench_main(["plot", "--storage", str(storage), "--out", str(out)]) == 0
        assert out.exists() and out.stat().st_size > 1000


@pytest.mark.slow
def test_gate_saves_first_then_compares(tmp_path, capsys):
    """First run: no saved run, so no compare (a usage error otherwise) and the run is saved.
    A saved run that was much faster makes the next run fail under either gate (the ratio gate by
    default, the median gate when asked), and a failed run is not saved."""
    from retrieval_conformance.conformance.bench import cli, runs

    storage = str(tmp_path / "store")
    args = ["run", "--storage", storage, "--no-memory", "-k", "oxford5k-c or oxford5k-argsort"]
    assert cli.bench_main(args) == 0
    out = capsys.readouterr().out
    assert "this run becomes the baseline" in out and "saved as" in out
    (first,) = runs.saved_runs(storage)
    data = runs.load_run(first)
    from retrieval_conformance.reference.contract import registry

    expected = {"argsort"} | ({"c"} if registry.unavailable_reason("c") is None else set())
    assert {b["extra_info"]["candidate"] for b in data["benchmarks"]} == expected
    for b in data["benchmarks"]:  # the ratio to the anchor and the load are recorded per benchmark
        info = b["extra_info"]
        assert len(info["ratios"]) == b["stats"]["rounds"] == len(info["anchor_times"]) >= 3
        assert info["ratio_noise"] is not None and len(info["loadavg"]) == 3
    for b in data["benchmarks"]:  # pretend the saved run was 100x faster, in ratio and in time
        b["extra_info"]["ratio_median"] /= 100
        for key in ("min", "max", "mean", "median"):
            b["stats"][key] /= 100
    with open(first, "w") as fh:
        json.dump(data, fh)
    assert cli.bench_main(args) != 0
    out = capsys.readouterr().out
    assert "ratio gate: FAILED" in out and "not saved" in out
    assert cli.bench_main(args + ["--gate", "median"]) != 0
    out = capsys.readouterr().out
    assert "comparing with the last saved run 0001_" in out and "not saved" in out
    assert len(runs.saved_runs(storage)) == 1


def test_report_shows_the_anchor_ratio_the_load_and_the_scaling_exponent():
    from retrieval_conformance.conformance.bench.report import format_report, scaling_fits, summarise

    sizes = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000, "4m": 4_000_000}
    # c grows like N, plain numpy like N**1.2 (synthetic medians)
    run = _fake_run(
        {f"scaling-floats-{s}": {"c": 1e-6 * n, "plain-numpy": 1e-7 * n**1.2} for s, n in sizes.items()},
        memory={(f"scaling-floats-{s}", "c"): n / 1e5 for s, n in sizes.items()},
    )
    for bench in run["benchmarks"]:
        info = bench["extra_info"]
        info["gallery"] = sizes[info["workload"].rsplit("-", 1)[1]]
        info.update(
            {"ratio_median": 2.5, "ratio_noise": 0.04, "loadavg": [3.5, 2.0, 1.0], "loadavg_before": [2.25, 2.0, 1.0]}
        )
    fits = scaling_fits(summarise(run))
    assert fits[("scaling-floats", "c")]["exponent"] == pytest.approx(1.0)
    assert fits[("scaling-floats", "plain-numpy")]["exponent"] == pytest.approx(1.2)
    text = format_report(run)
    assert "load average (1 min) during the run: 2.25 .. 3.50" in text
    assert "2.5 ±4%" in text and "/anchor ±noise" in text
    assert "scaling-floats  c             a = 1.00  (N = 10k, 100k, 1M, 4M; MiB: 0, 1, 10, 40)" in text
    one = _fake_run({"scaling-codes-10k": {"c": 0.1}})  # a single size: no fit
    assert scaling_fits(summarise(one)) == {}
