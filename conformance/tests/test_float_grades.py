"""Qrels grades that are not integers (spec §13 trec_eval): exact, trec_eval's truncation, or refused.

Expected values are hand arithmetic in fractions; the discounts are the float64 table of
spec §7 discount=log2, taken exactly.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.reference.contract.discounts import discount_table
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run
from retrieval_conformance.reference.readers.grades import atol
from retrieval_conformance.reference.readers.trec import as_qrels, read_qrels

QRELS = "q1 0 a 2.5\nq1 0 b -0.5\nq1 0 c 1\nq1 0 z 1.5\n"
RUN = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}}  # ranked a, b, c; z is never retrieved
D = [Fraction(x) for x in discount_table(4).tolist()]  # D[r - 1] = 1 / log2(r + 1)


@pytest.fixture
def qrels_file(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text(QRELS)
    return path


def test_file_grades_exact_truncated_or_refused(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text("1 0 a 2.5\n1 0 b 1e3\n1 0 c -0.5\n1 0 d 2.0\n1 0 e +3\n")
    exact = {"a": Fraction(5, 2), "b": 1000, "c": Fraction(-1, 2), "d": 2, "e": 3}
    assert read_qrels(path, float_grades="exact") == {"1": exact}
    assert all(type(g) is int for g in read_qrels(path, float_grades="exact")["1"].values() if g.denominator == 1)
    # C's atol: the integer the text starts with
    assert read_qrels(path, float_grades="truncate") == {"1": {"a": 2, "b": 1, "c": 0, "d": 2, "e": 3}}
    with pytest.raises(ValueError, match=r"q\.txt: line 1: expected an integer relevance grade.*'2\.5'"):
        read_qrels(path, float_grades="refuse")
    with pytest.warns(UserWarning, match=r"q\.txt: 3 relevance grade\(s\).*line 1: '2\.5' is 5/2, trec_eval reads 2"):
        assert read_qrels(path) == {"1": exact}


@pytest.mark.parametrize(
    "text, value", [(b"2.5", 2), (b"-0.5", 0), (b"1e3", 1), (b".5", 0), (b"-7.9", -7), (b"+4", 4), (b"12", 12)]
)
def test_atol(text, value):
    assert atol(text) == value


def test_integer_grades_never_warn(tmp_path):
    path = tmp_path / "q.txt"
    path.write_text("1 0 a 2\n1 0 b -1\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_qrels(path) == {"1": {"a": 2, "b": -1}}
        assert as_qrels({"1": {"a": 2.0, "b": np.int64(0)}}) == {"1": {"a": 2, "b": 0}}


@pytest.mark.parametrize(
    "text, problem",
    [
        ("1e999", "exponent beyond 400"),
        ("1" * 65 + ".5", "not a decimal number"),
        ("1e30", "beyond int64"),
        ("nan", "not a decimal number"),
    ],
)
def test_unreadable_grades_are_named(tmp_path, text, problem):
    path = tmp_path / "q.txt"
    path.write_text(f"1 0 a 1\n1 0 b {text}\n")
    with pytest.raises(ValueError, match=f"q.txt: line 2: expected a decimal relevance grade.*{problem}"):
        read_qrels(path)


def test_dict_grades():
    given = {"1": {"a": 0.1, "b": -2.7, "c": np.float32(0.5), "d": Fraction(7, 3), "e": 4}}
    with pytest.warns(UserWarning, match=r"qrels\['1'\]\['a'\] = 0\.1 is 1/10, trec_eval reads 0"):
        exact = as_qrels(given)
    assert exact == {
        "1": {"a": Fraction(1, 10), "b": Fraction(-27, 10), "c": Fraction(1, 2), "d": Fraction(7, 3), "e": 4}
    }
    assert as_qrels(given, float_grades="truncate") == {"1": {"a": 0, "b": -2, "c": 0, "d": 2, "e": 4}}
    with pytest.raises(TypeError, match=r"qrels\['1'\]\['a'\]: expected an integer grade.*0\.1"):
        as_qrels(given, float_grades="refuse")
    with pytest.raises(ValueError, match=r"qrels\['1'\]\['a'\]: expected a finite grade, got nan"):
        as_qrels({"1": {"a": float("nan")}})
    with pytest.raises(ValueError, match=r"float_grades: expected one of \['exact', 'truncate', 'refuse'\]"):
        as_qrels(given, float_grades="floor")


def test_exact_grades_against_hand_arithmetic(qrels_file):
    # relevant (>= 1): a 5/2, c 1, z 3/2: R = 3; b (-1/2) is unjudged, so bpref has N = 0
    res = evaluate_run(RUN, qrels_file, k=3, float_grades="exact", implementation="reference")
    exact = res.extras["trec_eval_exact"]
    assert exact["map"] == [Fraction(1, 3) * (1 + Fraction(2, 3))]
    assert exact["bpref"] == [Fraction(2, 3)]
    dcg = Fraction(5, 2) * D[0] + 1 * D[2]
    ideal = Fraction(5, 2) * D[0] + Fraction(3, 2) * D[1] + 1 * D[2]
    assert exact["ndcg_cut_3"] == [dcg / ideal]
    assert res.extras["float_grades"] == "exact"


def test_truncated_grades_against_hand_arithmetic(qrels_file):
    # trec_eval's atol: a 2, b 0 (judged non-relevant: N = 1), c 1, z 1
    res = evaluate_run(RUN, qrels_file, k=3, float_grades="truncate", implementation="reference")
    exact = res.extras["trec_eval_exact"]
    assert exact["map"] == [Fraction(5, 9)]
    assert exact["bpref"] == [Fraction(1, 3)]  # c has b above it: 1 - min(1, 3) / min(1, 3) = 0
    assert exact["ndcg_cut_3"] == [(2 * D[0] + 1 * D[2]) / (2 * D[0] + 1 * D[1] + 1 * D[2])]
    assert res.extras["float_grades"] == "truncate"


def test_exact_grades_cut_and_gain_map(qrels_file):
    res = evaluate_run(RUN, qrels_file, k=2, float_grades="exact", implementation="reference")
    assert res.extras["trec_eval_exact"]["ndcg_cut_2"] == [Fraction(5, 2) / (Fraction(5, 2) + Fraction(3, 2) * D[1])]
    # a gain map keys integer grades; 5/2 and 3/2 keep their own gain
    res = evaluate_run(RUN, qrels_file, gains={1: 4}, float_grades="exact", implementation="reference")
    ideal = 4 * D[0] + Fraction(5, 2) * D[1] + Fraction(3, 2) * D[2]
    assert res.extras["trec_eval_exact"]["ndcg"] == [(Fraction(5, 2) * D[0] + 4 * D[2]) / ideal]


@pytest.mark.parametrize("implementation", [n for n in ("numpy", "c", "torch") if n in rc.available_implementations()])
def test_every_implementation_agrees(qrels_file, implementation):
    for mode in ("exact", "truncate"):
        want = evaluate_run(RUN, qrels_file, k=3, float_grades=mode, implementation="reference").extras["trec_eval"]
        got = evaluate_run(RUN, qrels_file, k=3, float_grades=mode, implementation=implementation).extras["trec_eval"]
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_default_is_exact_with_a_warning(qrels_file):
    with pytest.warns(UserWarning, match=r"float_grades='truncate' \(--float-grades truncate\) to reproduce trec_eval"):
        res = evaluate_run(RUN, qrels_file, k=3, implementation="reference")
    assert res.extras["trec_eval_exact"]["bpref"] == [Fraction(2, 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluate_run(RUN, qrels_file, k=3, float_grades="exact")
        evaluate_run(RUN, qrels_file, k=3, float_grades="truncate")


def test_dict_and_file_read_alike(qrels_file):
    as_dict = {"q1": {"a": 2.5, "b": -0.5, "c": 1, "z": 1.5}}
    for mode in ("exact", "truncate"):
        assert (
            evaluate_run(RUN, as_dict, k=3, float_grades=mode).extras["trec_eval"]
            == evaluate_run(RUN, qrels_file, k=3, float_grades=mode).extras["trec_eval"]
        )


@pytest.mark.parametrize(
    "option, values",
    [
        ("float_grades", ("exact", "truncate")),
        ("depth", (None, 2)),
        ("judged_only", (False, True)),
        ("gains", (None, {1: 3})),
    ],
)
def test_compare_refuses_runs_read_otherwise(qrels_file, option, values):
    a, b = (evaluate_run(RUN, qrels_file, k=3, **dict({"float_grades": "exact"}, **{option: v})) for v in values)
    with pytest.raises(ValueError, match=f"runs\\['B'\\]: evaluated with {option}="):
        rc.compare({"A": a, "B": b})


# -- the command line -------------------------------------------------------------------
@pytest.fixture
def run_files(tmp_path):
    a, b = tmp_path / "a.run", tmp_path / "b.run"
    a.write_text("q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq1 Q0 c 3 1 t\nq2 Q0 a 1 1 t\n")
    b.write_text("q1 Q0 a 1 1 t\nq1 Q0 b 2 2 t\nq1 Q0 c 3 3 t\nq2 Q0 a 1 1 t\n")
    return str(a), str(b)


def _cli(argv, capsys):
    from retrieval_conformance.cli import main

    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_evaluate_command_line(qrels_file, run_files, capsys):
    (qrels_file.parent / "q2.txt").write_text(QRELS + "q2 0 a 1\n")
    base = ["evaluate", "--run", run_files[0], "--qrels", str(qrels_file.parent / "q2.txt"), "--k", "3"]
    status, out, err = _cli(base, capsys)
    assert status == 0 and "bpref                 \tall\t0.8333" in out  # (2/3 + 1) / 2
    assert err.count("\n") == 1 and err.startswith("warning: ") and "--float-grades truncate" in err
    status, out, err = _cli(base + ["--float-grades", "truncate"], capsys)
    assert status == 0 and "bpref                 \tall\t0.6667" in out and not err  # (1/3 + 1) / 2
    status, out, err = _cli(base + ["--float-grades", "refuse"], capsys)
    assert status == 2 and err.startswith("error: ") and "line 1: expected an integer relevance grade" in err
    status, out, err = _cli(["evaluate", "--npz", str(qrels_file), "--float-grades", "exact"], capsys)
    assert status == 2 and err.startswith("error: --float-grades: applies to a TREC run only")


def test_compare_command_line(qrels_file, run_files, capsys):
    base = ["compare", *run_files, "--qrels", str(qrels_file), "--metrics", "bpref", "--resamples", "100", "--json"]
    status, out, err = _cli(base + ["--float-grades", "truncate"], capsys)
    assert status == 0 and not err
    import json

    assert json.loads(out)["means"]["a"]["bpref"] == pytest.approx(1 / 3)
    status, out, err = _cli(base, capsys)
    assert status == 0 and json.loads(out)["means"]["a"]["bpref"] == pytest.approx(2 / 3)
    assert err.startswith("warning: ") and "trec_eval reads 2" in err and "Traceback" not in err
    status, out, err = _cli(["compare", *run_files, "--float-grades", "exact"], capsys)
    assert status == 2 and "error: --float-grades: applies to TREC runs" in err
