"""``retrieval-conformance check`` entry point: exit status 0/1/2, JUnit XML, known deviations,
and a user function that raises, hangs, returns NaN or the wrong type (never a harness crash)."""

from __future__ import annotations

import io
import re
import threading
import time
import xml.etree.ElementTree as ET
from contextlib import redirect_stdout

import numpy as np
import pytest
from retrieval_conformance.conformance.harness import check, check_main
from retrieval_conformance.conformance.harness.calling.runner import Runner

E = "retrieval_conformance.conformance.examples."


def run_cli(argv):
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = check_main(argv)
    return code, buf.getvalue()


def test_exit_0_when_the_function_conforms():
    code, out = run_cli(
        [
            E + "hashing_correct:calc_top_map",
            "--adapter",
            "hashing-codes",
            "--protocol",
            "hashing",
            "--only",
            "golden/*",
            "--only",
            "k/*",
            "--max-examples",
            "10",
        ]
    )
    assert code == 0, out
    assert "CONFORMS" in out


def test_exit_1_and_the_seed003_story_in_one_command():
    code, out = run_cli(
        [
            "check",
            E + "seed003_break:calc_map_k",
            "--adapter",
            "hashing-codes",
            "--protocol",
            "dcmh",
            "--only",
            "golden/*",
        ]
    )
    assert code == 1
    first = out.split("2) broken")[0]
    # the first group shown is the documented seed-003 bug, with both values and a snippet
    assert "broken: spec §8 mean over all queries" in first
    assert "yours 0.145833 (= 7/48), reference 169/240 = 0.704167" in first
    assert "stray `break`" in first and "reproduce:" in first
    assert "from retrieval_conformance.conformance.examples.seed003_break import calc_map_k" in first


@pytest.mark.parametrize(
    "argv,message",
    [
        (["no_such_module_xyz:f"], "cannot import"),
        ([E + "hashing_correct:no_such_function"], "has no attribute"),
        ([E + "hashing_correct"], "expected 'module:function'"),
        ([E + "trapezoid:mean_ap", "--adapter", "hashing-codes"], "positional parameter"),
        ([E + "hashing_correct:calc_top_map", "--protocol", "no-such-preset"], "unknown preset"),
        ([E + "hashing_correct:calc_top_map", "--adapter", "reid"], "could not be called successfully"),
        ([E + "reid_correct:evaluate_rank", "--adapter", "reid", "--protocol", "hashing"], "camera junk"),
    ],
)
def test_exit_2_when_the_function_cannot_be_loaded_or_fitted(argv, message):
    code, out = run_cli(argv + ["--only", "golden/*"])
    assert code == 2, out
    assert "USAGE ERROR" in out and message in out


def _always_raises(qB, rB, qL, rL, topk):
    raise RuntimeError("boom")


def test_exit_2_when_no_call_succeeds():
    report = check(_always_raises, only=["golden/seed000*", "mean/one-query"], max_examples=5)
    assert report.exit_code == 2
    assert "could not be called successfully on any input" in report.usage_error
    assert "RuntimeError: boom" in report.usage_error


def test_argparse_errors_are_exit_2():
    code, _ = run_cli(["--adapter"])
    assert code == 2


def test_junit_xml(tmp_path):
    out = tmp_path / "report.xml"
    code, _ = run_cli(
        [
            E + "reversed_ties:calc_top_map",
            "--only",
            "golden/seed000*",
            "--only",
            "ties/*",
            "--only",
            "k/*",
            "--max-examples",
            "15",
            "--junit-xml",
            str(out),
        ]
    )
    assert code == 1
    root = ET.parse(out).getroot()
    suite = root.find("testsuite")
    assert int(suite.get("failures")) >= 1
    failures = [tc for tc in suite.iter("testcase") if tc.find("failure") is not None]
    assert any("ties=stable" in tc.find("failure").get("message") for tc in failures)
    assert any("rc.evaluate" in (tc.find("failure").text or "") for tc in failures)


def test_known_deviations_file_gates_on_new_deviations_only(tmp_path):
    argv = [E + "reversed_ties:calc_top_map", "--only", "ties/*", "--only", "k/inside", "--max-examples", "15"]
    code, out = run_cli(argv)
    assert code == 1
    failing = [line.split("]")[1].split(":")[0].strip() for line in out.splitlines() if line.startswith("  [FAIL]")]
    assert failing
    known = tmp_path / "known.txt"
    known.write_text("# accepted: our lab sorts by similarity and reverses\n" + "\n".join(failing) + "\n")
    code, out = run_cli(argv + ["--known-deviations", str(known)])
    assert code == 0, out
    assert "[known]" in out
    # a known deviation that no longer deviates is pointed out, not failed
    code, out = run_cli(
        [
            E + "hashing_correct:calc_top_map",
            "--only",
            "ties/*",
            "--max-examples",
            "10",
            "--known-deviations",
            str(known),
        ]
    )
    assert code == 0 and "remove it from the file" in out
    assert run_cli(argv + ["--known-deviations", str(tmp_path / "missing.txt")])[0] == 2


