"""Shared hypothesis profiles, and the property tests' strategies over the shared problem builder.

Profiles: with ``CI=true`` hypothesis loads its built-in ``ci`` profile (derandomized, no
database, no deadline); we extend it with a fixed example budget.  ``thorough`` is for long
local runs: ``pytest --hypothesis-profile=thorough``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from retrieval_conformance.conformance.problems.choices import HypothesisChoices
from retrieval_conformance.conformance.problems.tie_heavy import (
    LEVELS,
    option_overrides,
    tie_heavy_matrices,
)

__all__ = ["option_sets", "tie_heavy_problems"]

settings.register_profile(
    "ci",
    settings.get_profile("ci"),
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@st.composite
def tie_heavy_problems(draw, max_queries=3, max_gallery=9, levels=LEVELS, junk=True, graded=False):
    """(distances, relevance, junk) with few distinct distances, so ties are everywhere, drawn
    cell by cell by hypothesis (:func:`~retrieval_conformance.conformance.problems.tie_heavy.
    tie_heavy_matrices`; -0.0 ties with 0.0).  ``graded``: relevance is booleans or, half the
    time, integer grades 0..4 (spec §2 relevance matrix)."""
    return tie_heavy_matrices(HypothesisChoices(draw), max_queries, max_gallery, levels, junk, graded)


@st.composite
def option_sets(draw, ties=None, with_k=True, max_k=12):
    """Keyword overrides of ``rc.evaluate``: every option, drawn."""
    return option_overrides(HypothesisChoices(draw), ties, with_k, max_k)
