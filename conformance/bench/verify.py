"""Checking a peer's numbers against ours, so that the benchmark never times a wrong computation.

:func:`check_peer` compares a peer's per-query AP with ``rc.evaluate`` under the conventions
the peer names (:attr:`BaselineResult.semantics`):

* a defined tie order (``stable``, ``grouped``): equal per query, within the peer's float
  error (``semantics["tolerance"]``);
* an unspecified tie order (``torch.topk``, numba's sort, ``argpartition``, a faiss heap):
  (1) between the pessimistic and optimistic values per query, where those bound it (always
  for a fixed denominator; for AP@k divided by the hits only when k does not cut a tie group,
  spec §4 ties=unstable); (2) when the peer exposes its ranking, that ranking is a valid
  order of the top k and its AP is ours of exactly that order; (3) on a tie-free copy of some
  queries (scores replaced by their stable rank, so every tie order agrees), equal per query.

It returns the problems found (an empty list when the peer agrees).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import numpy as np
import retrieval_conformance as rc
from retrieval_conformance.conformance.bench.baselines import BaselineResult
from retrieval_conformance.conformance.bench.workload import Workload

#: queries of the tie-free copy
TIE_FREE_QUERIES = 12
#: ``Evaluate(workload, **options)``: our value (the tests pass a cached one)
Evaluate = Callable[..., rc.Result]


def default_evaluate(w: Workload, **overrides) -> rc.Result:
    """The exact reference on small inputs, else numpy (proven equal to it by the cross tests)."""
    small = w.n_queries * w.n_gallery <= 50_000
    return rc.evaluate(**w.evaluate_kwargs(implementation="reference" if small else "numpy", **overrides))


def options_of(semantics: Dict[str, Any]) -> Dict[str, Any]:
    """The ``rc.evaluate`` options a peer computes (its tie order aside)."""
    return {key: semantics[key] for key in ("protocol", "k", "ap_at_k", "ap_rule", "empty") if key in semantics}


def _close(got: np.ndarray, want: np.ndarray, tol: float, label: str, rows: Optional[np.ndarray] = None) -> List[str]:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if rows is not None:
        got, want = got[rows], want[rows]
    if got.shape != want.shape:
        return [f"{label}: shape {got.shape}, expected {want.shape}"]
    bad = np.flatnonzero(~(np.abs(got - want) <= tol))
    if bad.size:
        q = int(bad[0])
        return [
            f"{label}: {bad.size} queries differ by more than {tol:g} (first: query {q}, {got[q]!r} "
            f"against {want[q]!r})"
        ]
    return []


def ranking_keys(w: Workload) -> np.ndarray:
    """(Q, N) keys in ranking order, smaller first: negated scores, distances or Hamming distances."""
    a = w.arrays
    if w.kind == "scores":
        return -np.asarray(a["scores"], dtype=np.float64)
    if w.kind == "distances":
        return np.asarray(a["distances"], dtype=np.float64)
    bits = a["db_codes"].shape[1]
    return 0.5 * (bits - a["query_codes"].astype(np.float32) @ a["db_codes"].astype(np.float32).T)


def relevance_matrix(w: Workload) -> np.ndarray:
    """(Q, N) bool relevance of any workload without junk (a matrix, class ids or multi-hot labels)."""
    a = w.arrays
    if "relevance" in a:
        return np.asarray(a["relevance"]) > 0
    ql, dl = a["query_labels"], a["db_labels"]
    if ql.ndim == 1:
        return ql[:, None] == dl[None, :]
    return (ql @ dl.T) > 0


def cut_in_tie_group(keys: np.ndarray, k: Optional[int]) -> np.ndarray:
    """Per query: does the cut-off k fall strictly inside a tie group of the ranking keys?"""
    n = keys.shape[1]
    if k is None or k >= n:
        return np.zeros(keys.shape[0], dtype=bool)
    part = np.partition(keys, (k - 1, k), axis=1)
    return part[:, k - 1] == part[:, k]


def tie_free(w: Workload, rows: np.ndarray) -> Workload:
    """The queries ``rows`` with scores replaced by ``N - stable rank``: distinct, positive, same order."""
    sub = w.subset(rows)
    scores = sub.arrays["scores"]
    order = np.argsort(-scores, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(scores.shape[1])[None, :], axis=1)
    sub.arrays["scores"] = (scores.shape[1] - rank).astype(np.float32)
    sub.title += " (tie-free)"
    return sub


def _check_ranking(
    w: Workload, result: BaselineResult, opts: Dict[str, Any], tol: float, evaluate: Evaluate
) -> List[str]:
    """The exposed top k is a valid ranking, and its AP is ours of exactly that order."""
    ranking = np.asarray(result.ranking)
    keys = ranking_keys(w)
    n_q, k = ranking.shape
    problems = []
    picked = np.take_along_axis(keys, ranking, axis=1)
    if (np.diff(picked, axis=1) < 0).any():
        problems.append("ranking: not in ranking order")
    if k < keys.shape[1]:
        rest = keys.copy()
        np.put_along_axis(rest, ranking, np.inf, axis=1)
        if (rest.min(axis=1) < picked[:, -1]).any():
            problems.append("ranking: an item outside the top k ranks before its last item")
    # our value of exactly this order: the ranked items get distances 0..k-1, the rest k (after them)
    forced = np.full(keys.shape, float(k), dtype=np.float32)  # exact up to 2**24 ranks
    np.put_along_axis(forced, ranking, np.arange(k, dtype=np.float32)[None, :], axis=1)
    ours = evaluate(
        Workload(
            w.name,
            w.scale,
            w.title,
            "distances",
            {"distances": forced, "relevance": relevance_matrix(w)},
            w.protocol,
            dict(w.options),
            w.seed,
        ),
        ties="stable",
        **opts,
    )
    return problems + _close(result.ap, ours.per_query.ap, tol, "AP of the peer's own ranking")


def check_peer(
    w: Workload,
    peer: str,
    result: BaselineResult,
    evaluate: Evaluate = default_evaluate,
    rerun: Optional[Callable[[Workload], BaselineResult]] = None,
) -> List[str]:
    """Problems with ``peer``'s ``result`` on ``w`` (an empty list: it computes what it says).

    ``rerun(workload)`` runs the peer again on another workload (the tie-free copy); default
    :func:`.peers.make_peer_runner`.
    """
    sem = result.semantics
    tol = float(sem.get("tolerance", 1e-12))
    opts = options_of(sem)
    label = f"{peer} on {w.name}"
    ap = np.asarray(result.ap, dtype=np.float64)
    problems = []
    if ap.shape != (w.n_queries,):
        return [f"{label}: {ap.shape} per-query values for {w.n_queries} queries"]
    if abs(result.map - float(np.mean(ap))) > tol:
        problems.append(f"{label}: mean {result.map!r} is not the mean of its per-query values")
    if sem["tie_order"] != "unspecified":
        truth = evaluate(w, ties=sem["tie_order"], **opts)
        return problems + _close(ap, truth.per_query.ap, tol, f"{label} (ties={sem['tie_order']})")
    if not ((ap >= -tol) & (ap <= 1 + tol)).all():
        problems.append(f"{label}: an AP outside [0, 1]")
    low = evaluate(w, ties="pessimistic", **opts).per_query.ap
    high = evaluate(w, ties="optimistic", **opts).per_query.ap
    bounded = np.ones(w.n_queries, dtype=bool)
    if opts.get("ap_at_k") == "hits":
        bounded = ~cut_in_tie_group(ranking_keys(w), opts.get("k"))
    outside = bounded & ((ap < low - tol) | (ap > high + tol))
    if outside.any():
        problems.append(
            f"{label}: {int(outside.sum())} queries outside the tie bounds (first: query "
            f"{int(np.flatnonzero(outside)[0])})"
        )
    if result.ranking is not None:
        problems += [f"{label}: {p}" for p in _check_ranking(w, result, opts, tol, evaluate)]
    if w.kind == "scores":
        from retrieval_conformance.conformance.bench.peers import make_peer_runner

        rows = np.arange(min(TIE_FREE_QUERIES, w.n_queries))
        free = tie_free(w, rows)
        again = rerun(free) if rerun is not None else make_peer_runner(free, peer)()
        truth = evaluate(free, ties="stable", **opts)
        problems += _close(again.ap, truth.per_query.ap, tol, f"{label}, tie-free copy of {rows.size} queries")
    return problems
