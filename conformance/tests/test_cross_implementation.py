"""Every implementation equals the reference under every preset and option (spec §4-§8)."""

from __future__ import annotations

import numpy as np
import pytest
import retrieval_conformance as rc
from hypothesis import example, given
from hypothesis import strategies as st
from retrieval_conformance.conformance.crosscheck import compare_per_query, crosscheck, crosscheck_one
from retrieval_conformance.conformance.support.requirements import require_implementation
from retrieval_conformance.conformance.support.strategies import option_sets, tie_heavy_problems
from retrieval_conformance.reference.contract import registry
from retrieval_conformance.reference.contract.conventions import EMPTY_POLICIES_WITH_A_MEAN, TIE_POLICIES
from retrieval_conformance.reference.contract.presets import PRESETS

OTHERS = [n for n in registry.names() if n != "reference"]


@pytest.mark.parametrize("name", OTHERS)
@given(problem=tie_heavy_problems(max_queries=4, max_gallery=12, graded=True), options=option_sets(ties=TIE_POLICIES))
@example(
    problem=(np.array([[1.0, 1.0, 1.0, 0.0]]), np.array([[True, False, True, True]]), None),
    options={"ties": "expected", "ap_rule": "trapezoid", "ap_at_k": "hits", "empty": "zero", "max_rank": 3, "k": 2},
)
def test_distances_any_option(name, problem, options):
    require_implementation(name)
    dist, rel, junk = problem
    options = dict(options, empty="zero")
    assert crosscheck_one(name, dict(distances=dist, relevance=rel, junk=junk, **options)) == []


@pytest.mark.parametrize("name", OTHERS)
@given(
    bits=st.integers(2, 8),
    nq=st.integers(1, 4),
    n=st.integers(1, 16),
    seed=st.integers(0, 2**32 - 1),
    multi=st.booleans(),
    options=option_sets(),
)
def test_codes_any_option(name, bits, nq, n, seed, multi, options):
    """±1 codes of 2-8 bits: Hamming distances tie everywhere."""
    require_implementation(name)
    rng = np.random.default_rng(seed)
    labels = (
        (rng.integers(0, 2, (nq, 3)), rng.integers(0, 2, (n, 3)))
        if multi
        else (rng.integers(0, 3, nq), rng.integers(0, 3, n))
    )
    kwargs = dict(
        query_codes=rng.choice([-1, 1], (nq, bits)),
        db_codes=rng.choice([-1, 1], (n, bits)),
        query_labels=labels[0],
        db_labels=labels[1],
        **dict(options, empty="zero"),
    )
    assert crosscheck_one(name, kwargs) == []


@pytest.mark.parametrize("protocol", list(PRESETS))
@pytest.mark.parametrize("name", OTHERS)
def test_every_preset_and_empty_policy(name, protocol):
    """Aggregated results (every empty-query policy) agree with the reference's."""
    require_implementation(name)
    rng = np.random.default_rng(7)
    dist = rng.choice([0.0, 0.5, 1.0, 2.0], size=(6, 20))
    kwargs = dict(
        distances=dist,
        query_labels=rng.integers(0, 4, 6),
        db_labels=rng.integers(-1, 4, 20),
        query_cams=rng.integers(0, 2, 6),
        db_cams=rng.integers(0, 2, 20),
    )
    if "same_id_cam" not in PRESETS[protocol].junk:  # cameras go with the ReID presets only
        kwargs.pop("query_cams"), kwargs.pop("db_cams")
    for empty in EMPTY_POLICIES_WITH_A_MEAN:  # "error" has no mean to compare
        for k in [None, 5] if protocol != "gldv2" else [100]:
            ties = "grouped" if k is None and empty == "skip" else None
            ref = rc.evaluate(**kwargs, protocol=protocol, empty=empty, k=k, ties=ties, implementation="reference")
            other = rc.evaluate(**kwargs, protocol=protocol, empty=empty, k=k, ties=ties, implementation=name)
            assert compare_per_query(ref.per_query, other.per_query) == []
            for field in ("map", "minp", "r_precision"):
                a, b = getattr(ref, field), getattr(other, field)
                assert (np.isnan(a) and np.isnan(b)) or abs(a - b) <= 1e-12, (field, empty, k)
            np.testing.assert_allclose(other.cmc, ref.cmc, rtol=0, atol=1e-12)
            np.testing.assert_array_equal(other.counted, ref.counted)


@pytest.mark.parametrize("name", OTHERS)
def test_generated_problems(name):
    """The CLI's generated cross-check (structured inputs: cams, -1 ids, junk, float32)."""
    require_implementation(name)
    assert crosscheck(name, 150, seed=1) == []
