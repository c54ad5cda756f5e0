"""The harness's generated inputs: valid by construction, with the property their family is for.

For every family and every adapter (and every combination of capabilities), generated cases
must have consistent shapes, no item both relevant and junk, identity relevance for ReID
cases, small integer distances, and the family's promise on the items the protocol ranks
(junk removed); every adapter must turn them into calls (or skip them cleanly) and the
reference must evaluate them.  The draws are seeded (and hypothesis derandomized).
"""

from __future__ import annotations

import itertools
from typing import Dict, List, Tuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from retrieval_conformance.conformance.harness.adapters.base import Skip
from retrieval_conformance.conformance.harness.adapters.registry import ADAPTERS
from retrieval_conformance.conformance.harness.candidates.reference_values import Convention, ReferenceCache
from retrieval_conformance.conformance.harness.inputs.public import (
    FAMILIES,
    Capabilities,
    Case,
    Family,
    family_skip_reason,
    hypothesis_strategy,
    sample_cases,
)

SEEDS = range(3)
DRAWS_PER_FAMILY = 800  # per family, over every adapter (and protocol_k) that runs it
PROTOCOLS = {"reid": ("reid", "reid-matlab")}  # the reference presets each adapter's cases are evaluated under
DEFAULT_PROTOCOLS = ("hashing", "dcmh")


def _dummy(*args, **kwargs):
    return 0.0


def _adapter(name: str):
    return ADAPTERS[name](_dummy)


def _combos() -> List[Tuple[str, bool, Family]]:
    """Every (adapter, protocol_k, family) that is not skipped."""
    out = []
    for name in ADAPTERS:
        for protocol_k in (True, False):
            caps = _adapter(name).capabilities(protocol_k)
            out.extend((name, protocol_k, fam) for fam in FAMILIES if family_skip_reason(fam, caps) is None)
    return out


COMBOS = _combos()
ALL_CAPS = [Capabilities(*flags) for flags in itertools.product((False, True), repeat=6)]


# -- the checks --------------------------------------------------------------------------


