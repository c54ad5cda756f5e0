"""The audit's reports, ``--fail-if``, the command, its refusals and its cost benchmark."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.audit import fail_if
from retrieval_conformance.conformance.support.audit_problems import seed000


def test_fail_if_grammar():
    assert fail_if.parse("tie_interval:map>0.5%") == ("tie_interval:map", ">", 0.005)
    assert fail_if.parse(" self_matches >= 1 ") == ("self_matches", ">=", 1.0)
    for bad in ("tie_interval:foo>1", "map>>1", "nothing", "bogus>0"):
        with pytest.raises(ValueError, match="fail_if"):
            fail_if.parse(bad)
    a = rc.audit(**seed000("seed000-map-all"))
    assert a.failures("tie_interval:map>0.05") and not a.failures("tie_interval:map>0.1")
    assert a.failures("map<0.61") and not a.failures("map<0.6")
    assert a.failures("reproduced<1")  # no reported numbers: refused as a failure, not passed silently


def test_reports_json_and_self_contained_html():
    a = rc.audit(**seed000("seed000-map-all"), reported="map=0.6026")
    d = json.loads(json.dumps(a.to_dict(), default=str))
    assert d["specification_version"] and d["reproduced"]["n_matches"] == 1
    page = a.to_html()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<table" in page
    lowered = page.lower()
    assert "<script" not in lowered and "src=" not in lowered and "href=" not in lowered
    urls = lowered.count("http") - lowered.count("http-equiv")  # the Content-Security-Policy's meta is no URL
    assert urls == lowered.count('xmlns="http://www.w3.org/2000/svg"')


def test_command_exit_codes(tmp_path):
    path = tmp_path / "seed.npz"
    np.savez(path, **seed000("seed000-map-all"))
    cmd = [sys.executable, "-m", "retrieval_conformance.cli", "audit", "--npz", str(path)]
    ok = subprocess.run(cmd + ["--reported", "map=0.6026", "--format", "json"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["reproduced"]["n_matches"] == 1
    failed = subprocess.run(cmd + ["--fail-if", "tie_interval:map>0.5%"], capture_output=True, text=True)
    assert failed.returncode == 1 and "tie_interval:map" in failed.stderr
    bad = subprocess.run(cmd + ["--fail-if", "bogus>0"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --fail-if:")
    bad = subprocess.run(cmd + ["--reported", "map=x"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --reported:")
    bad = subprocess.run(cmd + ["--metric", "cosine"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --metric:")


def test_bad_arguments_are_named():
    args = seed000("seed000-map-all")
    with pytest.raises(ValueError, match="max_cost"):
        rc.audit(**args, max_cost=5)
    with pytest.raises(ValueError, match="protocol"):
        rc.audit(**args, protocol="nope")
    with pytest.raises(ValueError, match="ties"):
        rc.audit(**args, ties="sideways")
    with pytest.raises(ValueError, match="reported: precision_at_k needs a cut-off"):
        rc.audit(**args, reported="p@k=0.5")
    with pytest.raises(ValueError, match="reported: rank10 needs a gallery of 10"):
        rc.audit(**args, reported="rank10=0.5")
    with pytest.raises(ValueError, match="metric: 'cosine' applies to embeddings"):
        rc.audit(**args, metric="cosine")
    with pytest.raises(ValueError, match="ranking input"):
        rc.audit(relevance=np.ones((2, 2), bool))


def test_audit_cost_workload_runs_and_traces_its_own_number():
    from retrieval_conformance.conformance.bench.audit_cost import AUDITED, measure

    for name, _ in AUDITED:
        row = measure(name, "smoke")
        assert row["evaluations"] > 10 and row["ratio"] > 0
        assert row["reproduced"] >= 1  # the workload's own mAP, printed to 4 digits, is traced to a convention


def test_arrays_and_a_run_are_not_mixed():
    with pytest.raises(ValueError, match="^distances:"):
        rc.audit(distances=np.zeros((1, 1)), run={"q": {"d": 1.0}}, qrels={"q": {"d": 1}})
