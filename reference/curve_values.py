"""Per-query curves, exactly: the yardstick of the fast curve kernels (``rc.curves``).

Each query goes through the reference pipeline (distances, tie groups with junk removed), then:

* interpolated precision at recall level r: ``max {P@k : R@k >= r}`` over the points of
  :func:`~.curves.pr_points` (0 when no point reaches r);
* precision and recall within radius r: :func:`~.per_query.radius_values` (spec §7 radius);
* precision at N: ``H(min(N, N')) / N`` with H the hits of the ranking under the tie policy
  (its expectation under ``expected``; under ``grouped`` an N inside a tie group is an error).

A query without a relevant non-junk item gives 0 everywhere; the front end decides whether it counts.
"""

from __future__ import annotations

from fractions import Fraction
from typing import List, Sequence

import numpy as np
from retrieval_conformance.reference.contract.conventions import CONCRETE_POLICIES
from retrieval_conformance.reference.contract.curves import CurveRequest, CurveValues
from retrieval_conformance.reference.contract.problem import Problem
from retrieval_conformance.reference.curves import pr_points
from retrieval_conformance.reference.distances import query_distances
from retrieval_conformance.reference.per_query import expected_hits, radius_values
from retrieval_conformance.reference.ranking import TieGroup, ranked_relevance, tie_groups
from retrieval_conformance.reference.relevance import query_junk, query_relevance

ZERO = Fraction(0)


def interpolated_precision(groups: Sequence[TieGroup], ties: str, levels: Sequence[Fraction]) -> List[Fraction]:
    """``max {P@k : R@k >= r}`` for each level r (0 when the query has no relevant item)."""
    if sum(g.relevant for g in groups) == 0:
        return [ZERO] * len(levels)
    points = pr_points(groups, ties)
    return [max((p for rec, p in points if rec >= r), default=ZERO) for r in levels]


def hits_at(groups: Sequence[TieGroup], ties: str, depth: int, n: int, query: int) -> Fraction:
    """Relevant items in the top ``depth`` (``depth`` at most the non-junk items)."""
    if ties in CONCRETE_POLICIES:
        return Fraction(sum(ranked_relevance(groups, ties)[:depth]))
    if ties == "expected":
        return expected_hits(groups, depth)
    for g in groups:  # grouped: only the end of a tie group is a list length
        if g.before < depth < g.end:
            raise ValueError(
                f"n: N={n} falls inside a tie group (ranks {g.before + 1}..{g.end}) of query {query}; under "
                "ties='grouped' a list length inside a tie group has no meaning. Use ties='expected', or an N "
                "at a tie-group boundary"
            )
    return Fraction(sum(g.relevant for g in groups if g.end <= depth))


def precision_at_n(groups: Sequence[TieGroup], ties: str, ns: Sequence[int], query: int) -> List[Fraction]:
    """``H(min(N, N')) / N`` for each N."""
    kept = sum(g.size for g in groups)
    return [hits_at(groups, ties, min(n, kept), n, query) / n for n in ns]


def per_query_curves(problem: Problem, request: CurveRequest) -> CurveValues:
    """The exact per-query values of ``request.kind`` for every query of ``problem``."""
    precision, recall, n_relevant = [], [], []
    for q in range(problem.n_queries):
        groups = tie_groups(query_distances(problem, q), query_relevance(problem, q), query_junk(problem, q))
        R = sum(g.relevant for g in groups)
        n_relevant.append(R)
        if request.kind == "pr_interpolated":
            precision.append(interpolated_precision(groups, request.ties, request.levels))
        elif request.kind == "precision_at_n":
            precision.append(precision_at_n(groups, request.ties, request.ns, q))
        elif request.kind == "pr_radius":
            pairs = [radius_values(groups, r, R) for r in request.radii]
            precision.append([p for p, _ in pairs])
            recall.append([r for _, r in pairs])
        else:
            raise ValueError(f"kind: the reference computes no per-query {request.kind!r} curve")
    exact = {"precision": precision}
    if request.kind == "pr_radius":
        exact["recall"] = recall

    def matrix(rows: List[List[Fraction]]) -> np.ndarray:
        return np.array([[float(x) for x in row] for row in rows], dtype=np.float64).reshape(len(rows), -1)

    return CurveValues(
        np.array(n_relevant, dtype=np.int64),
        matrix(precision),
        matrix(recall) if request.kind == "pr_radius" else None,
        exact,
    )
