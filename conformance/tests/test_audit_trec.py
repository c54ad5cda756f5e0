"""The audit of a TREC run: tie intervals against every order, reported numbers traced back
(among them trec_eval 9.0.8's and 10.0's printed numbers), planted fragility found with its effect."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run

GOLDEN_DIR = files("retrieval_conformance.golden")
GENERATED = Path(str(GOLDEN_DIR / "data" / "trec"))
RUN, QRELS = str(GENERATED / "generated.run"), str(GENERATED / "generated.qrels")
TREC_EVAL = {
    case["id"]: case["values"]["all"]
    for case in json.loads(GOLDEN_DIR.joinpath("trec_eval.json").read_text(encoding="utf-8"))["cases"]
}

# two topics with score ties across the cut-off k=2, graded, with unjudged (missing or negative) documents
TIED_RUN = {
    "q1": {"a": 2.0, "d": 1.0, "b": 1.0, "c": 1.0, "e": 0.5},
    "q2": {"y": 3.0, "z": 3.0, "x": 3.0, "w": 1.0},
    "q3": {"m": 2.0, "n": 1.0},
}
TIED_QRELS = {
    "q1": {"a": 0, "b": 2, "c": 0, "d": 1, "f": 3},
    "q2": {"x": 1, "y": -1, "w": 2, "v": 1, "u": 3},
    "q3": {"n": 1, "m": 0},
}


def _ranks(order_of_query):
    """{qid: [docno, ...]} -> a run whose scores are the ranks (the test's own, not the audit's)."""
    return {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in order_of_query.items()}


def _every_tie_order(run):
    """Every ranking of ``run`` by score with its ties in any order (all permutations of every tie group)."""
    per_query = []
    for qid, docs in run.items():
        groups = [list(g) for _, g in itertools.groupby(sorted(docs, key=lambda d: -docs[d]), key=lambda d: docs[d])]
        per_query.append(
            [
                (qid, [d for group in combo for d in group])
                for combo in itertools.product(*[list(itertools.permutations(g)) for g in groups])
            ]
        )
    for choice in itertools.product(*per_query):
        yield _ranks(dict(choice))


def _measures(run, qrels, **options):
    whole = evaluate_run(run, qrels, **options).extras["trec_eval"]
    cut = evaluate_run(run, qrels, k=2, **options).extras["trec_eval"]
    return {**cut, **whole}


@pytest.mark.parametrize("options", [{}, {"depth": 3, "judged_only": True}, {"relevance_level": 2, "gains": {1: 5}}])
def test_tie_interval_is_the_min_and_max_over_every_tie_order(options):
    a = rc.audit(run=TIED_RUN, qrels=TIED_QRELS, k=2, **options)
    every = [_measures(r, TIED_QRELS, **options) for r in _every_tie_order(TIED_RUN)]
    assert len(every) == 6 * 6
    for name, iv in a.tie_intervals.items():
        values = [m[name] for m in every]
        assert iv["low"] == pytest.approx(min(values), abs=1e-12), name
        assert iv["high"] == pytest.approx(max(values), abs=1e-12), name
        for order in ("trec_eval", "stable", "reverse", "docno_ascending"):
            assert iv["low"] - 1e-12 <= iv["values"][order] <= iv["high"] + 1e-12
    assert a.tie_intervals["map"]["width"] > 0 and a.tie_intervals["P_2"]["width"] > 0


def test_the_trec_eval_order_is_evaluate_runs_own():
    a = rc.audit(run=RUN, qrels=QRELS, k=10)
    row = next(r for r in a.rows if r["axis"] == "ties" and r["value"] == "trec_eval")
    assert row["declared"]
    expected = {**evaluate_run(RUN, QRELS, k=10).extras["trec_eval"], **evaluate_run(RUN, QRELS).extras["trec_eval"]}
    assert row["values"] == {name: expected[name] for name in row["values"]}


def test_file_order_is_the_stable_order():
    run = {"q": {"b": 1.0, "a": 1.0, "c": 1.0}}
    qrels = {"q": {"a": 1, "c": 0, "b": 0}}
    a = rc.audit(run=run, qrels=qrels, k=1)
    by_order = a.tie_intervals["recip_rank"]["values"]
    # file order b, a, c: a at rank 2; trec_eval (docno descending) c, b, a: rank 3; docno ascending: rank 1
    assert by_order["stable"] == 0.5 and by_order["trec_eval"] == pytest.approx(1 / 3)
    assert by_order["docno_ascending"] == 1.0 and by_order["reverse"] == 0.5


def _first(a):
    return a.reproduced["matches"][0]


@pytest.mark.parametrize(
    "case, changed",
    [
        ("generated-9.0.8", {"score_dtype": "float32"}),
        ("generated-9.0.8-J", {"score_dtype": "float32", "judged_only": True}),
        ("generated-10.0", {"complete": True}),
        ("generated-10.0-J", {"complete": True, "judged_only": True}),
    ],
)
def test_numbers_printed_by_trec_eval_are_traced_to_its_options(case, changed):
    printed = TREC_EVAL[case]
    reported = {name: printed[name] for name in ("map", "ndcg_cut_10", "P_10", "bpref")}
    a = rc.audit(run=RUN, qrels=QRELS, reported=reported)
    first = _first(a)
    assert first["cost"] == 0 and first["options"]["ties"] == "trec_eval"
    declared = dict(
        ties="trec_eval",
        discount="log2",
        gain="linear",
        judged_only=False,
        depth=None,
        complete=False,
        score_dtype="float64",
        float_grades="exact",
        rounding="round",
    )
    assert {n: v for n, v in first["options"].items() if declared[n] != v} == changed


def test_trec_eval_versions_are_rows_with_their_printed_numbers():
    a = rc.audit(run=RUN, qrels=QRELS)
    rows = {r["value"]: r["values"] for r in a.rows if r["axis"] == "tool"}
    for name in ("map", "ndcg_cut_10", "P_10", "recip_rank", "bpref", "Rprec"):
        assert f"{rows['trec_eval 9.0.8'][name]:.4f}" == TREC_EVAL["generated-9.0.8"][name], name
    assert rows["trec_eval 9.0a3"]["map"] == rows["trec_eval 9.0.8"]["map"]  # the discount moves nDCG only
    assert rows["trec_eval 9.0a3"]["ndcg"] != rows["trec_eval 9.0.8"]["ndcg"]


def _ndcg_9_0a3(grades, judged):
    """nDCG with trec_eval 9.0a3's discount, in floats: 1 at ranks 1 and 2, then 1 / log2(r)."""

    def dcg(gains):
        return sum(g / (1.0 if r <= 2 else math.log2(r)) for r, g in enumerate(gains, 1))

    ideal = dcg(sorted((g for g in judged.values() if g > 0), reverse=True))
    return dcg([g if g is not None and g > 0 else 0 for g in grades]) / ideal if ideal else 0.0


