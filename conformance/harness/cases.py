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
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

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
            out["relevance"] = self.relevance
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
    """Hamming distances of ±1 (or {0,1}) codes as float64 (CONVENTIONS §1)."""
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


def case_from_inputs(name: str, inputs: Dict[str, Any], k: Optional[int] = None, max_rank: int = 10,
                     golden: Optional[Dict[str, Any]] = None, family: str = "") -> Case:
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
    if "relevance" in inputs:
        relevance = np.asarray(inputs["relevance"]).astype(bool)
    else:
        relevance = relevance_from_labels(inputs["query_labels"], inputs["db_labels"])
    if "query_codes" in inputs:
        ql = np.asarray(inputs.get("query_labels")) if "query_labels" in inputs else None
        dl = np.asarray(inputs.get("db_labels")) if "db_labels" in inputs else None
        if ql is None or ql.ndim != 2:
            ql, dl = labels_from_relevance(relevance)
        codes = (qc.astype(np.float32), dc.astype(np.float32), ql.astype(np.int64), dl.astype(np.int64))
    if "query_cams" in inputs:
        ids = (np.asarray(inputs["query_labels"], dtype=np.int64), np.asarray(inputs["db_labels"], dtype=np.int64),
               np.asarray(inputs["query_cams"], dtype=np.int64), np.asarray(inputs["db_cams"], dtype=np.int64))
    elif "query_labels" in inputs and np.asarray(inputs["query_labels"]).ndim == 1:
        q_pids = np.asarray(inputs["query_labels"], dtype=np.int64)
        g_pids = np.asarray(inputs["db_labels"], dtype=np.int64)
        # no cameras: give the gallery a camera the queries never use (no camera junk)
        ids = (q_pids, g_pids, np.zeros(q_pids.shape[0], np.int64), np.ones(g_pids.shape[0], np.int64))
    junk = np.asarray(inputs["junk"]).astype(bool) if inputs.get("junk") is not None else None
    return Case(name=name, distances=distances, relevance=relevance, junk=junk, k=k, max_rank=max_rank,
                codes=codes, ids=ids, golden=golden, family=family)


# -- built-in seed cases and the golden loader -------------------------------------------

SEED000 = dict(
    query_codes=[[1, -1, 1, 1], [-1, 1, -1, -1], [1, -1, -1, -1]],
    db_codes=[[1, -1, -1, -1], [-1, 1, 1, -1], [1, 1, 1, -1], [-1, -1, 1, 1], [1, 1, -1, -1],
              [1, 1, 1, -1], [-1, 1, -1, -1]],
    query_labels=[[1, 0, 0], [1, 1, 0], [0, 0, 1]],
    db_labels=[[0, 1, 0], [1, 1, 0], [1, 0, 1], [0, 0, 1], [0, 1, 0], [0, 0, 1], [1, 1, 0]],
)
SEED003 = dict(
    query_codes=[[1, -1, 1, 1], [-1, -1, -1, 1], [1, 1, -1, 1], [1, 1, 1, -1]],
    db_codes=[[1, -1, 1, -1], [-1, -1, 1, -1], [-1, -1, 1, -1], [1, 1, -1, -1], [-1, 1, -1, -1],
              [1, 1, -1, 1]],
    query_labels=[[0, 1, 0, 0], [1, 1, 0, 0], [1, 0, 0, 1], [0, 1, 0, 1]],
    db_labels=[[1, 0, 0, 1], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 1, 0]],
)


def builtin_cases() -> List[Case]:
    """The seeds' worked examples (CONVENTIONS §10), used when no golden data is installed."""
    return [
        case_from_inputs("golden/seed000-k5", SEED000, k=5),
        case_from_inputs("golden/seed000-full", SEED000, k=None),
        case_from_inputs("golden/seed003-dcmh-full", SEED003, k=None),
    ]


