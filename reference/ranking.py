"""Stage 2 of the pipeline: a ranking of the gallery under a declared tie policy.

A ranking is undefined until a tie policy is (spec §4).  The reference first builds
the *tie groups* of one query: the non-junk items sorted by distance, items at exactly equal
distance forming one group, each group holding its items in gallery order.  A policy then
either orders every group (``stable``, ``reverse``, ``optimistic``, ``pessimistic``: a
concrete ranking) or is applied to whole groups by the metric code (``expected``,
``grouped``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence

from retrieval_conformance.reference.contract.conventions import CONCRETE_POLICIES


@dataclass(frozen=True)
class TieGroup:
    """Items at one distance: ``before`` items (``relevant_before`` relevant) precede it.

    ``relevance`` lists the group's items in gallery order.
    """

    before: int
    relevant_before: int
    relevance: tuple
    distance: object = None

    @property
    def size(self) -> int:
        return len(self.relevance)

    @property
    def relevant(self) -> int:
        return sum(self.relevance)

    @property
    def end(self) -> int:
        """1-based rank of the group's last position."""
        return self.before + self.size


def tie_groups(distances: Sequence, relevant: Sequence[bool], junk: Sequence[bool]) -> List[TieGroup]:
    """Group the non-junk items by exactly equal distance, closest first.

    Junk items are dropped first: they take no rank position (spec §3).
    """
    kept = [i for i in range(len(distances)) if not junk[i]]
    # Python's sort is stable, so each group keeps gallery order.
    kept.sort(key=lambda i: distances[i])
    groups: List[TieGroup] = []
    before = relevant_before = 0
    start = 0
    while start < len(kept):
        stop = start
        while stop < len(kept) and distances[kept[stop]] == distances[kept[start]]:
            stop += 1
        rel = tuple(bool(relevant[i]) for i in kept[start:stop])
        groups.append(TieGroup(before, relevant_before, rel, distances[kept[start]]))
        before += len(rel)
        relevant_before += sum(rel)
        start = stop
    return groups


def order_group(group: TieGroup, ties: str) -> List[bool]:
    """The relevance of a group's items in ranked order under a concrete tie policy.

    * ``stable``: gallery order (what ``np.argsort(kind="stable")`` gives);
    * ``reverse``: reversed gallery order (layumi's ``argsort(score)[::-1]``);
    * ``optimistic``: relevant items first; ``pessimistic``: relevant items last.
    """
    rel = list(group.relevance)
    if ties == "stable":
        return rel
    if ties == "reverse":
        return rel[::-1]
    m = group.relevant
    if ties == "optimistic":
        return [True] * m + [False] * (group.size - m)
    if ties == "pessimistic":
        return [False] * (group.size - m) + [True] * m
    raise ValueError(f"ties: {ties!r} is not a concrete tie policy; expected one of {list(CONCRETE_POLICIES)}")


def ranked_relevance(groups: Sequence[TieGroup], ties: str) -> List[bool]:
    """The whole ranked relevance list (non-junk items only) under a concrete policy."""
    out: List[bool] = []
    for group in groups:
        out.extend(order_group(group, ties))
    return out
