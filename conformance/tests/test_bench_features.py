"""The feature benchmarks (``conformance/bench/features/``): one run of every section, saved, and the
page written from it, with each figure next to its target; an absent section says "not measured"."""

from __future__ import annotations

import json
import re

import pytest
from retrieval_conformance.conformance.bench.cli import bench_main
from retrieval_conformance.conformance.bench.features.figures import check_figures, format_amount, judge
from retrieval_conformance.conformance.bench.features.page import feature_page
from retrieval_conformance.conformance.bench.features.registry import SECTIONS, Section, run_features
from retrieval_conformance.conformance.bench.runs import load_feature_run, load_run, saved_feature_runs
from retrieval_conformance.conformance.support.distributed_support import requires_gloo

HERE = "retrieval_conformance.conformance.tests.test_bench_features"


def fake_figures(scale):
    """A section's figures as the benchmark modules return them (numbers of any real type)."""
    import numpy as np

    return {
        "mAP-only CIFAR-10 against the loop": {
            "value": np.float64(62.5),
            "unit": "x the loop",
            "target": ">= 60",
            "baseline": {"name": "per-query loop", "value": 3100, "unit": "ms"},
        },
        "pass against the microkernel": {
            "value": 1.8,
            "unit": "x microkernel",
            "target": "<= 1.5x",
            "baseline": "bare XOR + popcount + counts",
            "note": f"at {scale} scale",
        },
        "bytes sent per rank": {"value": 12_345_678 / 1e6, "unit": "MB"},
        "two threads, contended": {"value": None, "unit": "x one thread", "target": "≥ 1.0", "note": "no second core"},
    }


def broken_figures(scale):
    raise RuntimeError("the microkernel disagrees with the pass")


def wrong_shape_figures(scale):
    return {"speed": {"value": 3.0, "unit": "x", "goal": ">= 2"}}


def needs_torch_figures(scale):
    raise ModuleNotFoundError("No module named 'torch'", name="torch")


def broken_import_figures(scale):
    import retrieval_conformance.conformance.bench.no_such_helper_rc  # noqa: F401 (a bug of the section)


FAKE = Section("fake", HERE, "fake_figures", "A measured section")
ABSENT = Section(
    "absent",
    "retrieval_conformance.conformance.bench.no_such_benchmark_rc",
    "figures",
    "A section whose module is absent",
)
BROKEN = Section("broken", HERE, "broken_figures", "A section that raises")
WRONG = Section("wrong", HERE, "wrong_shape_figures", "A section returning an unknown key")
NO_FUNCTION = Section("nofunction", HERE, "no_such_function", "A section without its function")


def _saved_page(tmp_path, monkeypatch, sections, scale="full"):
    """Run ``sections`` through ``bench features`` (registry patched), then ``bench report --features``."""
    from retrieval_conformance.conformance.bench.features import registry

    monkeypatch.setattr(registry, "SECTIONS", tuple(sections))
    storage = str(tmp_path / "store")
    status = bench_main(["features", "--scale", scale, "--storage", storage])
    out = tmp_path / "page.md"
    assert bench_main(["report", "--features", "--storage", storage, "--markdown", str(out)]) == 0
    return status, out.read_text(encoding="utf-8"), saved_feature_runs(storage)


def test_page_from_a_saved_run_shows_figures_targets_and_absent_sections(tmp_path, monkeypatch):
    status, page, saved = _saved_page(tmp_path, monkeypatch, [FAKE, ABSENT])
    assert status == 0 and len(saved) == 1
    assert (
        "| mAP-only CIFAR-10 against the loop | 62.5x the loop | ≥ 60x the loop | met | per-query loop: "
        "3,100 ms |  |" in page
    )
    assert (
        "| pass against the microkernel | 1.8x microkernel | ≤ 1.5x microkernel | **missed** | "
        "bare XOR + popcount + counts | at full scale |" in page
    )
    assert "| bytes sent per rank | 12.3 MB | – | – | – |  |" in page
    assert "| two threads, contended | – | ≥ 1x one thread | – | – | no second core |" in page
    assert (
        "## A section whose module is absent\n\nNot measured: its benchmark module "
        "retrieval_conformance.conformance.bench.no_such_benchmark_rc is not part of this installation." in page
    )
    assert "| targets | 1 met, 1 missed, 2 figures without a target |" in page
    assert "| sections | 1 measured, 1 not measured |" in page
    assert re.search(
        r"\| load average \(1, 5, 15 min\) \| [\d.]+, [\d.]+, [\d.]+ at the start; [\d.]+, [\d.]+, "
        r"[\d.]+ at the end \|",
        page,
    )
    assert "| machine | " in page and " cores" in page
    record = load_feature_run(saved[0])
    assert [s["status"] for s in record["sections"]] == ["measured", "not measured"]
    assert record["sections"][0]["figures"]["mAP-only CIFAR-10 against the loop"]["value"] == 62.5


