"""The ``check`` fuzz campaign: hostile functions (forks, processes, threads, exits, odd numbers,
output) each end in the expected verdict, with no traceback, no leaked process and nothing written
to the current folder; and the campaign finds each of these when it is reintroduced.

``RC_FUZZ=long`` runs 10,000 cases instead of a handful; the campaign alone:
``python -m retrieval_conformance.conformance.fuzz --target check --cases N``.
"""

from __future__ import annotations

import os

import pytest
from retrieval_conformance.conformance.fuzz.hostile_targets import (
    BEHAVIOURS,
    RETURNS,
    HostileCase,
    classify_hostile_case,
)
from retrieval_conformance.conformance.support.hostile_support import run_in_child

CASES = 10_000 if os.environ.get("RC_FUZZ") == "long" else 4
posix_only = pytest.mark.skipif(os.name != "posix", reason="fork, process groups and /proc")


def _fresh_check(code: str):
    # in a fresh interpreter, as a lab runs ``check``: this suite's process has been through hundreds
    # of tests (dask clusters, native thread pools) that the harness's forked worker would inherit
    return run_in_child(code, timeout=900)


@posix_only
def test_check_campaign_is_clean():
    campaign = "retrieval_conformance.conformance.fuzz"
    done = _fresh_check(
        f"import sys, runpy; sys.argv = ['fuzz', '--target', 'check', '--cases', '{CASES}']; "
        f"runpy.run_module('{campaign}', run_name='__main__')"
    )
    assert done.returncode == 0 and f"{CASES} cases" in done.stdout, done.stdout + done.stderr
    assert "PASSED: 0 wrong values, 0 unnamed errors, 0 hangs" in done.stdout, done.stdout


# each behaviour once, with a return type that keeps the verdict its own (hang: two time limits)
@pytest.mark.slow
@posix_only
@pytest.mark.parametrize("behaviour", sorted(set(BEHAVIOURS) - {"hangs"}))
def test_each_behaviour_ends_in_its_verdict(behaviour):
    done = _fresh_check(
        "from retrieval_conformance.conformance.fuzz.hostile_targets import HostileCase, classify_hostile_case\n"
        f"outcome = classify_hostile_case(HostileCase(({behaviour!r},), 'float'))\n"
        "print(outcome.clean, outcome.kind, outcome.detail)"
    )
    assert done.returncode == 0 and done.stdout.startswith("True "), done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("returns", sorted(RETURNS))
def test_each_return_type_ends_in_its_verdict(returns):
    outcome = classify_hostile_case(HostileCase(("sleeps",), returns))
    assert outcome.clean, f"{outcome.kind}: {outcome.detail}"


@posix_only
def test_the_campaign_finds_a_process_left_running(monkeypatch):
    import retrieval_conformance.conformance.harness.calling.runner as runner

    monkeypatch.setattr(runner, "kill_group", lambda pgid, known=(): None)
    monkeypatch.setattr(runner, "end_adopted", lambda known, seconds=2.0: None)  # the orphans' safety net
    # a plain process, which outlives the worker's own exit (a pool's daemonic workers end with it
    # when the worker exits in time, so they would show only when it does not)
    outcome = classify_hostile_case(HostileCase(("subprocess-left-running",), "float"))
    assert outcome.kind == "leaked_process", outcome


@posix_only
def test_the_campaign_finds_a_forked_child_answering_for_the_worker(monkeypatch):
    import retrieval_conformance.conformance.harness.calling.invoke as invoke

    monkeypatch.setattr(invoke, "_leave_if_forked", lambda caller: None)
    outcome = classify_hostile_case(HostileCase(("fork-child-returns",), "float"))
    assert not outcome.clean, outcome


def test_the_campaign_finds_check_crashing_on_a_number(monkeypatch):
    import retrieval_conformance.conformance.harness.adapters.average_precision as adapters
    import retrieval_conformance.conformance.harness.calling.outcome as outcome_module

    unreadable = RETURNS["float-subclass-unreadable"][0]
    monkeypatch.setattr(outcome_module, "_PLAIN_TYPES", outcome_module._PLAIN_TYPES + (unreadable,))
    monkeypatch.setattr(adapters, "read_scalar", lambda value, what: float(value))  # unguarded
    outcome = classify_hostile_case(HostileCase(("sleeps",), "float-subclass-unreadable"))
    assert outcome.kind in ("unnamed_error", "traceback"), outcome


def test_the_campaign_finds_output_reaching_the_harness(monkeypatch):
    import retrieval_conformance.conformance.harness.calling.capture as capture

    monkeypatch.setattr(capture.FdCapture, "__enter__", lambda self: self)  # the worker inherits it
    monkeypatch.setattr(capture.FdCapture, "__exit__", lambda self, *exc: None)
    outcome = classify_hostile_case(HostileCase(("prints",), "float"))
    assert outcome.kind == "leaked_output", outcome


@posix_only
def test_the_command_line_runs_the_check_target(capsys):
    from retrieval_conformance.conformance.fuzz.__main__ import main as fuzz_main

    assert fuzz_main(["--target", "check", "--cases", "1", "--start", "2", "--quiet"]) == 0
    assert "check fuzz campaign, seed 0: 1 cases (2..2)" in capsys.readouterr().out
    assert fuzz_main(["--target", "check", "--workers", "2"]) == 2
    assert capsys.readouterr().err.startswith("error: --workers: not used with --target check")
