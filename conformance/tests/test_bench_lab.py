"""A lab's own metric function timed on the benchmark workloads through the harness adapters."""

from __future__ import annotations

import numpy as np
import pytest
from retrieval_conformance.conformance.bench.adapters import benchmark_function


def _seed000_style(query_codes, db_codes, query_labels, db_labels, topk):
    from retrieval_conformance.conformance.bench.baselines import calc_top_map

    return calc_top_map(query_codes, db_codes, query_labels, db_labels, topk).map


def _divides_by_k(query_codes, db_codes, query_labels, db_labels, topk):
    """AP@k divided by k instead of by the hits (a spec §11 mistake)."""
    total = 0.0
    for i in range(len(query_codes)):
        gnd = (query_labels[i] @ db_labels.T > 0)[np.argsort(-(query_codes[i] @ db_codes.T), kind="stable")][:topk]
        ranks = np.flatnonzero(gnd) + 1.0
        total += float(np.sum(np.arange(1, ranks.size + 1) / ranks)) / topk
    return total / len(query_codes)


def test_a_lab_function_is_benchmarked_through_the_harness_adapter(benchmark):
    run = benchmark_function(benchmark, _seed000_style, "hashing-codes", "cifar10-1000", scale="smoke")
    assert run.differences == [] and abs(run.values["mAP"] - run.expected["mAP"]) < 1e-12


def test_a_wrong_lab_function_fails_after_timing(benchmark):
    with pytest.raises(AssertionError, match="differs from the 'hashing' protocol: mAP"):
        benchmark_function(benchmark, _divides_by_k, "hashing-codes", "cifar10-1000", scale="smoke")


def test_a_lab_reid_function_through_the_reid_adapter(benchmark):
    from retrieval_conformance.conformance.bench.baselines import torchreid_style

    def evaluate(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):
        res = torchreid_style(distmat, q_pids, g_pids, q_camids, g_camids, max_rank)
        valid = res.inp > 0  # queries with a valid match (torchreid leaves the others out)
        return res.cmc[valid].mean(0), res.map, res.inp[valid].mean()

    run = benchmark_function(benchmark, evaluate, "reid", "market1501", scale="smoke")
    assert run.differences == [] and set(run.values) == {"cmc", "mAP", "mINP"}
    assert abs(run.values["mINP"] - run.expected["mINP"]) < 1e-9