def test_a_failing_section_is_recorded_and_the_run_goes_on(tmp_path, monkeypatch, capsys):
    status, page, saved = _saved_page(tmp_path, monkeypatch, [BROKEN, WRONG, NO_FUNCTION, FAKE])
    assert status == 1 and len(saved) == 1  # saved: the failure is part of the record
    assert (
        "Failed: retrieval_conformance.conformance.tests.test_bench_features.broken_figures('full'): "
        "RuntimeError: the microkernel disagrees with the pass." in page
    )
    assert "figure 'speed': unknown key(s) 'goal'; a figure holds value, unit, target, baseline, note" in page
    assert f"Failed: {HERE} has no function no_such_function(scale)." in page
    assert "| mAP-only CIFAR-10 against the loop | 62.5x the loop |" in page  # the section after them ran
    assert "| sections | 1 measured, 3 failed |" in page


def test_smoke_scale_judges_no_target(tmp_path, monkeypatch):
    _, page, _ = _saved_page(tmp_path, monkeypatch, [FAKE], scale="smoke")
    assert "| mAP-only CIFAR-10 against the loop | 62.5x the loop | ≥ 60x the loop | not judged |" in page
    assert "| targets | not judged at this scale |" in page
    assert page.count("| met |") == page.count("| figure | value | target | met |") == 1  # the heading only
    assert "missed" not in page


