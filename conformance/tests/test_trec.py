"""TREC runs and qrels: the readers, and ``evaluate_run`` against hand arithmetic and against
an independent trec_eval-style loop (``conformance/examples/trec_eval_style.py``), with every
implementation.

The hand-checked example (``RUN`` and ``QRELS`` below) has string ids, ties, an unjudged and a
negatively judged document in the run, a relevant document missing from the run, a query absent
from the run (303), one absent from the qrels (305) and one with no relevant document (304).
"""

from __future__ import annotations

import os
import random
from fractions import Fraction as F

import pytest
from retrieval_conformance.conformance.examples.trec_eval_style import trec_eval_style
from retrieval_conformance.conformance.support.hostile_support import needs_fifo
from retrieval_conformance.conformance.support.requirements import implementation_params, require_implementation
from retrieval_conformance.reference.contract.problem import ResultsAtK
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run
from retrieval_conformance.reference.protocols.trec.queries import trec_order
from retrieval_conformance.reference.readers.limits import FileRefusedError
from retrieval_conformance.reference.readers.trec import read_qrels, read_run

QRELS = """\
# graded judgments: 2 and 1 relevant, 0 not, -1 in the pool but unjudged
301 0 FT-1 2
301 0 FT-2 0
301 0 FT-3 1
301 0 FT-4 1
301 0 LA-9 -1

302 0 AP-1 1
302 0 AP-2 0
303 0 WSJ-1 2
304 0 X-1 0
"""
# the rank column (4th) is deliberately not the score order: trec_eval ignores it
RUN = """\
301 Q0 FT-2 1 3.5 runA
301 Q0 FT-1 2 2.0 runA
301 Q0 LA-9 3 2.0 runA
301 Q0 FT-3 4 2.0 runA
301 Q0 ZZ-0 5 1.0 runA
302 Q0 AP-2 1 0.25 runA
302 Q0 AP-1 2 0.25 runA
302 Q0 AP-3 3 0.25 runA
304 Q0 X-1 1 9 runA
304 Q0 X-2 2 8 runA
305 Q0 Y-1 1 1 runA
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "run.txt").write_text(RUN)
    (tmp_path / "qrels.txt").write_text(QRELS)
    return tmp_path / "run.txt", tmp_path / "qrels.txt"


def _check(result, exact, implementation):
    """Means (``exact``: name -> Fraction) exactly with the reference, to 1e-12 otherwise."""
    measures = result.extras["trec_eval"]
    for name, value in exact.items():
        if implementation == "reference":
            assert _exact_mean(result, name) == value, name
        assert measures[name] == pytest.approx(float(value), rel=1e-12, abs=1e-15), name


def _exact_mean(result, name):
    if name == "map":
        return result.exact.map
    if name.startswith("P_"):
        return result.exact.precision_at_k
    if name.startswith("recall_"):
        return result.exact.recall_at_k
    rows = result.per_query.exact["r_precision"]  # Rprec
    return sum(rows, F(0)) / len(rows)


# --------------------------------------------------------------------------- hand arithmetic
@pytest.mark.parametrize("implementation", implementation_params())
def test_hand_example_default(files, implementation):
    """Queries 301, 302 and 304 are evaluated (303 has no results, 305 no judgments).

    301: FT-2 scores 3.5; FT-1, LA-9 and FT-3 tie at 2.0 and go by docno descending (LA-9 >
    FT-3 > FT-1); ZZ-0 (1.0) is unjudged.  Ranks: 1 FT-2 (0), 2 LA-9 (-1), 3 FT-3 (1),
    4 FT-1 (2), 5 ZZ-0.  R = |{FT-1, FT-3, FT-4}| = 3 (FT-4 never retrieved).
      AP = (1/3 + 2/4) / 3 = (5/6) / 3 = 5/18     [docno ascending would give 7/18, the rank
      column 1/3]
      P@4 = 2/4 = 1/2, recall@4 = 2/3, Rprec = H(3)/3 = 1/3 (only FT-3 in the top 3)
    302: all tie at 0.25, so AP-3, AP-2, AP-1; AP-1 (grade 1) at rank 3, R = 1.
      AP = (1/3) / 1 = 1/3, P@4 = 1/4, recall@4 = 1/1 = 1, Rprec = H(1)/1 = 0
    304: R = 0 (X-1 judged 0): 0 everywhere, still counted.
    Means over 3 queries:
      map = (5/18 + 1/3 + 0) / 3 = (11/18) / 3 = 11/54
      P_4 = (1/2 + 1/4 + 0) / 3 = 1/4;   recall_4 = (2/3 + 1 + 0) / 3 = 5/9
      Rprec = (1/3 + 0 + 0) / 3 = 1/9
      P_10 = (2/10 + 1/10 + 0) / 3 = 1/10 (fewer than 10 retrieved: the rest is non-relevant)
    """
    require_implementation(implementation)
    run, qrels = files
    res = evaluate_run(run, qrels, k=4, implementation=implementation)
    assert res.implementation == implementation and res.protocol == "trec"
    assert res.extras["query_ids"] == ["301", "302", "304"]
    _check(res, {"map": F(11, 54), "P_4": F(1, 4), "recall_4": F(5, 9), "Rprec": F(1, 9)}, implementation)
    rows = res.per_query_table(res.extras["query_ids"])
    assert [r["query"] for r in rows] == ["301", "302", "304"]
    assert [r["n_relevant"] for r in rows] == [3, 1, 0]
    for row, (ap, p4, r4, rp) in zip(
        rows, [(F(5, 18), F(1, 2), F(2, 3), F(1, 3)), (F(1, 3), F(1, 4), F(1), F(0)), (0, 0, 0, 0)]
    ):
        assert row["ap"] == pytest.approx(float(ap), rel=1e-12)
        assert (row["precision_at_k"], row["recall_at_k"], row["r_precision"]) == (float(p4), float(r4), float(rp))
    wide = evaluate_run(run, qrels, k=10, implementation=implementation)
    _check(wide, {"map": F(11, 54), "P_10": F(1, 10), "recall_10": F(5, 9)}, implementation)


def test_hand_example_ranking_grades_and_left_out(files):
    """The ranking of 301 (see the default test), grades aligned with it (None: not judged),
    and the queries trec_eval ignores silently."""
    res = evaluate_run(*files, implementation="reference")
    assert res.extras["ranked"][0] == ["FT-2", "LA-9", "FT-3", "FT-1", "ZZ-0"]
    assert res.extras["grades"][0] == [0, -1, 1, 2, None]
    assert res.extras["ranked"][1] == ["AP-3", "AP-2", "AP-1"]
    assert res.extras["qrels_grades"][0]["FT-4"] == 1
    assert res.extras["left_out"] == {"run_only": ["305"], "qrels_only": ["303"]}
    assert list(res.extras["n_retrieved"]) == [5, 3, 2]
    m = res.extras["trec_eval"]
    # num_ret = 5 + 3 + 2, num_rel = 3 + 1 + 0, num_rel_ret = 2 + 1 + 0
    assert (m["num_q"], m["num_ret"], m["num_rel"], m["num_rel_ret"]) == (3, 10, 4, 3)
    assert res.precision_at_k is None and res.recall_at_k is None  # no k: no P@k / R@k means
    # without k, per query: set_P = relevant retrieved / retrieved, set_recall = .. / R
    assert res.per_query.exact["precision_at_k"] == [F(2, 5), F(1, 3), F(0)]
    assert res.per_query.exact["recall_at_k"] == [F(2, 3), F(1), F(0)]


@pytest.mark.parametrize("implementation", implementation_params())
def test_hand_example_complete_and_level(files, implementation):
    """``complete=True`` (trec_eval -c) adds 303 with 0 everywhere; means divide by 4:
      map = (5/18 + 1/3) / 4 = (11/18) / 4 = 11/72;  P_4 = (3/4) / 4 = 3/16
      recall_4 = (5/3) / 4 = 5/12;  Rprec = (1/3) / 4 = 1/12
    ``relevance_level=2`` (trec_eval -l 2): only FT-1 (301) and WSJ-1 (303) are relevant.
      301: R = 1, FT-1 at rank 4: AP = 1/4, P@4 = 1/4, recall@4 = 1, Rprec = H(1)/1 = 0
      302 and 304: R = 0.  Means over 3: map = 1/12, P_4 = 1/12, recall_4 = 1/3, Rprec = 0
      With -c as well (4 queries): map = 1/16, P_4 = 1/16, recall_4 = 1/4.
    """
    require_implementation(implementation)
    run, qrels = files
    res = evaluate_run(run, qrels, k=4, complete=True, implementation=implementation)
    assert res.extras["query_ids"] == ["301", "302", "303", "304"]
    assert res.extras["ranked"][2] == [] and res.extras["left_out"]["qrels_only"] == []
    _check(res, {"map": F(11, 72), "P_4": F(3, 16), "recall_4": F(5, 12), "Rprec": F(1, 12)}, implementation)
    res = evaluate_run(run, qrels, k=4, relevance_level=2, implementation=implementation)
    _check(res, {"map": F(1, 12), "P_4": F(1, 12), "recall_4": F(1, 3), "Rprec": F(0)}, implementation)
    res = evaluate_run(run, qrels, k=4, relevance_level=2, complete=True, implementation=implementation)
    _check(res, {"map": F(1, 16), "P_4": F(1, 16), "recall_4": F(1, 4)}, implementation)


def test_docstring_example_and_several_cutoffs():
    """c, b, a tie (docno descending); R = 3 with z never retrieved.
    AP = (1/1 + 2/3) / 3 = 5/9; P@1 = 1, P@2 = 1/2; recall@1 = 1/3, recall@2 = 1/3."""
    run, qrels = {"q1": {"a": 1.0, "b": 1.0, "c": 1.0}}, {"q1": {"a": 1, "b": 0, "c": 2, "z": 1}}
    both = evaluate_run(run, qrels, k=(1, 2), implementation="reference")
    assert isinstance(both, ResultsAtK) and list(both) == [1, 2]
    assert [r.exact.map for r in both.values()] == [F(5, 9), F(5, 9)]
    assert [r.exact.precision_at_k for r in both.values()] == [F(1), F(1, 2)]
    assert [r.exact.recall_at_k for r in both.values()] == [F(1, 3), F(1, 3)]
    assert both[2].extras["trec_eval"]["P_2"] == 0.5


def test_score_dtype_float32_ties_like_trec_eval_9():
    """1.00000001 and 1.0 differ in float64 but not in float32 (ulp 2**-23 ~ 1.2e-7 at 1).
    float64: a (1.00000001) ranks first, b (relevant) second: AP = (1/2) / 1 = 1/2.
    float32: a tie, broken by docno descending: b first: AP = 1."""
    run, qrels = {"q": {"a": 1.00000001, "b": 1.0}}, {"q": {"b": 1}}
    assert evaluate_run(run, qrels, implementation="reference").exact.map == F(1, 2)
    assert evaluate_run(run, qrels, score_dtype="float32", implementation="reference").exact.map == F(1)


def test_docno_order_is_byte_order():
    """b"\\xf0" (not UTF-8, read as "\\udcf0") sorts after "\\uffff" (bytes EF BF BF) by bytes,
    although its code point is smaller; trec_eval's strcmp sees the bytes."""
    weird = b"\xf0".decode("utf-8", "surrogateescape")
    order = [d for d, _ in trec_order({"\uffff": 1.0, weird: 1.0, "z": 2.0})]
    assert order == ["z", weird, "\uffff"]


