"""The harness's runner and loader: captured output (Python and OS level), inputs the function
modifies, warm-up time limit for a JIT's first call, and loading ``module:function`` /
``file.py:function`` targets with clear errors."""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import pytest
from retrieval_conformance.conformance.harness.adapters.base import UsageError
from retrieval_conformance.conformance.harness.calling.loading import load_function, read_known_deviations
from retrieval_conformance.conformance.harness.calling.runner import OUTPUT_LIMIT, Runner, clip_output

MODES = ["process", "thread", "none"]


# -- output --------------------------------------------------------------------------------------


def _noisy_everywhere(x):
    print("python stdout line")
    sys.stderr.write("\r 50%|#####     | 5/10 [00:01<00:01]")  # what tqdm writes
    sys.stderr.flush()
    os.write(1, b"fd1 written by C\n")
    os.write(2, b"fd2 written by C\n")
    try:
        import ctypes

        ctypes.CDLL(None).printf(b"buffered printf\n")  # stays in libc's buffer unless flushed
    except Exception:
        pass
    return 1.0


def test_process_mode_captures_python_and_os_level_output(capfd):
    with Runner(_noisy_everywhere, timeout=10, isolation="process") as runner:
        out = runner.call((1,))
        again = runner.call((2,))  # the capture files start empty for each call
    seen = capfd.readouterr()
    assert seen.out == "" and seen.err == ""
    assert out.ok and out.value == 1.0
    assert "python stdout line" in out.stdout and "fd1 written by C" in out.stdout
    assert "50%|#####" in out.stderr and "fd2 written by C" in out.stderr
    assert "python stdout line" not in out.stderr and "fd2" not in out.stdout
    assert again.stdout.count("python stdout line") == 1
    if "buffered printf" in out.stdout + again.stdout:  # libc reachable through ctypes
        assert again.stdout.count("buffered printf") == 1


def _noisy_python(x):
    print("python stdout line")
    print("progress 7/10", file=sys.stderr)
    return 2.0


@pytest.mark.parametrize("isolation", ["thread", "none"])
def test_thread_and_none_mode_capture_python_level_output(capfd, isolation):
    before = (sys.stdout, sys.stderr)
    out = Runner(_noisy_python, timeout=10, isolation=isolation).call((1,))
    print("harness output")  # the harness's own output is not swallowed
    seen = capfd.readouterr()
    assert out.ok and out.stdout == "python stdout line\n" and out.stderr == "progress 7/10\n"
    assert seen.out == "harness output\n" and seen.err == ""
    assert (sys.stdout, sys.stderr) == before


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_long_output_keeps_the_last_part(isolation):
    def chatty():
        for i in range(2000):
            print(f"line {i}")
        return 0.0

    out = Runner(chatty, timeout=10, isolation=isolation).call(())
    assert len(out.stdout) <= OUTPUT_LIMIT
    assert out.stdout.startswith("[... ") and "characters cut]" in out.stdout.splitlines()[0]
    assert out.stdout.endswith("line 1999\n")


def test_clip_output():
    assert clip_output("short") == "short"
    text = "".join(str(i % 10) for i in range(5000))
    clipped = clip_output(text, limit=100)
    marker, rest = clipped.split("\n", 1)
    assert len(clipped) == 100 and text.endswith(rest)
    assert marker == f"[... {len(text) - len(rest)} characters cut]"
    assert clip_output("tail", limit=100, cut=7).startswith("[... 7 characters cut]")


def _dies_after_writing():
    import ctypes

    sys.stderr.write("about to crash\n")
    ctypes.string_at(0)  # segmentation fault


def test_a_crash_keeps_the_output_and_the_fault_report():
    out = Runner(_dies_after_writing, timeout=10, isolation="process").call(())
    assert out.kind == "crashed" and "SIGSEGV" in out.error
    assert "about to crash" in out.stderr and "Segmentation fault" in out.stderr


def test_a_timeout_keeps_the_output_so_far():
    def stuck():
        print("started", flush=True)
        time.sleep(30)

    out = Runner(stuck, timeout=0.3, isolation="process", warmup_timeout=0.3).call(())
    assert out.kind == "timeout" and out.stdout == "started\n" and out.limit == 0.3


# -- inputs the function modifies -------------------------------------------------------------------


def _sorts_in_place(distances, labels):
    distances.sort(axis=1)
    return float(distances[0, 0])


def _writes_into_list(distances, labels):
    labels[0] = 99
    return 0.0


