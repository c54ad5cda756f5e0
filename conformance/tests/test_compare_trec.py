"""``compare`` on TREC runs: from the API on ``evaluate_run`` results and from the command line.

The per-query values ``compare`` pairs are checked against the results ``evaluate_run``
returns (the lookup reads trec_eval's names), the means against trec_eval's table of those
results, and the command line against the API on the same files.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.cli import main as cli_main
from retrieval_conformance.comparison.metrics import TREC_FIELDS

TOPICS = [str(t) for t in range(101, 121)]
DOCS = [f"d{i}" for i in range(30)]


def _write_run(path, tag, rng, topics, lift):
    lines = []
    for topic in topics:
        scores = rng.normal(size=len(DOCS)) + lift * (np.arange(len(DOCS)) % 3 == 0)
        for rank, i in enumerate(np.argsort(-scores)[:15], 1):
            lines.append(f"{topic} Q0 {DOCS[i]} {rank} {scores[i]:.6f} {tag}\n")
    path.write_text("".join(lines))
    return str(path)


@pytest.fixture(scope="module")
def trec_files(tmp_path_factory):
    """Graded qrels (every third document relevant, grades 1-2), runs A, B (a lift of the relevant
    documents) and C (B's lift, without topics 101 and 102)."""
    folder = tmp_path_factory.mktemp("trec")
    rng = np.random.default_rng(11)
    qrels = folder / "qrels.txt"
    qrels.write_text(
        "".join(f"{t} 0 {d} {(1 + (i // 3) % 2) if i % 3 == 0 else 0}\n" for t in TOPICS for i, d in enumerate(DOCS))
    )
    return {
        "qrels": str(qrels),
        "A": _write_run(folder / "A.run", "A", rng, TOPICS, 0.0),
        "B": _write_run(folder / "B.run", "B", rng, TOPICS, 1.5),
        "C": _write_run(folder / "C.run", "C", rng, TOPICS[2:], 1.5),
    }


def _runs(trec_files, names=("A", "B"), **kw):
    return {n: rc.evaluate_run(trec_files[n], trec_files["qrels"], implementation="numpy", **kw) for n in names}


def test_every_trec_measure_pairs_the_values_evaluate_run_returns(trec_files):
    runs = _runs(trec_files, k=(5, 10))
    cmp = rc.compare(runs, metrics=["map", "P_5", "ndcg_cut_10", "recip_rank", "Rprec", "recall_10"], n_resamples=200)
    assert list(cmp.metrics) == ["map", "P_5", "ndcg_cut_10", "recip_rank", "Rprec", "recall_10"]
    for metric in cmp.metrics:
        k = 5 if metric == "P_5" else 10
        res_a, res_b = runs["A"][k], runs["B"][k]
        field = TREC_FIELDS[metric.rsplit("_", 1)[0] if metric[-1].isdigit() else metric]
        a, b = getattr(res_a.per_query, field), getattr(res_b.per_query, field)
        row = cmp.row("B", metric)
        assert row.n_queries == len(TOPICS) and row.label == metric
        assert (row.mean_baseline, row.mean_run) == (
            pytest.approx(a.mean(), abs=1e-15),
            pytest.approx(b.mean(), abs=1e-15),
        )
        # the means are trec_eval's, named as it names them
        assert cmp.means["A"][metric] == pytest.approx(res_a.extras["trec_eval"][metric], abs=1e-15)
    assert cmp.row("B", "map").difference > 0 and cmp.row("B", "map").significant()


def test_trec_defaults_are_every_measure_the_run_reports(trec_files):
    runs = _runs(trec_files, k=10)
    cmp = rc.compare(runs, n_resamples=100)
    reported = [m for m in runs["A"].extras["trec_eval"] if not m.startswith("num_")]
    assert list(cmp.metrics) == reported and "P_10" in reported and "map" in reported


def test_a_measure_kept_only_in_extras_is_found_by_name(trec_files):
    # a measure without a PerQuery field keeps its per-query values with trec_eval's other names
    runs = _runs(trec_files)
    for res in runs.values():
        res.extras["trec_eval"]["bpref"] = 0.0
        res.extras["trec_eval_per_query"] = {"bpref": res.per_query.r_precision * 0.5}
    cmp = rc.compare(runs, metrics="bpref", n_resamples=100)
    assert cmp.means["B"]["bpref"] == pytest.approx(runs["B"].per_query.r_precision.mean() * 0.5, abs=1e-15)


def test_success_at_k_is_read_from_the_cmc(trec_files):
    runs = _runs(trec_files, k=10)
    for res in runs.values():  # a measure evaluate_run may report: a relevant document in the top 5
        res.extras["trec_eval"]["success_5"] = float(res.per_query.cmc[:, 4].mean())
    cmp = rc.compare(runs, metrics="success_5", n_resamples=100)
    assert cmp.means["A"]["success_5"] == pytest.approx(runs["A"].extras["trec_eval"]["success_5"], abs=1e-15)
    assert cmp.means["A"]["success_5"] != pytest.approx(runs["A"].per_query.cmc[:, 0].mean(), abs=1e-15)


def test_unknown_trec_measure_lists_the_offered_ones(trec_files):
    with pytest.raises(ValueError, match=r"metrics: unknown metric 'P_20' for run 'A'; it offers \['map'"):
        rc.compare(_runs(trec_files, k=10), metrics="P_20")
    with pytest.raises(ValueError, match="'num_ret' is a count summed over queries, with no per-query values"):
        rc.compare(_runs(trec_files), metrics="num_ret")
    runs = _runs(trec_files)
    for res in runs.values():
        res.extras["trec_eval"]["infAP"] = 0.5  # a mean with nowhere to read its per-query values
    with pytest.raises(ValueError, match="reports 'infAP' only as a mean, with no per-query values"):
        rc.compare(runs, metrics="infAP")


# -- the command line ---------------------------------------------------------------------
def test_cli_compares_trec_runs_as_the_api_does(trec_files, capsys):
    argv = [
        "compare",
        trec_files["A"],
        trec_files["B"],
        trec_files["C"],
        "--qrels",
        trec_files["qrels"],
        "--metrics",
        "map,ndcg_cut_10,recip_rank,P_10",
        "--resamples",
        "300",
        "--json",
    ]
    assert cli_main(argv) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["metrics"] == {
        "map": "map",
        "ndcg_cut_10": "ndcg_cut_10",
        "recip_rank": "recip_rank",
        "P_10": "P_10",
    }
    assert summary["dropped"] == {"A": 2, "B": 2, "C": 0} and summary["queries"] == 18
    assert "warning: compare: runs answer different queries; paired on the 18 queries" in captured.err
    with pytest.warns(UserWarning, match="dropped 2 of 20 from 'A', 2 of 20 from 'B', 0 of 18 from 'C'"):
        api = rc.compare(
            {n: rc.evaluate_run(trec_files[n], trec_files["qrels"], k=10) for n in "ABC"},
            metrics=["map", "ndcg_cut_10", "recip_rank", "P_10"],
            n_resamples=300,
        )
    assert [r["difference"] for r in summary["rows"]] == pytest.approx([r.difference for r in api.rows], abs=1e-15)
    assert [r["p_permutation"] for r in summary["rows"]] == [r.p_permutation for r in api.rows]


def test_cli_complete_evaluates_every_qrels_topic(trec_files, capsys):
    argv = [
        "compare",
        trec_files["A"],
        trec_files["C"],
        "--qrels",
        trec_files["qrels"],
        "--complete",
        "--metrics",
        "map",
        "--resamples",
        "100",
        "--pairs",
        "all",
        "--correction",
        "holm",
    ]
    assert cli_main(argv) == 0
    captured = capsys.readouterr()
    assert "20 queries, paired by query id" in captured.out and "warning" not in captured.err
    assert "p-values (Holm-adjusted over 1 row)" in captured.out


def test_cli_text_markdown_and_latex_tables(trec_files, capsys):
    base = ["compare", trec_files["A"], trec_files["B"], "--qrels", trec_files["qrels"], "--resamples", "100"]
    assert cli_main(base) == 0
    text = capsys.readouterr().out
    assert "ndcg_cut_10" in text and "d_z" in text and "95% t CI" in text
    assert cli_main(base + ["--markdown"]) == 0
    assert "| run | vs | metric |" in capsys.readouterr().out
    assert cli_main(base + ["--latex", "--plus-minus", "--metrics", "map"]) == 0
    latex = capsys.readouterr().out
    assert r"$\pm$" in latex and r"\begin{tabular}{lc}" in latex


def test_cli_fail_if_worse_on_a_trec_measure(trec_files, capsys):
    argv = [
        "compare",
        trec_files["B"],
        trec_files["A"],
        "--qrels",
        trec_files["qrels"],
        "--resamples",
        "500",
        "--fail-if-worse",
        "map:0.01",
    ]
    assert cli_main(argv) == 1
    assert "worse: A map" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--k", "10"], "error: --k: applies to .npz runs, not to TREC runs"),
        (["--protocol", "reid"], "error: --protocol: applies to .npz runs"),
        # refused by the flag's name before any run is evaluated (the one measure vocabulary)
        (["--metrics", "bpref_x"], "error: --metrics: 'bpref_x' is not a measure of a TREC run"),
        (["--plus-minus"], "error: --plus-minus: applies to the --latex table"),
        (["--relevance-level", "0"], "relevance_level"),
    ],
)
def test_cli_trec_errors_exit_2(trec_files, capsys, extra, message):
    argv = ["compare", trec_files["A"], trec_files["B"], "--qrels", trec_files["qrels"], "--resamples", "50"] + extra
    assert cli_main(argv) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err and captured.out == ""


def test_cli_missing_qrels_and_malformed_run(trec_files, tmp_path, capsys):
    assert cli_main(["compare", trec_files["A"], "--qrels", str(tmp_path / "none.txt")]) == 2
    assert f"error: --qrels {tmp_path / 'none.txt'}: no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.run"
    bad.write_text("101 Q0 d1 1 high A\n")
    assert cli_main(["compare", trec_files["A"], str(bad), "--qrels", trec_files["qrels"]]) == 2
    err = capsys.readouterr().err
    assert "error: run 'bad'" in err and "line 1" in err and "Traceback" not in err


def test_cli_one_trec_run_alone_prints_its_intervals(trec_files, capsys):
    assert (
        cli_main(["compare", trec_files["A"], "--qrels", trec_files["qrels"], "--metrics", "map", "--resamples", "200"])
        == 0
    )
    out = capsys.readouterr().out
    res = rc.evaluate_run(trec_files["A"], trec_files["qrels"])
    assert f"{res.map:.4f}" in out and "95% bootstrap CI" in out and "p (perm.)" not in out
