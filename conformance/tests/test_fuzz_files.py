"""The file fuzz campaign: ``.npy``/``.npz`` headers and TREC lines read cleanly, and the campaign finds bugs.

``RC_FUZZ=long`` runs 200,000 cases instead of 1,000; the campaign alone:
``python -m retrieval_conformance.conformance.fuzz --target files --cases N``.
"""

from __future__ import annotations

import json
import os

from hypothesis import given, settings
from hypothesis import strategies as st
from retrieval_conformance.conformance.fuzz.__main__ import main as fuzz_main
from retrieval_conformance.conformance.fuzz.files import classify_file_case, draw_file_case, run_file_campaign
from retrieval_conformance.conformance.problems.choices import HypothesisChoices

CASES = 200_000 if os.environ.get("RC_FUZZ") == "long" else 1000


def test_file_campaign_is_clean():
    report = run_file_campaign(seed=0, cases=CASES)
    assert report.cases == CASES
    assert not report.findings, report.findings[:10]
    assert set(report.kinds) == {"npy", "npz", "run", "qrels", "run.jsonl"}
    assert report.counts["value"] > CASES // 6 and report.counts["named_error"] > CASES // 4


@given(st.data())
@settings(deadline=None, max_examples=100)
def test_generated_file_cases_are_clean(data):
    case = draw_file_case(HypothesisChoices(data))
    outcome = classify_file_case(case)
    assert outcome.clean, f"{outcome.kind}: {outcome.detail}\n{case.kind} {case.data[:300]!r}"


def test_the_campaign_finds_a_reader_that_lets_a_bom_through(monkeypatch):
    """With the byte-order-mark check disabled, a marked file reads as other query ids: a finding."""
    import retrieval_conformance.reference.readers.trec as trec

    monkeypatch.setattr(trec, "_BOM", b"\0never")
    report = run_file_campaign(seed=0, cases=300)
    assert any(kind == "wrong_number" and "byte-order mark" in detail for _, _, kind, detail in report.findings)


def test_the_campaign_finds_an_unbounded_shape(monkeypatch):
    """Without the index-range check a shape (0, 2**64) reaches numpy: an OverflowError finding."""
    import retrieval_conformance.reference.readers.npy as npy

    monkeypatch.setattr(npy, "_MAX_DIMENSION", float("inf"))
    report = run_file_campaign(seed=0, cases=1000)
    assert any("OverflowError" in detail for _, _, _, detail in report.findings)


def test_evaluate_argv_campaign_is_clean():
    cases = CASES // 5
    report = run_file_campaign(seed=0, cases=cases, target="evaluate-argv")
    assert not report.findings, report.findings[:10]
    assert report.counts["value"] > cases // 10 and report.counts["named_error"] > cases // 4


def test_the_argv_campaign_finds_bare_nan_in_json(monkeypatch):
    """With json.dumps in place of the strict writer, --json prints NaN for a run without relevant items."""
    import json as plain_json

    import retrieval_conformance.strict_json as strict_json

    monkeypatch.setattr(strict_json, "dumps", lambda obj, **kwargs: plain_json.dumps(obj, **kwargs))
    report = run_file_campaign(seed=1, cases=1000, target="evaluate-argv")
    assert any("not strict JSON (NaN)" in detail for _, _, _, detail in report.findings)


def test_command_line_target(tmp_path, capsys):
    report = tmp_path / "files.json"
    assert fuzz_main(["--target", "files", "--cases", "50", "--quiet", "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert "files fuzz campaign, seed 0: 50 cases" in out and "PASSED" in out
    data = json.loads(report.read_text())
    assert data["cases"] == 50 and data["findings"] == [] and sum(data["outcomes"].values()) == 50
    for argv in (["--workers", "2"], ["--implementations", "numpy"], ["--case", "3"]):
        assert fuzz_main(["--target", "files", "--cases", "5", *argv]) == 2
        assert capsys.readouterr().err.startswith(f"error: {argv[0]}: not used with --target files")