# --------------------------------------------------------------------------- inputs
def test_dicts_and_ranx_objects_equal_files(files):
    run_path, qrels_path = files
    run, qrels = read_run(run_path), read_qrels(qrels_path)
    assert run["301"] == {"FT-2": 3.5, "FT-1": 2.0, "LA-9": 2.0, "FT-3": 2.0, "ZZ-0": 1.0}
    assert qrels["301"]["LA-9"] == -1 and set(qrels) == {"301", "302", "303", "304"}

    class RanxLike:  # ranx.Run / ranx.Qrels expose to_dict()
        def __init__(self, d):
            self.d = d

        def to_dict(self):
            return self.d

    from_files = evaluate_run(run_path, str(qrels_path), k=4, implementation="reference")
    for r, q in [(run, qrels), (RanxLike(run), RanxLike(qrels))]:
        res = evaluate_run(r, q, k=4, implementation="reference")
        assert res.exact == from_files.exact
        assert res.extras["query_ids"] == from_files.extras["query_ids"]
    # an empty dict is no results / no judgments, like a query without lines in a file
    res = evaluate_run(dict(run, **{"303": {}}), dict(qrels, **{"305": {}}), k=4, implementation="reference")
    assert res.exact == from_files.exact


def test_reader_layout(tmp_path):
    """Extra run fields are ignored, CRLF and tabs are whitespace, comments and blank lines skipped."""
    (tmp_path / "run").write_bytes(b"# header\r\n\r\n 1\tQ0\td1\t1\t-2.5e1\tx extra fields\r\n1 Q0 d2 7 .5 x\n")
    assert read_run(tmp_path / "run") == {"1": {"d1": -25.0, "d2": 0.5}}
    (tmp_path / "qrels").write_bytes(b"1 0 d1 +2\r\n\n1 0 d2 -3\n")
    assert read_qrels(tmp_path / "qrels") == {"1": {"d1": 2, "d2": -3}}
    (tmp_path / "empty").write_bytes(b"")
    assert read_run(tmp_path / "empty") == {} and read_qrels(tmp_path / "empty") == {}