def test_a_number_made_under_a_known_order_and_discount_is_traced_back():
    stable = _ranks({q: sorted(docs, key=lambda d: -docs[d]) for q, docs in TIED_RUN.items()})  # file order
    res = evaluate_run(stable, TIED_QRELS)
    ndcg = np.mean([_ndcg_9_0a3(g, j) for g, j in zip(res.extras["grades"], res.extras["qrels_grades"])])
    reported = {"map": f"{res.extras['trec_eval']['map']:.4f}", "ndcg": f"{ndcg:.4f}"}
    a = rc.audit(run=TIED_RUN, qrels=TIED_QRELS, reported=reported)
    matches = a.reproduced["matches"]
    assert matches and all(m["options"]["ties"] == "stable" for m in matches)
    assert all(m["options"]["discount"] == "trec_eval_9.0a3" for m in matches)
    assert "§4 ties=stable" in matches[0]["clauses"] and "§7 discount=trec_eval_9.0a3" in matches[0]["clauses"]
    assert a.reproduced["nearest"] is None


def test_an_ndcg_with_exponential_gains_is_traced_to_them():
    res = evaluate_run(TIED_RUN, TIED_QRELS, k=2)  # trec_eval's order

    def dcg(gains):
        return sum(g / math.log2(r + 1) for r, g in enumerate(gains[:2], 1))

    ndcg = np.mean(
        [
            dcg([2.0**g - 1 if g is not None and g > 0 else 0 for g in grades])
            / dcg(sorted((2.0**g - 1 for g in judged.values() if g > 0), reverse=True))
            for grades, judged in zip(res.extras["grades"], res.extras["qrels_grades"])
        ]
    )
    a = rc.audit(run=TIED_RUN, qrels=TIED_QRELS, k=2, reported={"ndcg_cut_2": f"{ndcg:.4f}"})
    matches = a.reproduced["matches"]
    assert matches and all(m["options"]["gain"] == "exponential" for m in matches)
    assert any(m["options"]["ties"] == "trec_eval" and m["options"]["discount"] == "log2" for m in matches)
    assert "§7 gain=exponential" in matches[0]["clauses"]
    declared = rc.audit(run=TIED_RUN, qrels=TIED_QRELS, k=2, gain="exponential", reported={"ndcg_cut_2": f"{ndcg:.4f}"})
    assert declared.reproduced["matches"][0]["changed"] == 0
    assert next(r for r in declared.rows if r["axis"] == "gain" and r["declared"])["value"] == "exponential"
    assert {("gain", "linear"), ("gain", "exponential")} <= {(r["axis"], r["value"]) for r in a.rows}
    binary = rc.audit(run=TIED_RUN, qrels={q: {d: int(g > 0) for d, g in j.items()} for q, j in TIED_QRELS.items()})
    assert "gain" not in {r["axis"] for r in binary.rows}  # grades 0 and 1: both gains are the grades


