"""``rc.curves``: every implementation equals the exact reference, per query and in the mean.

Per query, a fast implementation's value is the exact rational correctly rounded (bit for bit
``float(Fraction)``); the means are within 1e-12 of the exact means.  The golden case
(``golden/curves.json``) pins one hand-computed query per curve.
"""

from __future__ import annotations

import importlib
from fractions import Fraction

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance import golden
from retrieval_conformance.conformance.problems.choices import NumpyChoices
from retrieval_conformance.conformance.problems.evaluate_inputs import curve_inputs
from retrieval_conformance.conformance.support.requirements import require_implementation
from retrieval_conformance.reference.contract.conventions import TIE_POLICIES
from retrieval_conformance.reference.contract.curves import (
    CURVE_KERNELS,
    CurveRequest,
    check_recall_levels,
    curve_kernel,
)
from retrieval_conformance.reference.contract.evaluate import build_problem
from retrieval_conformance.reference.curves import mean_pr_curve

FAST = [name for name in CURVE_KERNELS if name != "reference"]
KINDS = ("pr_interpolated", "pr_radius", "precision_at_n")


def _golden_case():
    return golden.load_file("curves.json")["cases"][0]


@pytest.mark.parametrize("implementation", ["reference", *FAST])
def test_golden_curves(implementation):
    if implementation != "reference":
        require_implementation(implementation)  # skip (fail under RC_REQUIRE) where it is not built
    case = _golden_case()
    inputs = [case["codes_input"], case["input"]]
    for want, given in ((want, given) for want in case["expected"] for given in inputs):
        options = {key: want[key] for key in ("ties", "empty", "n", "radii") if key in want}
        got = rc.curves(want["kind"], **given, implementation=implementation, **options)
        expected = [Fraction(text) for text in want["y"]]
        assert got.y.tolist() == [float(x) for x in expected], want
        if "recall" in want:
            assert got.recall.tolist() == [float(Fraction(text)) for text in want["recall"]], want
        if implementation == "reference":
            assert got.exact["y"] == expected, want


def _requests(rng, problem, n_g):
    radii = (-0.5, 0, 1, 2.5) if problem.query_bits is None else (*range(problem.query_bits.shape[1] + 2), 0.5, 2.5, -1)
    levels = check_recall_levels([0, 0.1, Fraction(1, 3), 0.5, Fraction(2, 3), 1, rng.random()])
    for ties in TIE_POLICIES:
        yield CurveRequest("pr_interpolated", ties, levels=levels)
        yield CurveRequest("pr_radius", ties, radii=tuple(float(r) for r in radii))
        yield CurveRequest("precision_at_n", ties, ns=(1, 2, n_g, n_g + 1, 3 * n_g, 10**6, 2**62))


def _cannot_draw(implementation, problem) -> bool:
    """Whether the implementation cannot run here (the C library not built)."""
    module_name = CURVE_KERNELS[implementation].split(":")[0]
    reason = getattr(importlib.import_module(module_name), "unavailable_reason", None)
    return reason is not None and reason(problem) is not None


def _outcome(kernel, problem, request):
    try:
        return kernel(problem, request)
    except ValueError as exc:
        return str(exc)


@pytest.mark.parametrize("implementation", FAST)
@pytest.mark.parametrize("codes", [False, True])
@pytest.mark.parametrize("seed", range(25))
def test_per_query_values_are_the_exact_ones_rounded(implementation, codes, seed):
    rng = np.random.default_rng(seed)
    n_q, n_g = int(rng.integers(1, 5)), int(rng.choice([1, 2, 5, 13, 40]))
    problem = build_problem(**curve_inputs(NumpyChoices(rng), n_q, n_g, codes))
    _, reference = curve_kernel("reference")
    _, fast = curve_kernel(implementation)
    if _cannot_draw(implementation, problem):
        pytest.skip(f"implementation {implementation!r} is unavailable here")
    for request in _requests(rng, problem, n_g):
        want, got = _outcome(reference, problem, request), _outcome(fast, problem, request)
        if isinstance(want, str):  # grouped: an N inside a tie group, named by both
            assert got == want, request
            continue
        assert not isinstance(got, str), (request, got)
        assert got.n_relevant.tolist() == want.n_relevant.tolist()
        assert got.precision.tolist() == [[float(x) for x in row] for row in want.exact["precision"]], request
        if request.kind == "pr_radius":
            assert got.recall.tolist() == [[float(x) for x in row] for row in want.exact["recall"]], request