def golden_cases() -> List[Case]:
    """Every golden case of ``retrieval_conformance.golden`` (kind "evaluate") as a Case.

    The golden file's inputs, ``k`` and ``max_rank`` are used; its protocol is not (the
    harness evaluates every input under the protocol being checked).  Falls back to the
    built-in seed cases when the golden package has no loader.
    """
    try:
        from retrieval_conformance.golden import load_cases
    except ImportError:
        return builtin_cases()
    out = []
    for raw in load_cases():
        inputs = raw.get("input", {})
        call = raw.get("call", {})
        usable = {key: inputs[key] for key in (
            "distances", "scores", "query_codes", "db_codes", "relevance", "query_labels", "db_labels",
            "query_cams", "db_cams", "junk") if key in inputs and inputs[key] is not None}
        try:
            case = case_from_inputs(f"golden/{raw['id']}", usable, k=call.get("k"),
                                    max_rank=int(call.get("max_rank", 10)), golden=raw, family="golden")
        except (KeyError, ValueError, TypeError):
            continue  # an input form the harness does not use (e.g. embeddings)
        out.append(case)
    return dedupe(out) or builtin_cases()


def _fingerprint(case: Case) -> Tuple:
    parts = [case.distances.tobytes(), case.distances.shape, case.relevance.tobytes(), case.k, case.max_rank]
    if case.junk is not None:
        parts.append(case.junk.tobytes())
    if case.ids is not None:
        parts.extend(a.tobytes() for a in case.ids)
    return tuple(parts)


def dedupe(cases: List[Case]) -> List[Case]:
    """One case per distinct input (golden files repeat an input under several protocols)."""
    seen: Dict[Tuple, Case] = {}
    for c in cases:
        seen.setdefault(_fingerprint(c), c)
    return list(seen.values())


# -- generation --------------------------------------------------------------------------

class Drawer:
    """The few random choices a case generator makes; backed by hypothesis or by ``random``.

    Writing every generator against this interface gives one generator code path for
    hypothesis (which shrinks through ``draw``) and for a seeded ``random.Random`` (used by
    ``identify`` for a fixed, reproducible set of cases).
    """

    def integer(self, lo: int, hi: int) -> int:  # pragma: no cover - interface
        raise NotImplementedError

    def boolean(self) -> bool:
        return self.integer(0, 1) == 1

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.integer(0, len(options) - 1)]


class RandomDrawer(Drawer):
    def __init__(self, rng):
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


class HypothesisDrawer(Drawer):
    def __init__(self, draw: Callable):
        from hypothesis import strategies as st

        self.draw = draw
        self.st = st

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(self.st.integers(lo, hi))

    def boolean(self) -> bool:
        return self.draw(self.st.booleans())


@dataclass(frozen=True)
class Capabilities:
    """What the adapter under test can express (decides what the generators produce)."""

    k: bool = True  # the function takes a cut-off
    junk: bool = False  # it can be told about junk (explicitly or by ReID cameras)
    ids: bool = False  # relevance must be identity-based (ReID)
    multi_query: bool = True  # it receives several queries at once
    protocol_k: bool = True  # the protocol defines AP@k
    scores: bool = False  # it takes similarity scores (the score values themselves can matter)


@dataclass(frozen=True)
class Family:
    """A family of generated inputs aimed at one clause (CONVENTIONS §11 bugs)."""

    id: str
    clause: str
    purpose: str
    needs_k: bool = False
    needs_multi_query: bool = False
    needs_ids: bool = False
    needs_scores: bool = False


FAMILIES: Tuple[Family, ...] = (
    Family("ties/tie-heavy", "CONVENTIONS §4 ties",
           "few distinct distances, relevant and non-relevant items tied (unstable, reversed or grouped ties)"),
    Family("empty/no-relevant", "CONVENTIONS §8 empty",
           "queries with no relevant item at all, or none in the top k (dropped instead of counted)"),
    Family("empty/no-hit-in-top-k", "CONVENTIONS §8 empty",
           "a query whose relevant items all rank below the cut-off k (zero vs skip_no_hit)", needs_k=True),
    Family("ap/relevant-last", "CONVENTIONS §5 ap_rule",
           "relevant items ranked last (gnd[0:-1], off-by-one ranks, trapezoid vs precision-sum)"),
    Family("k/inside", "CONVENTIONS §6 ap_at_k", "1 <= k < N with R > k (what AP@k divides by; topk ignored)",
           needs_k=True),
    Family("k/at-gallery", "CONVENTIONS §6 k", "k equal to the gallery size (AP@N is full AP)", needs_k=True),
    Family("k/beyond-gallery", "CONVENTIONS §6 k", "k larger than the gallery", needs_k=True),
    Family("size/single-item", "CONVENTIONS §0 gallery", "a one-item gallery"),
    Family("mean/one-query", "CONVENTIONS §8 mean over queries", "a single query"),
    Family("mean/many-queries", "CONVENTIONS §8 mean over queries",
           "many queries (a stray break after the first query)", needs_multi_query=True),
    Family("cmc/short-gallery", "CONVENTIONS §7 cmc", "fewer gallery items than max_rank (CMC must stay flat)",
           needs_ids=True),
    Family("scores/non-positive", "CONVENTIONS §2 relevance",
           "similarity scores <= 0 (a relevant item counts whatever its score)", needs_scores=True),
)


