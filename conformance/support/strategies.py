"""Shared hypothesis profiles and input strategies for the property tests.

Profiles: with ``CI=true`` hypothesis loads its built-in ``ci`` profile (derandomized, no
database, no deadline); we extend it with a fixed example budget.  ``thorough`` is for long
local runs: ``pytest --hypothesis-profile=thorough``.
"""
from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from retrieval_conformance.conformance.support.problems import LEVELS
from retrieval_conformance.reference.contract.conventions import (
    AP_AT_K_DENOMINATORS,
    AP_RULES,
    DISCOUNTS,
    EMPTY_POLICIES_WITH_A_MEAN,
    GAINS,
    RECALL_SENSES,
    TIE_POLICIES,
)

#: the tie policies that accept any k (ties=grouped rejects a k inside a tie group, §4 ties=grouped)
TIES_ANY_K = tuple(t for t in TIE_POLICIES if t != "grouped")

settings.register_profile(
    "ci", settings.get_profile("ci"), max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev", max_examples=60, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough", max_examples=2000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@st.composite
def tie_heavy_problems(draw, max_queries=3, max_gallery=9, levels=LEVELS, junk=True, graded=False):
    """(distances, relevance, junk) with few distinct distances, so ties are everywhere: the
    distance levels of ``problems.tie_heavy_problem`` (-0.0 ties with 0.0), drawn by hypothesis.
    ``graded``: relevance is booleans or, half the time, integer grades 0..4 (spec §2 relevance
    matrix)."""
    q = draw(st.integers(1, max_queries))
    n = draw(st.integers(1, max_gallery))
    dist = np.array(draw(st.lists(st.sampled_from(levels), min_size=q * n, max_size=q * n))).reshape(q, n)
    if graded and draw(st.booleans()):
        grades = st.sampled_from([0, 0, 0, 1, 2, 3, 4])
        rel = np.array(draw(st.lists(grades, min_size=q * n, max_size=q * n)), dtype=np.int64).reshape(q, n)
    else:
        rel = np.array(draw(st.lists(st.booleans(), min_size=q * n, max_size=q * n))).reshape(q, n)
    if junk and draw(st.booleans()):
        jm = np.array(draw(st.lists(st.booleans(), min_size=q * n, max_size=q * n))).reshape(q, n)
    else:
        jm = None
    return dist, rel, jm


@st.composite
def option_sets(draw, ties=None, with_k=True, max_k=12):
    """Keyword overrides of ``rc.evaluate``: every option, drawn."""
    out = {
        "ties": draw(st.sampled_from(ties or TIES_ANY_K)),
        "ap_rule": draw(st.sampled_from(AP_RULES)),
        "ap_at_k": draw(st.sampled_from(AP_AT_K_DENOMINATORS)),
        "empty": draw(st.sampled_from(EMPTY_POLICIES_WITH_A_MEAN)),
        "max_rank": draw(st.integers(1, 6)),
        "gain": draw(st.sampled_from(GAINS)),
        "discount": draw(st.sampled_from(DISCOUNTS)),
        "recall": draw(st.sampled_from(RECALL_SENSES)),
    }
    out["k"] = draw(st.one_of(st.none(), st.integers(1, max_k))) if with_k else None
    return out
