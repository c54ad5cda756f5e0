"""What ``rc.curves`` returns, plotted by ``rc.plot_cmc`` and ``rc.plot_pr_curves``; one public entry
per curve (the exact means are ``implementation="reference"`` of ``rc.curves``)."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
import retrieval_conformance as rc

# q0: relevant at ranks 1 and 3, q1: relevant at rank 2 only (the hand derivation of
# test_reid_extras_and_curves.py: p(0..1/2) = (1 + 1/2) / 2 = 3/4, p(>1/2) = (2/3 + 1/2) / 2 = 7/12)
DISTANCES = [[0, 1, 2], [0, 1, 2]]
RELEVANCE = [[1, 0, 1], [0, 1, 0]]
LEVELS = [0, F(1, 2), F(6, 10), 1]


@pytest.fixture
def pyplot():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def _lines(ax):
    return [(line.get_xdata().tolist(), line.get_ydata().tolist(), line.get_label()) for line in ax.get_lines()]


def test_plot_pr_curves_takes_a_curve(pyplot, tmp_path):
    curve = rc.curves("pr_interpolated", distances=DISTANCES, relevance=RELEVANCE, recall_levels=LEVELS)
    ax = rc.plot_pr_curves(curve, path=str(tmp_path / "pr.png"))
    ((x, y, _),) = _lines(ax)
    # each query's value rounded, then their mean rounded: within 1e-15 of the exact mean
    assert x == [0.0, 0.5, 0.6, 1.0] and y == pytest.approx([0.75, 0.75, 7 / 12, 7 / 12], abs=1e-15)
    assert (tmp_path / "pr.png").stat().st_size > 0


def test_plot_pr_curves_takes_curves_by_label_and_radius_curves(pyplot):
    interpolated = rc.curves("pr_interpolated", distances=DISTANCES, relevance=RELEVANCE, recall_levels=LEVELS)
    # within radius 0: q0 holds its relevant item (P 1, R 1/2), q1 none (P 0/1, R 0): means 1/2 and 1/4
    radius = rc.curves("pr_radius", distances=DISTANCES, relevance=RELEVANCE, radii=[0])
    ax = rc.plot_pr_curves({"interpolated": interpolated, "radius": radius})
    lines = _lines(ax)
    assert [label for _, _, label in lines] == ["interpolated", "radius"]
    assert lines[1][:2] == ([0.25], [0.5])
    ax = rc.plot_pr_curves([interpolated, radius], labels=["a", "b"])
    assert [label for _, _, label in _lines(ax)][-2:] == ["a", "b"]


def test_plot_cmc_takes_a_cmc_curve(pyplot):
    # CMC: q0 hits at rank 1, q1 at rank 2 -> (1/2, 1, 1)
    curve = rc.curves("cmc", distances=DISTANCES, relevance=RELEVANCE, max_rank=3)
    ((x, y, _),) = _lines(rc.plot_cmc(curve))
    assert x == [1, 2, 3] and y == [0.5, 1.0, 1.0]
    ax = rc.plot_cmc({"run": curve})
    assert _lines(ax)[0][2] == "run"


def test_a_curve_of_the_other_plot_is_refused_by_name(pyplot):
    cmc = rc.curves("cmc", distances=DISTANCES, relevance=RELEVANCE, max_rank=3)
    with pytest.raises(ValueError, match="curves: a 'cmc' curve .*rc.plot_cmc"):
        rc.plot_pr_curves(cmc)
    pr = rc.curves("precision_at_n", distances=DISTANCES, relevance=RELEVANCE, n=[1, 2])
    with pytest.raises(ValueError, match="curves: a 'precision_at_n' curve"):
        rc.plot_pr_curves(pr)
    with pytest.raises(ValueError, match="cmcs: a 'precision_at_n' curve is not drawn by rc.plot_cmc; it is precision"):
        rc.plot_cmc(pr)
    interpolated = rc.curves("pr_interpolated", distances=DISTANCES, relevance=RELEVANCE)
    with pytest.raises(ValueError, match="cmcs: a 'pr_interpolated' curve .*draw it with rc.plot_pr_curves"):
        rc.plot_cmc({"run": interpolated})


def test_the_exact_mean_is_the_reference_implementation_of_curves():
    curve = rc.curves(
        "pr_interpolated", distances=DISTANCES, relevance=RELEVANCE, recall_levels=LEVELS, implementation="reference"
    )
    assert list(curve.exact["y"]) == [F(3, 4), F(3, 4), F(7, 12), F(7, 12)]


def test_the_old_name_of_the_exact_mean_still_works_and_says_where_it_went():
    assert "mean_pr_curve" not in dir(rc) and "mean_pr_curve" not in rc.__all__
    with pytest.warns(DeprecationWarning, match=r"rc.curves\('pr_interpolated', \.\.\., implementation='reference'\)"):
        old = rc.mean_pr_curve(DISTANCES, RELEVANCE, recall_levels=LEVELS)
    assert old == [(0, F(3, 4)), (F(1, 2), F(3, 4)), (F(3, 5), F(7, 12)), (1, F(7, 12))]
    with pytest.warns(DeprecationWarning):  # every use is told, not only the first
        rc.mean_pr_curve(DISTANCES, RELEVANCE)


def test_curves_carry_numpy_arrays_a_plot_reads():
    curve = rc.curves("precision_at_n", distances=DISTANCES, relevance=RELEVANCE, n=[1, 2])
    assert isinstance(curve.x, np.ndarray) and curve.y.tolist() == [0.5, 0.5]  # P@1: (1 + 0)/2, P@2: (1/2 + 1/2)/2