def _pure(distances, labels):
    return float(np.sort(distances, axis=1)[0, 0]) + len(labels)


@pytest.mark.parametrize("isolation", MODES)
def test_modified_inputs_are_reported_and_the_callers_stay_unchanged(isolation):
    distances = np.array([[3.0, 1.0, np.nan], [0.5, 0.2, 0.1]])
    labels = [1, 2, 3]
    keep_d, keep_l = distances.copy(), list(labels)
    names = ("distances", "labels")
    with Runner(_sorts_in_place, timeout=10, isolation=isolation) as runner:
        out = runner.call((distances, labels), names=names)
    assert out.ok and out.mutated == ("argument 1 (distances)",)
    with Runner(_writes_into_list, timeout=10, isolation=isolation) as runner:
        out = runner.call((distances, labels))
    assert out.ok and out.mutated == ("argument 2",)
    with Runner(_pure, timeout=10, isolation=isolation) as runner:
        out = runner.call((distances, labels), names=names)
    assert out.ok and out.mutated == ()  # NaN == NaN for this purpose
    np.testing.assert_array_equal(distances, keep_d)
    assert labels == keep_l


def test_modified_keyword_argument_and_a_raising_function():
    def scribbles(distances, *, k):
        k.append(1)
        distances[:] = 0
        raise ValueError("gave up")

    out = Runner(scribbles, isolation="none").call((np.ones(3),), {"k": []}, names=["distances"])
    assert out.kind == "raised" and out.mutated == ("argument 1 (distances)", "keyword argument k")
    assert "ValueError: gave up" in out.error and "scribbles" in out.traceback


def test_modified_tensor_is_reported():
    torch = pytest.importorskip("torch")

    def halves(scores, labels):
        assert isinstance(scores, torch.Tensor)
        scores.mul_(0.5)
        return scores.sum()

    scores = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    with Runner(halves, timeout=30, isolation="process", arrays="torch") as runner:
        out = runner.call((scores, np.array([0, 1])), names=("scores", "labels"))
    assert out.ok and out.mutated == ("argument 1 (scores)",) and out.value == pytest.approx(5.0)
    np.testing.assert_array_equal(scores, [[1.0, 2.0], [3.0, 4.0]])


# -- warm-up -------------------------------------------------------------------------------------------


def _slow_first_call_factory(seconds):
    state = {"first": True}

    def compiles_on_first_call(x):
        if state["first"]:  # like a JIT compiling
            state["first"] = False
            time.sleep(seconds)
        return float(x)

    return compiles_on_first_call


def test_a_slow_first_call_is_allowed_as_warm_up():
    with Runner(_slow_first_call_factory(1.5), timeout=0.5, isolation="process", warmup_timeout=5) as runner:
        first = runner.call((1,))
        second = runner.call((2,))
    assert first.ok and first.warmup and first.limit == 5 and first.seconds >= 1.5
    assert second.ok and not second.warmup and second.value == 2.0 and second.limit == 0.5
    assert runner.warmup_seconds >= 1.5 and runner.max_seconds < 0.25 and runner.slow_calls == 0
    assert runner.hangs == 0 and runner.warmups == 1
    assert "allowed as a warm-up" in runner.timing_text() and "later calls at most" in runner.timing_text()


def test_a_slow_first_call_in_thread_mode():
    runner = Runner(_slow_first_call_factory(0.6), timeout=0.2, isolation="thread", warmup_timeout=3)
    first, second = runner.call((1,)), runner.call((2,))
    assert first.ok and first.warmup and second.ok and not second.warmup


def _always_slow(x):
    time.sleep(1.5)
    return float(x)


def test_only_the_warm_up_gets_the_generous_limit():
    with Runner(_always_slow, timeout=0.5, isolation="process", warmup_timeout=5) as runner:
        first = runner.call((1,))
        second = runner.call((2,))
        third = runner.call((3,))  # a new worker: compiles again, so a warm-up again
    assert first.ok and first.warmup
    assert second.kind == "timeout" and not second.warmup and second.limit == 0.5
    assert runner.hangs == 1
    assert third.ok and third.warmup and 0.5 < third.limit <= 5


def test_default_warm_up_limit():
    assert Runner(_pure, timeout=2, isolation="none").warmup_timeout == 60.0
    assert Runner(_pure, timeout=20, isolation="none").warmup_timeout == 120.0
    assert Runner(_pure, timeout=5, isolation="none", warmup_timeout=1).warmup_timeout == 5.0  # never below timeout


