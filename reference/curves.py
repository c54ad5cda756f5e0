"""Curves people would rather look at: precision-recall per query, CMC; optional plotting.

``pr_curve`` gives the points (recall_k, precision_k) for k = 1..N' of one query (seed 002),
exactly, under a tie policy (``expected``: expected precision and recall at every depth;
``grouped``: one point per tie group, at its end).
"""
from __future__ import annotations

from fractions import Fraction
from typing import List, Optional, Sequence, Tuple

from retrieval_conformance.reference.per_query import expected_hits
from retrieval_conformance.reference.ranking import CONCRETE_POLICIES, ranked_relevance, tie_groups


def pr_curve(distances: Sequence[float], relevant: Sequence[bool], junk: Optional[Sequence[bool]] = None,
             ties: str = "stable") -> List[Tuple[Fraction, Fraction]]:
    """(recall, precision) after each rank of one query's ranking (junk removed first)."""
    junk = junk if junk is not None else [False] * len(distances)
    groups = tie_groups(list(distances), list(relevant), list(junk))
    R = sum(g.relevant for g in groups)
    n = sum(g.size for g in groups)
    if R == 0:
        raise ValueError("relevant: the query has no relevant non-junk item; its PR curve is undefined")
    if ties in CONCRETE_POLICIES:
        ranked = ranked_relevance(groups, ties)
        points, hits = [], 0
        for rank, rel in enumerate(ranked, 1):
            hits += rel
            points.append((Fraction(hits, R), Fraction(hits, rank)))
        return points
    if ties == "expected":
        return [(expected_hits(groups, k) / R, expected_hits(groups, k) / k) for k in range(1, n + 1)]
    if ties == "grouped":
        return [(Fraction(g.relevant_before + g.relevant, R), Fraction(g.relevant_before + g.relevant, g.end))
                for g in groups]
    raise ValueError(f"ties: expected one of {list(CONCRETE_POLICIES) + ['expected', 'grouped']}, got {ties!r}")


def plot_pr_curves(curves, labels=None, ax=None, path: Optional[str] = None):
    """Plot PR curves (lists of (recall, precision)); needs matplotlib (extra ``plot``)."""
    plt = _pyplot()
    ax = ax or plt.figure(figsize=(5, 4)).gca()
    for i, curve in enumerate(curves):
        ax.plot([float(r) for r, _ in curve], [float(p) for _, p in curve], marker=".",
                label=labels[i] if labels else None)
    ax.set(xlabel="recall", ylabel="precision", xlim=(0, 1.02), ylim=(0, 1.02), title="precision-recall")
    if labels:
        ax.legend()
    if path:
        ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    return ax


def plot_cmc(cmcs, labels=None, ax=None, path: Optional[str] = None):
    """Plot CMC curves (``result.cmc`` arrays; cmc[0] is Rank-1); needs matplotlib."""
    plt = _pyplot()
    ax = ax or plt.figure(figsize=(5, 4)).gca()
    for i, cmc in enumerate(cmcs):
        ax.plot(range(1, len(cmc) + 1), [float(c) for c in cmc], marker=".", label=labels[i] if labels else None)
    ax.set(xlabel="rank", ylabel="matching rate", ylim=(0, 1.02), title="CMC")
    if labels:
        ax.legend()
    if path:
        ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    return ax


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError(
            "plotting needs matplotlib: pip install 'retrieval-conformance[plot]'"
        ) from None
    return plt
