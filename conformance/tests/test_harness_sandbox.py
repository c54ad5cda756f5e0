"""The harness's sandbox against functions that start processes, fork, raise KeyboardInterrupt or
return numbers that cannot be read: each call ends in one outcome, and no process outlives the
runner (issue 34 class 7, issue 35 item 6)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest
from retrieval_conformance.conformance.harness import check
from retrieval_conformance.conformance.harness.calling.runner import Runner

E = "retrieval_conformance.conformance.examples."
posix_only = pytest.mark.skipif(os.name != "posix", reason="fork, process groups and signals")


def _alive(pid: int) -> bool:
    """The process runs (a zombie, dead but not yet reaped by init, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return not os.path.isdir("/proc")


def _gone_soon(pids, seconds: float = 5.0) -> list:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


# -- processes started by the function ------------------------------------------------------------


def _square(x):
    return x * x


def _pool_sum(n):
    with multiprocessing.Pool(2) as pool:
        return float(sum(pool.map(_square, range(n))))


@posix_only
def test_a_function_using_a_pool_runs_in_the_process_worker():
    with Runner(_pool_sum, timeout=60, isolation="process") as runner:
        outs = [runner.call((n,)) for n in (3, 4)]
    assert [o.kind for o in outs] == ["ok", "ok"], [o.error for o in outs]
    assert [o.value for o in outs] == [5.0, 14.0]


def _forks_and_both_return(x):
    """The child of a fork returns too (no ``os._exit``): into the harness's worker."""
    pid = os.fork()
    if pid == 0:
        return -1.0
    os.waitpid(pid, 0)
    return float(x)


@posix_only
@pytest.mark.parametrize("isolation", ["process", "none"])
def test_a_fork_that_returns_into_the_harness_gives_one_outcome_per_call(isolation):
    with Runner(_forks_and_both_return, timeout=30, isolation=isolation) as runner:
        outs = [runner.call((i,)) for i in range(4)]
    assert [(o.kind, o.value) for o in outs] == [("ok", float(i)) for i in range(4)], [o.error for o in outs]


def _starts_processes_and_returns_their_pids():
    """A plain child, a child in a session of its own (left the group), a daemonic pool's workers."""
    plain = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    escaped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    _KEPT.append(multiprocessing.Pool(2))  # never closed (nor collected)
    workers = [p.pid for p in _KEPT[-1]._pool]
    return [plain.pid, escaped.pid] + workers


_KEPT: list = []


@posix_only
def test_no_process_started_by_the_function_outlives_the_runner():
    runner = Runner(_starts_processes_and_returns_their_pids, timeout=60, isolation="process")
    out = runner.call(())
    assert out.ok, out.error
    pids = list(out.value)
    assert all(_alive(p) for p in pids)
    runner.close()
    assert _gone_soon(pids) == []


def _hangs_with_a_child(path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    with open(path, "w") as f:
        f.write(str(child.pid))
    time.sleep(300)


@posix_only
def test_a_timeout_kills_the_processes_of_the_hung_call(tmp_path):
    path = tmp_path / "pid"
    with Runner(_hangs_with_a_child, timeout=3, warmup_timeout=3, isolation="process") as runner:
        assert runner.call((str(path),)).kind == "timeout"
        assert _gone_soon([int(path.read_text())]) == []


def _forks_a_sleeper_then_exits(path):
    pid = os.fork()
    if pid == 0:
        time.sleep(300)
        os._exit(0)
    with open(path, "w") as f:
        f.write(str(pid))
    os._exit(3)


@posix_only
def test_a_worker_that_ends_is_seen_at_once_while_its_child_holds_the_pipe(tmp_path):
    """The forked child keeps the worker's pipe and sentinel open: only waitpid tells the end."""
    path = tmp_path / "pid"
    with Runner(_forks_a_sleeper_then_exits, timeout=20, warmup_timeout=20, isolation="process") as runner:
        start = time.monotonic()
        out = runner.call((str(path),))
        took = time.monotonic() - start
    assert out.kind == "crashed" and "exit code 3" in out.error, (out.kind, out.error)
    assert took < 10, f"the end of the worker was seen after {took:.1f} s"
    assert _gone_soon([int(path.read_text())]) == []


def _starts_a_session_then_exits(path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
    with open(path, "w") as f:
        f.write(str(child.pid))
    os._exit(0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="orphans are adopted through a Linux prctl")
def test_a_process_in_its_own_session_orphaned_by_the_worker_does_not_outlive_it(tmp_path):
    """Neither in the worker's group nor, once the worker died, in its tree: adopted, then killed."""
    path = tmp_path / "pid"
    with Runner(_starts_a_session_then_exits, timeout=20, warmup_timeout=20, isolation="process") as runner:
        assert runner.call((str(path),)).kind == "crashed"
    assert _gone_soon([int(path.read_text())]) == []


@posix_only
@pytest.mark.parametrize("target", ["pool_per_query:calc_map", "dataloader_workers:calc_map"])
def test_lab_functions_with_worker_processes_conform(target):
    # ``retrieval-conformance check`` in a fresh interpreter, as a lab runs it: this suite's own
    # process has been through hundreds of tests (dask clusters, native thread pools, leftover
    # threads) that a forked worker would inherit. Processes that outlive the command carry the
    # marker in their environment.
    if target.startswith("dataloader"):
        pytest.importorskip("torch")
    marker = f"rc-sandbox-{os.getpid()}-{time.monotonic_ns()}"
    argv = [E + target, "--adapter", "hashing-codes", "--protocol", "hashing", "--max-examples", "5", "--timeout", "60"]
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from retrieval_conformance.cli import main; sys.exit(main())",
            "check",
            *argv,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, RC_TEST_MARKER=marker),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert _gone_soon(_marked(marker)) == []


def _marked(marker: str) -> list:
    """The processes whose environment holds ``RC_TEST_MARKER=marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if f"RC_TEST_MARKER={marker}".encode() in f.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:
                pass
    return found


# -- KeyboardInterrupt and SystemExit raised by the function ------------------------------------


def _raises_keyboard_interrupt(*args):
    raise KeyboardInterrupt("from the function")


@pytest.mark.parametrize("isolation", ["process", "thread", "none"])
def test_a_keyboard_interrupt_the_function_raises_is_its_outcome(isolation, capfd):
    with Runner(_raises_keyboard_interrupt, timeout=10, isolation=isolation) as runner:
        outs = [runner.call((i,)) for i in range(3)]
    assert [o.kind for o in outs] == ["raised"] * 3
    assert outs[0].error == "KeyboardInterrupt: from the function"
    seen = capfd.readouterr()
    assert "Traceback" not in seen.out + seen.err


def test_check_reports_a_keyboard_interrupt_as_one_finding(capfd):
    report = check(_raises_keyboard_interrupt, adapter="hashing-codes", protocol="hashing", max_examples=3)
    seen = capfd.readouterr()
    text = report.text()
    assert report.exit_code == 2 and "KeyboardInterrupt" in text, text
    assert "Traceback" not in seen.out + seen.err + text


@posix_only
def test_a_real_ctrl_c_stops_check_with_130_and_kills_the_function_processes(tmp_path):
    pids_file = tmp_path / "pids"
    (tmp_path / "slow_pool.py").write_text(
        "import multiprocessing, os, time\n"
        "def calc_map(qB, rB, query_labels, db_labels):\n"
        "    pool = multiprocessing.Pool(2)\n"
        f"    with open({str(pids_file)!r}, 'a') as f:\n"
        "        f.write(' '.join(str(p) for p in [os.getpid()] + [w.pid for w in pool._pool]) + '\\n')\n"
        "    time.sleep(60)\n"
        "    return 0.5\n"
    )

    def as_a_terminal():
        os.setpgrp()
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(
        [sys.executable, "-m", "retrieval_conformance.cli", "check", f"{tmp_path / 'slow_pool.py'}:calc_map"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=as_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        while not pids_file.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    text = err.decode()
    assert proc.returncode == 130, text[-1000:]
    assert "Traceback" not in text and text.strip().splitlines() == ["interrupted (Ctrl-C); nothing more was done"]
    pids = [int(p) for p in pids_file.read_text().split()]
    assert _gone_soon(pids) == []


# -- numbers that cannot be read ----------------------------------------------------------------------


class UnreadableFloat(float):
    """A float subclass whose conversion to float raises."""

    def __float__(self):
        raise RuntimeError("no float for you")


def _returns_unreadable_float(*args):
    return UnreadableFloat(0.5)


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_check_reports_a_float_whose_conversion_raises(isolation, capfd):
    report = check(
        _returns_unreadable_float, adapter="hashing-codes", protocol="hashing", max_examples=3, isolation=isolation
    )
    text = report.text()
    assert report.exit_code == 2, text
    assert "RuntimeError: no float for you" in text
    seen = capfd.readouterr()
    assert "Traceback" not in seen.out + seen.err + text


# -- the user's folder ----------------------------------------------------------------------------


def test_check_writes_nothing_to_the_current_folder(tmp_path):
    """hypothesis keeps a cache in ``./.hypothesis`` unless told otherwise; check runs it elsewhere."""
    proc = subprocess.run(
        [sys.executable, "-m", "retrieval_conformance.cli", "check", E + "hashing_correct:calc_top_map"]
        + ["--max-examples", "2", "--only", "golden/seed000*", "--only", "ties/*"],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "HYPOTHESIS_STORAGE_DIRECTORY"},
    )
    assert proc.returncode == 0, proc.stdout[-1000:] + proc.stderr[-1000:]
    assert os.listdir(tmp_path) == []