def test_product_text_has_no_date_hash_or_issue_outside_the_run_record(tmp_path, monkeypatch):
    _, page, _ = _saved_page(tmp_path, monkeypatch, [FAKE, ABSENT, BROKEN])
    record_lines = [line for line in page.splitlines() if line.startswith("| run record |")]
    assert len(record_lines) == 1 and re.search(r"\d{4}-\d\d-\d\dT", record_lines[0])
    rest = "\n".join(line for line in page.splitlines() if not line.startswith("| run record |"))
    assert not re.search(r"\d{4}-\d\d-\d\d", rest)
    assert not re.search(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b", rest)
    assert "issue" not in page.lower()
    titles = " ".join(s.title for s in SECTIONS)
    assert "issue" not in titles.lower()


def test_registry_names_every_section_of_the_page():
    """The six sections, in order, each a module and its figures(scale); curves and distributed are ours."""
    assert [(s.name, s.module.rsplit(".", 1)[1], s.function) for s in SECTIONS] == [
        ("metrics-subset", "metrics_subset", "figures"),
        ("hashing-pass", "hashing_pass", "figures"),
        ("threads", "threads", "figures"),
        ("float-pass", "float_pass", "figures"),
        ("curves", "curves", "figures"),
        ("distributed", "distributed", "figures"),
    ]
    import importlib

    for name in ("curves", "distributed"):
        section = next(s for s in SECTIONS if s.name == name)
        assert callable(getattr(importlib.import_module(section.module), section.function))


def test_float_pass_figures_at_smoke_scale_are_valid_figures():
    from retrieval_conformance.conformance.bench.float_pass import EMBEDDING_LABEL, figures
    from retrieval_conformance.conformance.support.c_test_support import load_c_backend

    load_c_backend()  # skips without the C library
    checked = check_figures(figures("smoke"), "float_pass")
    assert len(checked) == 4
    embeddings = checked.pop(EMBEDDING_LABEL)
    assert embeddings["value"] > 0 and embeddings["unit"] == "x numpy float32 GEMM + evaluate"
    assert embeddings["target"] == "<= 1.5x" and judge(embeddings) in (True, False)
    for figure in checked.values():
        assert figure["value"] > 0 and figure["unit"] == "x one read pass" and judge(figure) in (True, False)


def test_curves_figures_at_smoke_scale_are_valid_figures():
    from retrieval_conformance.conformance.bench.curves import CURVES, figures

    checked = check_figures(figures("smoke", rounds=1, implementations=("numpy",)), "curves")
    assert set(checked) == {f"{label} [numpy]" for label, _, _ in CURVES}
    for figure in checked.values():
        assert figure["value"] > 0 and figure["unit"] == "x evaluate" and judge(figure) in (True, False)


@pytest.mark.parametrize(
    "figures, message",
    [
        ({}, "expected a non-empty dict"),
        ([1], "expected a non-empty dict"),
        ({"a": {"unit": "ms"}}, "'value' and 'unit' are required"),
        ({"a": {"value": 1.0}}, "'value' and 'unit' are required"),
        ({"a": {"value": float("nan"), "unit": "ms"}}, "finite real number or None, got nan"),
        ({"a": {"value": True, "unit": "ms"}}, "finite real number or None, got True"),
        ({"a": {"value": "3", "unit": "ms"}}, "finite real number or None, got '3'"),
        ({"a": {"value": 1.0, "unit": "ms", "target": "60"}}, "expected an operator"),
        ({"a": {"value": 1.0, "unit": "ms", "target": 60}}, "expected a string of an operator and a number"),
        ({"a": {"value": 1.0, "unit": "ms", "target": "<= 2 s"}}, "its unit 's' is not the figure's unit 'ms'"),
        ({"a": {"value": 1.0, "unit": "ms", "target": "<= 2x"}}, "its unit 'x' is not the figure's unit 'ms'"),
        ({"a": {"value": 1.0, "unit": "ms", "baseline": {"name": "x"}}}, "baseline must be"),
        ({"a": {"value": 1.0, "unit": "ms", "note": 3}}, "note must be a string"),
        ({"": {"value": 1.0, "unit": "ms"}}, "a figure's name must be a non-empty string"),
    ],
)
def test_figures_are_refused_by_name(figures, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        check_figures(figures, "mod.figures('full')")


@pytest.mark.parametrize(
    "target, value, met",
    [
        (">= 60", 60.0, True),
        (">= 60", 59.9, False),
        ("≥ 1.7x", 1.8, True),
        ("<= 1.5", 1.5, True),
        ("≤ 1.5x", 1.51, False),
        ("> 1", 1.0, False),
        ("< 1", 0.5, True),
        (">= 1e3", 1000.0, True),
    ],
)
def test_targets_are_judged(target, value, met):
    figure = check_figures({"f": {"value": value, "unit": "x the loop", "target": target}}, "m")["f"]
    assert judge(figure) is met


def test_amounts_are_formatted():
    assert format_amount(62.5, "x the loop") == "62.5x the loop"
    assert format_amount(0.0421, "s") == "0.0421 s"
    assert format_amount(12345.0, "MB") == "12,345 MB"
    assert format_amount(None, "ms") == "–"


def test_report_tells_the_two_kinds_of_run_apart(tmp_path, capsys):
    feature = tmp_path / "feature.json"
    feature.write_text(json.dumps(run_features("smoke", [ABSENT])), encoding="utf-8")
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"benchmarks": []}), encoding="utf-8")
    with pytest.raises(ValueError, match="a feature run: report it with --features"):
        load_run(str(feature))
    with pytest.raises(ValueError, match="a pytest-benchmark run: report it without --features"):
        load_feature_run(str(bench))
    assert bench_main(["report", "--features", str(bench)]) == 2
    assert "report it without --features" in capsys.readouterr().err
    assert bench_main(["report", "--features", str(feature)]) == 0
    assert "Not measured: its benchmark module" in capsys.readouterr().out
    assert bench_main(["report", "--features", "--storage", str(tmp_path / "empty")]) == 2
    assert "no feature run to report" in capsys.readouterr().err


