"""BEIR's capped recall ``R_cap@k`` against BEIR's own ``recall_cap`` (beir.retrieval.custom_metrics).

On runs without tied scores, every query with a relevant document and present in both run and
qrels (where BEIR's loop and ours agree on what they average), our ``R_cap_k`` means equal BEIR's
five-digit values.  Skips when beir is not installed (``pip install --no-deps beir``: the metric
module needs nothing else).
"""

from __future__ import annotations

import random

import pytest
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run


def _run_and_qrels(seed: int):
    rnd = random.Random(seed)
    run, qrels = {}, {}
    for q in range(12):
        docs = [f"d{q}-{i}" for i in range(rnd.randint(3, 40))]
        scores = rnd.sample(range(1, 10_000), len(docs))  # distinct: no tie order to disagree on
        run[f"q{q}"] = {d: s / 100 for d, s in zip(docs, scores)}
        judged = rnd.sample(docs, rnd.randint(1, len(docs))) + [f"unretrieved{q}-{i}" for i in range(rnd.randint(0, 5))]
        grades = {d: rnd.choice([0, 1, 2, 3]) for d in judged}
        grades[judged[0]] = rnd.choice([1, 2, 3])  # every query has a relevant document
        qrels[f"q{q}"] = grades
    return run, qrels


@pytest.mark.parametrize("seed", range(5))
def test_capped_recall_is_beirs(seed):
    custom_metrics = pytest.importorskip(
        "beir.retrieval.custom_metrics", reason="beir is not installed (pip install --no-deps beir)"
    )
    run, qrels = _run_and_qrels(seed)
    ks = [1, 3, 5, 10, 100]
    theirs = custom_metrics.recall_cap(qrels, run, ks)
    ours = evaluate_run(run, qrels, k=ks, implementation="reference")
    for k in ks:
        assert round(ours[k].extras["trec_eval"][f"R_cap_{k}"], 5) == theirs[f"R_cap@{k}"], k
