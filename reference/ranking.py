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
from typing import List, Optional, Sequence

from retrieval_conformance.reference.contract.conventions import CONCRETE_POLICIES


@dataclass(frozen=True)
class TieGroup:
    """Items at one distance: ``before`` items (``relevant_before`` relevant) precede it.

    ``relevance`` lists the group's items in gallery order; ``grades`` their relevance grades
    (spec §2 relevance matrix), None for binary relevance (a relevant item has grade 1).
    """

    before: int
    relevant_before: int
    relevance: tuple
    distance: object = None
    grades: Optional[tuple] = None

    @property
    def size(self) -> int:
        return len(self.relevance)

    @property
    def relevant(self) -> int:
        return sum(self.relevance)

    @property
    def item_grades(self) -> tuple:
        """The grade of every item in gallery order (1 for a relevant item without grades)."""
        return self.grades if self.grades is not None else tuple(int(r) for r in self.relevance)

    @property
    def end(self) -> int:
        """1-based rank of the group's last position."""
        return self.before + self.size


def tie_groups(
    distances: Sequence, relevant: Sequence[bool], junk: Sequence[bool], grades: Optional[Sequence[int]] = None
) -> List[TieGroup]:
    """Group the non-junk items by exactly equal distance, closest first.

    Junk items are dropped first: they take no rank position (spec §3).  ``grades``: the
    relevance grade of every gallery item (graded relevance), or None.
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
        graded = None if grades is None else tuple(int(grades[i]) for i in kept[start:stop])
        groups.append(TieGroup(before, relevant_before, rel, distances[kept[start]], graded))
        before += len(rel)
        relevant_before += sum(rel)
        start = stop
    return groups


def order_grades(group: TieGroup, ties: str) -> List[int]:
    """The grades of a group's items in ranked order under a concrete tie policy.

    * ``stable``: gallery order (what ``np.argsort(kind="stable")`` gives);
    * ``reverse``: reversed gallery order (layumi's ``argsort(score)[::-1]``);
    * ``optimistic``: the highest grade first; ``pessimistic``: the highest grade last (with
      binary relevance: relevant items first, or last).
    """
    grades = list(group.item_grades)
    if ties == "stable":
        return grades
    if ties == "reverse":
        return grades[::-1]
    if ties == "optimistic":
        return sorted(grades, reverse=True)
    if ties == "pessimistic":
        return sorted(grades)
    raise ValueError(f"ties: {ties!r} is not a concrete tie policy; expected one of {list(CONCRETE_POLICIES)}")


def order_group(group: TieGroup, ties: str) -> List[bool]:
    """The relevance of a group's items in ranked order under a concrete tie policy."""
    return [g > 0 for g in order_grades(group, ties)]


def ranked_grades(groups: Sequence[TieGroup], ties: str) -> List[int]:
    """The grades of the whole ranking (non-junk items only) under a concrete policy."""
    out: List[int] = []
    for group in groups:
        out.extend(order_grades(group, ties))
    return out


def ranked_relevance(groups: Sequence[TieGroup], ties: str) -> List[bool]:
    """The whole ranked relevance list (non-junk items only) under a concrete policy."""
    return [g > 0 for g in ranked_grades(groups, ties)]
