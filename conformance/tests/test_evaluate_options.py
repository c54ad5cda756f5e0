"""``evaluate``: no option is ignored, every file read within limits, and ``--json`` is strict JSON.

With ``--run/--qrels`` each array option is handed to ``rc.evaluate_run`` when it takes that
keyword and refused by name when it does not; options of the other kind of input are refused;
``--query-ids`` is read by the bounded text reader; NaN is written as ``null`` and listed.
"""

from __future__ import annotations

import functools
import json
import os
import threading

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.cli import main
from retrieval_conformance.commands.run_options import ARRAY_OPTIONS
from retrieval_conformance.reference.contract import options_table

#: a value for each array option, valid for rc.evaluate (so a refusal is about --run, not the value):
#: the last value of each table option with choices (not the default)
VALUES = {
    name: (option.values()[-1] if option.values() else None)
    for name, option in options_table.BY_NAME.items()
    if name in ARRAY_OPTIONS
}
VALUES.update(protocol="trec", radius="1.5", device="cpu", progress=None, metrics="map")


def _strict(text: str):
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def trec_files(tmp_path):
    run, qrels = tmp_path / "a.run", tmp_path / "a.qrels"
    run.write_text("q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.5 t\nq2 Q0 d9 1 1.0 t\n")
    qrels.write_text("q1 0 d2 1\nq2 0 d9 1\n")
    return str(run), str(qrels)


def _argv(dest: str):
    flag = "--" + dest.replace("_", "-")
    return [flag] if VALUES[dest] is None else [flag, VALUES[dest]]


#: the options of arrays that a run takes in its own way: --metrics names trec_eval's measures to print
#: (test_measure_names.py), read by the command rather than passed to evaluate_run
RUN_READS_ITSELF = ("metrics",)


@pytest.mark.parametrize("dest", [d for d in ARRAY_OPTIONS if d not in RUN_READS_ITSELF])
def test_an_option_with_a_run_is_passed_on_or_refused_by_name(dest, trec_files, monkeypatch, capsys):
    """``evaluate --run R --qrels Q --discount log2`` once exited 0 with the same numbers."""
    seen = {}
    real = rc.evaluate_run

    @functools.wraps(real)  # keeps the signature the CLI reads
    def spy(run, qrels, **kwargs):
        seen.update(kwargs)
        return real(run, qrels, **kwargs)

    monkeypatch.setattr(rc, "evaluate_run", spy)
    status = main(["evaluate", "--run", trec_files[0], "--qrels", trec_files[1], *_argv(dest)])
    flag = "--" + dest.replace("_", "-")
    if status == 2:
        err = capsys.readouterr().err
        assert err.startswith(f"error: {flag}") or f"{dest}" in err, err
    else:  # taken by evaluate_run: it received the value given
        assert dest in seen, f"{flag} was accepted and dropped"


@pytest.mark.parametrize("dest", [d for d in ARRAY_OPTIONS if d not in RUN_READS_ITSELF])
def test_an_option_evaluate_run_takes_reaches_it(dest, trec_files, monkeypatch, capsys):
    """When evaluate_run grows a keyword (gain, discount, ...), the CLI passes the value on."""
    seen = {}
    real = rc.evaluate_run

    def fake(run, qrels, *, k=None, max_rank=50, implementation="auto", **kwargs):
        seen.update(kwargs)
        return real(run, qrels, k=k, max_rank=max_rank, implementation=implementation)

    import inspect

    params = [p for p in inspect.signature(fake).parameters.values() if p.kind != p.VAR_KEYWORD]
    fake.__signature__ = inspect.Signature(params + [inspect.Parameter(dest, inspect.Parameter.KEYWORD_ONLY)])
    monkeypatch.setattr(rc, "evaluate_run", fake)
    # --k: the run evaluated by evaluate_run (without it, trec_eval's selection refuses what it does not read)
    assert main(["evaluate", "--run", trec_files[0], "--qrels", trec_files[1], "--k", "5", *_argv(dest)]) == 0
    expected = True if VALUES[dest] is None else VALUES[dest]
    assert str(seen[dest]) == str(expected)
    status = main(["evaluate", "--run", trec_files[0], "--qrels", trec_files[1], *_argv(dest)])
    flag = "--" + dest.replace("_", "-")
    assert status == 2 and capsys.readouterr().err.startswith(f"error: {flag}: not read by trec_eval's measure")


