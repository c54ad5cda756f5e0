"""Building blocks of the harness: exact conversions between input forms, adapters, the
Oxford adapter, the pytest options."""

from __future__ import annotations

import numpy as np
import pytest
from retrieval_conformance.conformance.harness import check
from retrieval_conformance.conformance.harness.adapters.base import UsageError
from retrieval_conformance.conformance.harness.adapters.registry import get_adapter
from retrieval_conformance.conformance.harness.inputs.public import (
    FAMILIES,
    Capabilities,
    Case,
    codes_from_distances,
    golden_cases,
    hamming_from_codes,
    ids_from_relevance,
    labels_from_relevance,
    relevance_from_labels,
    sample_cases,
)


@pytest.mark.parametrize("shape,top", [((1, 5), 4), ((3, 6), 3), ((2, 1), 0)])
def test_codes_realise_any_integer_distances(shape, top):
    rng = np.random.default_rng(sum(shape))
    d = rng.integers(0, top + 1, size=shape)
    qc, dc = codes_from_distances(d)
    assert set(np.unique(np.concatenate([qc.ravel(), dc.ravel()]))) <= {-1.0, 1.0}
    h = hamming_from_codes(qc, dc)
    D = max(1, int(d.max()))
    expected = d if shape[0] == 1 else (shape[0] - 1) * D + 2 * d
    assert np.array_equal(h, expected)  # same order, same ties


def test_labels_and_ids_express_relevance():
    rel = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]], bool)
    ql, dl = labels_from_relevance(rel)
    assert np.array_equal(relevance_from_labels(ql, dl), rel)
    q_pids, g_pids, q_cams, g_cams = ids_from_relevance(rel)
    assert np.array_equal(q_pids[:, None] == g_pids[None, :], rel)
    assert not ((q_pids[:, None] == g_pids[None, :]) & (q_cams[:, None] == g_cams[None, :])).any()
    overlapping = np.array([[1, 1, 0], [0, 1, 1]], bool)  # not an equivalence: no ids
    assert ids_from_relevance(overlapping) is None


def test_generated_families_have_their_property():
    caps = Capabilities()
    for fam in FAMILIES:
        for case in sample_cases(fam, caps, 5):
            if fam.id == "size/single-item":
                assert case.n_gallery == 1
            if fam.id == "mean/one-query":
                assert case.n_queries == 1
            if fam.id == "empty/no-relevant":
                assert (~case.relevance.any(axis=1)).any()
            if fam.id == "k/beyond-gallery":
                assert case.k > case.n_gallery
            if fam.id == "ties/tie-heavy":
                assert case.has_ties()


def test_golden_cases_are_loaded_and_deduplicated():
    names = [c.name for c in golden_cases()]
    assert "golden/seed003-dcmh-full" in names and len(names) == len(set(names))


@pytest.mark.parametrize(
    "adapter,func",
    [
        ("hashing-codes", lambda a, b, c: 0.0),
        ("distances-relevance", lambda a: 0.0),
        ("reid", lambda a, b, c, d: 0.0),
        ("sklearn", lambda a: 0.0),
        ("oxford", lambda a, b: 0.0),
    ],
)
def test_adapters_reject_signatures_that_cannot_fit(adapter, func):
    with pytest.raises(UsageError, match="adapter"):
        get_adapter(adapter, func)


def test_hashing_adapter_uses_the_functions_own_default_for_all():
    def with_default(qB, rB, qL, rL, topk=-1):
        return 0.0

    def without_default(qB, rB, qL, rL, topk):
        return 0.0

    case = golden_cases()[0]
    rel = case.relevance
    junk = np.zeros_like(rel)
    full = Case("full", case.distances, rel, k=None)
    a = get_adapter("hashing-codes", with_default).calls(full, rel, junk, "numpy")[0]
    b = get_adapter("hashing-codes", without_default).calls(full, rel, junk, "numpy")[0]
    assert a.without_k and len(a.args) == 4
    assert not b.without_k and b.args[4] == case.n_gallery


