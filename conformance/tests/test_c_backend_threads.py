"""Determinism of the C implementation: identical arrays for any thread count (``num_threads``,
``RC_NUM_THREADS``), for the generic and the CPU-accelerated code paths and for any query block
size; a child forked after parallel use in the parent still runs.  Skipped when the library is
not built, or fails with ``RC_REQUIRE=c``.
"""

from __future__ import annotations

import numpy as np
import pytest
from retrieval_conformance.conformance.crosscheck import same_bits
from retrieval_conformance.conformance.support.c_test_support import RULES, TIES
from retrieval_conformance.conformance.support.fixtures import medium_problems
from retrieval_conformance.reference.contract.problem import Options


# ---------------------------------------------------------------------------------------------
# determinism: threads, CPU features, query blocks
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ties", TIES)
def test_thread_count_does_not_change_results(c_backend, ties):
    """Threads over queries, no reduction across queries: 1 and 2 threads give equal arrays."""
    for name, p in medium_problems().items():
        for k, apk in ((None, "hits"), (37, "hits"), (37, "dcmh"), (500, "min_k_r")):
            o = Options(ties=ties, k=k, ap_at_k=apk, radius=3.0 if name == "codes" else 0.3)
            try:
                one = c_backend.CImplementation(num_threads=1).compute(p, o)
            except ValueError:  # grouped with k inside a tie group
                assert ties == "grouped"
                with pytest.raises(ValueError):
                    c_backend.CImplementation(num_threads=2).compute(p, o)
                continue
            two = c_backend.CImplementation(num_threads=2).compute(p, o)
            assert same_bits(one, two, f"{name} {o}") == []


def test_rc_num_threads_environment(c_backend, monkeypatch):
    p = medium_problems()["codes"]
    base = c_backend.CImplementation(num_threads=1).compute(p, Options())
    monkeypatch.setenv("RC_NUM_THREADS", "2")
    assert c_backend.thread_count() == 2
    assert same_bits(base, c_backend.CImplementation().compute(p, Options()), "RC_NUM_THREADS=2") == []
    monkeypatch.setenv("RC_NUM_THREADS", "two")
    with pytest.raises(ValueError, match="RC_NUM_THREADS"):
        c_backend.CImplementation().compute(p, Options())
    with pytest.raises(ValueError, match="num_threads"):
        c_backend.CImplementation(num_threads=0).compute(p, Options())


@pytest.mark.parametrize("ties", ["stable", "reverse", "expected"])
def test_generic_and_accelerated_paths_agree(c_backend, ties):
    """popcnt/FMA code paths (chosen at run time) give the same arrays as the portable ones."""
    have = c_backend.cpu_features()
    if have == 0:
        pytest.skip("this CPU has neither popcnt nor fma: only the generic path exists")
    impl = c_backend.CImplementation()
    try:
        for p in medium_problems().values():
            for rule in RULES:
                o = Options(ties=ties, ap_rule=rule)
                c_backend.cpu_features(c_backend.ALL_FEATURES)
                fast = impl.compute(p, o)
                c_backend.cpu_features(0)
                generic = impl.compute(p, o)
                assert same_bits(fast, generic, f"{o}") == []
    finally:
        c_backend.cpu_features(c_backend.ALL_FEATURES)


def test_query_blocks_do_not_change_results(c_backend, monkeypatch):
    """Queries go to C in blocks (row offsets into every per-query input)."""
    for p in medium_problems().values():
        for ties in ("stable", "expected"):
            o = Options(ties=ties, k=50)
            whole = c_backend.CImplementation().compute(p, o)
            monkeypatch.setattr(c_backend, "BLOCK_QUERIES", 7)
            seen = []
            blocked = c_backend.CImplementation().compute(p, o, progress=lambda done, total, acc=seen: acc.append(done))
            monkeypatch.undo()
            assert same_bits(whole, blocked, f"blocks {o}") == []
            assert seen[-1] == p.n_queries and seen == sorted(seen) and len(seen) == -(-p.n_queries // 7)


def _ap_in_child(problem):
    from retrieval_conformance.implementations.c.backend import CImplementation

    return CImplementation(num_threads=2).compute(problem, Options()).ap


def test_forked_child_runs_after_parallel_use_in_the_parent(c_backend):
    """GNU OpenMP's threads do not survive fork(): without the pid check a child forked after a
    parallel call would wait for them forever.  The child runs on one thread instead."""
    import multiprocessing as mp

    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork() here")
    p = medium_problems()["codes"]
    parent = c_backend.CImplementation(num_threads=2).compute(p, Options())
    with mp.get_context("fork").Pool(1) as pool:
        child = pool.apply_async(_ap_in_child, (p,)).get(timeout=120)
    np.testing.assert_array_equal(child, parent.ap)
