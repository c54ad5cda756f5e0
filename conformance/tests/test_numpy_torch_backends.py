"""The numpy and torch implementations against an independent brute-force oracle, the
reference, and each other (COMMON "Exact per-query semantics"; spec §4-§7).

* the oracle (``support/oracle.py``) is a slow, literal reading of the per-query semantics:
  concrete policies rank the items and count; ``expected`` averages a concrete ranking over
  every arrangement of every tie group (brute force, tiny inputs only); ``grouped`` gives
  every item its group's end rank.  It shares no code with the implementations or the reference.
* Agreement rule (the issue's, ``crosscheck.compare_exact``): bit for bit where the exact
  value is a float64, within 1e-12 otherwise; implementation against implementation,
  ``crosscheck.same_bits``.
* torch is skipped when it is not installed, unless ``RC_REQUIRE_TORCH=1`` (or
  ``RC_REQUIRE=torch``), which turns the skip into a failure.

The numerics of the shared vectorised code (block sizes, float widths, large tie groups,
the sort key, the tables) are tested in ``test_vector_numerics``, with the same helpers.
"""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest
from retrieval_conformance.conformance.crosscheck import TOLERANCE as TOL  # noqa: F401  (test_vector_numerics)
from retrieval_conformance.conformance.crosscheck import compare_exact, compare_per_query, run_both, same_bits
from retrieval_conformance.conformance.support import oracle
from retrieval_conformance.conformance.support.fixtures import option_grid, tie_heavy_problem
from retrieval_conformance.conformance.support.requirements import require_implementation
from retrieval_conformance.implementations.numpy_backend import NumpyImplementation
from retrieval_conformance.implementations.torch_backend import TorchImplementation
from retrieval_conformance.reference.contract.conventions import TIE_POLICIES
from retrieval_conformance.reference.contract.problem import VALUE_FIELDS, Options, Problem

TIES = TIE_POLICIES
FIELDS = VALUE_FIELDS
NUMPY = NumpyImplementation()


def torch_impl() -> TorchImplementation:
    require_implementation("torch")
    return TorchImplementation()


def available_impls() -> list:
    """numpy, and torch unless it is skipped (not installed and not required)."""
    impls = [NUMPY]
    try:
        impls.append(torch_impl())
    except pytest.skip.Exception:
        pass
    return impls


def oracle_and(impl, problem: Problem, opts: Options):
    """(the oracle's exact values, ``impl``'s PerQuery); (None, the error messages) when the
    oracle finds k inside a tie group under ties='grouped' and ``impl`` raises too."""
    want, got = run_both(oracle.per_query, impl.compute, problem, opts)
    if want is None:
        assert re.search("k=.*tie group", got[1]), got
    return want, got


# -- tests -------------------------------------------------------------------------------------
@pytest.mark.parametrize("ties", TIES)
def test_numpy_matches_brute_force_oracle(ties):
    """numpy == the oracle, bit for bit where exact, for tie-heavy inputs and every option."""
    rng = np.random.default_rng(100 + TIES.index(ties))
    bad = []
    for n in range(14):
        problem = tie_heavy_problem(rng, max_queries=6, max_gallery=9)
        for opts in option_grid(ties):
            want, got = oracle_and(NUMPY, problem, opts)
            if want is not None:
                bad += compare_exact(want, got, f"problem {n} {opts}: ")
    assert bad == [], "\n".join(bad[:20])


@pytest.mark.parametrize("ties", TIES)
def test_torch_equals_numpy_and_oracle(ties):
    """torch == numpy bit for bit and == the oracle; errors alike."""
    impl = torch_impl()
    rng = np.random.default_rng(200 + TIES.index(ties))
    bad = []
    for n in range(5):
        problem = tie_heavy_problem(rng, max_queries=8, max_gallery=9)
        for opts in option_grid(ties, ks=(None, 2, 5)):
            want, got = oracle_and(impl, problem, opts)
            if want is not None:
                bad += compare_exact(want, got, f"problem {n} {opts}: ")
                bad += same_bits(got, NUMPY.compute(problem, opts), f"torch vs numpy, problem {n} {opts}")
    assert bad == [], "\n".join(bad[:20])


