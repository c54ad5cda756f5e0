"""The audit, compare and the readers under hostile input: NaN conditions, script in ids, unbounded
resamples, deep or huge numbers, integers in other spellings, bare ``\\r`` line ends, repeated JSON
keys, ``rank0``, spreadsheet formulas.  Each test is the minimal reproduction of what an adversarial
campaign found; the audit's own fuzz target runs at the end."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
from html.parser import HTMLParser

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.cli import main as cli_main
from retrieval_conformance.conformance.audit.cli import audit_main
from retrieval_conformance.conformance.fuzz.html_check import script_hazards
from retrieval_conformance.reference.contract.command_line import run_command
from retrieval_conformance.reference.readers.trec import read_qrels, read_run

#: every query without a relevant item: under empty=nan every metric is NaN
NO_RELEVANT = dict(distances=np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0]]), relevance=np.zeros((2, 3), int))
HOSTILE = (
    "<script>alert(1)</script>",
    "<img/src=x/onerror=alert(1)>",
    '"><svg/onload=alert(1)>',
    "javascript:alert(1)",
    "</style><script>x</script>",
)


def _command(main, argv):
    """(exit status, stdout, stderr) of a command run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = run_command(main, [str(a) for a in argv])
        except SystemExit as exc:  # argparse's usage errors
            status = exc.code
    return status, out.getvalue(), err.getvalue()


def _refused(result, flag):
    status, _, err = result
    last = err.strip().splitlines()[-1] if err.strip() else ""
    assert status == 2 and last.startswith("error:") and flag in last and "Traceback" not in err, result


@pytest.fixture
def no_relevant_npz(tmp_path):
    path = tmp_path / "no_relevant.npz"
    np.savez(path, **NO_RELEVANT)
    return path


@pytest.fixture
def trec_files(tmp_path):
    run, qrels = tmp_path / "a.run", tmp_path / "a.qrels"
    run.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.5 t\nq1 Q0 d3 3 0.2 t\nq2 Q0 d1 1 0.9 t\nq2 Q0 d3 2 0.1 t\n")
    qrels.write_text("q1 0 d2 1\nq1 0 d3 0\nq2 0 d3 1\n")
    return run, qrels


# -- --fail-if on NaN ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "condition", ["rank1<0.5", "rank1>=0", "rank1==0.5", "tie_interval:rank1>0", "tie_interval:map<=1", "map>0"]
)
def test_every_fail_if_form_fails_on_a_nan_value(no_relevant_npz, condition):
    status, _, err = _command(audit_main, ["--npz", no_relevant_npz, "--empty", "nan", "--fail-if", condition])
    assert status == 1 and f"fail-if: {condition}:" in err, err


def test_a_condition_on_a_name_of_the_other_kind_of_data_is_refused_before_the_work(trec_files, no_relevant_npz):
    run, qrels = trec_files
    _refused(_command(audit_main, ["--run", run, "--qrels", qrels, "--fail-if", "rank1<0.5"]), "--fail-if")
    _refused(_command(audit_main, ["--run", run, "--qrels", qrels, "--fail-if", "tie_interval:minp>0"]), "--fail-if")
    _refused(_command(audit_main, ["--npz", no_relevant_npz, "--fail-if", "P_10>0"]), "--fail-if")


def test_a_run_condition_at_a_cut_off_needs_that_cut_off(trec_files):
    """rank1 of a TREC run is trec_eval's success_1 (one vocabulary): judged with --k 1, refused
    before the work without it, naming the cut-off to add."""
    run, qrels = trec_files
    result = _command(audit_main, ["--run", run, "--qrels", qrels, "--fail-if", "rank1<0.5"])
    _refused(result, "--fail-if")
    assert "success_1, at cut-off 1" in result[2] and "add 1 to --k" in result[2]
    status, _, err = _command(audit_main, ["--run", run, "--qrels", qrels, "--k", "1", "--fail-if", "rank1>2"])
    assert status == 0 and "Traceback" not in err, err


def test_audit_json_is_strict_with_nan_values(no_relevant_npz):
    status, out, err = _command(audit_main, ["--npz", no_relevant_npz, "--empty", "nan", "--format", "json"])
    assert status == 0, err

    def refuse(constant):
        raise AssertionError(f"{constant} in --format json")

    document = json.loads(out, parse_constant=refuse)
    assert document["non_finite"] and all(v == "NaN" for v in document["non_finite"].values())


