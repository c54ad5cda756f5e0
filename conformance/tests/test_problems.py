"""The shared problem generator: every source of choices drives every builder, replays exactly,
and the builders keep producing each class of problem the tests rely on (tie-heavy, junk,
graded, empty queries)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from retrieval_conformance.conformance.problems.choices import (
    CellChoices,
    HypothesisChoices,
    NumpyChoices,
    RandomChoices,
    RecordingChoices,
    ReplayChoices,
    case_rng,
)
from retrieval_conformance.conformance.problems.evaluate_inputs import crosscheck_problem, evaluate_problem
from retrieval_conformance.conformance.problems.tie_heavy import (
    integer_level_problem,
    tie_heavy_inputs,
    tie_heavy_matrices,
)
from retrieval_conformance.reference.contract.evaluate import build_problem
from retrieval_conformance.reference.contract.problem import Problem
from retrieval_conformance.reference.distances import query_distances
from retrieval_conformance.reference.relevance import query_grades, query_junk, query_relevance

OPTION_NAMES = (
    "ties",
    "ap_rule",
    "ap_at_k",
    "empty",
    "max_rank",
    "gain",
    "discount",
    "recall",
    "k",
    "radius",
    "block_size",
    "protocol",
)


def classes(problem: Problem) -> set:
    """The classes a problem belongs to, read through the reference's own per-query view."""
    found = set()
    for q in range(problem.n_queries):
        dist, rel, junk = query_distances(problem, q), query_relevance(problem, q), query_junk(problem, q)
        grades = query_grades(problem, q)
        kept = [(d, r) for d, r, j in zip(dist, rel, junk) if not j]
        if any(junk):
            found.add("junk")
        if not any(r for _, r in kept):
            found.add("empty")
        if grades is not None and max(grades, default=0) > 1:
            found.add("graded")
        relevant_levels = {d for d, r in kept if r}
        if any(d in relevant_levels for d, r in kept if not r):
            found.add("tie-heavy")  # a relevant and a non-relevant item at one distance
    return found


def problem_of(kwargs: dict) -> Problem:
    return build_problem(**{k: v for k, v in kwargs.items() if k not in OPTION_NAMES})


def test_the_fuzz_builder_makes_every_class_of_problem():
    seen = set()
    for index in range(300):
        seen |= classes(problem_of(evaluate_problem(RandomChoices(case_rng(0, index)))))
    assert seen == {"tie-heavy", "junk", "graded", "empty"}


def test_the_crosscheck_builder_makes_every_class_of_problem():
    choices = NumpyChoices(np.random.default_rng(0))
    seen = set()
    for _ in range(300):
        seen |= classes(problem_of(crosscheck_problem(choices)))
    assert seen == {"tie-heavy", "junk", "graded", "empty"}


def test_the_engine_builder_makes_every_class_it_is_for():
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(300):
        seen |= classes(Problem(**tie_heavy_inputs(NumpyChoices(rng))))
    assert {"tie-heavy", "junk", "empty"} <= seen


def test_the_matrices_from_any_source_are_tie_heavy_graded_and_junked():
    seen = set()
    for index in range(300):
        dist, rel, junk = tie_heavy_matrices(RandomChoices(random.Random(index)), graded=True)
        seen |= classes(build_problem(distances=dist, relevance=rel, junk=junk))
    assert seen == {"tie-heavy", "junk", "graded", "empty"}


@given(st.data())
def test_hypothesis_drives_the_same_builders(data):
    kwargs = evaluate_problem(HypothesisChoices(data))
    assert problem_of(kwargs).n_queries >= 1
    dist, rel, junk = tie_heavy_matrices(HypothesisChoices(data), graded=True)
    assert dist.shape == rel.shape and (junk is None or junk.shape == dist.shape)


@pytest.mark.parametrize("index", range(20))
def test_a_recorded_build_replays_exactly(index):
    recorder = RecordingChoices(RandomChoices(case_rng(3, index)))
    first = evaluate_problem(recorder)
    again = evaluate_problem(ReplayChoices(recorder.values))
    assert first.keys() == again.keys()
    for name, value in first.items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(again[name]), err_msg=name)


def test_a_numpy_source_builds_what_its_generator_draws():
    # a numpy source is its own array source: no extra draw, so a seed gives the same problem
    a = integer_level_problem(NumpyChoices(np.random.default_rng(5)), 4, 9)
    b = integer_level_problem(NumpyChoices(np.random.default_rng(5)), 4, 9)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1][:, 0].all() and set(np.unique(a[0])) <= {0.0, 1.0, 2.0, 3.0, 4.0}


def test_cell_choices_follow_numpys_conventions():
    cells = CellChoices(RandomChoices(random.Random(1)))
    ints = cells.integers(-1, 3, (50, 4))
    assert ints.shape == (50, 4) and ints.min() == -1 and ints.max() == 2
    floats = cells.random((30,))
    assert ((0 <= floats) & (floats < 1)).all()
    picked = cells.choice([0.5, 1.0, 2.0, 3.0], size=4, replace=False)
    assert sorted(picked.tolist()) == [0.5, 1.0, 2.0, 3.0]
    big = cells.integers(0, 2, (40, 40))  # past MAX_CELLS_DRAWN: one seed, then numpy
    assert big.shape == (40, 40) and set(np.unique(big)) == {0, 1}