def family(fid: str) -> Family:
    for f in FAMILIES:
        if f.id == fid:
            return f
    raise KeyError(fid)


def family_skip_reason(f: Family, caps: Capabilities) -> Optional[str]:
    """Why ``f`` cannot run with an adapter of capabilities ``caps`` (None: it can)."""
    if f.needs_k and not caps.k:
        return "the adapter's function takes no cut-off k"
    if f.needs_k and not caps.protocol_k:
        return "the protocol defines no AP@k (give --ap-at-k to check one)"
    if f.needs_multi_query and not caps.multi_query:
        return "the adapter evaluates one query per call"
    if f.needs_ids and not caps.ids:
        return "only meaningful for a CMC-returning (reid) adapter"
    if f.needs_scores and not caps.scores:
        return "only meaningful for adapters that take similarity scores"
    return None


class _Masks:
    """Relevance as a (Q, N) mask with an optional explicit junk mask (non-ReID cases).

    The edits keep the invariant "no item is both relevant and junk": an item made relevant
    or non-relevant for a query is also made non-junk for it.
    """

    def __init__(self, d: Drawer, n_q: int, n_g: int, with_junk: bool):
        self.d = d
        self.rel = np.array([[d.boolean() for _ in range(n_g)] for _ in range(n_q)], dtype=bool)
        self.junk = np.zeros((n_q, n_g), dtype=bool)
        if with_junk and d.integer(0, 3) == 0:
            drawn = np.array([[d.integer(0, 3) == 0 for _ in range(n_g)] for _ in range(n_q)], dtype=bool)
            self.junk = drawn & ~self.rel

    def view(self, q: int) -> Tuple[np.ndarray, np.ndarray]:
        """(relevant non-junk, non-relevant non-junk) items of query ``q``."""
        keep = ~self.junk[q]
        return self.rel[q] & keep, ~self.rel[q] & keep

    def make_relevant(self, q: int, i: int) -> None:
        self.rel[q, i], self.junk[q, i] = True, False

    def make_other(self, q: int, i: int) -> None:
        self.rel[q, i], self.junk[q, i] = False, False

    def no_relevant(self, q: int) -> None:
        self.rel[q] = False

    def finish(self) -> Tuple[np.ndarray, Optional[np.ndarray], Optional[Ids]]:
        junk = self.junk if self.junk.any() else None
        return self.rel, junk, None