# -- HTML ----------------------------------------------------------------------------------------
class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attributes, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += attrs

    def handle_data(self, data):
        self.text.append(data)


def test_hostile_topic_ids_and_docnos_are_text_in_the_html_report(tmp_path):
    run, qrels = tmp_path / "hostile.run", tmp_path / "hostile.qrels"
    lines, judged = [], []
    for topic in HOSTILE:
        for doc in HOSTILE[:3]:
            lines.append(f"{topic} Q0 {doc}x 1 0.5 t")  # every document tied: every topic moves
            judged.append(f"{topic} 0 {doc}x {int(doc == HOSTILE[1])}")
    run.write_text("\n".join(lines) + "\n")
    qrels.write_text("\n".join(judged) + "\n")
    status, page, err = _command(audit_main, ["--run", run, "--qrels", qrels, "--k", "2", "--format", "html"])
    assert status == 0, err
    parsed = _Page()
    parsed.feed(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags
    assert not [name for name, _ in parsed.attributes if name.startswith("on")]
    assert not [value for _, value in parsed.attributes if value and "javascript:" in value.lower()]
    text = "".join(parsed.text)
    assert "<script>alert(1)</script>" in text  # shown, as text
    assert script_hazards(page) == []  # only the report's own elements and attributes, and its CSP
    assert "script-src" not in page and "default-src 'none'" in page


def test_the_html_check_sees_what_could_run_script():
    safe = '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'"><p class="x">a</p>'
    assert script_hazards(safe) == []
    for bad in ("<script>x</script>", '<p onclick="x">', '<a href="javascript:x">', '<p style="x:url(y)">'):
        assert script_hazards(safe + bad), bad
    assert script_hazards('<p class="x">a</p>') == ["no Content-Security-Policy <meta http-equiv>"]


# -- compare --resamples -------------------------------------------------------------------------
def test_resamples_are_bounded(trec_files):
    from retrieval_conformance.comparison.arguments import MAX_RESAMPLES

    run, qrels = trec_files
    result = _command(cli_main, ["compare", run, run, "--qrels", qrels, "--resamples", str(10**12)])
    _refused(result, "--resamples")
    assert f"{MAX_RESAMPLES:,}" in result[2]
    with pytest.raises(ValueError, match="n_resamples"):
        rc.compare({"a": np.array([0.1, 0.2]), "b": np.array([0.2, 0.3])}, n_resamples=MAX_RESAMPLES + 1)
    rc.compare({"a": np.array([0.1, 0.2]), "b": np.array([0.2, 0.3])}, n_resamples=MAX_RESAMPLES)  # the bound itself


# -- deep, huge and oddly spelled numbers --------------------------------------------------------
def test_json_lines_nested_deep_is_a_named_error(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b'{"qid": "q1", "docid": "d1", "score": 1}\n' + b"[" * 100_000 + b"\n")
    with pytest.raises(ValueError, match=f"{path}: line 2: .*nested"):
        read_run(path)
    path.write_bytes(b'{"qid": "q1", "docid": "d1", "score": ' + b"[" * 50 + b"]" * 50 + b"}\n")
    with pytest.raises(ValueError, match="line 1: expected a number"):  # shallow nesting: read, then refused
        read_run(path)


def test_a_5000_digit_grade_names_file_line_and_field(tmp_path):
    path = tmp_path / "huge.qrels"
    path.write_bytes(b"q1 0 d1 1\nq1 0 d2 " + b"9" * 5000 + b"\n")
    with pytest.raises(ValueError, match=f"{path}: line 2: .*field 4.*beyond int64"):
        read_qrels(path)
    with pytest.raises(ValueError, match="within int64, got an integer of"):
        rc.evaluate_run({"q1": {"d1": 1.0}}, {"q1": {"d1": 10**5000, "d2": 0.5}})  # not repr()'s 4,300-digit error


@pytest.mark.parametrize("value", [str(2**63), "1_0", "\u0665", "0", "-1", "1e3", " "])
def test_k_is_read_by_the_shared_integer_parser(trec_files, no_relevant_npz, value):
    run, qrels = trec_files
    _refused(_command(audit_main, ["--run", run, "--qrels", qrels, "--k", value]), "--k")
    _refused(_command(audit_main, ["--npz", no_relevant_npz, "--k", value]), "--k")
    _refused(_command(cli_main, ["evaluate", "--run", run, "--qrels", qrels, "--k", value]), "--k")
    _refused(
        _command(cli_main, ["compare", no_relevant_npz, no_relevant_npz, "--names", "a", "b", "--k", value]), "--k"
    )


@pytest.mark.parametrize("flag", ["--max-rank", "--max-cost", "--depth", "--relevance-level"])
def test_other_integer_options_refuse_other_spellings(trec_files, no_relevant_npz, flag):
    run, qrels = trec_files
    given = ["--npz", no_relevant_npz] if flag in ("--max-rank",) else ["--run", run, "--qrels", qrels]
    for value in ("1_0", "\u0665"):
        _refused(_command(audit_main, given + [flag, value]), flag)
    _refused(_command(cli_main, ["evaluate", "--npz", no_relevant_npz, "--max-rank", "1_0"]), "--max-rank")


def test_an_option_the_api_refuses_is_named_as_its_flag(no_relevant_npz):
    _refused(_command(audit_main, ["--npz", no_relevant_npz, "--max-rank", str(2**63 - 1)]), "--max-rank")
    _refused(_command(audit_main, ["--npz", no_relevant_npz, "--empty", "never"]), "--empty")


def test_an_error_naming_run_and_qrels_names_both_flags(tmp_path):
    run, qrels = tmp_path / "a.run", tmp_path / "b.qrels"
    run.write_text("q1 Q0 d1 1 0.5 t\n")
    qrels.write_text("q2 0 d1 1\n")  # no topic in common
    status, _, err = _command(audit_main, ["--run", run, "--qrels", qrels])
    assert status == 2 and err.startswith("error: --run, --qrels: no query has both"), err


def test_the_largest_cut_off_is_audited_or_refused_by_name(trec_files):
    run, qrels = trec_files
    status, _, err = _command(audit_main, ["--run", run, "--qrels", qrels, "--k", str(2**63 - 1)])
    assert status == 0 or (status == 2 and err.startswith("error: --k")), err


def test_a_5000_digit_reported_number_is_refused_by_name(trec_files, no_relevant_npz):
    run, qrels = trec_files
    number = "0." + "1" * 5000
    _refused(_command(audit_main, ["--run", run, "--qrels", qrels, "--reported", f"map={number}"]), "--reported")
    _refused(_command(audit_main, ["--npz", no_relevant_npz, "--reported", f"map={number}"]), "--reported")


# -- readers: line ends, repeated keys -----------------------------------------------------------
def test_bare_carriage_return_line_ends_are_refused_by_line(tmp_path):
    path = tmp_path / "mac.run"
    path.write_bytes(b"q1 Q0 d1 1 0.5 t\rq1 Q0 d2 2 0.4 t\rq2 Q0 d1 1 0.3 t\r")
    with pytest.raises(ValueError, match=f"{path}: line 1: a carriage return"):
        read_run(path)
    path = tmp_path / "mac.jsonl"
    path.write_bytes(b'{"qid": "q1", "docid": "d1", "score": 1}\r{"qid": "q1", "docid": "d2", "score": 2}\r')
    with pytest.raises(ValueError, match="line 1: a carriage return"):
        read_run(path)
    path = tmp_path / "windows.run"  # \r\n line ends read as they always were
    path.write_bytes(b"q1 Q0 d1 1 0.5 t\r\nq1 Q0 d2 2 0.4 t\r\n")
    assert read_run(path) == {"q1": {"d1": 0.5, "d2": 0.4}}


def test_json_lines_repeated_keys_are_refused_by_key_and_line(tmp_path):
    path = tmp_path / "twice.jsonl"
    path.write_text('{"qid": "q1", "docid": "d1", "score": 1}\n{"qid": "q1", "docid": "d2", "score": 1, "score": 9}\n')
    with pytest.raises(ValueError, match=f"{path}: line 2: key 'score' appears twice"):
        read_run(path)


# -- one metric vocabulary -----------------------------------------------------------------------
def test_rank0_is_refused_by_evaluate_and_compare():
    args = dict(distances=np.array([[0.1, 0.2], [0.2, 0.1]]), relevance=np.array([[1, 0], [0, 1]]))
    with pytest.raises(ValueError, match="metrics: unknown metric 'rank0' .*ranks count from 1"):
        rc.evaluate(**args, metrics=["rank0"])
    results = {"a": rc.evaluate(**args), "b": rc.evaluate(**args)}
    with pytest.raises(ValueError, match="metrics"):
        rc.compare(results, metrics=["rank0"])
    with pytest.raises(ValueError, match="metrics: unknown metric"):  # no int() of 5,000 digits
        rc.evaluate(**args, metrics=["rank" + "9" * 5000])
    assert rc.evaluate(**args, metrics=["rank_01"]).cmc[0] == 1.0


# -- spreadsheet formulas ------------------------------------------------------------------------
def test_per_query_csv_escapes_ids_a_spreadsheet_would_run(tmp_path):
    ids = ["=1+1", "+2", "-3", "@SUM(A1)", "q1"]
    run, qrels = tmp_path / "f.run", tmp_path / "f.qrels"
    run.write_text("".join(f"{q} Q0 d1 1 0.5 t\n" for q in ids))
    qrels.write_text("".join(f"{q} 0 d1 1\n" for q in ids))
    status, out, err = _command(cli_main, ["evaluate", "--run", run, "--qrels", qrels, "--per-query", "csv"])
    assert status == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert sorted(row["query"] for row in rows) == sorted(["'=1+1", "'+2", "'-3", "'@SUM(A1)", "q1"])
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row.values())


