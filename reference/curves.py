"""Curves people would rather look at: precision-recall per query, CMC; optional plotting.

``pr_curve`` gives the points (recall_k, precision_k) for k = 1..N' of one query (seed 002),
exactly, under a tie policy (``expected``: expected precision and recall at every depth;
``grouped``: one point per tie group, at its end).
"""

from __future__ import annotations

from fractions import Fraction
from typing import List, Optional, Sequence, Tuple

from retrieval_conformance.reference.contract.conventions import CONCRETE_POLICIES
from retrieval_conformance.reference.contract.install_hints import install_hint
from retrieval_conformance.reference.per_query import expected_hits
from retrieval_conformance.reference.ranking import TieGroup, ranked_relevance, tie_groups


def pr_curve(
    distances: Sequence[float], relevant: Sequence[bool], junk: Optional[Sequence[bool]] = None, ties: str = "stable"
) -> List[Tuple[Fraction, Fraction]]:
    """(recall, precision) after each rank of one query's ranking (junk removed first)."""
    junk = junk if junk is not None else [False] * len(distances)
    groups = tie_groups(list(distances), list(relevant), list(junk))
    if sum(g.relevant for g in groups) == 0:
        raise ValueError("relevant: the query has no relevant non-junk item; its PR curve is undefined")
    return pr_points(groups, ties)


def pr_points(groups: Sequence[TieGroup], ties: str) -> List[Tuple[Fraction, Fraction]]:
    """(recall, precision) of a query's tie groups (at least one relevant item), per depth."""
    R = sum(g.relevant for g in groups)
    n = sum(g.size for g in groups)
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
        return [
            (Fraction(g.relevant_before + g.relevant, R), Fraction(g.relevant_before + g.relevant, g.end))
            for g in groups
        ]
    raise ValueError(f"ties: expected one of {list(CONCRETE_POLICIES) + ['expected', 'grouped']}, got {ties!r}")


def plot_pr_curves(curves, labels=None, ax=None, path: Optional[str] = None):
    """Plot precision-recall curves; needs matplotlib (extra ``plot``).

    ``curves``: what :func:`rc.curves` returns for ``pr_interpolated`` or ``pr_radius`` (a
    ``Curve``), lists of (recall, precision) points (e.g. from :func:`pr_curve`), a mapping
    ``{label: curve or points}``, or a sequence of them.
    """
    plt = _pyplot()
    ax = ax or plt.figure(figsize=(5, 4)).gca()
    if isinstance(curves, dict):  # {label: points}
        labels, curves = list(curves), list(curves.values())
    elif _is_curve(curves):  # one Curve of rc.curves
        curves = [curves]
    for i, curve in enumerate(curves):
        points = _pr_points(curve)
        ax.plot(
            [float(r) for r, _ in points],
            [float(p) for _, p in points],
            marker=".",
            label=labels[i] if labels else None,
        )
    ax.set(xlabel="recall", ylabel="precision", xlim=(0, 1.02), ylim=(0, 1.02), title="precision-recall")
    if labels:
        ax.legend()
    if path:
        ax.figure.savefig(path, dpi=120, bbox_inches="tight")
    return ax


#: the kinds of ``rc.curves`` each plot draws, and the plot of every other kind
PR_KINDS = ("pr_interpolated", "pr_radius")


def _is_curve(item) -> bool:
    """A ``Curve`` of ``rc.curves`` (read by its attributes: the contract's class, never imported here)."""
    return hasattr(item, "kind") and hasattr(item, "points")


def _refuse_kind(argument: str, curve, plot: str) -> None:
    """A curve another plot draws (or none: P@N is precision against N) is refused by name."""
    where = {
        "cmc": "draw it with rc.plot_cmc",
        "precision_at_n": "it is precision against N, not recall: plot curve.x against curve.y",
    }.get(curve.kind, "draw it with rc.plot_pr_curves")
    raise ValueError(f"{argument}: a {curve.kind!r} curve is not drawn by {plot}; {where}")


def _pr_points(curve):
    """(recall, precision) pairs of one curve: a PR ``Curve``'s points, or the points given."""
    if _is_curve(curve):
        if curve.kind not in PR_KINDS:
            _refuse_kind("curves", curve, "rc.plot_pr_curves")
        return curve.points()
    return curve


