"""The ``trec`` preset's floats are trec_eval's doubles, bit for bit (spec §13 trec_eval).

Per query: every measure of ``evaluate_run`` against pytrec_eval, which runs trec_eval's own C
code and returns its doubles, compared with ``==`` on seeded random runs (graded judgments,
negative grades, unjudged documents, relevant documents never retrieved, several relevance
levels and cut-offs).  The means: trec_eval adds the per-query doubles in its order of query
ids and divides by their count (``meas_acc.c``, ``meas_avg.c``), and the printed boundary cases
of ``golden/trec_eval.json`` pin the digits that rounding the exact mean would get wrong.

Skips when ``pytrec_eval`` (``pip install pytrec-eval-terrier``) is not installed.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from retrieval_conformance.reference.protocols.trec import doubles
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run

pytrec_eval = pytest.importorskip(
    "pytrec_eval", reason="pytrec_eval is not installed (pip install pytrec-eval-terrier)"
)

CUTOFFS = (1, 3, 5, 10)
#: evaluate_run's names -> pytrec_eval's measure families (its keys are ours: map_cut_5, P_5, ...)
FAMILIES = ("map", "bpref", "ndcg", "Rprec", "recip_rank", "map_cut", "ndcg_cut", "P", "recall", "success")


def random_collection(rng: random.Random, n_queries: int):
    run, qrels = {}, {}
    for q in range(n_queries):
        qid = f"q{q:02d}"
        n = rng.randint(1, 25)
        # distinct integer scores: the same order in float32 (pytrec_eval) and float64
        scores = rng.sample(range(1000), n)
        run[qid] = {f"d{i:02d}": float(s) for i, s in enumerate(scores)}
        judged = {f"d{i:02d}": rng.choice([0, 0, 1, 1, 2, 3, -1]) for i in range(n) if rng.random() < 0.7}
        judged.update({f"u{j}": rng.choice([1, 2, 3]) for j in range(rng.randint(0, 6))})
        judged.update({f"n{j}": 0 for j in range(rng.randint(0, 4))})
        if judged:
            qrels[qid] = judged
    return run, qrels


def pytrec_values(run, qrels, level):
    cuts = ",".join(map(str, CUTOFFS))
    measures = {"map", "bpref", "ndcg", "Rprec", "recip_rank"} | {
        f"{m}.{cuts}" for m in ("map_cut", "ndcg_cut", "P", "recall", "success")
    }
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level)
    return evaluator.evaluate({q: docs for q, docs in run.items() if q in qrels})


def our_values(run, qrels, level):
    out = {}
    runs = [evaluate_run(run, qrels, relevance_level=level)]
    runs += list(evaluate_run(run, qrels, relevance_level=level, k=CUTOFFS).values())
    for res in runs:
        for name, column in res.extras["trec_eval_per_query"].items():
            for qid, value in zip(res.extras["query_ids"], column.tolist()):
                out.setdefault(qid, {})[name] = value
    return out, runs


@pytest.mark.parametrize("seed", range(12))
def test_per_query_doubles_are_trec_evals_bit_for_bit(seed):
    rng = random.Random(seed)
    run, qrels = random_collection(rng, 8)
    level = 1 + seed % 2
    theirs = pytrec_values(run, qrels, level)
    ours, _ = our_values(run, qrels, level)
    compared = 0
    for qid, measures in theirs.items():
        for name, value in measures.items():
            if name.split("_")[0] in ("map", "ndcg", "P", "recall", "success", "bpref", "Rprec", "recip"):
                assert ours[qid][name] == value, (qid, name, ours[qid][name], value, run[qid], qrels[qid])
                compared += 1
    assert compared >= 8 * 20


def test_means_are_trec_evals_running_sums():
    rng = random.Random(99)
    run, qrels = random_collection(rng, 30)
    theirs = pytrec_values(run, qrels, 1)
    ours, results = our_values(run, qrels, 1)
    order = results[0].extras["query_ids"]
    assert order == sorted(theirs, key=lambda q: q.encode())
    for res in results:
        for name, mean in res.extras["trec_eval"].items():
            if name.startswith(("num_", "R_cap", "Judged")):
                continue
            running = 0.0
            for qid in order:
                running += theirs[qid][name]
            assert mean == running / len(order), name
    # the Result's own fields carry the same doubles
    assert results[0].map == results[0].extras["trec_eval"]["map"]
    assert results[1].precision_at_k == results[1].extras["trec_eval"][f"P_{CUTOFFS[0]}"]


def test_the_boundary_example_prints_as_trec_eval_prints_it():
    """One query: d00 grade 0, d01..d05 grade 1 retrieved at ranks 2..6, three relevant documents
    never retrieved, two judged non-relevant.  AP = (1/2 + 2/3 + 3/4 + 4/5 + 5/6) / 8 = 71/160
    = 0.44375 exactly; trec_eval's running sum is 0.44375000000000003 and prints 0.4438."""
    qrels = {"1": {"d00": 0, **{f"d0{i}": 1 for i in range(1, 6)}, "d06": 1, "d07": 1, "d08": 1, "d09": 0, "d10": 0}}
    run = {"1": {f"d0{i}": float(100 - i) for i in range(6)}}
    res = evaluate_run(run, qrels, implementation="reference")
    assert res.exact.map == Fraction(71, 160)
    assert res.extras["trec_eval_exact"]["map"] == [Fraction(71, 160)]
    assert res.map == 0.44375000000000003 and f"{res.map:.4f}" == "0.4438"


def test_doubles_follow_the_c_order_of_operations():
    # map: 1/1 + 2/3 summed in float64, over R = 3
    assert doubles.average_precision([1, 0, 1], 1, 3, (2,)) == {None: (1.0 + 2.0 / 3.0) / 3.0, 2: 1.0 / 3.0}
    # bpref: one non-relevant above the second relevant, N = 2, R = 2
    assert doubles.bpref([1, 0, 1, None, -1], 1, 2, 2) == (1.0 + (1.0 - 1.0 / 2.0)) / 2
    # ndcg_cut: the grade is its gain; the ideal takes grades 2, 1
    value = doubles.ndcg_cut([0, 2, 1], {"a": 0, "b": 2, "c": 1}, 2)
    assert value == (2.0 / 1.584962500721156) / (2.0 / 1.0 + 1.0 / 1.584962500721156)
    assert doubles.running_mean([0.1, 0.2, 0.3], 3) == ((0.1 + 0.2) + 0.3) / 3
