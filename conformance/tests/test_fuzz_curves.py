"""The fuzz target of ``rc.curves``: clean on the current code, and it finds each class of bug it
was written for when that bug is put back (a NaN level that escapes as Python's own error, a
fast mean that differs from the others, a front end whose radii are off for every implementation
alike, which only the plain count notices).

``RC_FUZZ=long`` runs the long profile (100,000 cases); the campaign alone:
``python -m retrieval_conformance.conformance.fuzz --target curves``.
"""

from __future__ import annotations

import os
from fractions import Fraction

import retrieval_conformance as rc
from retrieval_conformance.conformance.fuzz.__main__ import main as fuzz_main
from retrieval_conformance.conformance.fuzz.files import run_file_campaign
from retrieval_conformance.reference.contract import curves

LONG = os.environ.get("RC_FUZZ") == "long"


def _findings(cases: int = 600):
    return run_file_campaign(seed=0, cases=cases, target="curves").findings


def test_curves_campaign_is_clean():
    cases = 100_000 if LONG else 3000
    report = run_file_campaign(seed=0, cases=cases, target="curves")
    assert report.cases == cases and not report.findings, report.findings[:10]
    assert report.counts["value"] > cases // 2 and report.counts["named_error"] > cases // 5
    kinds = {kind.split("-")[0] for kind in report.kinds}
    assert kinds == set(curves.CURVE_KINDS), kinds
    changes = {kind.split("-", 1)[1] for kind in report.kinds}
    assert {"plain", "bad-point", "empty-list", "foreign-option", "nan", "bad-implementation", "junk-shape"} <= changes


def test_the_campaign_finds_a_nan_level_that_escapes_unnamed(monkeypatch):
    """Recall levels turned into Fractions before they are checked, as before."""

    def unchecked(levels):
        return tuple(Fraction(level) for level in levels)

    monkeypatch.setattr(curves, "check_recall_levels", unchecked)
    findings = _findings(2000)
    assert any(outcome == "unnamed_error" and "integer ratio" in detail for _, _, outcome, detail in findings)


def test_the_campaign_finds_a_fast_mean_of_its_own(monkeypatch):
    """One implementation's mean summed in float64, in query order: not the correctly rounded mean."""
    real = curves._float_means

    def naive(matrix):
        return matrix.mean(axis=0) if matrix.shape[0] > 2 else real(matrix)

    monkeypatch.setattr(curves, "_float_means", naive)
    findings = _findings()
    assert any(outcome == "wrong_number" for _, _, outcome, _ in findings), findings[:3]


def test_the_campaign_finds_radii_off_for_every_implementation(monkeypatch):
    """Every implementation draws the curve at the wrong radii: they agree, the plain count does not."""
    real = curves.radii_values

    def shifted(radii, problem):
        return tuple(r + 0.5 for r in real(radii, problem))

    monkeypatch.setattr(curves, "radii_values", shifted)
    findings = _findings()
    assert any(outcome == "wrong_number" and "a count gives" in detail for _, _, outcome, detail in findings)


def test_a_nan_recall_level_is_named():
    for level in (float("nan"), float("inf")):
        try:
            rc.curves("pr_interpolated", distances=[[0.0, 1.0]], relevance=[[True, False]], recall_levels=[level])
        except ValueError as exc:
            assert str(exc).startswith("recall_levels: expected numbers in [0, 1]"), exc
        else:  # pragma: no cover - the failure this test is for
            raise AssertionError(f"recall level {level} accepted")


def test_the_curves_target_runs_from_the_command_line(capsys):
    assert fuzz_main(["--target", "curves", "--cases", "40", "--quiet"]) == 0
    assert "curves fuzz campaign, seed 0: 40 cases" in capsys.readouterr().out