#: the 11 recall levels of the interpolated PR curve (PASCAL VOC, TREC)
ELEVEN_POINTS = tuple(Fraction(i, 10) for i in range(11))


def mean_pr_curve(
    distances, relevance, junk=None, ties: str = "stable", recall_levels: Sequence = ELEVEN_POINTS
) -> List[Tuple[Fraction, Fraction]]:
    """Mean interpolated precision-recall curve over queries, exactly.

    For query q and recall level r, the interpolated precision is the highest precision at any
    depth whose recall is at least r (0 if the query never reaches r):
    ``p_q(r) = max {P@k : R@k >= r}``; the curve is ``(r, mean_q p_q(r))`` over the queries
    with at least one relevant non-junk item (the 11 levels 0, 0.1, ..., 1 by default, as in
    the PASCAL VOC and TREC interpolated curves).

    Parameters
    ----------
    distances, relevance, junk : (Q, N) array-likes (smaller distance ranks first)
    ties : tie policy of :func:`pr_curve`
    recall_levels : recall values in [0, 1] (Fractions or floats)
    """
    import numpy as np

    dist = np.asarray(distances, dtype=np.float64)
    rel = np.asarray(relevance, dtype=bool)
    if dist.ndim != 2 or rel.shape != dist.shape:
        raise ValueError(
            f"relevance: expected the shape of distances {dist.shape} (queries x gallery), got {rel.shape}"
        )
    jm = np.zeros_like(rel) if junk is None else np.asarray(junk, dtype=bool)
    levels = [Fraction(r) for r in recall_levels]
    sums = [Fraction(0)] * len(levels)
    counted = 0
    for q in range(dist.shape[0]):
        if not (rel[q] & ~jm[q]).any():
            continue  # no relevant item: no curve
        points = pr_curve(dist[q].tolist(), rel[q].tolist(), jm[q].tolist(), ties)
        counted += 1
        for i, r in enumerate(levels):
            sums[i] += max((p for rec, p in points if rec >= r), default=Fraction(0))
    if counted == 0:
        raise ValueError("relevance: no query has a relevant non-junk item; the mean PR curve is undefined")
    return [(r, total / counted) for r, total in zip(levels, sums)]


def _named_curves(curves, labels) -> List[Tuple[Optional[str], List[float]]]:
    """(label, values) pairs from a Result, a mapping label -> Result or values, or a list of them."""

    def values(item):
        if _is_curve(item):  # a Curve of rc.curves("cmc", ...): y at the ranks 1, 2, ...
            if item.kind != "cmc":
                _refuse_kind("cmcs", item, "rc.plot_cmc")
            return [float(c) for c in item.y]
        cmc = getattr(item, "cmc", item)  # a Result gives its mean CMC
        return [float(c) for c in cmc]

    if _is_curve(curves):
        return [(labels[0] if labels else None, values(curves))]
    if hasattr(curves, "cmc"):
        return [(labels[0] if labels else getattr(curves, "protocol", None), values(curves))]
    if isinstance(curves, dict):
        return [(str(name), values(item)) for name, item in curves.items()]
    items = list(curves)
    if items and not hasattr(items[0], "__len__") and not hasattr(items[0], "cmc") and not _is_curve(items[0]):
        items = [items]  # one curve given as a flat sequence of numbers
    return [(labels[i] if labels else None, values(item)) for i, item in enumerate(items)]


def plot_cmc(cmcs, labels=None, ax=None, path: Optional[str] = None):
    """Plot CMC curves; needs matplotlib (extra ``plot``).

    ``cmcs``: a result of ``evaluate`` (its mean CMC), what ``rc.curves("cmc", ...)`` returns, a
    mapping ``{label: result or curve}``, or a sequence of curves (``result.cmc`` arrays;
    ``cmc[0]`` is Rank-1).
    """
    plt = _pyplot()
    ax = ax or plt.figure(figsize=(5, 4)).gca()
    named = _named_curves(cmcs, labels)
    for label, cmc in named:
        ax.plot(range(1, len(cmc) + 1), cmc, marker=".", label=label)
    ax.set(xlabel="rank", ylabel="matching rate", ylim=(0, 1.02), title="CMC")
    if any(label for label, _ in named):
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
        raise ImportError("plotting needs matplotlib: " + install_hint("plot")) from None
    return plt