@pytest.mark.parametrize("implementation", FAST)
@pytest.mark.parametrize("kind", KINDS)
def test_means_match_the_exact_means(implementation, kind):
    if implementation != "reference":
        require_implementation(implementation)  # skip (fail under RC_REQUIRE) where it is not built
    rng = np.random.default_rng(7)
    inputs = dict(
        query_codes=rng.integers(0, 2, (40, 6)),
        db_codes=rng.integers(0, 2, (200, 6)),
        query_labels=rng.integers(0, 7, 40),
        db_labels=rng.integers(0, 7, 200),
    )
    for ties in ("stable", "expected"):
        for empty in ("skip", "zero"):
            want = rc.curves(kind, **inputs, ties=ties, empty=empty, implementation="reference")
            got = rc.curves(kind, **inputs, ties=ties, empty=empty, implementation=implementation)
            assert got.n_counted == want.n_counted
            assert got.x.tolist() == want.x.tolist()
            exact = np.array([float(x) for x in want.exact["y"]])
            assert np.abs(got.y - exact).max() <= 1e-12
            assert got.implementation == implementation


def test_interpolated_curve_equals_mean_pr_curve():
    rng = np.random.default_rng(3)
    dist = rng.integers(0, 4, (6, 20)).astype(float)
    rel = rng.random((6, 20)) < 0.3
    rel[:, 0] = True
    for ties in TIE_POLICIES:
        want = mean_pr_curve(dist, rel, ties=ties)
        got = rc.curves("pr_interpolated", distances=dist, relevance=rel, ties=ties, implementation="reference")
        assert got.exact["y"] == [p for _, p in want]


def test_cmc_curve_is_evaluates_cmc():
    rng = np.random.default_rng(5)
    inputs = dict(distances=rng.random((8, 30)), query_labels=rng.integers(0, 4, 8), db_labels=rng.integers(0, 4, 30))
    curve = rc.curves("cmc", **inputs, max_rank=10, implementation="numpy", empty="zero")
    result = rc.evaluate(**inputs, max_rank=10, implementation="numpy", empty="zero")
    assert curve.y.tolist() == result.cmc.tolist()
    assert curve.x.tolist() == list(range(1, 11))


def test_radius_defaults_to_every_hamming_distance():
    curve = rc.curves(
        "pr_radius",
        query_codes=[[1, 0, 1]],
        db_codes=[[1, 0, 1], [0, 1, 0]],
        query_labels=[1],
        db_labels=[1, 2],
        implementation="numpy",
    )
    assert curve.x.tolist() == [0, 1, 2, 3]
    assert curve.y.tolist() == [1, 1, 1, 0.5]
    assert curve.recall.tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize(
    "call, message",
    [
        (dict(kind="roc"), "kind"),
        (dict(kind="pr_interpolated", empty="nan"), "empty"),
        (dict(kind="pr_interpolated", recall_levels=[1.5]), "recall_levels"),
        (dict(kind="pr_interpolated", recall_levels=[]), "recall_levels"),
        (dict(kind="pr_interpolated", recall_levels="0.5"), "recall_levels"),
        (dict(kind="pr_interpolated", recall_levels=[float("nan")]), "recall_levels"),
        (dict(kind="pr_interpolated", recall_levels=[np.float32("inf")]), "recall_levels"),
        (dict(kind="pr_radius"), "radii"),
        (dict(kind="pr_radius", radii=[float("nan")]), "radii"),
        (dict(kind="pr_radius", radii=[True]), "radii"),
        (dict(kind="precision_at_n", n=[0]), "n"),
        (dict(kind="precision_at_n", n=[2**70]), "n: expected list lengths up to 2..62"),
        (dict(kind="precision_at_n", radii=[1]), "radii: not an option"),
        (dict(kind="pr_interpolated", implementation="torch"), "implementation"),
        (dict(kind="pr_interpolated", protocol="reid"), "protocol: not an option"),
    ],
)
def test_bad_arguments_are_named(call, message):
    inputs = dict(distances=[[0.0, 1.0]], relevance=[[True, False]])
    with pytest.raises((ValueError, TypeError), match=message):
        rc.curves(**inputs, **call)


