"""One measure vocabulary for ``rc.evaluate``, ``evaluate --run``, ``compare`` and ``audit``:
trec_eval's names and ir_measures' names alike, resolved in ``reference/contract/measure_names.py``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.cli import main
from retrieval_conformance.reference.contract.measure_names import Measure, parse_measure, trec_name


@pytest.mark.parametrize(
    "name, measure, trec",
    [
        ("P_10", Measure("precision_at_k", 10), "P_10"),
        ("P@10", Measure("precision_at_k", 10), "P_10"),
        ("ndcg_cut_10", Measure("ndcg_at_k", 10), "ndcg_cut_10"),
        ("nDCG@10", Measure("ndcg_at_k", 10), "ndcg_cut_10"),
        ("nDCG", Measure("ndcg_at_k"), "ndcg"),
        ("map", Measure("map"), "map"),
        ("AP", Measure("map"), "map"),
        ("AP@10", Measure("map", 10), "map_cut_10"),
        ("recip_rank", Measure("mrr"), "recip_rank"),
        ("RR", Measure("mrr"), "recip_rank"),
        ("recall_100", Measure("recall_at_k", 100), "recall_100"),
        ("R@100", Measure("recall_at_k", 100), "recall_100"),
        ("Rprec", Measure("r_precision"), "Rprec"),
        ("success_5", Measure("rank5"), "success_5"),
        ("Success@5", Measure("rank5"), "success_5"),
        ("P(rel=2)@10", Measure("precision_at_k", 10, 2), "P_10"),
        ("Judged@10", Measure("Judged", 10), "Judged_10"),
        ("bpref", Measure("bpref"), "bpref"),
    ],
)
def test_both_vocabularies_read_as_one(name, measure, trec):
    assert parse_measure(name) == measure
    assert trec_name(measure) == trec


@pytest.mark.parametrize("name", ["mINP", "rank1", "precision_at_k", "hello", "P@x"])
def test_other_names_are_left_to_the_aliases(name):
    assert parse_measure(name) is None


# one query, relevant at ranks 2 and 3: P@2 = 1/2, R@2 = 1/2, AP@2 (R=2) = (1/2) / 2 = 1/4
ARRAYS = dict(distances=[[0.1, 0.2, 0.3]], relevance=[[0, 1, 1]])


@pytest.mark.parametrize("name", ["P_2", "P@2", "precision_at_k"])
def test_evaluate_takes_trec_eval_and_ir_measures_names(name):
    res = rc.evaluate(**ARRAYS, k=2, metrics=[name], implementation="reference")
    assert res.precision_at_k == 0.5
    with pytest.raises(rc.NotComputedError):
        _ = res.recall_at_k


def test_several_cut_offs_take_a_name_at_one_of_them():
    res = rc.evaluate(**ARRAYS, k=(1, 2), metrics="P@2,R@2", implementation="reference")
    assert res[2].precision_at_k == 0.5 and res[2].recall_at_k == 0.5


@pytest.mark.parametrize(
    "name, k, words",
    [
        ("P_10", 2, "'P_10' is precision_at_k at 10, but the cut-off is 2; set the cut-off k to 10"),
        ("nDCG@10", None, "'nDCG@10' is ndcg_at_k at 10, but the cut-off is none"),
        ("Judged@2", 2, "'Judged@2' is computed from the judgments themselves (the qrels)"),
        ("bpref", 2, "'bpref' is computed from the judgments themselves"),
        ("P(rel=2)@2", 2, "'P(rel=2)@2' counts grades >= 2 as relevant, which needs graded judgments"),
    ],
)
def test_evaluate_refuses_a_name_it_cannot_give_as_named(name, k, words):
    with pytest.raises(ValueError, match="metrics: " + words.replace("(", r"\(").replace(")", r"\)")):
        rc.evaluate(**ARRAYS, k=k, metrics=[name], implementation="reference")


# --------------------------------------------------------------------------- TREC runs
@pytest.fixture
def trec(tmp_path):
    """q1: d1 (grade 1), d3 (grade 2) relevant, d2 unjudged; the run ranks d1, d2, d3.
    P_2 = 1/2, map = (1/1 + 2/3) / 2 = 5/6, Judged_2 = 1/2 (d2 is not in the qrels);
    at grade >= 2 only d3 counts: P(rel=2)@2 = 0, AP = (1/3) / 1 = 1/3.
    q2: d4 (grade 1) relevant; the run ranks d5, d4: P_2 = 1/2, map = 1/2, Judged_2 = 1/2."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d3 2\nq2 0 d4 1\n")
    run = tmp_path / "a.run"
    run.write_text("q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\nq1 Q0 d3 3 1.0 a\nq2 Q0 d5 1 2.0 a\nq2 Q0 d4 2 1.0 a\n")
    other = tmp_path / "b.run"
    other.write_text("q1 Q0 d3 1 3.0 b\nq1 Q0 d1 2 2.0 b\nq1 Q0 d2 3 1.0 b\nq2 Q0 d4 1 2.0 b\nq2 Q0 d5 2 1.0 b\n")
    return {"qrels": str(qrels), "a": str(run), "b": str(other)}