def _compute_ap(positives, junk, ranked):
    """Our own Oxford-style trapezoid AP (junk skipped, precision at the previous rank)."""
    pos, junk = set(positives), set(junk)
    ap, old_recall, old_precision, hits, rank = 0.0, 0.0, 1.0, 0, 0
    for name in ranked:
        if name in junk:
            continue
        hits += name in pos
        recall = hits / len(pos) if pos else 0.0
        precision = hits / (rank + 1.0)
        ap += (recall - old_recall) * (old_precision + precision) / 2.0
        old_recall, old_precision, rank = recall, precision, rank + 1
    return ap


def _compute_ap_prev_hit(positives, junk, ranked):
    pos, junk = set(positives), set(junk)
    ap, old_recall, old_precision, hits, rank = 0.0, 0.0, 1.0, 0, 0
    for name in ranked:
        if name in junk:
            continue
        rank += 1
        if name in pos:
            hits += 1
            recall, precision = hits / len(pos), hits / rank
            ap += (recall - old_recall) * (old_precision + precision) / 2.0
            old_recall, old_precision = recall, precision
    return ap


def test_oxford_adapter():
    pytest.importorskip("retrieval_conformance.reference.protocols.landmark")
    ok = check(_compute_ap, adapter="oxford", protocol="oxford", max_examples=15)
    assert ok.exit_code == 0, ok.text()
    bad = check(_compute_ap_prev_hit, adapter="oxford", protocol="oxford", max_examples=15, only=["ap/relevant-last"])
    assert bad.result("ap/relevant-last").deviation.clauses == [
        "spec §5 ap_rule=trapezoid (precision at the previous rank)"
    ]
    assert "oxford_ap_exact" in bad.result("ap/relevant-last").deviation.snippet


def test_pytest_options_are_registered(pytestconfig):
    assert pytestconfig.getoption("--adapter") == "hashing-codes"
    assert pytestconfig.getoption("--require-torch") in (True, False)


def test_a_check_the_harness_cannot_draw_for_is_an_error_never_a_conforming_skip(monkeypatch):
    # hypothesis failing inside the harness (on Python 3.9 an API of a newer release once did) left
    # every property check skipped and a deviating function "CONFORMS"
    import hypothesis

    def broken(*args, **kwargs):
        raise AttributeError("'PosixPath' object has no attribute 'home_directory'")

    monkeypatch.setattr(hypothesis, "find", broken)  # the harness imports it when it searches
    report = check(_compute_ap_prev_hit, adapter="oxford", protocol="oxford", max_examples=5, only=["ap/relevant-last"])
    assert report.exit_code == 2, report.text()
    assert "check ap/relevant-last: the harness could not draw an input" in report.usage_error, report.text()
    assert "home_directory" in report.usage_error and "CONFORMS" not in report.text()


def test_a_second_call_that_times_out_is_no_sign_of_nondeterminism():
    """The call again on the same input hangs (a fork deadlocked among the function's threads, a
    loaded machine): no other value came back, so determinism is not said to be broken (and the
    empty error text of a time-out raises no IndexError); a call that raises the second time is."""
    from types import SimpleNamespace

    from retrieval_conformance.conformance.harness.calling.outcome import Outcome
    from retrieval_conformance.conformance.harness.engine.findings import nondeterminism

    case = SimpleNamespace(name="ties/x#0", n_queries=1, n_gallery=3, describe=lambda: "1 query x 3 gallery items")
    ev = SimpleNamespace(case=case, all_read=True, calls=[object()], readings=[SimpleNamespace(values={"mAP": 0.5})])
    session = SimpleNamespace(call=lambda call: Outcome("timeout", seconds=5.0, limit=5.0))
    assert nondeterminism(session, [ev]) is None
    session = SimpleNamespace(call=lambda call: Outcome("raised", error="RuntimeError: pool closed"))
    said = nondeterminism(session, [ev])
    assert said.endswith("and then raised RuntimeError: pool closed"), said
    assert Outcome("raised", error="ValueError: no\nmore").failure == "raised ValueError: no"
    assert Outcome("crashed", error="").failure == "crashed" and Outcome("timeout").failure == "did not return"