def reference_impl():
    backend = pytest.importorskip("retrieval_conformance.reference.backend")
    return backend.ReferenceImplementation()


@pytest.mark.parametrize("ties", TIES)
def test_numpy_and_torch_match_reference(ties):
    """Both equal the reference's exact Fractions (and raise its errors, same text)."""
    ref = reference_impl()
    impls = available_impls()
    rng = np.random.default_rng(300 + TIES.index(ties))
    bad = []
    for n in range(6):
        problem = tie_heavy_problem(rng, max_queries=10, max_gallery=14)
        for opts in option_grid(ties, ks=(None, 1, 4, 9)):
            for impl in impls:
                want, got = run_both(ref.compute, impl.compute, problem, opts)
                if want is None:
                    assert got[0] == got[1]
                else:
                    bad += compare_per_query(want, got, f"{impl.name} problem {n} {opts}: ")
    assert bad == [], "\n".join(bad[:20])


def test_oracle_agrees_with_reference_on_expected():
    """The brute-force oracle and the reference's closed forms agree (keeps the oracle honest)."""
    ref = reference_impl()
    rng = np.random.default_rng(5)
    for _ in range(4):
        problem = tie_heavy_problem(rng, max_queries=6, max_gallery=9)
        for opts in option_grid("expected", ks=(None, 2, 5)):
            want = ref.compute(problem, opts).exact
            got = oracle.per_query(problem, opts)
            for f in FIELDS + ("cmc",):
                assert got[f] == want[f], (f, opts)


def test_grouped_cutoff_error_names_first_query_like_reference():
    """ties='grouped' with k inside a tie group: the reference's ValueError, first query."""
    dist = np.array([[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 1.0, 3.0], [1.0, 1.0, 1.0, 1.0]])
    rel = np.array([[True, False, True, False]] * 3)
    problem = Problem(n_queries=3, n_gallery=4, distances=dist, relevance=rel)
    opts = Options(ties="grouped", k=2)
    impls = available_impls() + [NumpyImplementation(block_bytes=1)]
    for impl in impls:
        with pytest.raises(ValueError, match=r"k=2 falls inside a tie group \(ranks 2\.\.3\) of query 1;"):
            impl.compute(problem, opts)
    for k in (1, 3):  # boundaries for queries 0 and 1, inside query 2's single group
        with pytest.raises(ValueError, match=rf"k={k} falls inside a tie group \(ranks 1\.\.4\) of query 2;"):
            NUMPY.compute(problem, Options(ties="grouped", k=k))
    for k in (4, 10):  # the end of every group, or beyond the gallery
        NUMPY.compute(problem, Options(ties="grouped", k=k))
    junk = np.zeros((3, 4), dtype=bool)
    junk[1, 2] = junk[2, 1:] = True  # query 1: groups {0}, {1}, {3}; query 2: one item left
    problem = Problem(n_queries=3, n_gallery=4, distances=dist, relevance=rel, junk=junk)
    got = NUMPY.compute(problem, opts)
    want = reference_impl().compute(problem, opts)
    assert compare_per_query(want, got) == []


def test_torch_unavailable_reason(monkeypatch):
    """Without torch the implementation says why and how to install it."""
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    assert TorchImplementation().unavailable_reason() == (
        "torch is not installed (torch==2.13.0 is the version tested); pip install 'retrieval-conformance[torch]' "
        "(from a checkout of the source: pip install '.[torch]')"
    )
    monkeypatch.undo()
    if TorchImplementation().unavailable_reason() is None:
        assert TorchImplementation.speed_rank == 20 and NumpyImplementation.speed_rank == 10
