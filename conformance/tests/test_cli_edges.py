"""Every edge of the command line ends in an exit status and at most a line, never a traceback.

The table of exit statuses is in ``reference/contract/command_line.py``: 1 when standard output
is closed or full, 141 when its reader went away, 130 on Ctrl-C, 2 (last line ``error: ...``)
for an unusable argument.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from retrieval_conformance.cli import main
from retrieval_conformance.reference.contract.command_line import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    run_command,
)

COMMAND = [sys.executable, "-m", "retrieval_conformance.cli"]
#: closing a child's stdout, process groups and SIGALRM (the fuzz's time limit) are POSIX
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file descriptors and signals")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two small runs for evaluate and compare."""
    folder = tmp_path_factory.mktemp("runs")
    rng = np.random.default_rng(0)
    paths = []
    for name in ("a", "b"):
        path = folder / f"{name}.npz"
        np.savez(path, distances=rng.random((6, 9)), query_labels=np.arange(6) % 3, db_labels=np.arange(9) % 3)
        paths.append(str(path))
    # and two TREC runs with their qrels, for compare --qrels
    (folder / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 2\nq2 0 d3 1\n")
    for name in ("a", "b"):
        (folder / f"{name}.run").write_text(f"q1 Q0 d1 1 2.0 {name}\nq1 Q0 d2 2 1.5 {name}\nq2 Q0 d3 1 0.3 {name}\n")
    return paths + [str(folder / "a.run"), str(folder / "b.run"), str(folder / "qrels.txt")]


def every_subcommand(runs):
    """One argument vector per subcommand (and the top level) that writes to standard output."""
    return {
        "top-help": ["--help"],
        "version": ["--version"],
        "golden": ["golden", "--implementations", "reference", "--random", "0"],
        "evaluate": ["evaluate", "--npz", runs[0], "--implementation", "numpy"],
        "evaluate-trec": ["evaluate", "--run", runs[2], "--qrels", runs[4]],
        "compare": ["compare", *runs[:2], "--resamples", "100", "--implementation", "numpy"],
        "compare-trec": ["compare", runs[2], runs[3], "--qrels", runs[4], "--resamples", "100"],
        # their help: a usage-error report would also print its error line on stderr, before or after
        # the lost stdout depending on buffering
        "check": ["check", "--help"],
        "identify": ["identify", "--help"],
        "bench": ["bench", "--help"],
        "audit": ["audit", "--npz", runs[0], "--protocol", "hashing"],
        "compute-ap": ["compute-ap"],  # the program's usage, on stdout
        "presets": ["presets"],
        "explain": ["explain"],
    }


def _run(argv, stdout, **kwargs):
    return subprocess.run(COMMAND + argv, stdout=stdout, stderr=subprocess.PIPE, timeout=300, **kwargs)


def _closed_pipe():
    """The write end of a pipe whose reader has gone (as after ``| head -1``)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return write_end


@posix_only
@pytest.mark.parametrize("where", ["closed", "broken-pipe", "full"])
def test_every_subcommand_with_lost_output(runs, where):
    failures = []
    for name, argv in every_subcommand(runs).items():
        if where == "closed":
            proc = _run(argv, None, pass_fds=(), close_fds=True, preexec_fn=lambda: os.close(1))
        elif where == "broken-pipe":
            fd = _closed_pipe()
            try:
                proc = _run(argv, fd)
            finally:
                os.close(fd)
        else:
            if not os.path.exists("/dev/full"):
                pytest.skip("no /dev/full here")
            with open("/dev/full", "w") as full:
                proc = _run(argv, full)
        err = proc.stderr.decode("utf-8", "replace")
        want = EXIT_BROKEN_PIPE if where == "broken-pipe" else EXIT_FAILED
        lines = err.strip().splitlines()
        if "Traceback" in err or "Exception ignored" in err or proc.returncode != want:
            failures.append(f"{name}: status {proc.returncode}, stderr {err[-400:]!r}")
        elif where == "broken-pipe" and err.strip():
            failures.append(f"{name}: a closed pipe is silent, got {err!r}")
        elif where != "broken-pipe" and not lines[-1].startswith("error: "):
            failures.append(f"{name}: expected one 'error:' line, got {err!r}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    "module",
    [
        "retrieval_conformance.conformance.harness.cli",
        "retrieval_conformance.conformance.bench.cli",
        "retrieval_conformance.comparison",
        "retrieval_conformance.spec_cli",
        "retrieval_conformance.reference.protocols.landmark.cli",
    ],
)
@posix_only
def test_python_m_mains_share_the_wrapper(module):
    fd = _closed_pipe()
    try:
        proc = subprocess.run([sys.executable, "-m", module, "--help"], stdout=fd, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(fd)
    # (runpy may warn that the harness package imported its cli first: not about the output)
    assert proc.returncode == EXIT_BROKEN_PIPE and b"Traceback" not in proc.stderr, proc.stderr[-400:]
    assert b"Exception ignored" not in proc.stderr


@posix_only
def test_ctrl_c_exits_130_with_one_line():
    # unbuffered, so that the first line arrives as soon as it is printed (a pipe is block-buffered
    # otherwise, and the child would run its million problems before anything came out)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        COMMAND + ["golden", "--implementations", "numpy", "--random", "1000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        # running: past the imports, into the golden cases; never wait for it longer than 120 s
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready, "golden printed nothing in 120 s"
        proc.stdout.readline()
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        start = time.monotonic()
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == EXIT_INTERRUPTED
    assert time.monotonic() - start < 30
    text = err.decode()
    assert "Traceback" not in text and text.strip().splitlines()[-1].startswith("interrupted")


@posix_only
def test_ctrl_c_while_check_runs_the_function_in_a_worker(tmp_path):
    """The terminal's Ctrl-C reaches the harness (the worker leads a process group of its own and
    is killed by the harness): only the parent's line shows."""
    started = tmp_path / "started"
    (tmp_path / "slow_map.py").write_text(
        "import pathlib, time\n"
        "def calc_map(qB, rB, query_labels, db_labels):\n"
        f"    pathlib.Path({str(started)!r}).touch()\n"
        "    time.sleep(0.5)\n"
        "    return 0.5\n"
    )

    def as_a_terminal():
        os.setpgrp()
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(
        COMMAND + ["check", f"{tmp_path / 'slow_map.py'}:calc_map", "--isolation", "process"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=as_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    text = err.decode()
    assert proc.returncode == EXIT_INTERRUPTED, text[-1000:]
    assert "Traceback" not in text and text.strip().splitlines() == ["interrupted (Ctrl-C); nothing more was done"]


def test_run_command_keeps_the_status_and_restores_stdout(capsys):
    before = sys.stdout
    assert run_command(lambda argv: print("x") or 1, []) == 1
    assert sys.stdout is before and capsys.readouterr().out == "x\n"

    def interrupted(argv):
        raise KeyboardInterrupt

    assert run_command(interrupted, []) == EXIT_INTERRUPTED
    assert capsys.readouterr().err.startswith("interrupted")


# usage errors: (argv, what the error line must name); runs is substituted for "RUN"
USAGE_ERRORS = [
    (["golden", "--implementations", "nmupy"], "--implementations: unknown implementation 'nmupy'"),
    (["golden", "--require", "cee"], "--require: unknown implementation 'cee'"),
    (["golden", "--implementations", "numpy", "--require", "c"], "--require: 'c' is required but not among"),
    (["golden", "--seed", "-1"], "argument --seed: expected a whole number >= 0, got '-1'"),
    (["golden", "--random", "-1"], "argument --random: expected a whole number >= 0, got '-1'"),
    (["check", "m:f", "--timeout", "0"], "argument --timeout: expected a number of seconds > 0"),
    (["check", "m:f", "--timeout", "-1"], "argument --timeout: expected a number of seconds > 0"),
    (["check", "m:f", "--timeout", "nan"], "argument --timeout: expected a number of seconds > 0"),
    (["check", "m:f", "--warmup-timeout", "inf"], "argument --warmup-timeout: expected a number of seconds"),
    (["check", "m:f", "--max-examples", "0"], "argument --max-examples: expected a whole number >= 1"),
    (["check", "m:f", "--max-examples", "-5"], "argument --max-examples: expected a whole number >= 1"),
    (["check", "m:f", "--junit-xml", "/no/such/folder/out.xml"], "--junit-xml /no/such/folder/out.xml: cannot"),
    (["check", "no_such_module_here:f"], "no_such_module_here"),
    (["identify", "no_such_module_here:f"], "no_such_module_here"),
    (["check", "m:f", "--identify", "--max-examples", "5"], "--max-examples: applies to check, not to"),
    (["identify", "m:f", "--max-examples", "5"], "unrecognized arguments: --max-examples 5"),
    (["check", "--jobs", "0"], "argument --jobs: expected a whole number >= 1"),
    (["check", "--config", "/no/such/folder/pyproject.toml"], "/no/such/folder/pyproject.toml: cannot read"),
    (["check", "--summary", "/no/such/folder/s.md"], "--summary"),
    (["check", "--protocol", "hashing"], "--protocol: set per function in its table"),
    (["compare", "RUN", "RUN", "--names", "a", "b", "--implementation", "dask"], "'dask' is unavailable"),
    (["compare", "RUN", "RUN", "--names", "a", "b", "--implementation", "nmupy"], "'nmupy'"),
    (["evaluate", "--npz", "RUN", "--implementation", "nmupy"], "'nmupy'"),
    (["bench", "gate", "--depth", "0"], "argument --depth: expected a whole number >= 1"),
    (["bench", "gate", "--floor", "nan"], "argument --floor: expected a finite number >= 0"),
    (["explain", "no-such-clause"], "error: explain:"),
    (["nonsense"], "invalid choice: 'nonsense'"),
]


@pytest.mark.parametrize("argv, named", USAGE_ERRORS, ids=[" ".join(a) for a, _ in USAGE_ERRORS])
def test_usage_errors_end_in_one_error_line(runs, capsys, argv, named):
    argv = [runs[0] if word == "RUN" else word for word in argv]
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's own exit, as the console script sees it
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: ") and named in last, last


def test_unknown_implementation_lists_the_registered_ones():
    import retrieval_conformance as rc

    with pytest.raises(
        ValueError,
        match=r"implementation: unknown implementation 'nmupy'; the registered ones "
        r"are reference, numpy, torch, c, dask",
    ):
        rc.evaluate(distances=np.zeros((1, 2)), relevance=np.ones((1, 2)), implementation="nmupy")
    with pytest.raises(ValueError, match="implementation: unknown implementation 'nmupy'"):
        rc.Accumulator(implementation="nmupy")


def test_require_with_a_typo_fails_the_pytest_session(tmp_path):
    (tmp_path / "test_one.py").write_text("def test_nothing():\n    pass\n")
    env = dict(os.environ, RC_REQUIRE="numpy,cee")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr  # pytest's usage error
    assert "RC_REQUIRE: unknown implementation 'cee'" in proc.stderr


def test_unwritable_junit_after_the_run_keeps_the_verdict(tmp_path, capsys, monkeypatch):
    from retrieval_conformance.conformance.harness.report.results import Report

    def fail(self, path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Report, "write_junit", fail)
    status = main(["check", "no_such_module_here:f", "--junit-xml", str(tmp_path / "out.xml")])
    err = capsys.readouterr().err
    assert status == 2 and "the verdict above stands" in err.strip().splitlines()[-1]


def test_torch_device_from_the_environment_that_is_missing(monkeypatch, runs, capsys):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() > 7:
        pytest.skip("this machine has a cuda:7")
    monkeypatch.setenv("RC_TORCH_DEVICE", "cuda:7")
    assert main(["evaluate", "--npz", runs[0], "--implementation", "torch"]) == 2
    assert "RC_TORCH_DEVICE: 'cuda:7'" in capsys.readouterr().err
    monkeypatch.setenv("RC_TORCH_DEVICE", "cpu")
    assert main(["evaluate", "--npz", runs[0], "--implementation", "torch", "--quiet"]) == 0


def test_version_identify_help_and_spec_version(runs, capsys):
    from retrieval_conformance import __version__
    from retrieval_conformance.reference.contract.spec import SPEC_VERSION

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0 and __version__ in capsys.readouterr().out
    assert main(["identify", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: retrieval-conformance identify") and "[--identify]" not in out
    assert "--max-examples" not in out and "--timeout" in out
    assert main(["evaluate", "--npz", runs[0], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["spec_version"] == SPEC_VERSION
    assert main(["compare", *runs[:2], "--names", "a", "b", "--resamples", "100", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["spec_version"] == SPEC_VERSION


def test_result_repr_is_short_with_the_arrays_one_attribute_away():
    import retrieval_conformance as rc

    rng = np.random.default_rng(1)
    res = rc.evaluate(
        distances=rng.random((500, 40)),
        query_labels=rng.integers(0, 5, 500),
        db_labels=rng.integers(0, 5, 40),
        protocol="hashing",
        implementation="numpy",
    )
    text = repr(res)
    assert len(text) < 400 and "queries=500" in text and f"map={res.map!r}" in text
    assert res.ap.shape == (500,)


def test_install_hints_say_what_works_from_a_checkout():
    from retrieval_conformance.reference.contract.install_hints import install_hint

    assert install_hint("plot") == (
        "pip install 'retrieval-conformance[plot]' (from a checkout of the source: pip install '.[plot]')"
    )


def test_check_reads_a_fraction_as_a_number():
    from fractions import Fraction

    from retrieval_conformance.conformance.harness.calling.outcome import Opaque, to_plain

    assert to_plain(Fraction(1, 3)) == Fraction(1, 3)
    assert to_plain(np.float32(0.5)) == 0.5
    assert isinstance(to_plain(object()), Opaque)


@posix_only
def test_cli_vectors_find_nothing_in_a_short_campaign():
    from retrieval_conformance.conformance.fuzz.cli_vectors import run_cli_campaign

    findings = run_cli_campaign(25, seed=0)
    assert not findings, "\n".join(f"{f.argv}: {f.status}: {f.detail}" for f in findings)


@pytest.mark.parametrize(
    "behaviour, detail",
    [
        ("raise", "ZeroDivisionError"),
        ("status-7", "undocumented exit status"),
        ("bare-2", "without a last line 'error: ...'"),
        ("traceback", "a traceback on stderr"),
    ],
)
@posix_only
def test_cli_vectors_report_what_they_look_for(monkeypatch, behaviour, detail):
    from retrieval_conformance import cli
    from retrieval_conformance.conformance.fuzz.cli_vectors import run_argv

    def broken(argv):
        if behaviour == "raise":
            return 1 // 0
        if behaviour == "status-7":
            return 7
        if behaviour == "traceback":
            sys.stderr.write("Traceback (most recent call last):\n  ...\n")
            return 1
        sys.stderr.write("something went wrong\n")
        return 2

    monkeypatch.setattr(cli, "main", broken)
    finding = run_argv(["presets"])
    assert finding is not None and detail in finding.detail


def test_check_passes_a_function_returning_exact_fractions(tmp_path, capsys):
    """The reference's exact mAP, returned as a Fraction from a worker process, conforms."""
    (tmp_path / "exact_map.py").write_text(
        "import retrieval_conformance as rc\n"
        "def calc_map(qB, rB, query_labels, db_labels):\n"
        "    res = rc.evaluate(query_codes=qB, db_codes=rB, query_labels=query_labels, db_labels=db_labels,\n"
        "                      protocol='hashing', implementation='reference')\n"
        "    return res.exact.map\n"
    )
    status = main(["check", f"{tmp_path / 'exact_map.py'}:calc_map", "--only", "golden/*", "--isolation", "process"])
    out = capsys.readouterr().out
    assert status == 0, out[-1500:]


@posix_only
def test_fuzz_target_cli_runs_and_refuses_what_it_does_not_use(capsys):
    from retrieval_conformance.conformance.fuzz.__main__ import main as fuzz_main

    assert fuzz_main(["--target", "cli", "--cases", "5", "--quiet"]) == 0
    assert "command-line vectors, seed 0: 5 in" in capsys.readouterr().out
    for argv in (["--workers", "2"], ["--json", "out.json"], ["--start", "3"], ["--cases", "0"]):
        assert fuzz_main(["--target", "cli", *argv]) == 2
        assert capsys.readouterr().err.startswith("error: --")
