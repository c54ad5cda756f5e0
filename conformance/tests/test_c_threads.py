"""The C implementation's threads: the default thread count (``implementations/c/threads.py``)
and the chunked loop over queries (``csrc/rc_threads.c``): every thread count, however many
threads start late or not at all, gives the bits of one thread.  Skipped when the library is
not built, or fails with ``RC_REQUIRE=c``.
"""

from __future__ import annotations

import numpy as np
import pytest
from retrieval_conformance.conformance.crosscheck import same_bits
from retrieval_conformance.conformance.support.fixtures import medium_problems
from retrieval_conformance.reference.contract.problem import Options, Problem


@pytest.fixture
def c_threads(c_backend):
    from retrieval_conformance.implementations.c import threads as c_threads

    c_threads.cgroup_cpu_quota.cache_clear()
    yield c_threads
    c_threads.cgroup_cpu_quota.cache_clear()


# ---------------------------------------------------------------------------------------------
# the default rule
# ---------------------------------------------------------------------------------------------
def test_small_problems_run_on_one_thread(c_threads, monkeypatch):
    monkeypatch.setattr(c_threads, "usable_cpus", lambda: 16)
    monkeypatch.setattr(c_threads, "max_threads", lambda: 16)
    assert c_threads.default_threads(100, (c_threads.SMALL_PROBLEM - 1) // 100) == 1
    assert c_threads.default_threads(1000, 54_000) == 16


def test_default_is_capped_by_cpus_openmp_and_queries(c_threads, monkeypatch):
    monkeypatch.setattr(c_threads, "usable_cpus", lambda: 4)
    monkeypatch.setattr(c_threads, "max_threads", lambda: 8)
    assert c_threads.default_threads(1000, 54_000) == 4
    monkeypatch.setattr(c_threads, "max_threads", lambda: 3)  # OMP_NUM_THREADS=3
    assert c_threads.default_threads(1000, 54_000) == 3
    per = c_threads.MIN_QUERIES_PER_THREAD
    assert c_threads.default_threads(2 * per, 1_000_000) == 2
    assert c_threads.default_threads(per - 1, 1_000_000) == 1


def test_explicit_counts_override_the_default(c_threads, monkeypatch):
    monkeypatch.delenv("RC_NUM_THREADS", raising=False)
    assert c_threads.resolve_threads(None, 1, 10) == 1
    assert c_threads.resolve_threads(3, 1, 10) == 3
    monkeypatch.setenv("RC_NUM_THREADS", "5")
    assert c_threads.resolve_threads(None, 1, 10) == 5
    with pytest.raises(ValueError, match="num_threads"):
        c_threads.resolve_threads(0, 1, 10)


def _quota_files(tmp_path, monkeypatch, c_threads, v2=None, v1=None):
    paths = {
        "CGROUP_V2_MAX": tmp_path / "cpu.max",
        "CGROUP_V1_QUOTA": tmp_path / "quota",
        "CGROUP_V1_PERIOD": tmp_path / "period",
    }
    for name, path in paths.items():
        monkeypatch.setattr(c_threads, name, str(path))
    if v2 is not None:
        paths["CGROUP_V2_MAX"].write_text(v2)
    if v1 is not None:
        paths["CGROUP_V1_QUOTA"].write_text(v1[0])
        paths["CGROUP_V1_PERIOD"].write_text(v1[1])
    c_threads.cgroup_cpu_quota.cache_clear()
    return c_threads.cgroup_cpu_quota()


@pytest.mark.parametrize(
    "v2, v1, cpus",
    [
        ("max 100000\n", None, None),
        ("150000 100000\n", None, 2),
        ("50000 100000\n", None, 1),
        ("garbage\n", None, None),
        (None, ("-1\n", "100000\n"), None),
        (None, ("300000\n", "100000\n"), 3),
        (None, None, None),
    ],
)
def test_cgroup_quota(c_threads, tmp_path, monkeypatch, v2, v1, cpus):
    assert _quota_files(tmp_path, monkeypatch, c_threads, v2, v1) == cpus


def test_quota_cuts_the_affinity_set(c_threads, tmp_path, monkeypatch):
    _quota_files(tmp_path, monkeypatch, c_threads, v2="100000 100000\n")
    monkeypatch.setattr(c_threads.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert c_threads.usable_cpus() == 1
    _quota_files(tmp_path, monkeypatch, c_threads, v2="max 100000\n")
    assert c_threads.usable_cpus() == 4


# ---------------------------------------------------------------------------------------------
# the loop: same bits for any thread count, chunking and late workers
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ties", ["stable", "expected"])
def test_more_threads_than_cores_and_queries(c_backend, ties):
    """3, 7 and 64 threads (more than this machine's cores, more than the queries of a small
    problem: most workers find nothing left and leave) give the bits of one thread."""
    for name, p in medium_problems().items():
        o = Options(ties=ties, k=37)
        one = c_backend.CImplementation(num_threads=1).compute(p, o)
        for threads in (3, 7, 64):
            many = c_backend.CImplementation(num_threads=threads).compute(p, o)
            assert same_bits(one, many, f"{name} {threads} threads") == []


def test_late_workers_after_return(c_backend):
    """Many calls in a row with far more threads than work: workers that start after their
    call returned must leave without touching it (no crash, no hang, same bits)."""
    rng = np.random.default_rng(5)
    tiny = Problem(
        n_queries=3,
        n_gallery=50,
        query_bits=rng.integers(0, 2, (3, 16)).astype(np.uint8),
        db_bits=rng.integers(0, 2, (50, 16)).astype(np.uint8),
        query_labels=rng.integers(0, 4, 3),
        db_labels=rng.integers(0, 4, 50),
    )
    base = c_backend.CImplementation(num_threads=1).compute(tiny, Options())
    for _ in range(40):
        again = c_backend.CImplementation(num_threads=32).compute(tiny, Options())
        assert same_bits(base, again, "32 threads") == []


def test_a_query_error_is_reported_from_any_thread(c_backend):
    """A cut-off inside a tie group under ``grouped`` raises the same error on 1 and 4 threads."""
    p = medium_problems()["codes"]
    messages = []
    for threads in (1, 4):
        with pytest.raises(ValueError) as err:
            c_backend.CImplementation(num_threads=threads).compute(p, Options(ties="grouped", k=37))
        messages.append(str(err.value))
    assert messages[0] == messages[1]


def test_curves_report_the_first_failing_query_on_any_thread_count(c_backend, monkeypatch):
    """rc.curves under ``grouped`` with an N inside tie groups of several queries: the error
    names the first such query, as the reference does, whatever the thread count."""
    import retrieval_conformance as rc

    rng = np.random.default_rng(7)
    # the first 12 queries are all-zero codes and the gallery has exactly 7 such items: N = 7
    # ends their first tie group; later queries are random, most with N = 7 inside a group
    db = rng.integers(0, 2, (120, 8))
    db[:7] = 0
    db[7:, 0] = 1
    queries = rng.integers(0, 2, (24, 8))
    queries[:12] = 0
    inputs = dict(
        query_codes=queries, db_codes=db, query_labels=rng.integers(0, 3, 24), db_labels=rng.integers(0, 3, 120)
    )
    messages = []
    for implementation, threads in (("reference", "1"), ("c", "1"), ("c", "2"), ("c", "5")):
        monkeypatch.setenv("RC_NUM_THREADS", threads)
        with pytest.raises(ValueError) as err:
            rc.curves("precision_at_n", **inputs, ties="grouped", n=(7,), implementation=implementation)
        messages.append(str(err.value))
    assert messages[1:] == messages[:1] * 3
    assert "of query 0;" not in messages[0]
