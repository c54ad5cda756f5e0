"""Baseline evaluators in the style people use, written by us, to time the implementations against.

* **Per-query loop** (:func:`calc_top_map`, :func:`loop_reid`, :func:`loop_masked`): seed 000's
  ``CalcTopMap`` algorithm step by step, with a stable sort: per query, the relevance vector
  from a label dot product, the distance row, ``argsort``, the top-k slice, then
  ``mean(i / r_i)`` over the hits.  The ReID and landmark variants are the same loop with the
  query's junk items removed after the sort.  Precision-sum AP, AP@k divided by the hits,
  stable ties, a query without hits counts 0 (the ``hashing`` preset; spec §9).
* **Full matrix** (:func:`torchreid_style`, :func:`full_matrix_hashing`,
  :func:`full_matrix_masked`): torchreid's evaluator design: ``argsort`` of the whole (Q, N)
  distance matrix, the full (Q, N) match matrix gathered through the index array, then
  per-query cumulative sums computed for all queries at once.  Like torchreid it sorts with
  numpy's default (unstable) kind on ReID and landmark data, so its tie order is unspecified;
  the hashing variant sorts stably (Hamming distances tie everywhere and a defined order is
  needed to compare with anything).  Memory: two or three (Q, N) arrays of 4-8 bytes per
  item (~1 GB at Market-1501 scale; ~7.7 GB per int64 array at MSMT17 scale,
  JDAI-CV/fast-reid#404).
* **Graded relevance, full matrix** (:func:`full_matrix_ndcg`): nDCG@k as a numpy script
  computes it: ``argsort`` of the negated (Q, N) scores, the top k sliced, gains times
  ``1 / np.log2(rank + 1)``, the ideal DCG from each row's grades sorted from the highest.
  It sorts stably by default, so tied scores keep gallery order (``ties="stable"``); on tied
  scores this is a different number from ``sklearn-ndcg``'s tie-averaged one, so it is
  checked under ``sklearn-ndcg`` with ``ties="stable"``.
* :func:`bare_argsort`: ``np.argsort(distances, axis=1)`` alone, a timing anchor (spec
  §12: ~0.6 s at Market-1501 scale); it evaluates nothing.

Every baseline returns a :class:`BaselineResult` whose ``semantics`` say which conventions it
computes, so the benchmark can check it against the reference under exactly those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import numpy as np


@dataclass
class BaselineResult:
    """What a baseline computed.

    Attributes
    ----------
    map : float or None
        Mean AP under the baseline's own empty-query rule (``semantics["empty"]``); None for
        a baseline that does not compute AP (nDCG).
    ap : ndarray (Q,) or None
        Per-query AP (0 for a query without a relevant non-junk item).
    cmc : ndarray (Q, max_rank) or None
        1 where the first relevant item is within the top j+1 (full-matrix ReID baselines).
    inp : ndarray (Q,) or None
        INP = R / rank of the last relevant item.
    semantics : dict
        ``rc.evaluate`` options this baseline implements (``protocol``, ``k``, ``empty``, and
        ``ap_rule`` or ``gain``/``discount``), ``tie_order``: ``"stable"`` or
        ``"unspecified"``, and ``metric``: the headline mean (``map`` when absent).
    ndcg : ndarray (Q,) or None
        Per-query nDCG@k (0 for a query without a relevant item).
    ndcg_at_k : float or None
        Mean nDCG@k over every query.
    ranking : ndarray (Q, k) or None
        The gallery indices the baseline ranked first, in its order, when it exposes them
        (a top-k search): lets a check verify a ranking whose tie order is unspecified.
    """

    map: Optional[float] = None
    ap: Optional[np.ndarray] = None
    cmc: Optional[np.ndarray] = None
    inp: Optional[np.ndarray] = None
    semantics: Dict[str, Any] = field(default_factory=dict)
    ndcg: Optional[np.ndarray] = None
    ndcg_at_k: Optional[float] = None
    ranking: Optional[np.ndarray] = None

    @property
    def value(self) -> Optional[float]:
        """The headline mean (``semantics["metric"]``, default ``map``)."""
        return getattr(self, self.semantics.get("metric", "map"))


# ---------------------------------------------------------------------------------------------
# the per-query loop (seed 000's algorithm, stable sort)
# ---------------------------------------------------------------------------------------------
def _ap_of_sorted_hits(gnd_sorted: np.ndarray) -> float:
    """seed 000's last steps: ``mean(count / rank)`` over the hits of a sorted 0/1 vector.

    AP = (1/H) * sum_{i=1..H} i / r_i, with r_i the 1-based rank of the i-th hit; 0 when H = 0.
    """
    hits = int(np.sum(gnd_sorted))
    if hits == 0:
        return 0.0
    count = np.linspace(1, hits, hits)
    ranks = np.asarray(np.where(gnd_sorted == 1)).ravel() + 1.0
    return float(np.mean(count / ranks))


def calc_top_map(
    query_codes: np.ndarray, db_codes: np.ndarray, query_labels: np.ndarray, db_labels: np.ndarray, topk: int
) -> BaselineResult:
    """mAP@topk of ±1 codes, one query at a time (seed 000's ``CalcTopMap`` with a stable sort).

    AP@k = (1/H_k) * sum_{r_i <= k} i / r_i (0 when H_k = 0), Hamming = (B - q.r) / 2,
    relevant iff the label vectors share a label; mAP = sum of AP / number of queries.
    """
    num_query = query_labels.shape[0]
    n_bits = db_codes.shape[1]
    ap = np.zeros(num_query)
    total = 0.0
    for it in range(num_query):
        gnd = (np.dot(query_labels[it, :], db_labels.transpose()) > 0).astype(np.float32)
        hamm = 0.5 * (n_bits - np.dot(query_codes[it, :], db_codes.transpose()))
        order = np.argsort(hamm, kind="stable")  # the seed's argsort, made stable
        gnd = gnd[order]
        tgnd = gnd[0:topk]
        if np.sum(tgnd) == 0:
            continue
        ap[it] = _ap_of_sorted_hits(tgnd)
        total += ap[it]
    k = None if topk >= db_codes.shape[0] else int(topk)
    return BaselineResult(
        total / num_query,
        ap,
        semantics={"protocol": "hashing", "k": k, "empty": "zero", "ap_rule": "precision_sum", "tie_order": "stable"},
    )


def loop_reid(
    distmat: np.ndarray, q_pids: np.ndarray, g_pids: np.ndarray, q_camids: np.ndarray, g_camids: np.ndarray
) -> BaselineResult:
    """The same loop on ReID data: per query sort the row, drop same-id-same-camera items, AP.

    Reads one distance row at a time, so a memory-mapped ``distmat`` is never loaded whole.
    """
    num_query = distmat.shape[0]
    ap = np.zeros(num_query)
    total = 0.0
    for it in range(num_query):
        order = np.argsort(distmat[it], kind="stable")
        same_id = g_pids[order] == q_pids[it]
        keep = ~(same_id & (g_camids[order] == q_camids[it]))
        gnd = same_id[keep]
        ap[it] = _ap_of_sorted_hits(gnd)
        total += ap[it]
    return BaselineResult(
        total / num_query,
        ap,
        semantics={"protocol": "reid", "k": None, "empty": "zero", "ap_rule": "precision_sum", "tie_order": "stable"},
    )


def loop_masked(distances: np.ndarray, relevance: np.ndarray, junk: np.ndarray) -> BaselineResult:
    """The same loop with explicit (Q, N) relevance and junk masks (landmark retrieval)."""
    num_query = distances.shape[0]
    ap = np.zeros(num_query)
    total = 0.0
    for it in range(num_query):
        order = np.argsort(distances[it], kind="stable")
        keep = ~junk[it][order]
        ap[it] = _ap_of_sorted_hits(relevance[it][order][keep])
        total += ap[it]
    return BaselineResult(
        total / num_query,
        ap,
        semantics={
            "protocol": "hashing",
            "k": None,
            "empty": "zero",
            "ap_rule": "precision_sum",
            "tie_order": "stable",
        },
    )


# ---------------------------------------------------------------------------------------------
# the full-matrix evaluator (torchreid's design)
# ---------------------------------------------------------------------------------------------
def _full_matrix_metrics(valid: np.ndarray, keep: Optional[np.ndarray], max_rank: int):
    """AP, CMC and INP of every query from its sorted (Q, N) hit matrix, all queries at once.

    ``valid``: relevant and not junk, in ranked order; ``keep``: not junk (None: no junk).
    rank of a kept item = cumulative count of kept items; precision at the i-th hit =
    i / rank; AP = mean over hits; CMC[j] = [rank of the first hit <= j+1]; INP = R / rank of
    the last hit.
    """
    num_q, num_g = valid.shape
    hits_cum = np.cumsum(valid, axis=1, dtype=np.int32)
    if keep is None:
        rank = np.broadcast_to(np.arange(1, num_g + 1, dtype=np.int32), valid.shape)
    else:
        rank = np.cumsum(keep, axis=1, dtype=np.int32)
    n_rel = hits_cum[:, -1].astype(np.int64) if num_g else np.zeros(num_q, np.int64)
    rows, cols = np.nonzero(valid)
    precision = hits_cum[rows, cols] / rank[rows, cols]
    ap = np.bincount(rows, weights=precision, minlength=num_q) / np.maximum(n_rel, 1)
    has = n_rel > 0
    first = np.argmax(valid, axis=1)
    last = num_g - 1 - np.argmax(valid[:, ::-1], axis=1)
    q = np.arange(num_q)
    first_rank = rank[q, first]
    cmc = ((first_rank[:, None] <= np.arange(1, max_rank + 1)[None, :]) & has[:, None]).astype(np.float64)
    inp = np.where(has, n_rel / np.maximum(rank[q, last], 1), 0.0)
    return ap, cmc, inp, has


def torchreid_style(
    distmat: np.ndarray,
    q_pids: np.ndarray,
    g_pids: np.ndarray,
    q_camids: np.ndarray,
    g_camids: np.ndarray,
    max_rank: int = 50,
) -> BaselineResult:
    """Market-1501 protocol the torchreid way: whole-matrix argsort, full match matrix.

    Same id and same camera as the query is junk; a query without a valid match is left out
    (``reid`` preset).  Returns mAP, per-query AP, CMC rows and INP (mINP = mean INP).
    """
    indices = np.argsort(distmat, axis=1)  # default kind, as torchreid: tie order unspecified
    matches = (g_pids[indices] == q_pids[:, np.newaxis]).astype(np.int32)
    keep = ~((matches == 1) & (g_camids[indices] == q_camids[:, np.newaxis]))
    del indices
    valid = (matches == 1) & keep
    del matches
    ap, cmc, inp, has = _full_matrix_metrics(valid, keep, max_rank)
    m = float(ap[has].mean()) if has.any() else float("nan")
    return BaselineResult(
        m,
        ap,
        cmc,
        inp,
        semantics={
            "protocol": "reid",
            "k": None,
            "empty": "skip",
            "ap_rule": "precision_sum",
            "tie_order": "unspecified",
            "max_rank": max_rank,
        },
    )


def full_matrix_hashing(
    query_codes: np.ndarray, db_codes: np.ndarray, query_labels: np.ndarray, db_labels: np.ndarray, topk: int
) -> BaselineResult:
    """mAP@topk of ±1 codes with whole-matrix Hamming distances, one stable argsort, full matrices."""
    n_bits = db_codes.shape[1]
    hamm = 0.5 * (n_bits - query_codes @ db_codes.T)
    indices = np.argsort(hamm, axis=1, kind="stable")[:, :topk]
    del hamm
    relevant = (query_labels @ db_labels.T) > 0
    valid = np.take_along_axis(relevant, indices, axis=1)
    del relevant, indices
    ap, _, _, _ = _full_matrix_metrics(valid, None, 1)
    k = None if topk >= db_codes.shape[0] else int(topk)
    return BaselineResult(
        float(ap.mean()),
        ap,
        semantics={"protocol": "hashing", "k": k, "empty": "zero", "ap_rule": "precision_sum", "tie_order": "stable"},
    )


def full_matrix_masked(
    distances: np.ndarray, relevance: np.ndarray, junk: np.ndarray, max_rank: int = 50
) -> BaselineResult:
    """Whole-matrix argsort with explicit (Q, N) relevance and junk masks (landmark retrieval)."""
    indices = np.argsort(distances, axis=1)  # default kind: tie order unspecified
    keep = ~np.take_along_axis(junk, indices, axis=1)
    valid = np.take_along_axis(relevance, indices, axis=1) & keep
    del indices
    ap, cmc, inp, _ = _full_matrix_metrics(valid, keep, max_rank)
    return BaselineResult(
        float(ap.mean()),
        ap,
        cmc,
        inp,
        semantics={
            "protocol": "hashing",
            "k": None,
            "empty": "zero",
            "ap_rule": "precision_sum",
            "tie_order": "unspecified",
            "max_rank": max_rank,
        },
    )


# ---------------------------------------------------------------------------------------------
# graded relevance: nDCG@k the way a numpy script computes it
# ---------------------------------------------------------------------------------------------
def full_matrix_ndcg(scores: np.ndarray, grades: np.ndarray, k: int = 10, kind: str = "stable") -> BaselineResult:
    """nDCG@k of (Q, N) similarity ``scores`` and integer ``grades``, all queries at once.

    DCG@k = sum_{r <= k} g_r / log2(r + 1) over the top k by score (linear gain); IDCG@k the
    same over the row's grades sorted from the highest; nDCG = DCG / IDCG, 0 when IDCG = 0
    (scikit-learn's value for a row without a relevant item).  ``kind="stable"`` orders tied
    scores by gallery index (``ties="stable"``); numpy's default kind leaves it unspecified.
    """
    order = np.argsort(-scores, axis=1, kind=kind)[:, :k]
    top = np.take_along_axis(grades, order, axis=1).astype(np.float64)
    del order
    discounts = 1.0 / np.log2(np.arange(2, top.shape[1] + 2))
    dcg = top @ discounts
    ideal = np.sort(grades, axis=1)[:, ::-1][:, :k].astype(np.float64)
    idcg = ideal @ discounts
    ndcg = np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)
    return BaselineResult(
        semantics={
            "protocol": "sklearn-ndcg",
            "k": int(k),
            "empty": "zero",
            "gain": "linear",
            "discount": "log2",
            "metric": "ndcg_at_k",
            "tie_order": "stable" if kind == "stable" else "unspecified",
        },
        ndcg=ndcg,
        ndcg_at_k=float(ndcg.mean()),
    )


def bare_argsort(distances: np.ndarray) -> np.ndarray:
    """``np.argsort(distances, axis=1)``: the cost of sorting alone (a timing anchor).

    On similarity scores it sorts them ascending: the same cost as a descending ranking,
    without the negated copy (it times the sort, not a ranking)."""
    return np.argsort(distances, axis=1)
