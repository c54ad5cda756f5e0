"""All queries against a gallery held as one shard per rank: the two passes of the dask gallery
shards (:mod:`..dask.shards` on each rank's shard, :mod:`..dask.merge` on every rank), with the
ranks' collectives in between.

For each chunk of queries (the same chunks on every rank):

1. every rank computes **pass 1** on its shard (its relevant non-junk items per query, its
   non-junk and radius counts) and the statistics are all-gathered;
2. every rank **merges** them (:func:`~..dask.merge.merge_statistics`: the same sort of the same
   integers, so the same points on every rank) and computes **pass 2** on its shard (items ahead
   of, or below and at, each point);
3. the pass-2 counts are summed over ranks (an all-reduce of int64: exact), and every rank turns
   them into the chunk's metrics with the numpy kernels (:func:`~..dask.merge.chunk_metrics`).

The queries themselves are all-gathered once, before the chunks: every rank needs every query
to rank its own shard.  Embeddings or codes of ``Q`` queries are ``Q d`` numbers, against the
gallery's ``N d`` that gathering the gallery would move, and against ``Q N`` distances that
sending distance rows would; so the queries travel, once, and the gallery never does.

Memory per rank: its shard, the queries, and per chunk its (chunk x shard) distances plus the
per-query statistics (relevant items and counts).  The result is the dask shards' and so the
numpy implementation's bits on the concatenated queries and gallery (why: :mod:`..dask.shards`).

A failure on one rank (a bad input in its shard) is raised on every rank, with the failing
rank's message: no rank is left waiting in a collective.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from retrieval_conformance.implementations.dask.merge import chunk_metrics, merge_statistics, points_for
from retrieval_conformance.implementations.dask.shards import shard_counts, shard_statistics
from retrieval_conformance.implementations.distributed.agreement import agree, describe, gallery_dtype
from retrieval_conformance.implementations.distributed.collectives import ProcessGroup
from retrieval_conformance.reference.contract.conventions import INDEX_ORDERS
from retrieval_conformance.reference.contract.cutoffs import clip_to_gallery, pad_cmc, restore_precision
from retrieval_conformance.reference.contract.evaluate import build_problem
from retrieval_conformance.reference.contract.gallery import prepare_gallery
from retrieval_conformance.reference.contract.problem import Options, PerQuery
from retrieval_conformance.reference.contract.query_blocks import block_rows
from retrieval_conformance.reference.contract.validation import EXACT_FLOAT64_BELOW, NonFiniteError

#: errors of a rank's inputs, raised as they are on every rank (any other becomes a RuntimeError);
#: NonFiniteError is the ValueError of a NaN, as one process raises it
ERRORS = {"ValueError": ValueError, "TypeError": TypeError, "NonFiniteError": NonFiniteError}
#: the query-side inputs a rank may hold
QUERY_INPUTS = ("query_embeddings", "query_codes", "query_labels", "query_cams")


def evaluate_sharded(
    group: ProcessGroup,
    queries: Dict[str, np.ndarray],
    gallery: Dict[str, np.ndarray],
    options: Options,
    metric: str = "euclidean",
    junk_ids: Tuple[int, ...] = (),
    block_size: Optional[int] = None,
    settings: Optional[Dict[str, Any]] = None,
) -> Tuple[PerQuery, int]:
    """The per-query values of every rank's queries (in rank order) against every rank's gallery
    shard (in rank order), and the gallery size; the same on every rank.

    ``queries``: this rank's query arrays (names of :data:`QUERY_INPUTS`, equal rows, possibly
    none); ``gallery``: its shard (``db_*`` arrays of equal rows, possibly none).  Options as
    ``evaluate`` resolves them; ``block_size`` queries per chunk (default: the budget of one
    (chunk x largest shard) float64 block); ``settings``: what else every rank must agree on (the
    protocol, the implementation), compared with ``options`` and the arrays' columns before any
    pass (:mod:`.agreement`).
    """
    described = agree(
        group, describe(options, dict(settings or {}, metric=metric, junk_ids=junk_ids), queries, gallery)
    )
    gallery = _promoted(gallery, gallery_dtype(described))
    n_local = _rows(gallery)
    minus_one = "db_codes" in gallery and bool((np.asarray(gallery["db_codes"]) == -1).any())
    shared = group.all_gather_objects({"queries": _compact(queries), "n_gallery": n_local, "minus_one": minus_one})
    everyone = _concatenate([s["queries"] for s in shared])
    sizes = [s["n_gallery"] for s in shared]
    n_gallery, n_queries = sum(sizes), _rows(everyone)
    if n_gallery == 0:
        raise ValueError(
            "db_labels: expected at least one gallery item on some rank, got an empty gallery on "
            f"all {group.world} ranks"
        )
    if n_queries == 0:
        raise ValueError(
            f"Accumulator.compute: no queries on any of the {group.world} ranks; call update(...) "
            "with a block of queries first"
        )
    offsets = np.cumsum([0] + sizes[:-1]).tolist()
    codes_signed = any(s["minus_one"] for s in shared) or (
        "query_codes" in everyone and bool((everyone["query_codes"] == -1).any())
    )
    del shared  # the gathered blocks: one copy of the queries (``everyone``) is enough
    inner = clip_to_gallery(options, n_gallery)
    step = block_rows(n_queries, max(sizes), block_size)
    # with several chunks, the shard is checked once and its embeddings sliced once (as evaluate does)
    prepared = prepare_gallery(gallery) if step < n_queries and n_local else None
    parts: List[PerQuery] = []
    for start in range(0, n_queries, step):
        stop = min(start + step, n_queries)
        rows = {name: value[start:stop] for name, value in everyone.items()}
        part = _first_pass(group, rows, gallery, offsets, inner, metric, junk_ids, start, codes_signed, prepared)
        parts.append(_finish_chunk(group, part, inner, options, n_gallery, start, offsets[group.rank]))
    return PerQuery.concat(parts), n_gallery


def _first_pass(group, rows, gallery, offsets, options, metric, junk_ids, start, codes_signed, prepared):
    """This rank's problem for the chunk (None for an empty shard) and every rank's pass-1 reply;
    the first failing rank's error raised on every rank."""
    problem, reply = None, {"stats": None, "float64": None, "graded": False, "error": None}
    offset = offsets[group.rank]
    if _rows(gallery):
        try:
            problem = build_problem(
                **rows,
                **gallery,
                metric=metric,
                junk_ids=junk_ids,
                row0=start,
                codes_signed=codes_signed,
                gallery=prepared,
            )
            reply["stats"] = shard_statistics(problem, {}, offset, options)
            reply["float64"] = problem.distances is not None and problem.distances.dtype == np.float64
            reply["graded"] = problem.grades is not None
        except Exception as exc:  # noqa: BLE001 (raised below on every rank, so that no rank waits)
            reply["error"] = (type(exc).__name__, str(exc))
    replies = group.all_gather_objects(reply)
    for rank, r in enumerate(replies):
        if r["error"] is not None:
            kind, message = r["error"]
            # a gallery row in the message counts from the start of that rank's shard
            raise ERRORS.get(kind, RuntimeError)(
                f"{'' if kind in ERRORS else kind + ': '}{message} (raised on rank {rank}, whose gallery shard "
                f"starts at item {offsets[rank]})"
            )
    return problem, [r for r in replies if r["stats"] is not None]


