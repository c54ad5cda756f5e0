"""Other libraries' mAP, timed in the same run: small adapters written the way their users call them.

Each adapter takes a workload's arrays and returns a
:class:`~retrieval_conformance.conformance.bench.baselines.BaselineResult` whose ``semantics``
name the conventions the library computes, so the benchmark can check its numbers against
ours (:mod:`.verify`) before a time of it means anything.  A peer that is not installed is
skipped with a reason (``pip install 'retrieval-conformance[bench]'`` installs them all).

============= ============================================ =========================================
peer          how it is called                              conventions (spec clause)
============= ============================================ =========================================
plain-numpy   per query: stable ``argsort`` of the negated ties in gallery order (§4 ties=stable);
              scores, ``cumsum`` of the sorted hits; for   with k: ``argpartition`` picks the top k,
              AP@k ``np.argpartition`` then a sort of the  so the members of a tie group cut by k
              top k                                        and their order are unspecified
sklearn       per query ``average_precision_score(rel,    a tie group enters at once, as one
              scores)``                                    threshold (§4 ties=grouped); no cut-off
torchmetrics  per query ``retrieval_average_precision(    ``torch.topk`` order (§4 ties=unstable);
              preds, target, top_k=k)`` (the functional    AP@k divided by the hits (§6
              form of ``RetrievalMAP(top_k=k)``)           ap_at_k=hits); float32 arithmetic; an
                                                           item scoring <= 0 counts as non-relevant
ranx          ``Qrels`` and ``Run`` dicts built from the   numba's unstable sort (§4 ties=unstable);
              arrays (with k: a run of depth k, as a run   ``map@k`` divided by all relevant items
              file), ``evaluate(qrels, run, "map@100")``   (§6 ap_at_k=r)
faiss         ``IndexBinaryFlat`` over packed codes,       heap order among equal Hamming distances
              ``search(queries, k)``, AP@k of the labels   (§4 ties=unstable); AP@k divided by the
                                                           hits (the ``hashing`` preset)
============= ============================================ =========================================

The timed call includes what a user of the library does with arrays in hand: building the
dicts for ranx, the tensors view for torchmetrics, packing the codes and building the index
for faiss.  Query and document names for ranx are made once, outside the timed call (a user
has them already).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, List, Optional

import numpy as np
from retrieval_conformance.conformance.bench.baselines import BaselineResult
from retrieval_conformance.conformance.bench.workload import Workload
from retrieval_conformance.reference.contract.install_hints import install_hint

PEERS = ("plain-numpy", "sklearn", "torchmetrics", "ranx", "faiss")
#: the module each peer needs (its import name) and its package on PyPI
_MODULES = {
    "plain-numpy": ("numpy", "numpy"),
    "sklearn": ("sklearn.metrics", "scikit-learn"),
    "torchmetrics": ("torchmetrics.functional.retrieval", "torchmetrics"),
    "ranx": ("ranx", "ranx"),
    "faiss": ("faiss", "faiss-cpu"),
}
#: the peers that run on each workload (the rest of the workloads have none)
_BY_WORKLOAD = {
    "scores-map": ("plain-numpy", "sklearn", "torchmetrics", "ranx"),
    "scores-map100": ("plain-numpy", "torchmetrics", "ranx"),
    "cifar10-1000": ("faiss",),
}
#: ranx keeps a run as dicts of Python strings: above this many (query, document) entries the
#: run alone takes gigabytes (1,000 x 50,000 = 50 million entries), so full scale skips it
RANX_ENTRY_LIMIT = 5_000_000


def peer_names(name: str) -> List[str]:
    """The peers that run on workload ``name`` (the scaling series: plain numpy only)."""
    if name.startswith("scaling-"):
        return ["plain-numpy"]
    return list(_BY_WORKLOAD.get(name, ()))


def unavailable_reason(peer: str) -> Optional[str]:
    """Why ``peer`` cannot run here (its library is missing), or None."""
    module, package = _MODULES[peer]
    try:
        importlib.import_module(module)
    except Exception as exc:  # ImportError, or a broken install raising something else
        return f"peer {peer}: {package} is not installed ({type(exc).__name__}: {exc}); " + install_hint("bench")
    return None


def skip_reason(workload: Workload, peer: str) -> Optional[str]:
    """Why ``peer`` is not run on ``workload`` (not installed, or too large for it), or None."""
    reason = unavailable_reason(peer)
    if reason is None and peer == "ranx" and workload.k is None:
        entries = workload.n_queries * workload.n_gallery
        if entries > RANX_ENTRY_LIMIT:
            reason = (
                f"peer ranx: a full-depth run of {entries:,} (query, document) entries is a dict of Python "
                "strings of several GB; ranx runs on mAP@100 (a depth-100 run) and in the smoke version"
            )
    return reason


def load(peer: str) -> None:
    """Import the peer's library (before a memory measurement, so the import is not counted)."""
    importlib.import_module(_MODULES[peer][0])


