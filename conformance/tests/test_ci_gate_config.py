"""The CI gate's parts that run no check: the tables and their errors, the options refused by name,
the baseline's choice of entries, stale entries, the careful TOML writer and ``--changed``."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from retrieval_conformance.conformance.harness import check_main
from retrieval_conformance.conformance.harness.gate import accept
from retrieval_conformance.conformance.harness.gate.config import ConfigError, find_config, read_config
from retrieval_conformance.conformance.harness.gate.run import stale_entries, touched_by

TABLE = "[[tool.retrieval-conformance.check]]\n"


def write(tmp_path: Path, body: str, name: str = "pyproject.toml") -> Path:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "body, named",
    [
        ('target = "m:f"\nadaptor = "hashing-codes"\n', "unknown key 'adaptor'"),
        ('target = "m:f"\nadapter = "nope"\n', "key 'adapter': expected one of"),
        ('target = "m:f"\nprotocol = "hashin"\n', "key 'protocol': expected one of"),
        ('target = "m:f"\nties = "random"\n', "key 'ties': expected one of"),
        ('target = "m:f"\ntimeout = -1\n', "key 'timeout': expected a number of seconds > 0"),
        ('target = "m:f"\ntimeout = true\n', "key 'timeout'"),
        ('target = "m:f"\nmax-examples = 0\n', "key 'max-examples': expected a whole number >= 1"),
        ('target = "m:f"\nknown-deviations = 3\n', "key 'known-deviations': expected a list of strings"),
        ('target = "m:f"\nonly = "golden/*"\n', "key 'only': expected a list of non-empty strings"),
        ('adapter = "hashing-codes"\n', "key 'target' is missing"),
        ('target = ""\n', "key 'target': expected a non-empty string"),
    ],
)
def test_a_bad_table_is_an_error_naming_the_file_the_table_and_the_key(tmp_path, body, named):
    path = write(tmp_path, '[project]\nname = "x"\n\n' + TABLE + 'target = "ok:f"\n\n' + TABLE + body)
    with pytest.raises(ConfigError) as err:
        read_config(str(path))
    assert str(path) in str(err.value) and "#2" in str(err.value) and named in str(err.value)


def test_the_tables_read_with_their_settings(tmp_path):
    path = write(
        tmp_path,
        TABLE + 'target = "lab/eval.py:f"\nprotocol = "dcmh"\nap-at-k = "r"\nknown-deviations = ["ties/*"]\n'
        "timeout = 3\n\n" + TABLE + 'name = "two"\ntarget = "lab.m:g"\nknown-deviations = "known.txt"\n',
    )
    (tmp_path / "known.txt").write_text("# accepted\n§4 ties=unstable\n")
    one, two = read_config(str(path)).checks
    assert (one.protocol, one.overrides, one.known, one.timeout, one.label) == (
        "dcmh",
        {"ap_at_k": "r"},
        ["ties/*"],
        3.0,
        "lab/eval.py:f",
    )
    assert (two.label, two.known_file, two.known) == ("two", "known.txt", ["§4 ties=unstable"])


def test_the_declaring_file_is_found_upwards_and_another_tools_pyproject_is_not_it(tmp_path):
    write(tmp_path, "[tool.black]\nline-length = 100\n")
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    assert find_config(str(inner)) is None
    write(tmp_path / "a", TABLE + 'target = "m:f"\n', name="retrieval-conformance.toml")
    assert find_config(str(inner)) == str(tmp_path / "a" / "retrieval-conformance.toml")


def gate(tmp_path, monkeypatch, *argv):
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = check_main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_no_target_and_nothing_declared_is_a_usage_error(tmp_path, monkeypatch):
    code, _, err = gate(tmp_path, monkeypatch)
    assert code == 2 and "no target given and no [[tool.retrieval-conformance.check]] table" in err


@pytest.mark.parametrize(
    "argv, named",
    [
        (["--protocol", "hashing"], "--protocol: set per function in its table (protocol = ...)"),
        (["--ties", "stable"], "--ties: set per function"),
        (["--known-deviations", "k.txt"], "(known-deviations = ...)"),
        (["--identify"], "--identify: names one function's conventions"),
        (["m:f", "--accept"], "--accept: applies to the declared functions"),
        (["m:f", "--summary", "s.md"], "--summary: applies to the declared functions"),
    ],
)
def test_options_that_do_not_apply_are_refused_by_name(tmp_path, monkeypatch, argv, named):
    write(tmp_path, TABLE + 'target = "m:f"\n')
    code, _, err = gate(tmp_path, monkeypatch, *argv)
    assert code == 2 and named in err


def test_a_bad_table_exits_2_before_anything_runs(tmp_path, monkeypatch):
    write(tmp_path, TABLE + 'target = "m:f"\ncolour = "red"\n')
    code, out, err = gate(tmp_path, monkeypatch)
    assert code == 2 and "unknown key 'colour'" in err and out == ""


def outcome(known, deviations, verdict="deviate"):
    return {"name": "f", "verdict": verdict, "known_entries": known, "deviations": deviations}


def deviation(check_id, status, clauses, causes):
    return {"check_id": check_id, "status": status, "clauses": clauses, "causes": causes}


DIVIDED = deviation("k/inside", "deviate", ["spec §6 ap_at_k=hits"], [["§6 ap_at_k=hits", "§11 divided-by-k"]])


def test_the_baseline_accepts_what_the_function_does_and_a_causeless_deviation_by_its_check():
    unknown = deviation("golden/x", "deviate", [], [])
    assert accept.entries_to_accept(outcome([], [DIVIDED, unknown]), []) == ["§11 divided-by-k", "golden/x"]


def test_an_entry_is_stale_when_nothing_it_accepts_happens():
    known = deviation("ties/tie-heavy", "known", ["spec §4 ties=stable"], [["§4 ties=stable", "§4 ties=unstable"]])
    o = outcome(["§4 ties=unstable", "§11 percent", "ties/*", "golden/*"], [known, DIVIDED])
    assert stale_entries(o) == ["§11 percent", "golden/*"]
    assert accept.entries_to_accept(o, stale_entries(o)) == ["§4 ties=unstable", "ties/*", "§11 divided-by-k"]
    assert stale_entries(outcome(["§11 percent"], [], verdict="error")) == []  # nothing compared


LAYOUT = (
    "# our lab\r\n[project]\r\nname = 'lab'\r\n\r\n"
    + TABLE.replace("\n", "\r\n")
    + 'target = "a.py:f"  # the first\r\n'
    + 'known-deviations = [\r\n  "golden/x",  # a comment with ] and "quotes"\r\n  "§4 ties=unstable",\r\n]\r\n'
    + "timeout = 5\r\n\r\n"
    + TABLE.replace("\n", "\r\n")
    + 'target = "b.py:g"\r\nonly = [\r\n  "k/*",\r\n]\r\n\r\n[tool.other]\r\nx = 1\r\n'
)


def test_the_writer_changes_only_the_known_deviations_lines(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_bytes(LAYOUT.encode())
    config = read_config(str(path))
    written = accept.record(config, {1: ["§4 ties=unstable", "§11 percent"], 2: ['a "quoted" § entry']})
    assert written == [str(path)]
    expected = LAYOUT.replace(
        'known-deviations = [\r\n  "golden/x",  # a comment with ] and "quotes"\r\n  "§4 ties=unstable",\r\n]\r\n',
        'known-deviations = [\r\n    "§4 ties=unstable",\r\n    "§11 percent",\r\n]\r\n',
    ).replace(
        'only = [\r\n  "k/*",\r\n]\r\n',
        'only = [\r\n  "k/*",\r\n]\r\nknown-deviations = [\r\n    "a \\"quoted\\" § entry",\r\n]\r\n',
    )
    assert path.read_bytes().decode() == expected
    assert [c.known for c in read_config(str(path)).checks] == [
        ["§4 ties=unstable", "§11 percent"],
        ['a "quoted" § entry'],
    ]


def test_the_writer_refuses_a_layout_it_cannot_edit_and_leaves_the_file(tmp_path):
    text = '[tool.retrieval-conformance]\ncheck = [{ target = "a.py:f" }]\n'
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match='name a file instead: known-deviations = "known-deviations.txt"'):
        accept.record(read_config(str(path)), {1: ["§11 percent"]})
    assert path.read_text() == text


def test_a_known_deviations_file_keeps_its_comments(tmp_path):
    path = write(tmp_path, TABLE + 'target = "a.py:f"\nknown-deviations = "known.txt"\n')
    (tmp_path / "known.txt").write_text("# why we accept these\n§11 percent  # legacy\ngolden/x\n")
    accept.record(read_config(str(path)), {1: ["§11 percent", "§11 divided-by-k"]})
    assert (tmp_path / "known.txt").read_text() == "# why we accept these\n§11 percent  # legacy\n§11 divided-by-k\n"


def test_changed_files_select_the_functions_whose_files_they_are(tmp_path):
    path = write(
        tmp_path,
        TABLE + 'target = "lab/a.py:f"\n\n' + TABLE + 'target = "lab.b:g"\nfiles = ["data/*.json"]\n',
    )
    config = read_config(str(path))

    def names(*changed):
        return [c.target for c in touched_by(config, [str(tmp_path / p) for p in changed])]

    assert names("lab/a.py") == ["lab/a.py:f"]
    assert names("lab/b.py") == names("data/q.json") == ["lab.b:g"]
    assert names("README.md") == []
    assert names("pyproject.toml") == ["lab/a.py:f", "lab.b:g"]
