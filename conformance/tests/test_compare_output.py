"""What ``rc.compare`` hands back: the regression gate, the tables, JSON, and the command line.

``retrieval-conformance compare`` is run in-process on ``.npz`` runs written from the same
problem as ``test_compare``'s (whose fixtures ``problem`` and ``results`` are shared here).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.comparison import compare_main
from retrieval_conformance.conformance.tests import test_compare as _compare
from retrieval_conformance.conformance.tests.test_compare import RESAMPLES, N, Q

# test_compare's module-scoped fixtures, bound here by name so that pytest finds them
problem, results = _compare.problem, _compare.results


# -- decisions and output ----------------------------------------------------------------
def test_regressions_need_margin_and_significance(results):
    cmp = rc.compare({"A": results["A"], "B": results["B"], "W": results["W"]}, n_resamples=RESAMPLES)
    worse = cmp.regressions(0.01)
    assert {r.run for r in worse} == {"W"} and "map" in {r.metric for r in worse}
    assert all(r.difference < -0.01 and r.p_permutation < 0.05 for r in worse)
    assert cmp.regressions(1.0) == []  # no loss beyond a whole unit
    assert [r.metric for r in cmp.regressions(0.01, metric="map")] == ["map"]
    assert cmp.regressions(0.01, metric="mAP") == cmp.regressions(0.01, metric=["map"])
    assert cmp.regressions(0.01, alpha=1e-12) == []
    with pytest.raises(ValueError, match="margin: expected a finite number >= 0"):
        cmp.regressions(-0.1)
    with pytest.raises(ValueError, match=r"metric: \['ndcg_at_k'\] not compared"):
        cmp.regressions(0.01, metric="ndcg")
    only_t = rc.compare({"A": results["A"], "W": results["W"]}, tests=("t",))
    assert only_t.rows[0].p_permutation is None
    with pytest.raises(ValueError, match="regressions: need the permutation test"):
        only_t.regressions(0.01)


def test_tables_hold_the_numbers(results):
    cmp = rc.compare(
        {"A": results["A"], "perfect": results["P"], "B": results["B"]}, metrics=["map", "rank1"], n_resamples=RESAMPLES
    )
    row = cmp.row("perfect", "map")
    text, markdown, latex = cmp.to_text(), cmp.to_markdown(), cmp.to_latex()
    for out in (text, markdown):
        assert f"{row.mean_baseline:.4f}" in out and f"{row.difference:+.4f}" in out
        assert f"[{row.ci_low:+.4f}, {row.ci_high:+.4f}]" in out
        assert f"{row.p_permutation:.1e}" in out or f"{row.p_permutation:.4f}" in out
        assert "mAP" in out and "Rank-1" in out and str(row.n_queries) in out
    assert markdown.startswith("| run | metric | n |") and "|---|---|---:|" in markdown
    assert r"\toprule" in latex and r"\midrule" in latex and r"\bottomrule" in latex
    assert f"{cmp.means['perfect']['map']:.4f}$^{{\\dagger}}$" in latex  # significant: marked
    assert f"A (baseline) & {cmp.means['A']['map']:.4f} &" in latex
    assert "paired permutation test, two-sided, $p < 0.05$" in latex
    assert f"{100 * cmp.means['B']['rank1']:.2f}" in cmp.to_latex(percent=True)
    assert r"$^{*}$" in cmp.to_latex(marker="*", test="t")
    summary = json.loads(json.dumps(cmp.to_dict()))
    assert summary["baseline"] == "A" and summary["metrics"] == {"map": "mAP", "rank1": "Rank-1"}
    assert summary["rows"][0]["p_permutation"] == cmp.rows[0].p_permutation


def test_latex_escapes_run_names():
    cmp = rc.compare({"base_line": [0.1, 0.2, 0.3], "new & 50%": [0.2, 0.3, 0.4]}, metrics="P@5")
    latex = cmp.to_latex()
    assert r"base\_line (baseline)" in latex and r"new \& 50\%" in latex and r"P@5" in latex


def test_json_has_no_nan():
    cmp = rc.compare({"a": [0.5, np.nan], "b": [0.4, 0.3]})
    text = json.dumps(cmp.to_dict(), allow_nan=False)
    assert '"p_permutation": null' in text


# -- command line ------------------------------------------------------------------------
@pytest.fixture
def npz_runs(tmp_path, problem):
    paths = {}
    np.savez(
        tmp_path / "labels.npz",
        query_labels=problem["q"],
        db_labels=problem["db"],
        query_cams=problem["qc"],
        db_cams=problem["dc"],
    )
    for name in ("A", "B", "W"):
        np.savez(tmp_path / f"{name}.npz", scores=problem[name])
    # self-contained runs (no --shared), one on fewer queries
    np.savez(
        tmp_path / "full.npz",
        scores=problem["A"],
        query_labels=problem["q"],
        db_labels=problem["db"],
        query_cams=problem["qc"],
        db_cams=problem["dc"],
    )
    np.savez(
        tmp_path / "short.npz",
        scores=problem["B"][:40],
        query_labels=problem["q"][:40],
        db_labels=problem["db"],
        query_cams=problem["qc"][:40],
        db_cams=problem["dc"],
    )
    for name in ("labels", "A", "B", "W", "full", "short"):
        paths[name] = str(tmp_path / f"{name}.npz")
    return paths


def test_cli_text_and_json(npz_runs, results, capsys):
    code = compare_main(
        [
            npz_runs["A"],
            npz_runs["B"],
            "--shared",
            npz_runs["labels"],
            "--protocol",
            "reid",
            "--metrics",
            "map",
            "rank1",
            "--resamples",
            str(RESAMPLES),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "baseline 'A'" in out and f"{results['B'].map:.4f}" in out and "Rank-1" in out
    code = compare_main(
        [
            "compare",
            npz_runs["A"],
            npz_runs["B"],
            "--shared",
            npz_runs["labels"],
            "--protocol",
            "reid",
            "--names",
            "base",
            "new",
            "--json",
            "--resamples",
            str(RESAMPLES),
            "--seed",
            "3",
        ]
    )
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["runs"] == ["base", "new"] and summary["seed"] == 3
    api = rc.compare({"base": results["A"], "new": results["B"]}, n_resamples=RESAMPLES, seed=3)
    assert [r["p_permutation"] for r in summary["rows"]] == [r.p_permutation for r in api.rows]


def test_cli_fail_if_worse(npz_runs, capsys):
    argv = [
        npz_runs["A"],
        npz_runs["W"],
        "--shared",
        npz_runs["labels"],
        "--protocol",
        "reid",
        "--resamples",
        str(RESAMPLES),
    ]
    assert compare_main(argv + ["--fail-if-worse", "map:0.01"]) == 1
    captured = capsys.readouterr()
    assert "worse: W mAP" in captured.err and "margin 0.01" in captured.err
    assert "mAP" in captured.out
    assert compare_main(argv + ["--fail-if-worse", "map:1"]) == 0  # worse, but within the margin
    capsys.readouterr()
    better = [
        npz_runs["A"],
        npz_runs["B"],
        "--shared",
        npz_runs["labels"],
        "--protocol",
        "reid",
        "--resamples",
        str(RESAMPLES),
        "--fail-if-worse",
        "map:0.01",
        "--markdown",
    ]
    assert compare_main(better) == 0
    assert capsys.readouterr().out.startswith("| run | metric |")


def test_cli_latex(npz_runs, capsys):
    assert (
        compare_main(
            [
                npz_runs["A"],
                npz_runs["B"],
                "--shared",
                npz_runs["labels"],
                "--protocol",
                "reid",
                "--latex",
                "--metrics",
                "map",
                "--resamples",
                str(RESAMPLES),
            ]
        )
        == 0
    )
    assert r"\begin{tabular}{lc}" in capsys.readouterr().out


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "error: run {tmp}/nope.npz: no such file"),
        ("short", "error: runs['short']: 40 queries, but runs['full'] has 48"),
        ("garbage", "error: run {tmp}/garbage.npz"),
        ("bad_k", "error: --k must be an integer or 'all'"),
        ("bad_gate", "error: --fail-if-worse: expected METRIC:MARGIN"),
        ("trec_flag", "error: --complete: applies to TREC runs (--qrels QRELS)"),
        ("names", "error: --names: expected 2 names"),
        ("overlap", "both hold 'query_labels'"),
        ("metric", "error: --metrics: unknown metric 'bpref_x'"),  # the flag's name on the command line
        ("resamples", "error: --resamples: expected a positive integer"),
        ("alpha", "error: --alpha: expected a number strictly between 0 and 1"),
    ],
)
def test_cli_usage_errors_exit_2(npz_runs, tmp_path, capsys, case, message):
    shared = ["--shared", npz_runs["labels"], "--protocol", "reid", "--resamples", "100"]
    (tmp_path / "garbage.npz").write_bytes(b"not a zip archive")
    np.savez(tmp_path / "overlap.npz", scores=np.zeros((Q, N)), query_labels=np.zeros(Q, int))
    argv = {
        "missing": [npz_runs["A"], str(tmp_path / "nope.npz")] + shared,
        "short": [npz_runs["full"], npz_runs["short"], "--protocol", "reid"],
        "garbage": [npz_runs["A"], str(tmp_path / "garbage.npz")] + shared,
        "bad_k": [npz_runs["A"], npz_runs["B"], "--k", "ten"] + shared,
        "bad_gate": [npz_runs["A"], npz_runs["B"], "--fail-if-worse", "map"] + shared,
        "trec_flag": [npz_runs["A"], npz_runs["B"], "--complete"] + shared,
        "names": [npz_runs["A"], npz_runs["B"], "--names", "x"] + shared,
        "overlap": [npz_runs["A"], str(tmp_path / "overlap.npz")] + shared,
        "metric": [npz_runs["A"], npz_runs["B"], "--metrics", "bpref_x"] + shared,
        "resamples": [npz_runs["A"], npz_runs["B"]] + shared + ["--resamples", "0"],
        "alpha": [npz_runs["A"], npz_runs["B"], "--alpha", "5"] + shared,
    }[case]
    assert compare_main(argv) == 2
    captured = capsys.readouterr()
    assert message.format(tmp=tmp_path) in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_cli_unavailable_implementation_is_a_named_error(npz_runs, capsys):
    # dask without a running client (or without dask): an error saying what to do, not a traceback
    from retrieval_conformance.reference.contract.registry import get

    try:
        get("dask")
        pytest.skip("a dask client is running in this process")
    except Exception:
        pass
    argv = [
        npz_runs["A"],
        npz_runs["B"],
        "--shared",
        npz_runs["labels"],
        "--protocol",
        "reid",
        "--implementation",
        "dask",
    ]
    assert compare_main(argv) == 2
    err = capsys.readouterr().err
    assert "error: --implementation dask: implementation 'dask' is unavailable" in err and "Traceback" not in err