def test_identify_exit_status():
    code, out = run_cli([E + "reversed_ties:calc_top_map", "--identify"])
    assert code == 0 and "matches `hashing` except ties: reverse" in out  # identified: a policy reproduces it
    code, out = run_cli([E + "unstable_ties:calc_top_map", "--identify"])
    assert code == 1 and "ties: unstable" in out  # no declared policy: a platform-dependent value


# -- misbehaving functions: reported with the input, never a crash -------------------------


def _raises_on_single_item(distances, relevance, k=None):
    if distances.shape[1] == 1:
        raise ValueError("cannot rank one item")
    return 1.0 if relevance.any() else 0.0


def test_a_raising_function_is_reported_with_its_input():
    report = check(
        _raises_on_single_item,
        adapter="distances-relevance",
        only=["size/single-item"],
        max_examples=10,
        isolation="thread",
    )
    dev = report.result("size/single-item").deviation
    assert dev is not None and dev.mismatches[0].kind == "raised"
    assert "ValueError: cannot rank one item" in dev.mismatches[0].user
    assert "1 gallery item" in dev.case_text
    assert dev.clauses == ["adapter distances-relevance: returns mAP for every valid input"]


def _nan_or_text(distances, relevance, k=None):
    if distances.shape[0] > 1:
        return "0.5"
    return float("nan")


def test_nan_and_wrong_type_are_reported():
    report = check(_nan_or_text, adapter="distances-relevance", only=["mean/*"], max_examples=10)
    one = report.result("mean/one-query").deviation
    many = report.result("mean/many-queries").deviation
    assert one.mismatches[0].kind == "non-finite" and "non-finite" in " ".join(one.explanations)
    assert many.mismatches[0].kind == "wrong-type" and "got str" in many.mismatches[0].user


def _hangs_on_empty_query(distances, relevance, k=None):
    if not relevance.any():
        time.sleep(60)
    return 1.0


def test_a_hanging_function_is_stopped_and_reported():
    start = time.monotonic()
    report = check(
        _hangs_on_empty_query,
        adapter="distances-relevance",
        only=["empty/no-relevant", "mean/one-query"],
        max_examples=20,
        timeout=0.5,
        warmup_timeout=0.5,
        isolation="process",
    )
    dev = report.result("empty/no-relevant").deviation
    assert dev.mismatches[0].kind == "timeout"
    assert "did not return within 0.5 s" in " ".join(dev.explanations)
    assert time.monotonic() - start < 30  # the hung worker was killed, not waited for


def test_thread_isolation_timeout_returns():
    release = threading.Event()

    def stuck(*args):
        release.wait(30)
        return 0.0

    runner = Runner(stuck, timeout=0.2, isolation="thread", warmup_timeout=0.2)
    out = runner.call((np.zeros((1, 2)), np.zeros((1, 2), bool)))
    release.set()
    assert out.kind == "timeout" and runner.hangs == 1


def _exits(*args):
    import os

    os._exit(3)


def test_a_crashing_worker_is_reported():
    out = Runner(_exits, timeout=5, isolation="process").call((1,))
    assert out.kind == "crashed" and "exit code 3" in out.error


def test_output_and_warnings_of_the_function_are_captured():
    def noisy(*args):
        import warnings

        print("debug output")
        warnings.warn("careful", stacklevel=2)
        return 1.0

    buf = io.StringIO()
    with redirect_stdout(buf):
        out = Runner(noisy, isolation="none").call(())
    assert out.ok and out.value == 1.0 and out.stdout == "debug output\n" and buf.getvalue() == ""


def test_the_pytest_route_runs_only_the_labs_checks_one_test_per_check_id(tmp_path):
    import subprocess
    import sys

    from retrieval_conformance.conformance.harness.checks import every_check_id

    n_checks = len(every_check_id())
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "retrieval_conformance.conformance",
        "-p",
        "no:cacheprovider",
        "--impl",
        E + "hashing_correct:calc_top_map",
        "--adapter",
        "hashing-codes",
        "--conformance-max-examples",
        "10",
        "-q",
        "-rs",
    ]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    tail = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 0, proc.stdout[-3000:]
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|skipped|deselected|failed)", tail)}
    assert counts.get("passed", 0) + counts.get("skipped", 0) == n_checks, tail
    assert counts.get("deselected", 0) > 100  # our own suite is not run