def _lines(out: str) -> dict:
    return {line.split("\t")[0].strip(): line.split("\t")[2] for line in out.strip().splitlines()}


@pytest.mark.parametrize("names", ["P_2,map,Judged_2", "P@2,AP,Judged@2"])
def test_evaluate_run_takes_metrics_in_either_vocabulary(names, trec, capsys):
    assert main(["evaluate", "--run", trec["a"], "--qrels", trec["qrels"], "--metrics", names]) == 0, (
        capsys.readouterr().err
    )
    assert _lines(capsys.readouterr().out) == {"P_2": "0.5000", "map": "0.6667", "Judged_2": "0.5000"}


def test_evaluate_run_metrics_at_a_relevance_level(trec, capsys):
    argv = ["evaluate", "--run", trec["a"], "--qrels", trec["qrels"], "--metrics", "P(rel=2)@2"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --metrics: 'P(rel=2)@2'") and "set --relevance-level to 2" in err
    assert main([*argv, "--relevance-level", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"trec_eval": {"P_2": 0.0}}


def test_evaluate_run_metrics_cut_offs_agree_with_k(trec, capsys):
    argv = ["evaluate", "--run", trec["a"], "--qrels", trec["qrels"], "--metrics", "P@5", "--k", "2"]
    assert main(argv) == 2
    assert "error: --metrics: a measure at cut-off 5 was asked, but --k is 2" in capsys.readouterr().err


def test_compare_takes_either_vocabulary_and_speaks_cli(trec, capsys):
    base = ["compare", trec["a"], trec["b"], "--qrels", trec["qrels"], "--json", "--resamples", "100"]
    assert main([*base, "--metrics", "P_2,ndcg_cut_2,map,recip_rank"]) == 0, capsys.readouterr().err
    trec_names = json.loads(capsys.readouterr().out)
    assert main([*base, "--metrics", "P@2,nDCG@2,AP,RR"]) == 0, capsys.readouterr().err
    ir_names = json.loads(capsys.readouterr().out)
    assert ir_names == trec_names
    assert main([*base, "--metrics", "P@2,hello"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --metrics: 'hello' is not a measure of a TREC run")
    assert "P_10" in err and "P@10" in err and "evaluate_run(" not in err


def test_compare_of_arrays_reads_a_cut_off_name_at_its_cut_off(tmp_path, capsys):
    for name, rel in (("a", [[0, 1, 1], [1, 0, 0]]), ("b", [[1, 1, 0], [0, 1, 0]])):
        np.savez(tmp_path / f"{name}.npz", distances=np.array([[0.1, 0.2, 0.3]] * 2), relevance=np.array(rel))
    base = ["compare", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--json", "--resamples", "100"]
    assert main([*base, "--k", "2", "--metrics", "P_2"]) == 0, capsys.readouterr().err
    means = json.loads(capsys.readouterr().out)
    assert main([*base, "--k", "2", "--metrics", "precision_at_k"]) == 0
    assert json.loads(capsys.readouterr().out) == means
    assert main([*base, "--k", "3", "--metrics", "P@2"]) == 2
    assert "'P@2' is precision_at_k at cut-off 2, but run 'a' was evaluated at k=3" in capsys.readouterr().err


def test_audit_reads_reported_numbers_in_either_vocabulary():
    ours = rc.audit(**ARRAYS, k=2, reported="precision_at_k=0.5").to_dict()["reproduced"]
    for name in ("P@2", "P_2"):
        theirs = rc.audit(**ARRAYS, k=2, reported=f"{name}=0.5").to_dict()["reproduced"]
        assert theirs["n_matches"] == ours["n_matches"] >= 1
    with pytest.raises(ValueError, match="reported: 'P_10' is at cut-off 10, but the audit's cut-off is 2"):
        rc.audit(**ARRAYS, k=2, reported="P_10=0.5")


def test_audit_of_a_run_reads_ir_measures_names(trec):
    a = rc.audit(run=trec["a"], qrels=trec["qrels"], k=2, reported="P@2=0.5,AP=0.6667").to_dict()
    b = rc.audit(run=trec["a"], qrels=trec["qrels"], k=2, reported="P_2=0.5,map=0.6667").to_dict()
    assert a["reproduced"]["n_matches"] == b["reproduced"]["n_matches"] >= 1


def test_success_is_the_cmc_at_its_rank():
    # relevant at ranks 2 and 3: success@1 = 0, success@2 = 1
    res = rc.evaluate(**ARRAYS, metrics=["success_2"], max_rank=3, implementation="reference")
    assert res.cmc.tolist() == [0.0, 1.0, 1.0]