def test_a_truncated_number_costs_one_assumption():
    value = evaluate_run(RUN, QRELS).extras["trec_eval"]["map"]
    truncated = math.floor(value * 10**5) / 10**5
    assert f"{value:.5f}" != f"{truncated:.5f}"  # rounding and truncation differ here
    a = rc.audit(run=RUN, qrels=QRELS, reported={"map": f"{truncated:.5f}"})
    assert any(
        m["options"]["rounding"] == "truncate"
        and m["options"]["ties"] == "trec_eval"
        and m["cost"] == 1
        and m["options"]["score_dtype"] == "float64"
        for m in a.reproduced["matches"]
    )
    assert all(m["cost"] == 1 for m in a.reproduced["matches"])
    nothing = rc.audit(run=RUN, qrels=QRELS, reported={"map": "0.9999"})
    assert not nothing.reproduced["matches"]
    assert nothing.reproduced["nearest"]["gap"] > 0.5


def _finding(a, kind):
    return next(f for f in a.findings if f["kind"] == kind)


def test_planted_duplicate_docnos_are_found_with_ranx_reading_as_effect(tmp_path):
    lines = ["q1 Q0 a 1 3.0 t", "q1 Q0 b 2 2.0 t", "q1 Q0 c 3 1.0 t", "q1 Q0 a 4 0.5 t", "q2 Q0 x 1 1.0 t"]
    path = tmp_path / "dup.run"
    path.write_text("\n".join(lines) + "\n")
    qrels = {"q1": {"a": 1, "c": 1}, "q2": {"x": 1}}
    with pytest.raises(ValueError, match="again"):
        rc.evaluate(run=str(path), qrels=qrels)  # refused by evaluate, as trec_eval stops
    a = rc.audit(run=str(path), qrels=qrels)
    f = _finding(a, "duplicate_docnos")
    assert f["count"] == 1 and "lines 1 and 4" in f["detail"]
    first = evaluate_run({"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"x": 1.0}}, qrels).map
    last = evaluate_run({"q1": {"a": 0.5, "b": 2.0, "c": 1.0}, "q2": {"x": 1.0}}, qrels).map
    assert f["effect"]["without"] == first and f["effect"]["with"] == last and last < first
    clean = rc.audit(run=RUN, qrels=QRELS)
    assert _finding(clean, "duplicate_docnos")["count"] == 0


def test_planted_unjudged_documents_in_the_top_k_and_what_judged_only_changes():
    run = {q: {f"d{i}": float(20 - i) for i in range(20)} for q in ("q1", "q2")}
    run["q3"] = {"d0": 3.0, "d1": 2.0, "d2": 1.0}  # fewer than k retrieved
    qrels = {
        "q1": {f"d{i}": int(i % 3 == 0) for i in range(20) if i not in (1, 4)},  # 2 unjudged in the top 5
        "q2": {f"d{i}": int(i % 2 == 0) for i in range(20) if i not in (0, 2, 3)},  # 3 unjudged in the top 5
        "q3": {"d0": 1, "d2": 0},
    }  # 1 unjudged of 3
    a = rc.audit(run=run, qrels=qrels, k=5)
    f = _finding(a, "unjudged_top_k")
    assert f["count"] == 6 and f["share"] == pytest.approx(6 / 13) and f["topics"] == 3
    assert f["effect"]["with"] == evaluate_run(run, qrels).map
    assert f["effect"]["without"] == evaluate_run(run, qrels, judged_only=True).map


def test_topics_on_one_side_and_without_relevant_documents():
    run = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"a": 1.0}, "extra": {"a": 1.0}}
    qrels = {"q1": {"a": 1}, "q2": {"a": 0}, "q3": {"z": 1}}
    a = rc.audit(run=run, qrels=qrels)
    assert _finding(a, "run_only_topics")["count"] == 1
    qrels_only = _finding(a, "qrels_only_topics")
    assert qrels_only["count"] == 1
    assert qrels_only["effect"]["with"] == evaluate_run(run, qrels, complete=True).map == pytest.approx(1 / 3)
    empty = _finding(a, "no_relevant_topics")
    assert empty["count"] == 1 and empty["effect"]["with"] == 0.5 and empty["effect"]["without"] == 1.0
    assert ("complete", "True") in {(r["axis"], r["value"]) for r in a.rows}