class _ReidIds:
    """Relevance from ReID ids and cameras (the protocol's junk follows from them).

    ``view`` is what the ReID protocols see: a gallery item with the query's id and camera
    is junk; a non-relevant item counts as "other" only when its id is not -1, so that what
    the family promises holds under reid-matlab (where id -1 is junk) as well.
    """

    def __init__(self, d: Drawer, n_q: int, n_g: int):
        self.d = d
        self.n_ids = n_ids = d.integer(1, 3)
        self.q_pids = np.array([d.integer(0, n_ids - 1) for _ in range(n_q)], dtype=np.int64)
        self.g_pids = np.array([d.integer(-1, n_ids - 1) for _ in range(n_g)], dtype=np.int64)
        self.q_cams = np.array([d.integer(0, 1) for _ in range(n_q)], dtype=np.int64)
        self.g_cams = np.array([d.integer(0, 2) for _ in range(n_g)], dtype=np.int64)

    def _other_camera(self, cam: int) -> int:
        c = self.d.integer(0, 1)  # one of the cameras 0, 1, 2 other than ``cam``
        return c + 1 if c >= cam else c

    def view(self, q: int) -> Tuple[np.ndarray, np.ndarray]:
        same_id = self.g_pids == self.q_pids[q]
        return same_id & (self.g_cams != self.q_cams[q]), ~same_id & (self.g_pids != -1)

    def make_relevant(self, q: int, i: int) -> None:
        self.g_pids[i] = self.q_pids[q]
        if self.g_cams[i] == self.q_cams[q]:
            self.g_cams[i] = self._other_camera(int(self.q_cams[q]))

    def make_other(self, q: int, i: int) -> None:
        own = int(self.q_pids[q])
        if self.g_pids[i] in (own, -1):
            p = self.d.integer(0, self.n_ids - 1)  # an id in 0..n_ids other than the query's
            self.g_pids[i] = p + 1 if p >= own else p

    def no_relevant(self, q: int) -> None:
        if self.d.boolean():
            self.q_pids[q] = self.n_ids  # an id the gallery does not hold
        else:  # the query's gallery images all share its camera: junk, nothing left to find
            self.g_cams[self.g_pids == self.q_pids[q]] = self.q_cams[q]

    def relevant_last(self, dist: np.ndarray) -> None:
        """Every query's farthest item: relevant, not junk, strictly last.

        A query whose drawn item already ends another query's row takes that query's id (and
        a camera the item does not have), so no item has to serve two identities.
        """
        owner: Dict[int, int] = {}
        for q in range(dist.shape[0]):
            far = self.d.integer(0, dist.shape[1] - 1)
            dist[q, far] = dist[q].max() + 1
            if far in owner:
                self.q_pids[q] = owner[far]
                if self.q_cams[q] == self.g_cams[far]:
                    self.q_cams[q] = self._other_camera(int(self.g_cams[far]))
            else:
                owner[far] = int(self.q_pids[q])
                self.make_relevant(q, far)

    def finish(self) -> Tuple[np.ndarray, Optional[np.ndarray], Optional[Ids]]:
        rel = self.q_pids[:, None] == self.g_pids[None, :]
        return rel, None, (self.q_pids, self.g_pids, self.q_cams, self.g_cams)


def _pick(d: Drawer, mask: np.ndarray) -> int:
    """One index where ``mask`` is True (``mask`` must have one)."""
    where = np.flatnonzero(mask)
    return int(where[d.integer(0, where.size - 1)])


def _two_items(d: Drawer, n_g: int) -> Tuple[int, int]:
    """Two distinct gallery indices (``n_g >= 2``)."""
    a = d.integer(0, n_g - 1)
    b = d.integer(0, n_g - 2)
    return a, b + 1 if b >= a else b


