"""The thread benchmark (``conformance/bench/threads.py``): its environment and competing
process are set up and taken down, and its figures come out at smoke scale with the same bits
for every thread count.  Skipped when the C library is not built.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="module")
def threads_bench(c_backend):
    from retrieval_conformance.conformance.bench import threads

    return threads


def test_thread_environment_restores(threads_bench, monkeypatch):
    monkeypatch.setenv("RC_NUM_THREADS", "3")
    with threads_bench.thread_environment(1):
        assert os.environ["RC_NUM_THREADS"] == "1"
    assert os.environ["RC_NUM_THREADS"] == "3"
    with threads_bench.thread_environment(None):
        assert "RC_NUM_THREADS" not in os.environ
    assert os.environ["RC_NUM_THREADS"] == "3"


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity here")
def test_competing_process_is_pinned_niced_and_ended(threads_bench, monkeypatch):
    started = []
    real_popen = threads_bench.subprocess.Popen

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(threads_bench.subprocess, "Popen", popen)
    monkeypatch.setattr(threads_bench, "SETTLE_SECONDS", 0.0)
    with threads_bench.competing_process(19) as cpu:
        (proc,) = started
        assert os.sched_getaffinity(proc.pid) == {cpu}
        assert os.getpriority(os.PRIO_PROCESS, proc.pid) == 19
    assert proc.poll() is not None
    with threads_bench.competing_process(None) as cpu:
        assert cpu is None and len(started) == 1


def test_figures_at_smoke_scale(threads_bench, monkeypatch):
    monkeypatch.setattr(threads_bench, "SETTLE_SECONDS", 0.0)
    fig = threads_bench.thread_figures("smoke", rounds=1)
    assert list(fig["conditions"]) == ["quiet", "busy", "busy, nice 19"]
    for cond in fig["conditions"].values():
        assert cond["same_bits"] and set(cond["speedup"]) == {"2 threads", "default"}
    assert fig["default_threads"] == 1  # 20 x 600 is a small problem
    with pytest.raises(ValueError, match="rounds"):
        threads_bench.thread_figures("smoke", rounds=0)


def test_feature_section_figures(threads_bench, monkeypatch):
    """The section ``threads`` of the feature benchmarks: two threads and the default against one,
    under every condition, with their targets."""
    from retrieval_conformance.conformance.bench.features.figures import check_figures

    monkeypatch.setattr(threads_bench, "SETTLE_SECONDS", 0.0)
    figs = check_figures(threads_bench.figures("smoke"), "threads.figures")
    assert figs["2 threads, quiet"]["target"] == ">= 1.7x"
    assert figs["2 threads, busy, nice 19"]["target"] == ">= 1.0x"
    assert figs["default (1 thread), busy"]["unit"] == "x one thread"
    with pytest.raises(ValueError, match="scale"):
        threads_bench.figures("huge")