# -- loading ------------------------------------------------------------------------------------------


@pytest.fixture
def clean_imports(monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_load_a_file_that_imports_its_sibling_from_another_folder(tmp_path, monkeypatch, clean_imports):
    proj = tmp_path / "proj"
    _write(proj / "rc_helper_sibling.py", "def scale():\n    return 10\n")
    _write(
        proj / "rc_main_script.py",
        "import rc_helper_sibling\n\n"
        "def calc_map(x):\n    return x * rc_helper_sibling.scale()\n\n"
        "class Metric:\n    @staticmethod\n    def compute(x):\n        return -x\n\n"
        "if __name__ == '__main__':\n    raise SystemExit('ran as a script')\n",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    func = load_function(os.path.join("..", "proj", "rc_main_script.py") + ":calc_map")
    assert func(2) == 20 and func.__module__ == "rc_main_script"
    assert load_function(str(proj / "rc_main_script.py") + ":Metric.compute")(3) == -3


def test_a_file_named_like_another_module_gets_a_private_name(tmp_path, clean_imports):
    path = _write(tmp_path / "json.py", "def calc(x):\n    return x + 1\n")
    func = load_function(f"{path}:calc")
    assert func(1) == 2 and func.__module__ != "json" and func.__module__.startswith("_rc_user_json")
    import json

    assert hasattr(json, "dumps")  # the real json module is untouched


def test_load_a_dotted_module_from_the_current_folder(tmp_path, monkeypatch, clean_imports):
    _write(tmp_path / "rc_lab_pkg" / "__init__.py", "")
    _write(tmp_path / "rc_lab_pkg" / "evaluation.py", "def calc_map(x):\n    return 0.5\n")
    monkeypatch.chdir(tmp_path)
    assert load_function("rc_lab_pkg.evaluation:calc_map")(1) == 0.5


def test_loading_errors_name_the_target_and_say_what_to_do(tmp_path, clean_imports):
    missing = f"{tmp_path}/nowhere.py:calc"
    with pytest.raises(UsageError, match="does not exist") as err:
        load_function(missing)
    assert repr(missing) in str(err.value)

    path = _write(tmp_path / "rc_has_others.py", "X = 3\n\ndef calc_map(x):\n    return x\n\ndef helper():\n    pass\n")
    with pytest.raises(UsageError, match="no attribute 'calc_mAP'") as err:
        load_function(f"{path}:calc_mAP")
    assert f"{path}:calc_mAP" in str(err.value) and "calc_map" in str(err.value) and "helper" in str(err.value)
    with pytest.raises(UsageError, match="is a int, not a function"):
        load_function(f"{path}:X")

    bad = _write(tmp_path / "rc_needs_missing.py", "import rc_definitely_not_installed_xyz\n")
    with pytest.raises(UsageError) as err:
        load_function(f"{bad}:calc")
    text = str(err.value)
    assert f"{bad}:calc" in text and "ModuleNotFoundError" in text and "rc_definitely_not_installed_xyz" in text
    assert "installed" in text

    broken = _write(tmp_path / "rc_broken_import.py", "\n\nx = 1 / 0\n")
    with pytest.raises(UsageError, match=r"ZeroDivisionError.*line 3"):
        load_function(f"{broken}:calc")

    with pytest.raises(UsageError, match="'rc_no_such_package_abc' itself was not found"):
        load_function("rc_no_such_package_abc.mod:calc")
    with pytest.raises(UsageError, match="name the function too"):
        load_function(str(path))


def test_read_known_deviations(tmp_path):
    path = tmp_path / "known.txt"
    path.write_text("\ufeff# accepted\nties/*  # optimistic ties\n\n  empty/no-relevant\n", encoding="utf-8")
    assert read_known_deviations(str(path)) == ["ties/*", "empty/no-relevant"]
    with pytest.raises(OSError):
        read_known_deviations(str(tmp_path / "absent.txt"))


def test_a_hung_thread_does_not_swallow_the_harness_output(capfd):
    import threading

    release = threading.Event()

    def stuck():
        print("before the hang")
        release.wait(10)
        print("after the hang")
        return 0.0

    runner = Runner(stuck, timeout=0.2, isolation="thread", warmup_timeout=0.2)
    out = runner.call(())
    print("harness still speaking")
    release.set()
    seen = capfd.readouterr()
    assert out.kind == "timeout" and runner.hangs == 1 and out.warmup
    assert seen.out == "harness still speaking\n"
