"""The ``compare`` fuzz campaign: runs paired by query id, one definition, values screened; and it finds bugs.

``RC_FUZZ=long`` runs 100,000 cases instead of 1,000; the campaign alone:
``python -m retrieval_conformance.conformance.fuzz --target compare --cases N``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import retrieval_conformance as rc
from hypothesis import given, settings
from hypothesis import strategies as st
from retrieval_conformance.conformance.fuzz.__main__ import main as fuzz_main
from retrieval_conformance.conformance.fuzz.compare_inputs import classify_compare_case, draw_compare_case
from retrieval_conformance.conformance.fuzz.files import run_file_campaign
from retrieval_conformance.conformance.problems.choices import HypothesisChoices

CASES = 100_000 if os.environ.get("RC_FUZZ") == "long" else 1000


def test_compare_campaign_is_clean():
    report = run_file_campaign(seed=0, cases=CASES, target="compare")
    assert report.cases == CASES
    assert not report.findings, report.findings[:10]
    assert {"arrays", "dicts", "mixed", "trec"} <= set(report.kinds)
    assert any(kind.startswith("trec-") for kind in report.kinds)  # runs evaluated with another option
    assert report.counts["value"] > CASES // 5 and report.counts["named_error"] > CASES // 4


@given(st.data())
@settings(deadline=None, max_examples=50)
def test_generated_compare_cases_are_clean(data):
    case = draw_compare_case(HypothesisChoices(data))
    outcome = classify_compare_case(case)
    assert outcome.clean, f"{outcome.kind}: {outcome.detail}"


def _findings(seed: int = 0, cases: int = 400):
    return run_file_campaign(seed=seed, cases=cases, target="compare").findings


def test_the_campaign_finds_pairing_by_position(monkeypatch):
    """Pairing the first n queries of each run by position (whatever their ids): wrong n or means."""
    import retrieval_conformance.comparison.pairing as pairing

    def by_position(names, ids, lengths):
        n = min(lengths.values())
        first = ids[names[0]]
        return (None if first is None else first[:n]), {name: np.arange(n) for name in names}

    monkeypatch.setattr(pairing, "_positions", by_position)
    assert any(
        kind == "wrong_number" and ("n = " in detail or "exact mean" in detail) for _, _, kind, detail in _findings()
    )


def test_the_campaign_finds_a_setting_left_unchecked(monkeypatch):
    import retrieval_conformance.comparison.pairing as pairing

    monkeypatch.setattr(pairing, "TREC_SETTINGS", ("relevance_level",))
    assert any(
        "compared although runs evaluated with different options" in detail for _, _, _, detail in _findings(cases=1000)
    )


def test_the_campaign_finds_values_let_through(monkeypatch):
    import retrieval_conformance.comparison.pairing as pairing

    monkeypatch.setattr(pairing, "_array_run", lambda name, value: value)  # numpy reads '0.5' as 0.5
    assert any("compared although a value that is not a number" in detail for _, _, _, detail in _findings(cases=1000))


@pytest.mark.parametrize(
    "runs, error, message",
    [
        (
            {"A": {"q1": 0.5, "q2": 0.1}, "B": {"q1": 0.4, "q3": "0.5"}},
            TypeError,
            r"runs\['B'\]: the value of query 'q3' is '0\.5' \(str\); expected real numbers",
        ),
        ({"A": {"q1": 0.5, "q2": None}, "B": {"q1": 0.4, "q2": 0.1}}, TypeError, r"query 'q2' is None"),
        # an infinite value on a query the other run lacks is refused too, not dropped with it
        (
            {"A": {"q1": 0.5, "q2": 0.1}, "B": {"q1": 0.4, "q2": 0.2, "q3": -np.inf}},
            ValueError,
            r"runs\['B'\]: value is -inf at query 'q3'",
        ),
        (
            {"A": np.array([0.5, 0.1]), "B": np.array([0.4, np.inf])},
            ValueError,
            r"runs\['B'\]: value is inf at query 1",
        ),
        ({"A": {"q1": 2**2000, "q2": 0.1}, "B": {"q1": 0.4, "q2": 0.2}}, ValueError, r"beyond the float64 range"),
    ],
)
def test_per_query_values_are_screened(runs, error, message):
    with pytest.raises(error, match=message):
        rc.compare(runs)


def test_real_numbers_held_as_objects_are_read():
    from fractions import Fraction

    cmp = rc.compare({"A": {"q1": Fraction(1, 2), "q2": 0.25}, "B": {"q1": 1, "q2": 0.75}}, tests=("t",))
    assert cmp.rows[0].n_queries == 2 and cmp.rows[0].difference == pytest.approx(0.5)


def test_command_line_target(tmp_path):
    report = tmp_path / "report.json"
    assert fuzz_main(["--target", "compare", "--cases", "50", "--quiet", "--json", str(report)]) == 0
    assert report.exists()
