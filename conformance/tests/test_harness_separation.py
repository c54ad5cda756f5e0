"""Inputs that separate real rules, no false findings, known deviations by cause.

Each test pins a verdict on one of our lab-style functions (conformance/examples/): the exit
status and every cause named.
"""
from __future__ import annotations

from retrieval_conformance.conformance.harness import check, identify

E = "retrieval_conformance.conformance.examples."


def test_nan_for_an_empty_query_is_no_score_sign_finding():
    # NaN with scores <= 0 and NaN with scores > 0 are the same value, not a change
    rep = identify(E + "nan_for_empty:average_precision", adapter="sklearn", protocol="hashing", empty="skip",
                   per_family=3)
    assert rep.exit_code == 0 and "scores <= 0" not in rep.text(), rep.text()
    report = check(E + "nan_for_empty:average_precision", adapter="sklearn", protocol="hashing", empty="skip",
                   max_examples=15)
    assert report.exit_code == 0, report.text()
