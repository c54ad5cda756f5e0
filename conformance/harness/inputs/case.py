"""Test inputs of the harness: one neutral form, convertible into every adapter's arguments.

A :class:`Case` always holds the ranking input as a (Q, N) distance matrix and the relevance
as a (Q, N) boolean matrix (plus an optional junk mask).  Where a case was born in a richer
form (±1 codes with multi-hot labels, or ReID ids with cameras) that *native* form is kept,
so that an adapter can pass exactly what a lab would pass, and the reference sees the same
input the lab's function sees.

Conversions used by the adapters (all exact, all preserving the ranking and its ties):

* distances -> ±1 codes: :func:`codes_from_distances` realises any non-negative integer
  distance matrix d (Q, N) as Hamming distances ``(Q-1) D + 2 d`` with ``2 Q D`` bits,
  D = max(d) (query i owns block i; every other block adds the constant D).
* relevance -> multi-hot labels: query i has label i; item n carries label i iff it is
  relevant to query i.
* relevance -> ReID ids: possible when every two queries' relevant sets are equal or
  disjoint (identity is an equivalence); see :func:`ids_from_relevance`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import numpy as np

Codes = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # query_codes, db_codes, query_labels, db_labels
Ids = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # q_pids, g_pids, q_camids, g_camids


@dataclass
class Case:
    """One test input.

    Attributes
    ----------
    name : str
        ``golden/<id>`` or ``<family>#<n>``; shown in reports.
    distances : ndarray (Q, N) float64
        Smaller is closer.  Values are exact in float32 (generated cases use small integers),
        so float32 and float64 code rank them alike.
    relevance : ndarray (Q, N) bool
        Relevance before junk removal (for ReID cases: same id).
    junk : ndarray (Q, N) bool or None
        Explicit junk (removed before ranking).  ReID camera junk is not stored here: it
        follows from ``ids`` and the protocol's junk rules.
    k : int or None
        The cut-off the case asks for (None: whole gallery).
    max_rank : int
        Length of the CMC curve the case asks for.
    codes, ids : native forms (see module docstring), or None.
    golden : dict or None
        The golden JSON case this one came from (for its stated values and known bugs).
    grades : ndarray (Q, N) int64 or None
        Graded relevance (spec §2 relevance matrix, read by nDCG): ``relevance == grades > 0``;
        None: binary relevance (grade 1).
    """

    name: str
    distances: np.ndarray
    relevance: np.ndarray
    junk: Optional[np.ndarray] = None
    k: Optional[int] = None
    max_rank: int = 10
    codes: Optional[Codes] = None
    ids: Optional[Ids] = None
    golden: Optional[Dict[str, Any]] = None
    family: str = ""
    non_positive_scores: bool = False  # score adapters: pass similarities <= 0 (torchmetrics#3104)
    grades: Optional[np.ndarray] = None

    def grade_matrix(self) -> np.ndarray:
        """The relevance grades (Q, N) int64: ``grades``, or 0/1 from the binary relevance."""
        return self.grades if self.grades is not None else self.relevance.astype(np.int64)

    @property
    def n_queries(self) -> int:
        return int(self.distances.shape[0])

    @property
    def n_gallery(self) -> int:
        return int(self.distances.shape[1])

    @property
    def integer_distances(self) -> bool:
        d = self.distances
        return bool(np.all(d >= 0) and np.all(d == np.round(d)))

    def has_ties(self) -> bool:
        """True when some query has two non-junk items at exactly the same distance."""
        for q in range(self.n_queries):
            keep = np.ones(self.n_gallery, bool) if self.junk is None else ~self.junk[q]
            d = self.distances[q][keep]
            if d.size != np.unique(d).size:
                return True
        return False

    def describe(self) -> str:
        k = "k=None (whole gallery)" if self.k is None else f"k={self.k}"
        q, n = self.n_queries, self.n_gallery
        return f"{q} quer{'y' if q == 1 else 'ies'} x {n} gallery item{'s' if n != 1 else ''}, {k}"

    def reference_inputs(self, camera_junk: bool) -> Dict[str, Any]:
        """Keyword arguments of ``rc.evaluate`` describing this case's inputs.

        ReID-native cases pass ids and cameras when the protocol has a camera junk rule
        (``camera_junk``), so the reference applies the protocol's own junk rules.
        """
        out: Dict[str, Any] = {"distances": self.distances}
        if self.ids is not None:
            q_pids, g_pids, q_cams, g_cams = self.ids
            out.update(query_labels=q_pids, db_labels=g_pids)
            if camera_junk:
                out.update(query_cams=q_cams, db_cams=g_cams)
        else:
            out["relevance"] = self.relevance if self.grades is None else self.grades
        if self.junk is not None and self.junk.any():
            out["junk"] = self.junk
        return out


# -- conversions -----------------------------------------------------------------------


def codes_from_distances(d: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """±1 codes whose Hamming distances rank exactly like the integer matrix ``d``.

    Query i: block i is ``[+1]*D + [-1]*D``, every other block all ``+1``.  Item n, block j:
    ``d[j, n]`` leading ``-1`` then ``+1`` (first half), and the negation of that (second
    half).  Block j contributes ``2 d[j, n]`` to query j and the constant ``D`` to every
    other query, so ``hamming(i, n) = (Q - 1) D + 2 d[i, n]``: same order, same ties.
    A single query needs no second half: ``D`` bits, ``hamming = d``.
    """
    d = np.asarray(d)
    if d.size and (np.any(d < 0) or np.any(d != np.round(d))):
        raise ValueError("distances: codes can only realise non-negative integer distances")
    d = d.astype(np.int64)
    n_q, n_g = d.shape
    D = max(1, int(d.max()) if d.size else 1)
    if n_q == 1:
        qc = np.ones((1, D), dtype=np.float32)
        dc = np.ones((n_g, D), dtype=np.float32)
        for n in range(n_g):
            dc[n, : d[0, n]] = -1
        return qc, dc
    qc = np.ones((n_q, 2 * n_q * D), dtype=np.float32)
    dc = np.ones((n_g, 2 * n_q * D), dtype=np.float32)
    for j in range(n_q):
        base = 2 * j * D
        qc[j, base + D : base + 2 * D] = -1
        for n in range(n_g):
            first = np.ones(D, dtype=np.float32)
            first[: d[j, n]] = -1
            dc[n, base : base + D] = first
            dc[n, base + D : base + 2 * D] = -first
    return qc, dc


def hamming_from_codes(qc: np.ndarray, dc: np.ndarray) -> np.ndarray:
    """Hamming distances of ±1 (or {0,1}) codes as float64 (spec §1)."""
    qb = np.asarray(qc) > 0
    db = np.asarray(dc) > 0
    return (qb[:, None, :] != db[None, :, :]).sum(-1).astype(np.float64)


def labels_from_relevance(rel: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Multi-hot labels with ``(query_labels @ db_labels.T > 0) == rel``: query i has label i."""
    n_q = rel.shape[0]
    return np.eye(n_q, dtype=np.int64), rel.T.astype(np.int64)