def test_unknown_section_and_scale_are_refused_by_name(capsys, monkeypatch):
    from retrieval_conformance.conformance.bench.features import registry

    monkeypatch.setattr(registry, "SECTIONS", (FAKE,))  # whatever happens, no real benchmark runs here
    with pytest.raises(ValueError, match="--section: unknown section.*'warp-drive'; choose from fake"):
        registry.select_sections(["warp-drive"])
    with pytest.raises(SystemExit) as exit_info:
        bench_main(["features", "--section", "warp-drive"])
    assert exit_info.value.code == 2 and "warp-drive" in capsys.readouterr().err
    with pytest.raises(ValueError, match="scale: expected one of full, smoke, got 'huge'"):
        run_features("huge", [])
    page = feature_page(run_features("smoke", []))
    assert "| sections | none |" in page


def test_distributed_benchmark_draws_the_same_data_for_every_world_size():
    """Each rank draws only its rows, and the rows joined are the same whatever the world size."""
    import argparse

    import numpy as np
    from retrieval_conformance.conformance.bench import distributed

    def joined(world):
        args = argparse.Namespace(world=world, queries=7, gallery=150_000, dim=3, ids=5, noise=1.0, seed=4)
        parts = [distributed._data(args, rank) for rank in range(world)]
        return {name: np.concatenate([p[side][name] for p in parts]) for side in (0, 1) for name in parts[0][side]}

    one, three = joined(1), joined(3)
    assert one["db_embeddings"].shape == (150_000, 3) and one["query_embeddings"].shape == (7, 3)
    assert all(np.array_equal(one[name], three[name]) for name in one)


@requires_gloo
def test_distributed_figures_at_smoke_scale():
    """Two gloo ranks: the sharded accumulator against gathering everything, as figures."""
    from retrieval_conformance.conformance.bench.distributed import figures

    checked = check_figures(figures("smoke"), "distributed")
    label = "small (100 x 2,000, d = 16)"
    assert set(checked) == {
        f"{label}: time, sharded",
        f"{label}: bytes sent per rank, sharded",
        f"{label}: peak extra resident memory, sharded",
    }
    sent = checked[f"{label}: bytes sent per rank, sharded"]
    assert 0 < sent["value"] < sent["baseline"]["value"]  # the queries and statistics, not the gallery
    assert "the same mAP" in checked[f"{label}: time, sharded"]["note"]


def test_a_missing_package_is_not_measured_a_missing_module_of_ours_is_a_failure():
    from retrieval_conformance.conformance.bench.features.registry import run_section

    torch_less = run_section(Section("t", HERE, "needs_torch_figures", "T"), "smoke")
    assert torch_less["status"] == "not measured"
    assert torch_less["reason"] == "it needs the package torch, which is not installed"
    broken = run_section(Section("b", HERE, "broken_import_figures", "B"), "smoke")
    assert broken["status"] == "failed" and "no_such_helper_rc" in broken["reason"]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda r: r.update(scale=None), "scale: expected one of full, smoke, got None"),
        (lambda r: r.update(sections={}), "sections: expected a list, got dict"),
        (lambda r: r["sections"][0].update(status="done"), "section 'fake': status must be one of measured"),
        (lambda r: r["sections"][0]["figures"]["bytes sent per rank"].pop("unit"), "'value' and 'unit' are required"),
        (lambda r: r["sections"][1].pop("reason"), "section 'absent': a section not measured needs its reason"),
        (lambda r: r.update(machine="a laptop"), "machine: expected a dict, got str"),
    ],
)
def test_a_malformed_record_is_refused_by_name(tmp_path, capsys, change, message):
    run = run_features("full", [FAKE, ABSENT])
    change(run)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run), encoding="utf-8")
    assert bench_main(["report", "--features", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}: cannot read it as a feature run") and message in err[0]


def test_unwritable_outputs_are_an_error_line(tmp_path, monkeypatch, capsys):
    from retrieval_conformance.conformance.bench.features import registry

    monkeypatch.setattr(registry, "SECTIONS", (FAKE,))
    storage = str(tmp_path / "store")
    assert bench_main(["features", "--storage", storage, "--json", str(tmp_path / "no" / "run.json")]) == 2
    assert "the folder" in capsys.readouterr().err and saved_feature_runs(storage) == []  # nothing ran
    assert bench_main(["features", "--storage", storage, "--scale", "smoke"]) == 0
    capsys.readouterr()
    assert bench_main(["report", "--features", "--storage", storage, "--markdown", str(tmp_path / "no" / "p.md")]) == 2
    assert capsys.readouterr().err.strip().startswith("error: --markdown ")