def _semantics(
    k: Optional[int], ties: str, ap_at_k: str = "hits", tolerance: float = 1e-12, note: str = ""
) -> Dict[str, Any]:
    """What a peer computes, as ``rc.evaluate`` options plus its tie order and its float error."""
    concrete = ties in ("stable", "grouped")
    return {
        "protocol": "hashing",
        "k": k,
        "ap_at_k": ap_at_k,
        "empty": "zero",
        "ap_rule": "precision_sum",
        "tie_order": ties if concrete else "unspecified",
        "tolerance": tolerance,
        "note": note,
    }


def _ap_of_hits(hits: np.ndarray, denominator: int) -> float:
    """sum over the hits of (hits so far / rank), divided by ``denominator`` (0 when it is 0)."""
    if denominator == 0:
        return 0.0
    ranks = np.flatnonzero(hits) + 1.0
    return float(np.sum(np.arange(1, ranks.size + 1) / ranks) / denominator)


# ---------------------------------------------------------------------------------------------
# plain numpy
# ---------------------------------------------------------------------------------------------
def numpy_map(scores: np.ndarray, relevance: np.ndarray, k: Optional[int] = None) -> BaselineResult:
    """mAP (``k`` None: stable argsort) or mAP@k (``argpartition``) of a score matrix, per query.

    AP@k is divided by the hits in the top k (the ``hashing`` preset's denominator).
    """
    n_q, n_g = scores.shape
    ap = np.zeros(n_q)
    rankings = None if k is None else np.zeros((n_q, min(k, n_g)), dtype=np.int64)
    for q in range(n_q):
        row = -scores[q]
        if k is None or k >= n_g:
            order = np.argsort(row, kind="stable")
        else:
            top = np.argpartition(row, k - 1)[:k]
            order = top[np.argsort(row[top], kind="stable")]
            rankings[q] = order
        hits = relevance[q][order]
        ap[q] = _ap_of_hits(hits, int(hits.sum()))
    ties = "stable" if k is None or k >= n_g else "unspecified"
    note = "" if ties == "stable" else "np.argpartition picks the members of a tie group cut by k"
    return BaselineResult(float(ap.mean()), ap, semantics=_semantics(k, ties, note=note), ranking=rankings)


def numpy_codes_map(
    query_codes: np.ndarray, db_codes: np.ndarray, query_labels: np.ndarray, db_labels: np.ndarray
) -> BaselineResult:
    """mAP@ALL of ±1 codes with class ids: Hamming by a float32 product, per query a stable argsort."""
    bits = db_codes.shape[1]
    db = db_codes.astype(np.float32)
    queries = query_codes.astype(np.float32)
    ap = np.zeros(queries.shape[0])
    for q in range(queries.shape[0]):
        hamming = 0.5 * (bits - db @ queries[q])
        order = np.argsort(hamming, kind="stable")
        hits = db_labels[order] == query_labels[q]
        ap[q] = _ap_of_hits(hits, int(hits.sum()))
    return BaselineResult(float(ap.mean()), ap, semantics=_semantics(None, "stable"))


# ---------------------------------------------------------------------------------------------
# scikit-learn, torchmetrics, ranx, faiss
# ---------------------------------------------------------------------------------------------
def sklearn_map(scores: np.ndarray, relevance: np.ndarray) -> BaselineResult:
    """mean of ``sklearn.metrics.average_precision_score`` over the queries (a loop)."""
    from sklearn.metrics import average_precision_score

    ap = np.array([average_precision_score(relevance[q], scores[q]) for q in range(scores.shape[0])])
    return BaselineResult(
        float(ap.mean()),
        ap,
        semantics=_semantics(
            None, "grouped", tolerance=1e-12, note="a tie group counts as one threshold (precision at its end)"
        ),
    )


