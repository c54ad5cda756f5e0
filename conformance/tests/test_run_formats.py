"""Runs and qrels in the formats IR people have, and hostile TREC files, each with its minimal case.

gzip (bounded on the decompressed bytes), JSON Lines, DataFrames (duck-typed; pandas optional),
``(D, I)`` search results with labels; a byte-order mark is refused by name (trec_eval would read
it into the first query id), CRLF is read as trec_eval reads it.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import time
import zlib
from fractions import Fraction as F

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run
from retrieval_conformance.reference.readers import FileRefusedError, read_qrels, read_run
from retrieval_conformance.reference.readers.tables import qrels_from_labels, read_table, run_from_search

RUN = b"q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.5 t\nq1 Q0 d3 3 0.4 t\nq2 Q0 d9 1 1.0 t\n"
QRELS = b"q1 0 d2 1\nq1 0 d4 2\nq2 0 d9 1\n"
#: q1: d2 at rank 2 of R = 2 -> AP 1/4; q2: AP 1 -> map 5/8
MAP = F(5, 8)


def _map(run, qrels):
    return evaluate_run(run, qrels, implementation="reference").exact.map


@pytest.fixture
def plain(tmp_path):
    (tmp_path / "a.run").write_bytes(RUN)
    (tmp_path / "a.qrels").write_bytes(QRELS)
    return tmp_path / "a.run", tmp_path / "a.qrels"


def test_plain_files_give_the_hand_value(plain):
    assert _map(*plain) == MAP


# ----------------------------------------------------------------------------- BOM and CRLF
@pytest.mark.parametrize("which", ["run", "qrels"])
def test_a_byte_order_mark_is_refused_by_name(which, tmp_path):
    """Read as trec_eval does, the mark joins the first qid: q1 of the run matched no qrels query."""
    run, qrels = tmp_path / "a.run", tmp_path / "a.qrels"
    run.write_bytes(b"\xef\xbb\xbf" * (which == "run") + RUN)
    qrels.write_bytes(b"\xef\xbb\xbf" * (which == "qrels") + QRELS)
    path = run if which == "run" else qrels
    with pytest.raises(
        ValueError,
        match=rf"{path.name}: line 1: starts with a UTF-8 byte-order mark; trec_eval "
        r"would read it as part of the first query id",
    ):
        (read_run if which == "run" else read_qrels)(path)
    with pytest.raises(ValueError, match="byte-order mark"):
        _map(run, qrels)


def test_crlf_reads_as_trec_eval_reads_it(tmp_path):
    (tmp_path / "a.run").write_bytes(RUN.replace(b"\n", b"\r\n"))
    (tmp_path / "a.qrels").write_bytes(QRELS.replace(b"\n", b"\r\n"))
    assert _map(tmp_path / "a.run", tmp_path / "a.qrels") == MAP


# ----------------------------------------------------------------------------- gzip
def test_gzip_files_read_as_the_plain_ones(tmp_path):
    (tmp_path / "a.run.gz").write_bytes(gzip.compress(RUN[:40]) + gzip.compress(RUN[40:]))  # two members
    (tmp_path / "a.qrels.gz").write_bytes(gzip.compress(QRELS))
    assert read_run(tmp_path / "a.run.gz") == read_run_bytes(tmp_path, RUN)
    assert _map(tmp_path / "a.run.gz", tmp_path / "a.qrels.gz") == MAP


def read_run_bytes(tmp_path, data):
    (tmp_path / "plain.run").write_bytes(data)
    return read_run(tmp_path / "plain.run")


def test_a_gzip_bomb_is_refused_by_the_byte_budget(tmp_path):
    """~1 MB of compressed zeros inflating to 1 GiB: refused after max_bytes + 1 bytes, quickly."""
    inflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"0" * (1 << 20)
    bomb = b"".join(inflater.compress(block) for _ in range(1024)) + inflater.flush()
    assert len(bomb) < 2 << 20
    (tmp_path / "bomb.run.gz").write_bytes(bomb)
    start = time.perf_counter()
    with pytest.raises(FileRefusedError, match=r"decompresses to more than the limit of 1,048,576 bytes") as info:
        read_run(tmp_path / "bomb.run.gz", max_bytes=1 << 20)
    assert info.value.limit == "max_bytes" and time.perf_counter() - start < 5


@pytest.mark.parametrize(
    "damage, message", [("truncated", "truncated gzip file"), ("corrupt", "not a readable gzip file")]
)
def test_damaged_gzip_is_named(damage, message, tmp_path):
    data = gzip.compress(RUN)
    data = data[:-12] if damage == "truncated" else data[:10] + b"\xff" * 8 + data[18:]
    (tmp_path / "a.run.gz").write_bytes(data)
    with pytest.raises(ValueError, match=message):
        read_run(tmp_path / "a.run.gz")


# ----------------------------------------------------------------------------- JSON Lines
def test_json_lines_read_as_the_trec_files(tmp_path):
    run = tmp_path / "a.jsonl"
    run.write_text(
        '{"qid": "q1", "docid": "d1", "score": 0.9, "rank": 1}\n{"qid": "q1", "docid": "d2", "score": 0.5}\n'
        '\n{"qid": "q1", "docid": "d3", "score": 0.4}\n{"qid": "q2", "docid": "d9", "score": 1}\n'
    )
    qrels = tmp_path / "a.qrels.ndjson.gz"  # ir_measures' names, compressed
    qrels.write_bytes(
        gzip.compress(
            b'{"query_id": "q1", "doc_id": "d2", "relevance": 1}\n'
            b'{"query_id": "q1", "doc_id": "d4", "relevance": 2}\n'
            b'{"query_id": "q2", "doc_id": "d9", "relevance": 1}\n'
        )
    )
    assert read_qrels(qrels) == {"q1": {"d2": 1, "d4": 2}, "q2": {"d9": 1}}
    assert _map(run, qrels) == MAP


def test_json_lines_drop_a_byte_order_mark_and_read_crlf(tmp_path):
    """Before the first object a mark cannot join an id (the line is JSON): it is dropped, as RFC 8259 allows."""
    path = tmp_path / "a.jsonl"
    path.write_bytes(
        b'\xef\xbb\xbf{"qid": "q1", "docid": "d1", "score": 1}\r\n{"qid": "q1", "docid": "d2", "score": 0}\r\n'
    )
    assert read_run(path) == {"q1": {"d1": 1, "d2": 0}}


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"qid": "1", "docid": "a", "score": NaN}', r"line 1: not a JSON object \(NaN is not JSON"),
        ('["1", "a", 1.0]', r"line 1: expected a JSON object per line, got list"),
        ('{"qid": "1", "docid": "a"}', r"line 1: no score column; expected one of score"),
        (
            '{"qid": "1", "query_id": "1", "docid": "a", "score": 1}',
            r"line 1: columns qid, query_id all name the query",
        ),
        ('{"qid": "1", "docid": "a", "score": true}', r"line 1: expected a number as the score, got True"),
        ('{"qid": 1.5, "docid": "a", "score": 1}', r"line 1: expected a str query id"),
        (
            '{"qid": "1", "docid": "a", "score": 1}\n{"qid": 1, "docid": "a", "score": 2}',
            r"line 2: query '1' lists document 'a' again \(first at line 1\)",
        ),
        ('{"qid": "1", "docid": "a", "score": 1e999}', r"line 1: expected a finite score"),
        ("\xff", r"line 1: not a JSON object"),
    ],
)
def test_malformed_json_lines_name_file_and_line(line, message, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(line.encode("utf-8", "surrogateescape") if line != "\xff" else b"\xff\n")
    with pytest.raises(ValueError, match=rf"bad\.jsonl: {message}"):
        read_run(path)


# ----------------------------------------------------------------------------- DataFrames
class Frame:
    """The least a DataFrame offers the reader: ``columns`` and ``frame[column].tolist()``."""

    def __init__(self, **columns):
        self.data = columns
        self.columns = list(columns)

    def __getitem__(self, name):
        return np.asarray(self.data[name])

    def to_dict(self):  # a DataFrame's to_dict is by column: it must never be read as a run
        return self.data


def test_duck_typed_frames_and_their_errors():
    run = Frame(qid=["q1", "q1", "q1", "q2"], docid=["d1", "d2", "d3", "d9"], score=[0.9, 0.5, 0.4, 1.0])
    qrels = Frame(q_id=["q1", "q1", "q2"], doc_id=["d2", "d4", "d9"], score=[1, 2, 1])  # ranx's names
    assert _map(run, qrels) == MAP
    with pytest.raises(ValueError, match=r"run: row 1: query 'q1' lists document 'd1' again \(first at row 0\)"):
        read_table(Frame(qid=["q1", "q1"], docid=["d1", "d1"], score=[1.0, 2.0]), "run")
    with pytest.raises(ValueError, match=r"qrels: columns relevance, score all name the grade"):
        read_table(Frame(qid=["q"], docid=["d"], relevance=[1], score=[1]), "qrels")
    with pytest.raises(ValueError, match=r"run: row 0: expected a finite score, got nan"):
        read_table(Frame(qid=["q"], docid=["d"], score=[float("nan")]), "run")


def test_pandas_frames_as_ranx_and_ir_measures_take_them():
    pd = pytest.importorskip("pandas")
    run = pd.DataFrame(
        {"qid": ["q1", "q1", "q1", "q2"], "docid": ["d1", "d2", "d3", "d9"], "score": [0.9, 0.5, 0.4, 1.0]}
    )
    qrels = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["d2", "d4", "d9"], "relevance": [1, 2, 1]})
    assert _map(run, qrels) == MAP
    assert rc.evaluate_run(run, qrels, implementation="reference").exact.map == MAP


def test_pandas_is_not_imported_by_the_readers():
    code = (
        "import sys, retrieval_conformance.reference.readers.tables, "
        "retrieval_conformance.reference.protocols.trec.evaluation; "
        "print('pandas' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


# ----------------------------------------------------------------------------- search results
def test_search_results_and_labels_by_hand():
    """One query of label 5; database labels [5, 7, 5]; neighbours 1, 0, 2 (then padding -1).

    Relevant: rows 0 and 2, at ranks 2 and 3: AP = (1/2 + 2/3) / 2 = 7/12."""
    d = np.array([[0.1, 0.2, 0.3, np.inf]], dtype=np.float32)
    i = np.array([[1, 0, 2, -1]])
    run = run_from_search(d, i, metric="l2", ties="trec_eval")  # the distances as scores
    assert run == {"0": {"1": -0.10000000149011612, "0": -0.20000000298023224, "2": -0.30000001192092896}}
    assert run_from_search(d, i, metric="l2") == {"0": {"1": 3.0, "0": 2.0, "2": 1.0}}  # places kept
    qrels = qrels_from_labels(np.array([5]), np.array([5, 7, 5]))
    assert qrels == {"0": {"0": 1, "2": 1}}
    assert _map(run, qrels) == F(7, 12)
    similar = run_from_search(-d[:, :3], i[:, :3], metric="inner_product", query_ids=["q"], db_ids=["a", "b", "c"])
    assert _map(similar, qrels_from_labels([5], [5, 7, 5], query_ids=["q"], db_ids=["a", "b", "c"])) == F(7, 12)


def test_tied_neighbours_keep_the_search_order_unless_told_otherwise(tmp_path, capsys):
    """Neighbours 999 and 1000 at one distance, 1000 first as the search returned them; only 999 is
    relevant.  The search's order puts it second (AP 1/2); trec_eval's docno rule compares the ids
    as strings, "999" > "1000", and puts it first (AP 1)."""
    from retrieval_conformance.cli import main

    d, i = np.array([[0.5, 0.5]]), np.array([[1000, 999]])
    qrels = {"0": {"999": 1}}
    assert _map(run_from_search(d, i, metric="l2", n_db=1001), qrels) == F(1, 2)
    assert _map(run_from_search(d, i, metric="l2", n_db=1001, ties="trec_eval"), qrels) == F(1)
    # unsorted D is ranked by distance first: the search's order only breaks ties
    assert run_from_search([[0.7, 0.5, 0.5]], [[4, 2, 3]], metric="l2") == {"0": {"2": 3.0, "3": 2.0, "4": 1.0}}
    path = tmp_path / "tie.npz"
    labels = np.zeros(1001, dtype=int)
    labels[999], labels[1000] = 1, 2
    np.savez(path, D=d, I=i, query_labels=np.array([1]), db_labels=labels)
    for extra, expected in (([], 0.5), (["--search-ties", "trec_eval"], 1.0)):
        assert main(["evaluate", "--search", str(path), "--search-metric", "l2", "--json", *extra]) == 0
        out = capsys.readouterr()
        measures = json.loads(out.out)["trec_eval"]
        assert measures["map"] == expected and "bpref" not in measures
        assert "note: bpref and Judged@k are left out" in out.err
    with pytest.raises(ValueError, match="ties: expected one of search, trec_eval"):
        run_from_search(d, i, metric="l2", ties="docno")


def test_a_full_search_equals_evaluate_on_the_distance_matrix():
    rng = np.random.default_rng(7)
    q_labels, db_labels = rng.integers(0, 4, 12), np.concatenate([np.arange(4), rng.integers(0, 4, 36)])
    dist = rng.random((12, 40))
    order = np.argsort(dist, axis=1)
    run = run_from_search(np.take_along_axis(dist, order, 1), order, metric="l2")
    res = evaluate_run(run, qrels_from_labels(q_labels, db_labels), implementation="reference")
    direct = rc.evaluate(
        distances=dist, query_labels=q_labels, db_labels=db_labels, protocol="hashing", implementation="reference"
    )
    assert res.exact.map == direct.exact.map


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: run_from_search([[0.1]], [[0]], metric="cosine"), r"metric: expected one of l2, inner_product"),
        (lambda: run_from_search([[0.1, 0.2]], [[0]], metric="l2"), r"expected two arrays of one shape"),
        (lambda: run_from_search([[0.1]], [[-2]], metric="l2"), r"indices\[0, 0\]: -2 is not a database row"),
        (
            lambda: run_from_search([[0.1]], [[3]], metric="l2", db_ids=["a"]),
            r"indices\[0, 0\]: 3 is not a database row",
        ),
        (lambda: run_from_search([[0.1, 0.1]], [[0, 0]], metric="l2"), r"indices\[0\]: a database row appears twice"),
        (lambda: run_from_search([[np.nan]], [[0]], metric="l2"), r"distances\[0, 0\]: nan is not finite"),
        (lambda: run_from_search([[0.1]], [[0]], metric="l2", query_ids=["a", "b"]), r"query_ids: expected 1 ids"),
        (lambda: qrels_from_labels([[1]], [1]), r"expected 1-d arrays"),
    ],
)
def test_bad_search_inputs_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
    with pytest.raises(TypeError):
        run_from_search([[0.1]], [[0]])  # no default direction: metric must be given


# ----------------------------------------------------------------------------- the command line
def test_cli_reads_gzip_and_json_lines(tmp_path, capsys):
    from retrieval_conformance.cli import main

    (tmp_path / "a.run.gz").write_bytes(gzip.compress(RUN))
    (tmp_path / "a.qrels.jsonl").write_text(
        '{"qid": "q1", "docid": "d2", "relevance": 1}\n'
        '{"qid": "q1", "docid": "d4", "relevance": 2}\n'
        '{"qid": "q2", "docid": "d9", "relevance": 1}\n'
    )
    assert (
        main(["evaluate", "--run", str(tmp_path / "a.run.gz"), "--qrels", str(tmp_path / "a.qrels.jsonl"), "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["trec_eval"]["map"] == float(MAP)


def test_cli_evaluates_a_search_file(tmp_path, capsys):
    """The hand case of test_search_results_and_labels_by_hand, from an .npz as faiss leaves it."""
    from retrieval_conformance.cli import main

    path = tmp_path / "search.npz"
    np.savez(
        path,
        D=np.array([[0.1, 0.2, 0.3, np.inf]], dtype=np.float32),
        I=np.array([[1, 0, 2, -1]]),
        query_labels=np.array([5]),
        db_labels=np.array([5, 7, 5]),
    )
    assert main(["evaluate", "--search", str(path), "--search-metric", "l2", "--json"]) == 0
    # trec_eval's double: (1/2 + 2/3) / 2 summed in float64, one ulp below 7/12 rounded
    assert json.loads(capsys.readouterr().out)["trec_eval"]["map"] == (1.0 / 2.0 + 2.0 / 3.0) / 2 != 7 / 12
    assert main(["evaluate", "--search", str(path), "--search-metric", "inner_product", "--json"]) == 0
    # larger is closer: rows 2, 0, 1 -> both relevant first, AP 1
    assert json.loads(capsys.readouterr().out)["trec_eval"]["map"] == 1.0
    qrels = tmp_path / "q.txt"
    qrels.write_text("0 0 1 1\n")
    np.savez(tmp_path / "plain.npz", D=np.array([[0.1, 0.2]]), I=np.array([[1, 0]]))
    assert (
        main(
            [
                "evaluate",
                "--search",
                str(tmp_path / "plain.npz"),
                "--search-metric",
                "l2",
                "--qrels",
                str(qrels),
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["trec_eval"]["map"] == 1.0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--search-metric", "l2"], "--search-metric: says how the D of --search ranks"),
        (["--search", "{search}"], "--search-metric: required with --search"),
        (["--search", "{search}", "--search-metric", "l2", "--run", "x.run"], "--run: give a run file or a search"),
        (["--search", "{search}", "--search-metric", "l2", "--qrels", "q.txt"], "--qrels: {search} holds query_labels"),
        (["--search", "{plain}", "--search-metric", "l2"], "no query_labels and db_labels, and no --qrels"),
        (["--search", "{search}", "--search-metric", "l2", "--npz", "a.npz"], "--npz: arrays are not read"),
        (["--search", "{bad}", "--search-metric", "l2"], r"--search {bad}: indices\[0, 0\]: 9 is not a database row"),
        (["--search", "{nod}", "--search-metric", "l2"], "--search {nod}: no array D"),
    ],
)
def test_cli_search_errors_are_named(argv, message, tmp_path, capsys):
    from retrieval_conformance.cli import main

    paths = {name: str(tmp_path / f"{name}.npz") for name in ("search", "plain", "bad", "nod")}
    np.savez(paths["search"], D=np.zeros((1, 2)), I=np.array([[0, 1]]), query_labels=[1], db_labels=[1, 2])
    np.savez(paths["plain"], D=np.zeros((1, 2)), I=np.array([[0, 1]]))
    np.savez(paths["bad"], D=np.zeros((1, 1)), I=np.array([[9]]), query_labels=[1], db_labels=[1, 2])
    np.savez(paths["nod"], I=np.array([[0]]))
    argv = [a.format(**paths) for a in argv]
    assert main(["evaluate", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert re.search(message.format(**paths), err), err


# ----------------------------------------------------------------------------- grades as written
def test_the_reader_keeps_large_grades_as_written(tmp_path):
    (tmp_path / "q.txt").write_bytes(b"q1 0 d2 100\nq1 0 d4 53\n")
    assert read_qrels(tmp_path / "q.txt") == {"q1": {"d2": 100, "d4": 53}}


def test_grades_above_52_evaluate_as_trec_eval_reads_them(tmp_path):
    """trec_eval reads any integer grade (its gain); map does not read the grade at all."""
    (tmp_path / "a.run").write_bytes(RUN)
    (tmp_path / "a.qrels").write_bytes(QRELS.replace(b"d4 2", b"d4 100"))
    assert _map(tmp_path / "a.run", tmp_path / "a.qrels") == MAP
