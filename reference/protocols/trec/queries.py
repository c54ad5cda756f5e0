"""The queries trec_eval evaluates, and each query's ranking in trec_eval's order.

A query counts when it has results in the run and judgments in the qrels (every qrels query with
``complete``); its documents are ranked by score descending, ties by docno in descending byte
order, then cut to ``depth`` and, with ``judged_only``, stripped of unjudged documents
(spec §13 trec_eval).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter
from typing import Dict, List, Mapping, Optional, Tuple

from retrieval_conformance.reference.readers.grades import Grade
from retrieval_conformance.reference.readers.trec import id_bytes


def trec_order(docs: Mapping[str, float]) -> List[Tuple[str, float]]:
    """``(docno, score)`` pairs in trec_eval's order: score descending, then docno descending.

    Docnos compare by their bytes (:func:`~retrieval_conformance.reference.readers.trec.id_bytes`),
    as ``strcmp`` does in trec_eval's ``comp_sim_docno`` (for ASCII ids, ``str`` order is
    that order).  Python's sort is stable, also with ``reverse=True``, so sorting by docno
    and then by score gives the compound order.
    """
    items = list(docs.items())
    if all(map(str.isascii, docs)):
        items.sort(reverse=True)  # docnos are distinct: the tuples compare by docno
    else:
        items.sort(key=lambda item: id_bytes(item[0]), reverse=True)
    items.sort(key=itemgetter(1), reverse=True)
    return items


def ranked(
    qid: str,
    docs: Mapping[str, float],
    judged: Mapping[str, int],
    depth: Optional[int],
    judged_only: bool,
    ignore_identical_ids: bool,
) -> List[Tuple[str, float]]:
    """One query's ranked ``(docno, score)`` pairs after the options, in trec_eval's order of
    steps (``form_res_rels.c``): rank everything, keep the top ``depth`` (``-M``), then drop the
    documents without a judgment >= 0 (``-J``).  A document named like the query (BEIR's
    ``ignore_identical_ids``) is dropped before ranking, as BEIR drops it from the run."""
    if ignore_identical_ids and qid in docs:
        docs = {d: score for d, score in docs.items() if d != qid}
    ranked = trec_order(docs)
    if depth is not None:
        ranked = ranked[:depth]
    if judged_only:
        ranked = [(d, score) for d, score in ranked if judged.get(d, -1) >= 0]
    return ranked


@dataclass
class Query:
    """One evaluated query: its retrieved documents in trec_eval's order, and its judgments."""

    qid: str
    docs: List[str]
    scores: List[float]
    judged: Dict[str, Grade]
    level: int
    #: False for a qrels query absent from the run, evaluated with ``complete`` (trec_eval -c)
    in_run: bool = True
    grades: List[Optional[Grade]] = field(init=False)
    relevant: List[bool] = field(init=False)
    n_relevant: int = field(init=False)
    relevant_retrieved: int = field(init=False)
    n_nonrelevant: int = field(init=False)
    retrieved: set = field(init=False)

    def __post_init__(self) -> None:
        self.retrieved = set(self.docs)
        self.grades = list(map(self.judged.get, self.docs))
        self.relevant = [g is not None and g >= self.level for g in self.grades]
        self.n_relevant = sum(1 for g in self.judged.values() if g >= self.level)
        self.relevant_retrieved = sum(self.relevant)
        self.n_nonrelevant = sum(1 for g in self.judged.values() if 0 <= g < self.level)

    @property
    def n_retrieved(self) -> int:
        return len(self.docs)

    @property
    def width(self) -> int:
        """Columns this query needs: the padded list, then its phantoms."""
        return max(self.n_retrieved, self.n_relevant, 1) + self.n_relevant - self.relevant_retrieved


# --------------------------------------------------------------------------- inputs
def evaluated_queries(
    run: Dict[str, Dict[str, float]],
    qrels: Dict[str, Dict[str, int]],
    level: int,
    complete: bool,
    depth: Optional[int] = None,
    judged_only: bool = False,
    ignore_identical_ids: bool = False,
) -> Tuple[List[Query], Dict[str, List[str]]]:
    """The evaluated queries in trec_eval's order (qid bytes), and the ids left out."""
    wanted = set(qrels) if complete else set(run) & set(qrels)
    if not wanted:
        raise ValueError(
            f"run, qrels: no query has both results and judgments (run: {len(run)} queries, e.g. "
            f"{_some(run)}; qrels: {len(qrels)} queries, e.g. {_some(qrels)}); trec_eval stops here too "
            "('No queries with both results and relevance info'): check that both use the same query ids"
        )
    queries = []
    for qid in sorted(wanted, key=id_bytes):
        pairs = ranked(qid, run.get(qid, {}), qrels[qid], depth, judged_only, ignore_identical_ids)
        queries.append(Query(qid, [d for d, _ in pairs], [s for _, s in pairs], qrels[qid], level, qid in run))
    left_out = {
        "run_only": sorted(set(run) - set(qrels), key=id_bytes),
        "qrels_only": sorted(set(qrels) - set(run) - wanted, key=id_bytes),
    }
    return queries, left_out


def _some(ids: Mapping) -> str:
    shown = [repr(q) for q, _ in zip(ids, range(3))]
    return ", ".join(shown) if shown else "none"