# -- the audit's fuzz target ---------------------------------------------------------------------
CASES = 10_000 if os.environ.get("RC_FUZZ") == "long" else 24


def _audit_findings(start: int, cases: int):
    from retrieval_conformance.conformance.fuzz.files import run_file_campaign

    return run_file_campaign(seed=0, start=start, cases=cases, target="audit", timeout=60.0).findings


def test_audit_campaign_is_clean():
    from retrieval_conformance.conformance.fuzz.files import run_file_campaign

    report = run_file_campaign(seed=0, cases=CASES, target="audit", timeout=60.0)
    assert report.cases == CASES
    assert not report.findings, report.findings[:5]
    assert report.counts["value"] and report.counts["named_error"]
    assert {"arrays", "npz", "trec", "trec-bad"} <= set(report.kinds)


def test_the_audit_campaign_finds_html_left_unescaped(monkeypatch):
    from retrieval_conformance.conformance.audit import report_html

    monkeypatch.setattr(report_html, "_e", str)
    assert any("HTML that could run script: element <script>" in detail for *_, detail in _audit_findings(0, 24))


def test_the_audit_campaign_finds_nan_in_json(monkeypatch):
    import retrieval_conformance.strict_json as strict_json

    monkeypatch.setattr(strict_json, "dumps", lambda obj, **kwargs: json.dumps(obj, **kwargs))
    assert any("not strict JSON (NaN is not JSON)" in detail for *_, detail in _audit_findings(0, 24))


def test_the_audit_campaign_finds_a_nan_condition_that_passes(monkeypatch):
    import types

    from retrieval_conformance.conformance.audit import fail_if

    monkeypatch.setattr(fail_if, "math", types.SimpleNamespace(isnan=lambda value: False))  # NaN compared as a number
    found = _audit_findings(56, 4)  # case 58 of seed 0: tie_interval:rank1==1 on NaN values
    assert [kind for _, _, kind, _ in found] == ["wrong_number"] and "tie_interval:rank1" in found[0][3]


def test_rc_audit_of_a_run_takes_any_cut_off(trec_files):
    run, qrels = trec_files
    huge, small = rc.audit(run=str(run), qrels=str(qrels), k=2**63), rc.audit(run=str(run), qrels=str(qrels), k=50)
    found = {f["kind"]: f["count"] for f in huge.to_dict()["findings"]}
    assert found == {f["kind"]: f["count"] for f in small.to_dict()["findings"]}  # the lists are shorter than both