def _finish_chunk(group, part, inner: Options, options: Options, n_gallery: int, start: int, offset: int) -> PerQuery:
    """Merge, pass 2, the summed counts, the chunk's metrics (``options`` restored from the
    clipped ``inner``, as ``evaluate`` does)."""
    problem, replies = part
    merged = merge_statistics(
        [r["stats"] for r in replies], inner, n_gallery, start, replies[0]["graded"], replies[0]["float64"]
    )
    points = points_for(merged)
    n_points = points["row"].shape[0]
    shape = n_points if inner.ties in INDEX_ORDERS else (2, n_points)
    counts, failure = np.zeros(shape, np.int64), None
    if problem is not None:
        try:
            counts = shard_counts(problem, {}, offset, inner.ties, points)
        except Exception as exc:  # noqa: BLE001 (raised below, after every rank knows)
            failure = exc
    # one more count, of the ranks that failed: every rank learns of a failure in the same all-reduce
    total = group.all_sum(np.append(counts.reshape(-1), int(failure is not None)))
    if failure is not None:
        raise failure
    if total[-1]:
        raise RuntimeError(f"pass 2 failed on {total[-1]} other rank(s) (their own error is raised there)")
    total = total[:-1].reshape(shape)
    pq = PerQuery(**chunk_metrics(merged, [total]))  # type: ignore[arg-type]  # arrays by field name
    if inner is not options:
        pq = pad_cmc(restore_precision(pq, options.k, n_gallery), options.max_rank)
    return pq


def _compact(queries: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """The queries as they travel: integer codes whose values are all -1, 0 or 1 as int8 (the same
    codes, the same bits, the same messages, a fraction of the bytes); everything else as it is."""
    codes = queries.get("query_codes")
    if codes is None or codes.dtype.kind not in "iu" or codes.itemsize == 1 or codes.size == 0:
        return queries
    if codes.min() < -1 or codes.max() > 1:
        return queries  # left to the validation, which names the value
    return dict(queries, query_codes=codes.astype(np.int8))


def _promoted(gallery: Dict[str, np.ndarray], dtype: Optional[np.dtype]) -> Dict[str, np.ndarray]:
    """The shard with its embeddings in ``dtype``, that of every shard's concatenation; left as
    given where that cast could round (integers beyond 2**53: the first pass refuses them by name,
    on every rank)."""
    embeddings = gallery.get("db_embeddings")
    if dtype is None or embeddings is None or embeddings.dtype == dtype or embeddings.dtype.kind not in "fiu":
        return gallery
    if embeddings.dtype.kind in "iu" and embeddings.size:
        if np.abs(embeddings.astype(np.float64)).max() >= EXACT_FLOAT64_BELOW:
            return gallery
    return dict(gallery, db_embeddings=embeddings.astype(dtype))


def _rows(arrays: Dict[str, Any]) -> int:
    return int(next(iter(arrays.values())).shape[0]) if arrays else 0


def _concatenate(blocks: List[Dict[str, np.ndarray]]) -> Dict[str, np.ndarray]:
    """The ranks' query arrays joined in rank order; ranks without queries add nothing, and the
    others must hold the same inputs."""
    given = [b for b in blocks if b and _rows(b)]
    if not given:
        return {}
    names = sorted(given[0])
    for b in given[1:]:
        if sorted(b) != names:
            raise ValueError(
                f"update(): every rank must give the same query inputs; one rank gave {names}, another {sorted(b)}"
            )
    return {name: np.concatenate([np.asarray(b[name]) for b in given]) for name in names}