def generate(d: Drawer, fam: Family, caps: Capabilities, index: int = 0) -> Case:
    """Draw one case of family ``fam`` that an adapter with ``caps`` can express.

    Distances are small non-negative integers (exact in float32, realisable as Hamming
    distances); relevance is drawn per (query, item) or, for ReID, from ids and cameras.
    Every draw goes through ``d`` so that hypothesis can shrink the case.

    Every case is valid by construction (consistent shapes, no item both relevant and junk,
    ReID relevance = same id) and has its family's property on the items the protocol ranks
    (junk removed; for ReID, items with the query's id and camera): ``ties/tie-heavy`` ties
    a relevant and a non-relevant item of some query; ``ap/relevant-last`` puts a relevant
    item strictly last for every query; ``empty/no-relevant`` has a query without any
    relevant item; ``empty/no-hit-in-top-k`` has a query whose relevant items all come after
    at least k non-relevant ones; ``k/inside`` has 1 <= k < N and a query with R > k.
    """
    fid = fam.id
    if fid == "mean/one-query" or not caps.multi_query:
        n_q = 1
    elif fid == "mean/many-queries":
        n_q = d.integer(2, 6)
    else:
        n_q = d.integer(1, 3)
    if fid == "size/single-item":
        n_g = 1
    elif fid == "ties/tie-heavy":
        n_g = d.integer(2, 24)  # > 16 so that non-AVX numpy introsort is unstable too
    elif fid in ("k/inside", "ap/relevant-last", "empty/no-hit-in-top-k"):
        n_g = d.integer(2, 8)
    else:
        n_g = d.integer(1, 8)
    n_levels = d.integer(1, 3) if fid == "ties/tie-heavy" else d.integer(1, n_g + 2)
    dist = np.array([[d.integer(0, n_levels - 1) for _ in range(n_g)] for _ in range(n_q)], dtype=np.float64)
    g = _ReidIds(d, n_q, n_g) if caps.ids else _Masks(d, n_q, n_g, caps.junk)

    k: Optional[int] = None
    if fid == "ap/relevant-last":
        if isinstance(g, _ReidIds):
            g.relevant_last(dist)
        else:
            for q in range(n_q):
                far = d.integer(0, n_g - 1)
                dist[q, far] = dist[q].max() + 1
                g.make_relevant(q, far)
    elif fid == "ties/tie-heavy":
        # some query has a relevant and a non-relevant item at one distance
        q = d.integer(0, n_q - 1)
        a, b = _two_items(d, n_g)
        g.make_other(q, a)
        g.make_relevant(q, b)
        dist[q, b] = dist[q, a]
    elif fid == "empty/no-relevant":
        g.no_relevant(d.integer(0, n_q - 1))
    elif fid == "empty/no-hit-in-top-k":
        # one relevant and one non-relevant item at least; every relevant item is moved
        # (keeping their order) after every non-relevant one, and k <= the non-relevant ones
        q = d.integer(0, n_q - 1)
        a, b = _two_items(d, n_g)
        g.make_other(q, a)
        g.make_relevant(q, b)
        rel_q, other_q = g.view(q)
        dist[q, rel_q] += dist[q, other_q].max() + 1 - dist[q, rel_q].min()
        k = d.integer(1, int(other_q.sum()))
    elif fid == "k/inside":
        k = d.integer(1, n_g - 1)
        q = d.integer(0, n_q - 1)
        while True:  # some query with R > k: the AP@k divisors (hits, R, min(k, R), k) differ
            rel_q, _ = g.view(q)
            if rel_q.sum() > k:
                break
            g.make_relevant(q, _pick(d, ~rel_q))
    elif fid == "k/at-gallery":
        k = n_g
    elif fid == "k/beyond-gallery":
        k = n_g + d.integer(1, 5)
    if fid in ("empty/no-relevant", "ties/tie-heavy", "mean/many-queries") and caps.k and caps.protocol_k:
        if d.boolean():
            k = d.integer(1, n_g)
    max_rank = d.integer(1, 12) if caps.ids else 10
    if fid == "cmc/short-gallery":
        max_rank = n_g + d.integer(1, 5)
    rel, junk, ids = g.finish()
    return Case(name=f"{fid}#{index}", distances=dist, relevance=rel, junk=junk, k=k, max_rank=max_rank,
                ids=ids, family=fid, non_positive_scores=fid == "scores/non-positive")


def hypothesis_strategy(fam: Family, caps: Capabilities):
    """A hypothesis strategy of :class:`Case` for ``fam`` (shrinks towards small cases)."""
    from hypothesis import strategies as st

    @st.composite
    def cases(draw):
        return generate(HypothesisDrawer(draw), fam, caps)

    return cases()


def sample_cases(fam: Family, caps: Capabilities, n: int, seed: int = 0) -> List[Case]:
    """``n`` reproducible cases of ``fam`` from a seeded ``random.Random``."""
    import random

    rng = random.Random(f"{seed}:{fam.id}")
    return [generate(RandomDrawer(rng), fam, caps, i) for i in range(n)]


__all__ = [
    "Case", "Capabilities", "Family", "FAMILIES", "family", "family_skip_reason", "generate",
    "hypothesis_strategy", "sample_cases", "golden_cases", "builtin_cases", "case_from_inputs",
    "codes_from_distances", "labels_from_relevance", "ids_from_relevance", "hamming_from_codes",
]