def test_scores_printed_with_three_decimals_are_named(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "rounded.run"
    path.write_text(
        "".join(
            f"q{q} Q0 d{i} {i + 1} {s:.{2 + i % 2}f} t\n"
            for q in range(3)
            for i, s in enumerate(np.sort(rng.random(400))[::-1])
        )
    )  # 2 or 3 decimals
    qrels = {f"q{q}": {f"d{i}": int(i % 7 == 0) for i in range(0, 400, 2)} for q in range(3)}
    a = rc.audit(run=str(path), qrels=qrels)
    f = _finding(a, "low_precision")
    assert f["decimals"] == 3 and "%.3f" in f["detail"]
    assert f["count"] == pytest.approx(_finding(a, "ties")["tied_share"] * 1200) and f["count"] > 0
    fine = rc.audit(run={"q": {"a": 0.123456789, "b": 0.5}}, qrels={"q": {"a": 1}})
    assert not [f for f in fine.findings if f["kind"] == "low_precision"]


def test_float_grades_with_their_effect_on_ndcg():
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    qrels = {"q": {"a": 0.5, "b": 2.5, "c": 1}}
    with pytest.warns(UserWarning):
        a = rc.audit(run=run, qrels=qrels)
    f = _finding(a, "float_grades")
    assert f["count"] == 2
    assert f["effect"]["with"] == evaluate_run(run, qrels, float_grades="exact").extras["trec_eval"]["ndcg"]
    assert f["effect"]["without"] == evaluate_run(run, qrels, float_grades="truncate").extras["trec_eval"]["ndcg"]
    assert f["effect"]["change"] != 0


def test_refusals_name_the_argument():
    with pytest.raises(ValueError, match="^ap_rule:"):
        rc.audit(run=TIED_RUN, qrels=TIED_QRELS, ap_rule="trapezoid")
    with pytest.raises(ValueError, match="^protocol:"):
        rc.audit(run=TIED_RUN, qrels=TIED_QRELS, protocol="reid")
    with pytest.raises(ValueError, match="^qrels:"):
        rc.audit(run=TIED_RUN)
    with pytest.raises(ValueError, match="^depth:"):
        rc.audit(distances=np.zeros((2, 3)), relevance=np.ones((2, 3), bool), depth=5)
    with pytest.raises(ValueError, match="^ties:"):
        rc.audit(run=TIED_RUN, qrels=TIED_QRELS, ties="grouped")
    with pytest.raises(ValueError, match="^reported: unknown TREC measure"):
        rc.audit(run=TIED_RUN, qrels=TIED_QRELS, reported="rank_one=0.5")
    # Rank-1 of a run is trec_eval's success_1 (a relevant document at rank 1): read as it
    reported = rc.audit(run=TIED_RUN, qrels=TIED_QRELS, reported="rank1=0.5").to_dict()["reproduced"]["reported"]
    assert [r["metric"] for r in reported] == ["success_1"]
    with pytest.raises(ValueError, match="^k:"):
        rc.audit(run=TIED_RUN, qrels=TIED_QRELS, k=0)
    with pytest.raises(ValueError, match="^score_dtype:"):
        rc.audit(run=TIED_RUN, qrels=TIED_QRELS, score_dtype="float16")
    with pytest.raises(ValueError, match="^discount: 'trec' no longer names"):
        rc.audit(run=TIED_RUN, qrels=TIED_QRELS, discount="trec")
    with pytest.raises(ValueError, match="^gain: 'exponential' and a gains map"):
        rc.audit(run=TIED_RUN, qrels=TIED_QRELS, gain="exponential", gains={1: 3})
    with pytest.raises(ValueError, match="^gain:"):
        rc.audit(run=TIED_RUN, qrels=TIED_QRELS, gain="cubic")


def test_reported_cut_offs_are_audited_and_reports_render():
    a = rc.audit(run=RUN, qrels=QRELS, k=5, reported="ndcg@20=0.1")
    assert "ndcg_cut_20" in a.tie_intervals and "P_5" in a.tie_intervals
    d = json.loads(json.dumps(a.to_dict(), default=str))
    assert d["data"]["kind"] == "trec run" and d["specification_version"]
    text = a.to_text()
    assert "trec_eval 9.0.8" in text and "docno_ascending" in text and "unjudged documents in the top 5" in text
    page = a.to_html()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<script" not in page.lower()
    assert a.failures(["tie_interval:ndcg_cut_5>0.5%", "unjudged_top_k.share>0.1"])
    assert not a.failures(["duplicate_docnos>0", "mrr>0.99"])


def test_command_line(tmp_path):
    cmd = [sys.executable, "-m", "retrieval_conformance.cli", "audit", "--run", RUN, "--qrels", QRELS]
    done = subprocess.run(cmd + ["--reported", "map=0.2865", "--format", "json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["reproduced"]["matches"][0]["options"]["score_dtype"] == "float32"
    failed = subprocess.run(cmd + ["--k", "5,10", "--fail-if", "tie_interval:map>1%"], capture_output=True, text=True)
    assert failed.returncode == 1 and "fail-if: tie_interval:map>1%" in failed.stderr
    for extra, flag in (
        (["--protocol", "reid"], "--protocol"),
        (["--depth", "x"], "--depth"),
        (["--reported", "bogus=1"], "--reported"),
    ):
        bad = subprocess.run(cmd + extra, capture_output=True, text=True)
        assert bad.returncode == 2 and flag in bad.stderr, bad.stderr
    npz = tmp_path / "a.npz"
    np.savez(npz, distances=np.zeros((2, 3)), relevance=np.ones((2, 3), bool))
    bad = subprocess.run(
        [sys.executable, "-m", "retrieval_conformance.cli", "audit", "--npz", str(npz), "--judged-only"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "--judged-only" in bad.stderr
