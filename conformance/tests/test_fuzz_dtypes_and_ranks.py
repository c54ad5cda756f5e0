"""The fuzz targets of search results, Accumulator blocks and the distributed Accumulator: clean
on the current code, and each finds the bug it was written for when that bug is put back.

``RC_FUZZ=long`` runs the long profile (10,000 cases or more each); the campaigns alone:
``python -m retrieval_conformance.conformance.fuzz --target search|accumulator|distributed``.
"""

from __future__ import annotations

import os

import numpy as np
from retrieval_conformance.conformance.fuzz.__main__ import main as fuzz_main
from retrieval_conformance.conformance.fuzz.files import run_file_campaign
from retrieval_conformance.conformance.support.distributed_support import requires_gloo

LONG = os.environ.get("RC_FUZZ") == "long"


def test_search_campaign_is_clean():
    cases = 100_000 if LONG else 3000
    report = run_file_campaign(seed=0, cases=cases, target="search")
    assert report.cases == cases and not report.findings, report.findings[:10]
    assert report.counts["value"] > cases // 10 and report.counts["named_error"] > cases // 4
    assert {kind.split("-")[0] for kind in report.kinds} >= {"uint8", "uint64", "int64", "float16", "bool", "<U3"}


def test_search_campaign_finds_the_unsigned_negation(monkeypatch):
    """D negated in its own dtype, as before: a uint l2 distance wraps, and 2**53 goes unrefused."""
    from retrieval_conformance.reference.readers import tables

    monkeypatch.setattr(tables, "exact_float64", lambda name, arr, counted=None: arr)
    findings = run_file_campaign(seed=0, cases=600, target="search").findings
    assert any(outcome == "wrong_number" and kind.startswith("uint") for _, kind, outcome, _ in findings)
    assert any(outcome == "accepted_invalid" for _, _, outcome, _ in findings)


def test_accumulator_campaign_is_clean():
    cases = 10_000 if LONG else 300
    report = run_file_campaign(seed=0, cases=cases, target="accumulator")
    assert report.cases == cases and not report.findings, report.findings[:10]
    assert report.counts["value"] > cases // 2
    assert any(kind.endswith("mixed+empty") for kind in report.kinds)


def test_accumulator_campaign_finds_blocks_in_their_own_precision(monkeypatch):
    """Each block computed in its own dtype, as before: float32 blocks next to a float64 one."""
    import retrieval_conformance.accumulator as accumulator

    monkeypatch.setattr(accumulator, "block_dtype", lambda block, before, gallery: np.dtype(block))
    findings = run_file_campaign(seed=0, cases=300, target="accumulator").findings
    assert any(outcome == "wrong_number" for _, _, outcome, _ in findings), findings[:3]


@requires_gloo
def test_distributed_campaign_is_clean_on_two_and_three_ranks():
    """One process group per campaign, reused by every case; every change drawn."""
    from retrieval_conformance.conformance.fuzz.distributed_ranks import run_distributed_campaign

    for world, cases in ((2, 10_000 if LONG else 120), (3, 10_000 if LONG else 60)):
        report = run_distributed_campaign(seed=world, cases=cases, world=world)
        assert report.cases == cases and not report.findings, report.findings[:10]
        assert {"plain", "dtype", "nan", "raise", "width"} <= set(report.kinds), report.kinds
        assert any(kind.startswith("option-") for kind in report.kinds)


def test_distributed_target_refuses_what_it_does_not_use(capsys):
    assert fuzz_main(["--target", "distributed", "--case", "3"]) == 2
    assert "error: --case: not used with --target distributed" in capsys.readouterr().err
    assert fuzz_main(["--target", "distributed", "--workers", "1"]) == 2
    assert "error: --workers, --cases: expected 2 or more ranks" in capsys.readouterr().err


def test_search_and_accumulator_targets_run_from_the_command_line(capsys):
    assert fuzz_main(["--target", "search", "--cases", "50", "--quiet"]) == 0
    assert fuzz_main(["--target", "accumulator", "--cases", "20", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "search fuzz campaign, seed 0: 50 cases" in out and "accumulator fuzz campaign, seed 0: 20 cases" in out
