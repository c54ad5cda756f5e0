"""The fuzz campaign in the suite: a quick derandomised profile, and the campaign's own machinery.

The long profile is a command, not a test (hours on two cores)::

    RC_FUZZ=long python -m retrieval_conformance.conformance.fuzz --json fuzz-long.json
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from retrieval_conformance.conformance.fuzz.campaign import PROFILES, reproduce_command, run_campaign
from retrieval_conformance.conformance.fuzz.cases import CHANGES, draw_case
from retrieval_conformance.conformance.fuzz.classify import FAILURES, classify, names_an_argument
from retrieval_conformance.conformance.problems.choices import HypothesisChoices, RecordingChoices, ReplayChoices
from retrieval_conformance.reference.contract.registry import available

IMPLEMENTATIONS = ["reference"] + [n for n in available() if n != "reference"]


def _describe(report) -> str:
    return "\n".join(
        f"case {f.index} [{f.change}] {f.kind} {f.implementation}: {f.detail}\n"
        f"  reproduce: {reproduce_command(report.seed, f.index)}"
        for f in report.findings[:20]
    )


def test_quick_campaign_in_worker_processes():
    """Every case of the quick profile ends in the reference's numbers or a named error."""
    cases = PROFILES["long" if os.environ.get("RC_FUZZ") == "long" else "quick"].cases
    report = run_campaign(seed=0, cases=cases, implementations=IMPLEMENTATIONS, workers=2)
    assert report.cases == cases
    assert not report.findings, _describe(report)
    # the profile exercises both sides of the contract
    assert report.counts["value"] > cases // 4 and report.counts["named_error"] > cases // 4


@given(st.data())
@settings(deadline=None)  # a case runs every implementation: far beyond hypothesis's 200 ms default
def test_generated_cases_are_clean(data):
    """The same generator driven by hypothesis, so a failure shrinks to a small reproducer."""
    recorder = RecordingChoices(HypothesisChoices(data))
    draw_case(recorder)

    def build():
        return draw_case(ReplayChoices(recorder.values))

    outcome = classify(build, IMPLEMENTATIONS)
    assert outcome.clean, f"{outcome.kind} ({outcome.implementation}): {outcome.detail}\n{build().describe()}"


def test_the_campaign_reports_crashes_hangs_and_its_own_failures():
    """A case that kills its worker, one that never answers and one that fails are findings,
    and the cases after them still run (in fresh workers)."""
    report = run_campaign(
        seed=5,
        cases=12,
        implementations=["reference", "numpy"],
        workers=2,
        timeout=20,
        selftest={2: "crash", 7: "hang", 9: "raise"},
    )
    assert report.cases == 12
    kinds = {f.index: f.kind for f in report.findings}
    assert kinds == {2: "crash", 7: "hang", 9: "unnamed_error"}
    assert "exit code" in report.findings[0].detail


def test_a_wrong_number_is_found():
    """An implementation that is off in one query is classified as a wrong number."""
    import retrieval_conformance as rc
    from retrieval_conformance.reference.contract import registry

    real = registry.get("numpy")

    class OffByOne(registry.Implementation):
        name = "numpy-off"

        def compute(self, problem, options):
            pq = real.compute(problem, options)
            pq.ap[0] = pq.ap[0] + 2.0**-30  # beyond the 1e-12 tolerance
            return pq

    registry.register("numpy-off", lambda: OffByOne())
    try:
        case = dict(distances=[[0.0, 1.0, 2.0]], relevance=[[0, 1, 1]])
        rc.evaluate(**case, implementation="numpy-off")
        from retrieval_conformance.conformance.fuzz.cases import Case

        outcome = classify(lambda: Case(dict(case)), ["reference", "numpy-off"])
        assert outcome.kind == "wrong_number", outcome
    finally:
        registry.unregister("numpy-off")


def test_every_change_is_applied_and_declares_an_outcome():
    names = [c.name for c in CHANGES]
    assert len(names) == len(set(names))
    assert {c.expect for c in CHANGES} <= {"value", "error", "either"}
    assert set(FAILURES).isdisjoint({"value", "named_error"})


@pytest.mark.parametrize(
    "message, named",
    [
        ("k: expected a positive integer, got 0", True),
        ("query_labels, db_labels: expected both 1-D", True),
        ("evaluate() got an unexpected keyword argument 'tie'", True),
        ("setting an array element with a sequence", False),
        ("Got unsupported ScalarType BFloat16", False),
    ],
)
def test_what_counts_as_naming_the_argument(message, named):
    assert names_an_argument(message) is named
