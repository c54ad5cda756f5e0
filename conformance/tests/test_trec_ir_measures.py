"""``evaluate_run`` against ir_measures (the library that defines ``Judged@k``) on the generated
inputs of ``golden/trec_inputs.py`` with their ties removed (ir_measures' providers break score
ties their own way; trec_eval's tie order is checked by ``test_trec_eval_golden``).  Skips when
``ir_measures`` (``pip install ir-measures``) is not installed."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import pytest
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run
from retrieval_conformance.reference.protocols.trec.queries import trec_order
from retrieval_conformance.reference.readers.trec import as_qrels, as_run

DATA = Path(str(files("retrieval_conformance.golden") / "data" / "trec"))
#: ir_measures' name -> evaluate_run's
NAMES = {
    "Judged@5": "Judged_5",
    "Judged@10": "Judged_10",
    "Success@5": "success_5",
    "nDCG@10": "ndcg_cut_10",
    "AP": "map",
    "AP@10": "map_cut_10",
    "Bpref": "bpref",
    "RR": "recip_rank",
    "P@5": "P_5",
    "R@10": "recall_10",
}


def test_measures_agree_with_ir_measures_per_query():
    ir_measures = pytest.importorskip("ir_measures", reason="ir_measures is not installed (pip install ir-measures)")
    qrels = as_qrels(DATA / "generated.qrels")
    # scores from trec_eval's order, all distinct: every tool ranks them the same way
    run = {
        q: {d: float(len(docs) - i) for i, (d, _) in enumerate(trec_order(docs))}
        for q, docs in as_run(DATA / "generated.run").items()
    }
    # complete: ir_measures evaluates every qrels query
    ours = evaluate_run(run, qrels, k=(5, 10), complete=True, implementation="reference")
    compared = 0
    for value in ir_measures.iter_calc([ir_measures.parse_measure(m) for m in NAMES], qrels, run):
        name = NAMES[str(value.measure)]
        res = ours[10 if name.endswith("_10") else 5]
        row = res.extras["query_ids"].index(value.query_id)
        got = res.extras["trec_eval_per_query"][name][row]
        assert got == pytest.approx(value.value, abs=1e-12), (value.query_id, name)
        compared += 1
    assert compared == len(NAMES) * len(qrels)
