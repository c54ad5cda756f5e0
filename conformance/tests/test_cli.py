"""The command line: the golden report (the main job), evaluate and presets."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
from retrieval_conformance.cli import main
from retrieval_conformance.conformance.support.requirements import missing_implementation


def test_golden_report_passes_and_lists_every_case(capsys):
    assert main(["golden", "--random", "10"]) == 0
    out = capsys.readouterr().out
    assert "seed000-map-at-5" in out and "107/180" in out
    assert "PASSED: 0 mismatch(es)" in out


def test_golden_requires_named_implementations(capsys):
    with missing_implementation("missing-here"):
        code = main(
            ["golden", "--implementations", "reference", "missing-here", "--require", "missing-here", "--random", "0"]
        )
    assert code == 1
    assert "--require: implementation 'missing-here' is required but unavailable" in capsys.readouterr().err


def test_evaluate_from_npz_json_and_text(tmp_path, capsys):
    path = tmp_path / "run.npz"
    np.savez(path, distances=np.array([[0.1, 0.2, 0.3]]), relevance=np.array([[0, 1, 1]]))
    assert main(["evaluate", "--npz", str(path), "--protocol", "reid", "--implementation", "reference", "--json"]) == 0
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


def test_help_lists_every_subcommand(capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name in ("golden", "evaluate", "compare", "check", "bench", "compute-ap", "presets", "explain"):
        assert name in out, name


def _run_npz(tmp_path):
    path = tmp_path / "run.npz"
    np.savez(
        path,
        distances=np.array([[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]]),
        query_labels=np.array([1, 2]),
        db_labels=np.array([1, 2, 1]),
    )
    return str(path)


def test_per_query_output_in_three_formats(tmp_path, capsys):
    """q0: relevant at ranks 1 and 3 (AP = (1 + 2/3)/2 = 5/6); q1: relevant at rank 2 (AP = 1/2)."""
    run = _run_npz(tmp_path)
    ids = tmp_path / "ids.txt"
    ids.write_text("q-a\nq-b\n")
    assert main(["evaluate", "--npz", run, "--per-query", "csv", "--query-ids", str(ids)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("query,counted,n_relevant,ap,")
    assert lines[1].startswith("q-a,True,2,0.8333333333333334,") and lines[2].startswith("q-b,True,1,0.5,")
    assert main(["evaluate", "--npz", run, "--per-query", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    # the mean of the float64 per-query values, rounded once (not 2/3 rounded: 5/6 was rounded up)
    mean = float((Fraction(5 / 6) + Fraction(1, 2)) / 2)
    assert [row["ap"] for row in data["queries"]] == [5 / 6, 0.5] and data["summary"]["map"] == mean
    assert main(["evaluate", "--npz", run, "--per-query", "text"]) == 0
    assert "ap\t1\t0.5" in capsys.readouterr().out.splitlines()


def test_cli_k_and_quiet(tmp_path, capsys):
    run = _run_npz(tmp_path)
    assert main(["evaluate", "--npz", run, "--k", "0"]) == 2
    assert "--k: expected a positive integer, a list like 1,5,10, or 'all'" in capsys.readouterr().err
    assert main(["evaluate", "--npz", run, "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == repr(float((Fraction(5 / 6) + Fraction(1, 2)) / 2))


def test_compare_is_a_subcommand(tmp_path, capsys):
    run = _run_npz(tmp_path)
    assert main(["compare", run, run, "--names", "a", "b", "--resamples", "100"]) == 0
    assert "mAP" in capsys.readouterr().out


def test_several_cutoffs_on_the_command_line(tmp_path, capsys):
    run = _run_npz(tmp_path)
    assert main(["evaluate", "--npz", run, "--k", "1,2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data) == ["k=1", "k=2"] and data["k=2"]["options"]["k"] == 2
    assert main(["evaluate", "--npz", run, "--k", "1,2"]) == 0
    out = capsys.readouterr().out
    assert "mAP@1:" in out and "mAP@2:" in out
    assert main(["evaluate", "--npz", run, "--k", "1,x"]) == 2
    try:  # refused by the command line's choices (argparse exits 2) before evaluate runs
        code = main(["evaluate", "--npz", run, "--implementation", "nope"])
    except SystemExit as exc:
        code = exc.code
    assert code == 2 and "--implementation" in capsys.readouterr().err


def test_trec_run_and_qrels(tmp_path, capsys):
    """q1 ranks d1, then the tie d3 > d2 (docno descending): its relevant d2 is at rank 3 and d4
    is not retrieved, so AP = (1/3) / 2 = 1/6; q2 finds its one relevant document first (AP 1).
    map = 7/12; P_2 = (0 + 1/2) / 2 = 1/4; recall_2 = (0 + 1) / 2 = 1/2; Rprec = (0 + 1) / 2."""
    run, qrels = tmp_path / "a.run", tmp_path / "a.qrels"
    run.write_text("q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.5 t\nq1 Q0 d3 3 0.5 t\nq2 Q0 d9 1 1.0 t\n")
    qrels.write_text("q1 0 d2 1\nq1 0 d4 2\nq2 0 d9 1\n")
    assert (
        main(
            [
                "evaluate",
                "--run",
                str(run),
                "--qrels",
                str(qrels),
                "--k",
                "2",
                "--json",
                "--implementation",
                "reference",
            ]
        )
        == 0
    )
    measures = json.loads(capsys.readouterr().out)["trec_eval"]
    assert measures["map"] == 7 / 12 and measures["P_2"] == 0.25 and measures["recall_2"] == 0.5
    assert measures["Rprec"] == 0.5 and measures["num_rel"] == 3
    assert main(["evaluate", "--run", str(run), "--qrels", str(qrels), "--per-query", "text"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # without --k: trec_eval -q's layout, its default measures
    assert f"{'map':<22}\tq1\t0.1667" in lines and f"{'map':<22}\tq2\t1.0000" in lines
    assert f"{'map':<22}\tall\t0.5833" in lines and f"{'P_5':<22}\tq2\t0.2000" in lines
    assert main(["evaluate", "--run", str(run)]) == 2
    assert "--qrels" in capsys.readouterr().err
    assert main(["evaluate", "--run", str(tmp_path / "missing.run"), "--qrels", str(qrels)]) == 2
    assert capsys.readouterr().err.startswith("error: ")
