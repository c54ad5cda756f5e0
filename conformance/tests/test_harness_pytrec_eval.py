"""``check --protocol trec`` on a function that calls pytrec_eval (trec_eval's C code): it conforms,
nDCG included (the trec preset discounts every rank by log2(r + 1), as trec_eval since 9.0.4:
spec §7 discount=log2).
Skips when ``pytrec_eval`` (``pip install pytrec-eval-terrier``) is not installed."""

from __future__ import annotations

import pytest
from retrieval_conformance.conformance.harness import check

TARGET = "retrieval_conformance.conformance.examples.pytrec_eval_ndcg:ndcg_cut"


def test_pytrec_eval_ndcg_conforms_to_the_trec_preset():
    pytest.importorskip("pytrec_eval", reason="pytrec_eval is not installed (pip install pytrec-eval-terrier)")
    report = check(TARGET, adapter="sklearn-ndcg", protocol="trec", max_examples=15)
    assert report.exit_code == 0, report.text()
    passed = {r.id for r in report.results if r.status == "pass"}
    assert {"golden/rank-preset-trec", "ndcg/graded", "ndcg/graded-ties", "ties/tie-heavy"} <= passed, report.text()


def test_the_example_gives_trec_eval_9_0_8s_number():
    """grades 0 then 1, ranked in that order: trec_eval 9.0.8 prints ndcg_cut_5 0.6309."""
    pytest.importorskip("pytrec_eval", reason="pytrec_eval is not installed (pip install pytrec-eval-terrier)")
    from retrieval_conformance.conformance.examples.pytrec_eval_ndcg import ndcg_cut

    assert f"{ndcg_cut([[0, 1]], [[2.0, 1.0]], k=5):.4f}" == "0.6309"