def test_no_counted_query_is_an_error():
    with pytest.raises(ValueError, match="no query has a relevant"):
        rc.curves("pr_interpolated", distances=[[0.0, 1.0]], relevance=[[False, False]])
    zero = rc.curves("pr_interpolated", distances=[[0.0, 1.0]], relevance=[[False, False]], empty="zero")
    assert zero.y.tolist() == [0.0] * 11


def test_c_curves_do_not_depend_on_the_thread_count(monkeypatch):
    if _cannot_draw("c", build_problem(query_codes=[[1]], db_codes=[[1]], relevance=[[True]])):
        pytest.skip("the C library is not built")
    rng = np.random.default_rng(11)
    inputs = dict(
        query_codes=rng.integers(0, 2, (64, 16)),
        db_codes=rng.integers(0, 2, (500, 16)),
        query_labels=rng.integers(0, 5, 64),
        db_labels=rng.integers(0, 5, 500),
    )
    runs = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("RC_NUM_THREADS", threads)
        runs.append([rc.curves(kind, **inputs, ties="expected", implementation="c").y.tolist() for kind in KINDS])
    assert runs[0] == runs[1] == runs[2]


def test_c_curves_run_a_small_problem_on_one_thread(monkeypatch):
    """A small call does not wake the thread team (its start and barrier cost more than the
    work); a thread count asked for is passed on as it is."""
    if _cannot_draw("c", build_problem(query_codes=[[1]], db_codes=[[1]], relevance=[[True]])):
        pytest.skip("the C library is not built")
    from retrieval_conformance.implementations.c import curves as c_curves

    library, asked = c_curves._require(), []

    class Recording:
        def rc_curves(self, *args):
            asked.append(args[-1])  # the last argument: the thread count
            return library.rc_curves(*args)

    monkeypatch.setattr(c_curves, "_require", Recording)
    monkeypatch.delenv("RC_NUM_THREADS", raising=False)
    small = dict(
        query_codes=[[1, 0], [0, 1]], db_codes=[[1, 1], [0, 0], [1, 0]], query_labels=[0, 1], db_labels=[0, 1, 1]
    )
    rc.curves("pr_radius", **small, implementation="c")
    monkeypatch.setenv("RC_NUM_THREADS", "2")
    rc.curves("pr_radius", **small, implementation="c")
    assert asked == [1, 2]


def test_c_takes_every_ranking_input_and_refuses_wide_levels_by_name():
    if _cannot_draw("c", build_problem(query_codes=[[1]], db_codes=[[1]], relevance=[[True]])):
        pytest.skip("the C library is not built")
    with pytest.raises(ValueError, match="recall_levels"):
        rc.curves(
            "pr_interpolated",
            query_codes=[[1]],
            db_codes=[[1]],
            relevance=[[True]],
            recall_levels=[1e-30],
            implementation="c",
        )
    for given in (
        dict(distances=[[0.0, 1.0]]),
        dict(scores=np.array([[0.5, 0.25]], dtype=np.float32)),
        dict(query_codes=[[1]], db_codes=[[1], [0]]),
    ):
        curve = rc.curves("pr_interpolated", **given, relevance=[[True, False]])
        assert curve.implementation == "c"
        assert curve.y.tolist() == [1.0] * 11


@pytest.mark.parametrize("implementation", FAST)
def test_block_layout_does_not_change_a_bit(implementation, monkeypatch):
    if implementation != "reference":
        require_implementation(implementation)  # skip (fail under RC_REQUIRE) where it is not built
    module = importlib.import_module(CURVE_KERNELS[implementation].split(":")[0])
    rng = np.random.default_rng(13)
    inputs = dict(
        query_codes=rng.integers(0, 2, (30, 8)),
        db_codes=rng.integers(0, 2, (50, 8)),
        relevance=rng.random((30, 50)) < 0.3,
        junk=rng.random((30, 50)) < 0.1,
    )
    whole = [rc.curves(kind, **inputs, ties="reverse", implementation=implementation).y.tolist() for kind in KINDS]
    monkeypatch.setattr(module, "BLOCK_ITEMS", 120)  # blocks of two queries
    blocks = [rc.curves(kind, **inputs, ties="reverse", implementation=implementation).y.tolist() for kind in KINDS]
    assert blocks == whole


def test_the_benchmark_runs_at_smoke_scale():
    from retrieval_conformance.conformance.bench.curves import CURVES, report

    text = report("smoke", rounds=1, implementations=("numpy",))
    assert "evaluate" in text and all(f"{label} [numpy]" in text for label, _, _ in CURVES)