def relevance_from_labels(ql: np.ndarray, dl: np.ndarray) -> np.ndarray:
    ql, dl = np.asarray(ql), np.asarray(dl)
    if ql.ndim == 1:
        return ql[:, None] == dl[None, :]
    return (ql.astype(np.int64) @ dl.astype(np.int64).T) > 0


def ids_from_relevance(rel: np.ndarray, junk: Optional[np.ndarray] = None) -> Optional[Ids]:
    """ReID ids and cameras expressing ``rel`` (and ``junk``), or None when impossible.

    Identity is an equivalence, so two queries' relevant sets must be equal or disjoint.
    Junk is expressible when it is a subset of the query's own identity (same id, same
    camera): relevant items get camera 1, junk items camera 0 like the query.  Items
    relevant to nobody get fresh ids; a query with no relevant item gets an id of its own.
    """
    n_q, n_g = rel.shape
    junk = np.zeros_like(rel) if junk is None else junk
    members = [frozenset(np.flatnonzero(rel[q] | junk[q]).tolist()) for q in range(n_q)]
    g_pids = np.full(n_g, -2, dtype=np.int64)
    q_pids = np.empty(n_q, dtype=np.int64)
    next_id = 0
    seen: Dict[frozenset, int] = {}
    for q, m in enumerate(members):
        if not m:
            continue
        if m in seen:
            q_pids[q] = seen[m]
            continue
        if any(g_pids[i] != -2 for i in m):
            return None  # overlaps another query's identity without being equal to it
        seen[m] = next_id
        q_pids[q] = next_id
        g_pids[list(m)] = next_id
        next_id += 1
    # junk items of a shared identity must be junk for every query of that identity
    for m in seen:
        qs = [q for q in range(n_q) if members[q] == m]
        pattern = junk[qs[0]]
        if any((junk[q] != pattern).any() for q in qs):
            return None
    for q, m in enumerate(members):
        if not m:
            q_pids[q] = next_id
            next_id += 1
    for i in range(n_g):
        if g_pids[i] == -2:
            g_pids[i] = next_id
            next_id += 1
    q_cams = np.zeros(n_q, dtype=np.int64)
    g_cams = np.ones(n_g, dtype=np.int64)
    for q in range(n_q):
        g_cams[junk[q]] = 0
    return q_pids, g_pids, q_cams, g_cams


