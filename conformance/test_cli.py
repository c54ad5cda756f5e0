"""The command line: the golden report (the main job), evaluate and presets."""
from __future__ import annotations

import json

import numpy as np
from retrieval_conformance.cli import main


def test_golden_report_passes_and_lists_every_case(capsys):
    assert main(["golden", "--random", "10"]) == 0
    out = capsys.readouterr().out
    assert "seed000-map-at-5" in out and "107/180" in out
    assert "PASSED: 0 mismatch(es)" in out


def test_golden_requires_named_implementations(capsys):
    code = main(["golden", "--implementations", "reference", "nonexistent", "--require", "nonexistent",
                 "--random", "0"])
    assert code == 1
    assert "required" in capsys.readouterr().out


def test_evaluate_from_npz_json_and_text(tmp_path, capsys):
    path = tmp_path / "run.npz"
    np.savez(path, distances=np.array([[0.1, 0.2, 0.3]]), relevance=np.array([[0, 1, 1]]))
    assert main(["evaluate", "--npz", str(path), "--protocol", "reid", "--implementation", "reference",
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["map_exact"] == "7/12" and summary["rank1"] == 0.0
    assert main(["evaluate", "--npz", str(path), "--k", "2", "--implementation", "reference"]) == 0
    out = capsys.readouterr().out
    assert "mAP@2: 0.500000  (exact 1/2)" in out


def test_evaluate_reports_bad_input_as_usage_error(tmp_path, capsys):
    path = tmp_path / "bad.npz"
    np.savez(path, distances=np.array([[np.nan, 0.2]]), relevance=np.array([[0, 1]]))
    assert main(["evaluate", "--npz", str(path)]) == 2
    assert "distances: expected finite values" in capsys.readouterr().err


def test_presets_table(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert "reid-matlab" in out and "trapezoid" in out