@pytest.mark.parametrize(
    "reader, text, message",
    [
        (read_run, "1 Q0 d1 1 0.5 t\n1 Q0 d2 2 0.4\n", r"run\.txt: line 2: expected 6 .*fields.*got 5"),
        (read_run, "1 Q0 d1 1 abc t\n", r"run\.txt: line 1: expected a finite decimal score.*'abc'.*not a decimal"),
        (read_run, "1 Q0 d1 1 nan t\n", r"line 1: expected a finite decimal score.*'nan'"),
        (read_run, "1 Q0 d1 1 1e400 t\n", r"line 1: .*beyond the float64 range"),
        (
            read_run,
            "1 Q0 d1 1 0.5 t\n\n1 Q0 d1 2 0.4 t\n",
            r"line 3: query '1' lists document 'd1' again \(first on line 1\)",
        ),
        (read_run, "1 Q0 d1 1 0.5 t\x00\n", r"line 1: NUL byte"),
        (read_qrels, "1 0 d1 1 extra\n", r"qrels\.txt: line 1: expected 4 .*fields.*got 5"),
        (read_qrels, "1 0 d1\n", r"line 1: expected 4 .*got 3"),
        (read_qrels, "1 0 d1 1.5x\n", r"line 1: expected a decimal relevance grade.*'1.5x'.*not a decimal number"),
        (read_qrels, "1 0 d1 99999999999999999999\n", r"line 1: .*beyond int64"),
        (read_qrels, "1 0 d1 1\n1 0 d1 0\n", r"line 2: query '1' lists document 'd1' again \(first on line 1\)"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path, reader, text, message):
    path = tmp_path / ("run.txt" if reader is read_run else "qrels.txt")
    path.write_bytes(text.encode())
    with pytest.raises(ValueError, match=message):
        reader(path)
    with pytest.raises(ValueError, match=message):  # the same error through evaluate_run
        evaluate_run(path, {"1": {"d1": 1}}) if reader is read_run else evaluate_run({"1": {"d1": 1.0}}, path)


def test_missing_directory_and_limits(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_run(tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError):
        evaluate_run({"1": {"d": 1.0}}, tmp_path / "nope.txt")
    with pytest.raises(IsADirectoryError):
        read_qrels(tmp_path)
    (tmp_path / "big").write_text("1 0 d1 1\n" * 5)
    with pytest.raises(FileRefusedError, match="max_lines"):
        read_qrels(tmp_path / "big", max_lines=4)
    with pytest.raises(FileRefusedError, match="max_bytes"):
        read_qrels(tmp_path / "big", max_bytes=10)


@needs_fifo
def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileRefusedError, match=r"run\.fifo: not a regular file \(a FIFO\)"):
        read_run(fifo)
    with pytest.raises(FileRefusedError, match="FIFO"):
        evaluate_run({"1": {"d": 1.0}}, fifo)


@pytest.mark.parametrize(
    "run, qrels, error, message",
    [
        ({1: {"d": 1.0}}, {"1": {"d": 1}}, TypeError, r"run: expected str ids.*int.*str\(\)"),
        ({"1": {"d": 1.0}}, {"1": {"d": "1"}}, TypeError, r"qrels\['1'\]\['d'\]: expected a real number as the grade"),
        ({"1": {"d": 1.0}}, {"1": {"d": float("inf")}}, ValueError, r"qrels\['1'\]\['d'\]: expected a finite grade"),
        ({"1": {"d": float("nan")}}, {"1": {"d": 1}}, ValueError, r"run\['1'\]\['d'\]: expected a finite score"),
        ({"1": {"d": True}}, {"1": {"d": 1}}, TypeError, r"run\['1'\]\['d'\]: expected a real score"),
        ({"1": ["d"]}, {"1": {"d": 1}}, TypeError, r"run\['1'\]: expected a dict"),
        ([("1", "d", 1.0)], {"1": {"d": 1}}, TypeError, r"run: expected a path to a TREC run file or a dict"),
        ({"1": {"d": 1.0}}, {"2": {"d": 1}}, ValueError, r"run, qrels: no query has both results and judgments"),
    ],
)
def test_bad_dicts_are_named(run, qrels, error, message):
    with pytest.raises(error, match=message):
        evaluate_run(run, qrels)


@pytest.mark.parametrize(
    "options, error, message",
    [
        (dict(relevance_level=0), ValueError, "relevance_level"),
        (dict(score_dtype="float16"), ValueError, "score_dtype"),
        (dict(k=0), ValueError, "k"),
        (dict(k=(5, 5)), ValueError, "distinct"),
        (dict(complete="yes"), TypeError, "complete"),
    ],
)
def test_bad_options_are_named(options, error, message):
    with pytest.raises(error, match=message):
        evaluate_run({"1": {"d": 1.0}}, {"1": {"d": 1}}, **options)


# --------------------------------------------------------------------------- random runs
def _random_case(rng):
    """A run with many tied scores and docnos sharing prefixes, and graded qrels (-1 .. 2)
    judging some documents that were never retrieved; some queries only on one side."""
    pool = [f"{p}{i}" for p in ("d", "D", "d-", "x") for i in range(12)]
    run, qrels = {}, {}
    for q in rng.sample(range(20), rng.randint(1, 8)):
        if rng.random() < 0.85:
            run[f"q{q}"] = {d: rng.choice([0.5, 1.0, 2.0, -3.0, 1e-300]) for d in rng.sample(pool, rng.randint(1, 25))}
        if rng.random() < 0.85:
            qrels[f"q{q}"] = {d: rng.choice([-1, 0, 0, 1, 1, 2]) for d in rng.sample(pool, rng.randint(1, 15))}
    if not set(run) & set(qrels):
        run["q99"], qrels["q99"] = {"d0": 1.0, "d1": 1.0}, {"d1": 1}
    return run, qrels


@pytest.mark.parametrize("implementation", implementation_params())
def test_random_runs_match_trec_eval_style(implementation):
    require_implementation(implementation)
    rng = random.Random(20240611)
    for case in range(25 if implementation == "reference" else 40):
        run, qrels = _random_case(rng)
        k = rng.choice([1, 3, 10, 40])
        level = rng.choice([1, 1, 2])
        complete = rng.random() < 0.3
        depth, judged_only = rng.choice([None, None, 2, 7]), rng.random() < 0.3  # trec_eval -M, -J
        per_query, means = trec_eval_style(
            run, qrels, cutoffs=(k,), relevance_level=level, complete=complete, depth=depth, judged_only=judged_only
        )
        res = evaluate_run(
            run,
            qrels,
            k=k,
            relevance_level=level,
            complete=complete,
            depth=depth,
            judged_only=judged_only,
            implementation=implementation,
        )
        assert res.extras["query_ids"] == list(per_query), case
        columns = dict(
            res.extras["trec_eval_per_query"],
            map=res.ap,
            Rprec=res.per_query.r_precision,
            **{f"P_{k}": res.per_query.precision_at_k, f"recall_{k}": res.per_query.recall_at_k},
        )
        for i, qid in enumerate(per_query):
            assert set(per_query[qid]) <= set(columns), case
            for name, want in per_query[qid].items():
                got = columns[name][i]
                assert got == pytest.approx(float(want), rel=1e-12, abs=1e-15), (case, qid, name)
        if implementation == "reference":
            assert res.exact.map == means["map"] and res.exact.precision_at_k == means[f"P_{k}"]
            assert res.exact.recall_at_k == means[f"recall_{k}"], case
            assert sum(res.per_query.exact["r_precision"], F(0)) / len(per_query) == means["Rprec"]
            assert res.per_query.exact["ap"] == [per_query[q]["map"] for q in per_query]
        for name, value in means.items():
            assert res.extras["trec_eval"][name] == pytest.approx(float(value), rel=1e-12, abs=1e-15), (case, name)
