"""CUHK03 single-gallery-shot CMC (seeded) and the PR curve of seed 002."""

from __future__ import annotations

import random
from fractions import Fraction as F

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.reference.curves import mean_pr_curve, plot_cmc, plot_pr_curves, pr_curve
from retrieval_conformance.reference.protocols.reid import cuhk03_single_shot_cmc


def test_seed002_pr_table():
    """Seed 002's table for query 🍏: Similarity1 [🍏🍎🍍🍏🍏], Similarity2 [🍎🍏🍏🍏🍍], |relevant| = 5."""
    d = list(range(10))
    sim1 = pr_curve(d, [1, 0, 0, 1, 1, 1, 1, 0, 0, 0])[:5]
    sim2 = pr_curve(d, [0, 1, 1, 1, 0, 1, 1, 0, 0, 0])[:5]
    assert [r for r, _ in sim1] == [F(1, 5), F(1, 5), F(1, 5), F(2, 5), F(3, 5)]
    assert [p for _, p in sim1] == [1, F(1, 2), F(1, 3), F(1, 2), F(3, 5)]
    assert [r for r, _ in sim2] == [0, F(1, 5), F(2, 5), F(3, 5), F(3, 5)]
    assert [p for _, p in sim2] == [0, F(1, 2), F(2, 3), F(3, 4), F(3, 5)]


def test_pr_curve_policies():
    d, rel = [0, 1, 1, 2], [0, 1, 0, 1]
    assert pr_curve(d, rel, ties="expected")[1] == (F(1, 4), F(1, 4))  # E[H_2] = 1/2
    assert pr_curve(d, rel, ties="grouped") == [(0, 0), (F(1, 2), F(1, 3)), (1, F(1, 2))]
    with pytest.raises(ValueError, match="relevant: the query has no relevant"):
        pr_curve(d, [0, 0, 0, 0])


def test_cuhk03_single_shot_is_seeded_and_exact():
    # query id 1 cam 0; gallery: id 1 at ranks 2 (cam 1) and 4 (cam 0 -> junk), id 2 twice, id 3 once
    dist = np.array([[0.1, 0.2, 0.3, 0.4, 0.5]])
    g_ids, g_cams = [2, 1, 2, 1, 3], [0, 1, 1, 0, 0]
    out = cuhk03_single_shot_cmc(dist, [1], g_ids, [0], g_cams, max_rank=3, repeats=10, seed=0)
    # kept per repeat: one of id 2's two items (ranks 1 or 3), the only valid id-1 item, id 3.
    # id 1 is at rank 1 when id 2's later item is drawn, else rank 2: Rank-1 = share of such draws.
    again = cuhk03_single_shot_cmc(dist, [1], g_ids, [0], g_cams, max_rank=3, repeats=10, seed=0)
    assert out["cmc"] == again["cmc"]
    assert out["cmc"][1] == out["cmc"][2] == 1
    # the documented draw order: per repeat, identities as first ranked: id 2, id 1, id 3
    rng = random.Random(0)
    later_id2 = 0
    for _ in range(10):
        later_id2 += rng.randrange(2) == 1
        rng.randrange(1), rng.randrange(1)
    assert out["cmc"][0] == F(later_id2, 10)
    other = [
        cuhk03_single_shot_cmc(dist, [1], g_ids, [0], g_cams, max_rank=3, repeats=10, seed=s)["cmc"][0]
        for s in range(1, 8)
    ]
    assert len(set(other + [out["cmc"][0]])) > 1  # the seed matters: the draws are real


def test_cuhk03_skips_queries_without_valid_match():
    out = cuhk03_single_shot_cmc(np.array([[0.1, 0.2]]), [5], [5, 6], [0], [0, 1], max_rank=2)
    assert out["skipped"] == [0] and out["queries"] == 0


def test_plots_render(tmp_path):
    pytest.importorskip("matplotlib")
    plot_pr_curves([pr_curve([0, 1, 2], [1, 0, 1])], labels=["q"], path=str(tmp_path / "pr.png"))
    plot_cmc([np.array([0.5, 1.0, 1.0])], labels=["run"], path=str(tmp_path / "cmc.png"))
    assert (tmp_path / "pr.png").stat().st_size > 0 and (tmp_path / "cmc.png").stat().st_size > 0


def test_mean_pr_curve_by_hand():
    """Two queries; interpolated precision p(r) = max P@k over depths with R@k >= r.

    q0: relevant at ranks 1 and 3 -> points (1/2, 1), (1/2, 1/2), (1, 2/3): p(0..1/2) = 1, p(>1/2) = 2/3.
    q1: relevant at rank 2 only -> points (0, 0), (1, 1/2), (1, 1/3): p(r) = 1/2 for every r.
    A third query without a relevant item has no curve and is left out.
    """
    d = [[0, 1, 2], [0, 1, 2], [0, 1, 2]]
    rel = [[1, 0, 1], [0, 1, 0], [0, 0, 0]]
    curve = mean_pr_curve(d, rel, recall_levels=[0, F(1, 2), F(6, 10), 1])
    assert curve == [(0, F(3, 4)), (F(1, 2), F(3, 4)), (F(3, 5), F(7, 12)), (1, F(7, 12))]


def test_plot_cmc_takes_results_directly(tmp_path):
    pytest.importorskip("matplotlib")
    a = rc.evaluate(distances=[[0, 1, 2]], relevance=[[0, 1, 1]], max_rank=3)
    b = rc.evaluate(distances=[[0, 1, 2]], relevance=[[1, 0, 1]], max_rank=3)
    ax = plot_cmc(a, path=str(tmp_path / "one.png"))
    assert [list(line.get_ydata()) for line in ax.get_lines()] == [[0.0, 1.0, 1.0]]
    ax = plot_cmc({"a": a, "b": b}, path=str(tmp_path / "two.png"))
    assert [line.get_label() for line in ax.get_lines()] == ["a", "b"]
    assert (tmp_path / "two.png").stat().st_size > 0
    ax = plot_pr_curves({"mean": mean_pr_curve([[0, 1, 2]], [[1, 0, 1]])}, path=str(tmp_path / "pr.png"))
    assert ax.get_lines()[0].get_label() == "mean"
