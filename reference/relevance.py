"""Stage 3 of the pipeline: which gallery items are relevant to a query, and which are junk.

Plain Python per query, independent of the numpy block helpers of ``Problem``.
"""

from __future__ import annotations

from typing import List, Optional

from retrieval_conformance.reference.contract.problem import Problem


def is_relevant_single(query_id: int, item_id: int) -> bool:
    """Single label / identity: relevant iff same id (spec §2)."""
    return query_id == item_id


def is_relevant_multi(query_labels, item_labels) -> bool:
    """Multi-label: relevant iff the label vectors share at least one label, ``q·r > 0`` (§2)."""
    return any(a and b for a, b in zip(query_labels, item_labels))


def query_relevance(problem: Problem, q: int) -> List[bool]:
    """Relevance of every gallery item to query ``q``."""
    if problem.relevance is not None:
        return [bool(v) for v in problem.relevance[q]]
    if problem.multi_label:
        ql = [int(v) for v in problem.query_labels[q]]
        return [is_relevant_multi(ql, [int(v) for v in row]) for row in problem.db_labels]
    qid = int(problem.query_labels[q])
    return [is_relevant_single(qid, int(v)) for v in problem.db_labels]


def query_grades(problem: Problem, q: int) -> Optional[List[int]]:
    """Relevance grades of every gallery item for query ``q`` (graded relevance), or None."""
    if problem.grades is None:
        return None
    return [int(v) for v in problem.grades[q]]


def query_junk(problem: Problem, q: int) -> List[bool]:
    """Junk marks for query ``q`` (spec §3): junk items are removed before ranking.

    * an explicit junk mask;
    * ReID: a gallery item with the query's id AND the query's camera;
    * gallery items whose id is listed in ``junk_ids`` (Market-1501's -1).
    """
    n = problem.n_gallery
    junk = [False] * n
    if problem.junk is not None:
        junk = [bool(v) for v in problem.junk[q]]
    if problem.query_cams is not None:
        qid, qcam = int(problem.query_labels[q]), int(problem.query_cams[q])
        for i in range(n):
            if int(problem.db_labels[i]) == qid and int(problem.db_cams[i]) == qcam:
                junk[i] = True
    if problem.junk_ids:
        for i in range(n):
            if int(problem.db_labels[i]) in problem.junk_ids:
                junk[i] = True
    return junk