def views(case: Case) -> Dict[str, Tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(relevant, non-relevant, ranked) masks (Q, N) as each protocol sees the case.

    ReID cases: an item with the query's id and camera is junk ("reid"); id -1 is junk as
    well under "reid-matlab".  Other cases: the explicit junk mask.
    """
    if case.ids is None:
        keep = np.ones(case.distances.shape, bool) if case.junk is None else ~case.junk
        return {"explicit": (case.relevance & keep, ~case.relevance & keep, keep)}
    q_pids, g_pids, q_cams, g_cams = case.ids
    same_id = q_pids[:, None] == g_pids[None, :]
    keep = ~(same_id & (q_cams[:, None] == g_cams[None, :]))
    matlab = keep & (g_pids != -1)[None, :]
    return {
        "reid": (same_id & keep, ~same_id & keep, keep),
        "reid-matlab": (same_id & matlab, ~same_id & matlab, matlab),
    }


def check_invariants(case: Case, fam: Family, caps: Capabilities) -> None:
    d, rel = case.distances, case.relevance
    assert isinstance(d, np.ndarray) and d.ndim == 2 and d.dtype == np.float64
    n_q, n_g = d.shape
    assert 1 <= n_q <= 6 and 1 <= n_g <= 24
    assert rel.dtype == bool and rel.shape == (n_q, n_g)
    assert np.all(d >= 0) and np.all(d == np.round(d)) and d.max() < 2**10
    assert np.array_equal(d.astype(np.float32).astype(np.float64), d)
    assert case.k is None or (type(case.k) is int and case.k >= 1)
    assert type(case.max_rank) is int and case.max_rank >= 1
    assert case.family == fam.id and case.non_positive_scores == (fam.id == "scores/non-positive")
    if not caps.multi_query:
        assert n_q == 1
    if case.junk is not None:
        assert caps.junk and not caps.ids
        assert case.junk.dtype == bool and case.junk.shape == (n_q, n_g)
        assert not (case.junk & rel).any(), "an item both relevant and junk"
    if caps.ids:
        assert case.ids is not None and case.junk is None
        q_pids, g_pids, q_cams, g_cams = case.ids
        for arr, size in ((q_pids, n_q), (g_pids, n_g), (q_cams, n_q), (g_cams, n_g)):
            assert arr.dtype == np.int64 and arr.shape == (size,)
        assert np.all(q_pids >= 0) and np.all(g_pids >= -1) and np.all(q_cams >= 0) and np.all(g_cams >= 0)
        assert np.array_equal(rel, q_pids[:, None] == g_pids[None, :])
    else:
        assert case.ids is None


def _no_hit_in_top_k(d: np.ndarray, rel: np.ndarray, other: np.ndarray, k: int) -> bool:
    """One query: a relevant item, and each one strictly after at least k non-relevant items."""
    return bool(rel.any()) and int((other & (d < d[rel].min())).sum()) >= k


def check_promise(case: Case, fam: Family) -> None:
    d, k = case.distances, case.k
    n_q, n_g = d.shape
    fid = fam.id
    for view, (rel, other, keep) in views(case).items():
        where = f"{case.name} ({view} view)"
        if fid == "ties/tie-heavy":
            assert any(set(d[q][rel[q]]) & set(d[q][other[q]]) for q in range(n_q)), where
        elif fid == "ap/relevant-last":
            for q in range(n_q):
                ranked = d[q][keep[q]]
                last = ranked.max()
                assert (ranked == last).sum() == 1, where
                assert rel[q][d[q] == last].any(), where
        elif fid == "empty/no-relevant":
            assert (~rel.any(axis=1)).any(), where
        elif fid == "empty/no-hit-in-top-k":
            assert k is not None
            assert any(_no_hit_in_top_k(d[q], rel[q], other[q], k) for q in range(n_q)), where
        elif fid == "k/inside":
            assert k is not None and 1 <= k < n_g
            assert (rel.sum(axis=1) > k).any(), where  # R > k for some query
    if fid == "k/at-gallery":
        assert k == n_g
    elif fid == "k/beyond-gallery":
        assert k is not None and k > n_g
    elif fid == "size/single-item":
        assert n_g == 1
    elif fid == "mean/one-query":
        assert n_q == 1
    elif fid == "mean/many-queries":
        assert n_q >= 2
    elif fid == "cmc/short-gallery":
        assert case.max_rank > n_g
    elif fid == "scores/non-positive":
        assert case.non_positive_scores


def check_reference_view(case: Case, cache: ReferenceCache) -> None:
    """The test's views agree with the reference's own (relevance, junk)."""
    for view, (rel, _, keep) in views(case).items():
        base = "hashing" if view == "explicit" else view
        ref_rel, ref_junk = cache.effective(case, base)
        assert np.array_equal(~ref_junk, keep) and np.array_equal(ref_rel & ~ref_junk, rel)


def check_adapter_and_reference(case: Case, adapter, stats: Dict[str, int]) -> None:
    cache = ReferenceCache()
    base = "reid" if adapter.name == "reid" else "hashing"
    rel, junk = cache.effective(case, base)
    try:
        calls = adapter.calls(case, rel, junk, arrays="numpy")
    except Skip:
        stats["skipped"] += 1
    else:
        assert isinstance(calls, list)
        stats["calls"] += len(calls)
    check_reference(case, cache, PROTOCOLS.get(adapter.name, DEFAULT_PROTOCOLS))
    check_reference_view(case, cache)


def check_reference(case: Case, cache: ReferenceCache, protocols) -> None:
    for protocol in protocols:
        if protocol == "dcmh" and case.k is None:
            continue  # the same numbers as "hashing" without a cut-off
        ex = cache.expected(case, Convention.from_protocol(protocol), case.k)
        assert ex.error is None, (case.name, protocol, ex.error)


# -- the tests -----------------------------------------------------------------------------


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.id)
def test_generated_cases_are_valid_for_every_adapter(fam):
    """About DRAWS_PER_FAMILY draws of the family, shared out among the adapters that run it."""
    combos = [(name, protocol_k) for name, protocol_k, f in COMBOS if f is fam]
    per_seed = -(-DRAWS_PER_FAMILY // (len(combos) * len(SEEDS)))
    stats = {"cases": 0, "calls": 0, "skipped": 0}
    for name, protocol_k in combos:
        adapter = _adapter(name)
        caps = adapter.capabilities(protocol_k)
        for seed in SEEDS:
            for case in sample_cases(fam, caps, per_seed, seed=seed):
                check_invariants(case, fam, caps)
                check_promise(case, fam)
                check_adapter_and_reference(case, adapter, stats)
                stats["cases"] += 1
    assert stats["cases"] >= DRAWS_PER_FAMILY and stats["calls"] > 0


@pytest.mark.parametrize(
    "caps",
    ALL_CAPS,
    ids=lambda c: "".join(
        "KJIMPS"[i] if v else "-" for i, v in enumerate((c.k, c.junk, c.ids, c.multi_query, c.protocol_k, c.scores))
    ),
)
def test_generated_cases_are_valid_for_every_capability_combination(caps):
    for fam in FAMILIES:
        if family_skip_reason(fam, caps) is not None:
            continue
        for case in sample_cases(fam, caps, 10, seed=7):
            check_invariants(case, fam, caps)
            check_promise(case, fam)
            cache = ReferenceCache()
            check_reference_view(case, cache)
            check_reference(case, cache, PROTOCOLS["reid"] if caps.ids else DEFAULT_PROTOCOLS)


def test_sampling_is_reproducible():
    caps = _adapter("torchmetrics").capabilities(True)
    for fam in FAMILIES:
        a, b = sample_cases(fam, caps, 5, seed=3), sample_cases(fam, caps, 5, seed=3)
        for x, y in zip(a, b):
            assert np.array_equal(x.distances, y.distances) and np.array_equal(x.relevance, y.relevance)
            assert (x.junk is None) == (y.junk is None) and x.k == y.k and x.max_rank == y.max_rank


@settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.sampled_from(COMBOS).flatmap(
        lambda c: hypothesis_strategy(c[2], _adapter(c[0]).capabilities(c[1])).map(lambda case: (c, case))
    )
)
def test_hypothesis_cases_are_valid(drawn):
    (name, protocol_k, fam), case = drawn
    caps = _adapter(name).capabilities(protocol_k)
    check_invariants(case, fam, caps)
    check_promise(case, fam)
    check_adapter_and_reference(case, _adapter(name), {"calls": 0, "skipped": 0})