def test_an_option_evaluate_run_lacks_is_refused_by_name(trec_files, monkeypatch, capsys):
    def fake(run, qrels, *, k=None, max_rank=50, implementation="auto", complete=False, relevance_level=1):
        raise AssertionError("must not be called")

    monkeypatch.setattr(rc, "evaluate_run", fake)
    assert main(["evaluate", "--run", trec_files[0], "--qrels", trec_files[1], "--discount", "log2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --discount: not an option of a TREC run evaluation") and "drop --discount" in err


@pytest.mark.parametrize(
    "argv", [["--npz", "x.npz"], ["--distances", "d.npy"], ["--relevance", "r.npy"], ["--max-array-bytes", "10"]]
)
def test_array_inputs_with_a_run_are_refused(argv, trec_files, capsys):
    assert main(["evaluate", "--run", trec_files[0], "--qrels", trec_files[1], *argv]) == 2
    assert capsys.readouterr().err.startswith(f"error: {argv[0]}: arrays are not read with --run")


@pytest.fixture
def npz(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, distances=np.array([[0.1, 0.2, 0.3]]), relevance=np.array([[0, 1, 1]]))
    return str(path)


@pytest.mark.parametrize("argv", [["--complete"], ["--relevance-level", "2"]])
def test_run_options_without_a_run_are_refused(argv, npz, capsys):
    assert main(["evaluate", "--npz", npz, *argv]) == 2
    assert capsys.readouterr().err.startswith(f"error: {argv[0]}: applies to a TREC run only")


def test_query_ids_without_per_query_and_quiet_with_json_are_refused(npz, tmp_path, capsys):
    ids = tmp_path / "ids.txt"
    ids.write_text("a\n")
    assert main(["evaluate", "--npz", npz, "--query-ids", str(ids)]) == 2
    assert capsys.readouterr().err.startswith("error: --query-ids: names the rows of --per-query")
    assert main(["evaluate", "--npz", npz, "--quiet", "--json"]) == 2
    assert capsys.readouterr().err.startswith("error: --quiet:")
    assert main(["evaluate", "--npz", npz, "--json", "--per-query", "csv"]) == 2  # once: csv, --json dropped
    assert capsys.readouterr().err.startswith("error: --json: the per-query table has its own JSON form")


def test_query_ids_are_read_before_evaluating(npz, tmp_path, capsys):
    """A bad --query-ids file is refused before any work: no progress or warning before the one error line."""
    bad = tmp_path / "ids.txt"
    bad.write_bytes(b"\xff\n")
    assert main(["evaluate", "--npz", npz, "--per-query", "csv", "--query-ids", str(bad), "--progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --query-ids {bad}: line 1") and err.count("\n") == 1, err


def test_protocol_default_for_arrays_is_still_hashing(npz, capsys):
    assert main(["evaluate", "--npz", npz, "--json"]) == 0
    assert _strict(capsys.readouterr().out)["protocol"] == "hashing"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("kind", ["fifo", "device", "not utf-8", "nul", "bom and crlf"])
def test_query_ids_file_is_read_within_limits(kind, npz, tmp_path, capsys):
    path = tmp_path / "ids.txt"
    if kind == "fifo":
        os.mkfifo(path)  # a plain open() would wait for a writer forever
        _unblock_later(str(path))
    elif kind == "device":
        path = "/dev/zero"
    elif kind == "not utf-8":
        path.write_bytes(b"q1\n\xff\xfe\n")
    elif kind == "nul":
        path.write_bytes(b"q1\n\0\n")
    else:
        path.write_bytes(b"\xef\xbb\xbfq1\r\n")
    status = main(["evaluate", "--npz", npz, "--per-query", "csv", "--query-ids", str(path)])
    captured = capsys.readouterr()
    if kind == "bom and crlf":  # what editors on Windows write is read as the id it is
        assert status == 0 and captured.out.splitlines()[1].startswith("q1,")
        return
    assert status == 2 and captured.err.startswith(f"error: --query-ids {path}:")
    reason = {
        "fifo": "a FIFO",
        "device": "a character device",
        "not utf-8": "line 2: byte 0xff is not UTF-8",
        "nul": "line 2: NUL byte",
    }[kind]
    assert reason in captured.err


def _unblock_later(path, seconds: float = 10.0) -> threading.Timer:
    """If a reader regresses to a plain open() of the FIFO, it blocks: a writer opened later lets it
    return, so the test fails on its assertion instead of hanging the suite."""

    def open_writer():
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # nobody is blocked on it: the reader refused it, as it should
            pass

    timer = threading.Timer(seconds, open_writer)
    timer.daemon = True
    timer.start()
    return timer


def test_json_output_is_strict_with_nan_as_null(tmp_path, capsys):
    """No relevant item and ``--empty nan``: the means are NaN; json.dumps would print a bare NaN."""
    path = tmp_path / "none.npz"
    np.savez(path, distances=np.array([[0.1, 0.2]]), relevance=np.array([[0, 0]]))
    assert main(["evaluate", "--npz", str(path), "--empty", "nan", "--json"]) == 0
    summary = _strict(capsys.readouterr().out)
    assert summary["map"] is None and summary["non_finite"]["map"] == "NaN"
    assert main(["evaluate", "--npz", str(path), "--empty", "nan", "--per-query", "json"]) == 0
    doc = _strict(capsys.readouterr().out)
    assert doc["summary"]["map"] is None and "summary.map" in doc["non_finite"]


def test_strict_json_names_each_replaced_value():
    from retrieval_conformance.strict_json import dumps

    text = dumps({"a": [1.0, float("inf")], "b": {"c": float("-inf")}, "d": np.float64("nan")})
    assert _strict(text) == {
        "a": [1.0, None],
        "b": {"c": None},
        "d": None,
        "non_finite": {"a[1]": "Infinity", "b.c": "-Infinity", "d": "NaN"},
    }
    assert "non_finite" not in _strict(dumps({"a": 1.5}))


RUN_FLAGS = {
    "depth": (["--depth", "2"], 2),
    "judged_only": (["--judged-only"], True),
    "ignore_identical_ids": (["--ignore-identical-ids"], True),
    "gains": (["--gains", "1=3,2=9.5"], {1: 3.0, 2: 9.5}),
}


@pytest.mark.parametrize("dest", sorted(RUN_FLAGS))
def test_trec_eval_run_flags_reach_evaluate_run(dest, trec_files, monkeypatch, capsys):
    """-M, -J, ndcg gains and BEIR's ignore_identical_ids on the command line: the value given, and the
    numbers rc.evaluate_run gives with it."""
    argv, value = RUN_FLAGS[dest]
    seen = {}
    real = rc.evaluate_run

    def spy(run, qrels, **kwargs):
        seen.update(kwargs)
        return real(run, qrels, **kwargs)

    monkeypatch.setattr(rc, "evaluate_run", spy)
    # --k: evaluate_run's path (without it, trec_eval's selection reads these flags itself)
    assert main(["evaluate", "--run", trec_files[0], "--qrels", trec_files[1], "--json", "--k", "5", *argv]) == 0
    assert seen[dest] == value
    printed = json.loads(capsys.readouterr().out)
    want = real(trec_files[0], trec_files[1], k=5, **{dest: value})
    assert printed["map"] == pytest.approx(want.map, abs=1e-15)


@pytest.mark.parametrize("argv", [["--depth", "2"], ["--judged-only"], ["--gains", "1=2"]])
def test_run_flags_without_a_run_are_refused(argv, npz, capsys):
    assert main(["evaluate", "--npz", npz, *argv]) == 2
    assert capsys.readouterr().err.startswith(f"error: {argv[0]}: applies to a TREC run only")


def test_gains_must_be_grade_gain_pairs(trec_files, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--run", trec_files[0], "--qrels", trec_files[1], "--gains", "1:3"])
    assert exc.value.code == 2 and "--gains" in capsys.readouterr().err