def torchmetrics_map(scores: np.ndarray, relevance: np.ndarray, k: Optional[int] = None) -> BaselineResult:
    """mean of ``torchmetrics.functional.retrieval.retrieval_average_precision`` over the queries."""
    import torch
    from torchmetrics.functional.retrieval import retrieval_average_precision

    preds = torch.from_numpy(np.ascontiguousarray(scores))
    target = torch.from_numpy(np.ascontiguousarray(relevance))
    ap = np.array([float(retrieval_average_precision(preds[q], target[q], top_k=k)) for q in range(preds.shape[0])])
    return BaselineResult(
        float(ap.mean()),
        ap,
        semantics=_semantics(
            k,
            "unspecified",
            tolerance=1e-6,
            note="torch.topk order of tied scores; float32 precision; an item scoring <= 0 counts as non-relevant",
        ),
    )


def ranx_names(n_q: int, n_g: int):
    """Query and document names for ranx, made once (zero-padded: ranx sorts queries by name)."""
    return [f"q{q:07d}" for q in range(n_q)], np.array([f"d{j}" for j in range(n_g)], dtype=object)


def ranx_map(scores: np.ndarray, relevance: np.ndarray, k: Optional[int], names) -> BaselineResult:
    """ranx ``evaluate(Qrels, Run, "map" or "map@k")``, the run of depth k (all items when k is None)."""
    from ranx import Qrels, Run, evaluate

    q_names, d_names = names
    n_q, n_g = scores.shape
    qrels, run = {}, {}
    for q in range(n_q):
        qrels[q_names[q]] = dict.fromkeys(d_names[np.flatnonzero(relevance[q])].tolist(), 1)
        cols = np.arange(n_g) if k is None or k >= n_g else np.argpartition(-scores[q], k - 1)[:k]
        run[q_names[q]] = dict(zip(d_names[cols].tolist(), scores[q, cols].tolist()))
    metric = "map" if k is None else f"map@{k}"
    ap = np.asarray(evaluate(Qrels(qrels), Run(run), metric, return_mean=False), dtype=np.float64)
    return BaselineResult(
        float(ap.mean()),
        ap,
        semantics=_semantics(
            k,
            "unspecified",
            ap_at_k="r",
            tolerance=1e-10,
            note="numba's unstable sort of tied scores; map@k divides by all relevant items",
        ),
    )


def faiss_map(
    query_codes: np.ndarray, db_codes: np.ndarray, query_labels: np.ndarray, db_labels: np.ndarray, k: int
) -> BaselineResult:
    """mAP@k from ``faiss.IndexBinaryFlat.search`` over packed ±1 codes (multi-hot labels)."""
    import faiss

    bits = db_codes.shape[1]
    index = faiss.IndexBinaryFlat(bits)
    index.add(np.packbits(db_codes > 0, axis=1))
    _, found = index.search(np.packbits(query_codes > 0, axis=1), k)
    ap = np.zeros(found.shape[0])
    for q in range(found.shape[0]):
        hits = (db_labels[found[q]] @ query_labels[q]) > 0
        ap[q] = _ap_of_hits(hits, int(hits.sum()))
    return BaselineResult(
        float(ap.mean()),
        ap,
        semantics=_semantics(k, "unspecified", note="faiss's heap order among equal Hamming distances"),
        ranking=found.astype(np.int64),
    )


def make_peer_runner(workload: Workload, peer: str) -> Callable[[], BaselineResult]:
    """A no-argument callable running ``peer`` on ``workload`` once."""
    a, k = workload.arrays, workload.k
    if peer == "plain-numpy" and workload.kind == "codes":
        return lambda: numpy_codes_map(a["query_codes"], a["db_codes"], a["query_labels"], a["db_labels"])
    if peer == "faiss" and workload.kind == "codes":
        return lambda: faiss_map(
            a["query_codes"], a["db_codes"], a["query_labels"], a["db_labels"], k or workload.n_gallery
        )
    if workload.kind == "scores" and workload.metric == "map":
        if peer == "plain-numpy":
            return lambda: numpy_map(a["scores"], a["relevance"], k)
        if peer == "sklearn" and k is None:
            return lambda: sklearn_map(a["scores"], a["relevance"])
        if peer == "torchmetrics":
            return lambda: torchmetrics_map(a["scores"], a["relevance"], k)
        if peer == "ranx":
            names = ranx_names(workload.n_queries, workload.n_gallery)
            return lambda: ranx_map(a["scores"], a["relevance"], k, names)
    raise ValueError(f"candidate: peer {peer!r} does not run on workload {workload.name!r}")