def case_from_inputs(
    name: str,
    inputs: Dict[str, Any],
    k: Optional[int] = None,
    max_rank: int = 10,
    golden: Optional[Dict[str, Any]] = None,
    family: str = "",
) -> Case:
    """A :class:`Case` from ``rc.evaluate``-style inputs (distances / scores / codes, with
    relevance / labels, cameras, junk)."""
    inputs = dict(inputs)
    codes = ids = None
    if "query_codes" in inputs:
        qc = np.asarray(inputs["query_codes"])
        dc = np.asarray(inputs["db_codes"])
        distances = hamming_from_codes(qc, dc)
    elif "scores" in inputs:
        distances = -np.asarray(inputs["scores"], dtype=np.float64)
    elif "distances" in inputs:
        distances = np.asarray(inputs["distances"], dtype=np.float64)
    else:
        raise ValueError(f"case {name}: no distances, scores or codes")
    grades = None
    if "relevance" in inputs:
        raw = np.asarray(inputs["relevance"])
        relevance = raw > 0 if raw.dtype.kind in "iuf" else raw.astype(bool)
        if raw.dtype.kind in "iuf" and raw.size and raw.max() > 1:
            grades = raw.astype(np.int64)
    else:
        relevance = relevance_from_labels(inputs["query_labels"], inputs["db_labels"])
    if "query_codes" in inputs:
        ql = np.asarray(inputs.get("query_labels")) if "query_labels" in inputs else None
        dl = np.asarray(inputs.get("db_labels")) if "db_labels" in inputs else None
        if ql is None or ql.ndim != 2:
            ql, dl = labels_from_relevance(relevance)
        codes = (qc.astype(np.float32), dc.astype(np.float32), ql.astype(np.int64), dl.astype(np.int64))
    if "query_cams" in inputs:
        ids = (
            np.asarray(inputs["query_labels"], dtype=np.int64),
            np.asarray(inputs["db_labels"], dtype=np.int64),
            np.asarray(inputs["query_cams"], dtype=np.int64),
            np.asarray(inputs["db_cams"], dtype=np.int64),
        )
    elif "query_labels" in inputs and np.asarray(inputs["query_labels"]).ndim == 1:
        q_pids = np.asarray(inputs["query_labels"], dtype=np.int64)
        g_pids = np.asarray(inputs["db_labels"], dtype=np.int64)
        # no cameras: give the gallery a camera the queries never use (no camera junk)
        ids = (q_pids, g_pids, np.zeros(q_pids.shape[0], np.int64), np.ones(g_pids.shape[0], np.int64))
    junk = np.asarray(inputs["junk"]).astype(bool) if inputs.get("junk") is not None else None
    return Case(
        name=name,
        distances=distances,
        relevance=relevance,
        junk=junk,
        k=k,
        max_rank=max_rank,
        codes=codes,
        ids=ids,
        golden=golden,
        family=family,
        grades=grades,
    )


def fingerprint(case: Case) -> Tuple:
    """A hashable key of everything that makes ``case`` the input it is (equal inputs, equal keys)."""
    parts = [case.distances.tobytes(), case.distances.shape, case.relevance.tobytes(), case.k, case.max_rank]
    if case.junk is not None:
        parts.append(case.junk.tobytes())
    if case.grades is not None:
        parts.append(case.grades.tobytes())
    if case.ids is not None:
        parts.extend(a.tobytes() for a in case.ids)
    return tuple(parts)
