"""The public entry point: validate once, compute per query with any implementation, aggregate.

::

    inputs -> distances (or scores) -> ranking under a tie policy -> relevance + junk
           -> per-query metric -> aggregation over queries
"""

from __future__ import annotations

from typing import Any, Optional, cast

import numpy as np
from retrieval_conformance.reference.contract import options_table
from retrieval_conformance.reference.contract import validation as v
from retrieval_conformance.reference.contract.aggregation import aggregate
from retrieval_conformance.reference.contract.embeddings import METRICS, embedding_distances
from retrieval_conformance.reference.contract.gallery import Gallery, prepare_gallery
from retrieval_conformance.reference.contract.metric_names import resolve_metrics
from retrieval_conformance.reference.contract.precision import precisions, warn_low_precision
from retrieval_conformance.reference.contract.presets import get_preset
from retrieval_conformance.reference.contract.problem import (
    PerQuery,
    Problem,
    Result,
    ResultsAtK,
)
from retrieval_conformance.reference.contract.protocol_options import check_camera_rule, resolve_options
from retrieval_conformance.reference.contract.query_blocks import (
    block_progress,
    block_rows,
    check_cmc_size,
    compute_block,
    holds_minus_one,
    progress_callback,
    query_rows,
    read_sides,
    takes,
)
from retrieval_conformance.reference.contract.registry import get, on_device


def _count_given(**inputs: Any) -> list:
    return [name for name, value in inputs.items() if value is not None]


def build_problem(
    distances=None,
    scores=None,
    query_codes=None,
    db_codes=None,
    query_embeddings=None,
    db_embeddings=None,
    metric: str = "euclidean",
    relevance=None,
    query_labels=None,
    db_labels=None,
    query_cams=None,
    db_cams=None,
    junk=None,
    junk_ids=(),
    row0: int = 0,
    gallery: Optional[Gallery] = None,
    codes_signed: bool = False,
    keep_scores: bool = False,
    packed_codes: bool = False,
    check_finite: bool = True,
) -> Problem:
    """Validate and normalise the inputs of :func:`evaluate` into a :class:`Problem`.

    ``row0``: index of the first query, for messages about a block of queries.
    ``gallery``: the gallery side already prepared by :func:`.gallery.prepare_gallery` (the same
    arrays as the ``db_*`` arguments): only the query side is checked, against it.
    ``codes_signed``: a query row outside this block holds a -1, so the codes are ±1 codes.
    ``keep_scores``: similarity scores stay scores (``Problem.scores``), for an implementation
    that reads them (``Implementation.reads_scores``), instead of a negated copy.
    ``packed_codes``: the gallery's codes as packed words (``Problem.db_words``) instead of
    ``db_bits``, for an implementation that reads them (``Implementation.reads_packed_codes``).
    ``check_finite=False``: distances and scores are not checked for NaN/inf here
    (``Problem.finite`` False), for an implementation that checks them as it reads them
    (``Implementation.checks_finite``).
    """
    ranking_inputs = _count_given(
        distances=distances,
        scores=scores,
        query_codes=query_codes,
        db_codes=db_codes,
        query_embeddings=query_embeddings,
        db_embeddings=db_embeddings,
    )
    pairs = {("query_codes", "db_codes"), ("query_embeddings", "db_embeddings")}
    if not ranking_inputs or (len(ranking_inputs) > 1 and tuple(ranking_inputs) not in pairs):
        raise ValueError(
            "give exactly one ranking input: distances=, scores=, query_codes= with db_codes=, or "
            f"query_embeddings= with db_embeddings=; got {ranking_inputs or 'none'}"
        )
    dist = sims = query_bits = db_side = None
    if distances is not None:
        dist = v.float_matrix("distances", distances, "queries x gallery", check_finite)
    elif scores is not None:
        sims = v.float_matrix("scores", scores, "queries x gallery", check_finite)
        if not keep_scores:
            # similarity ranks descending; negation is exact, so the ranking is unchanged
            dist, sims = np.ascontiguousarray(-sims), None
    elif query_codes is not None or db_codes is not None:
        if query_codes is None or db_codes is None:
            missing = "db_codes" if db_codes is None else "query_codes"
            raise ValueError(f"{missing}: expected codes together with {ranking_inputs[0]}")
        query_bits, db_side = (
            gallery.codes_pair(query_codes, codes_signed, packed_codes)
            if gallery is not None
            else v.codes_pair(query_codes, db_codes, codes_signed, packed_codes)
        )
    else:
        if query_embeddings is None or db_embeddings is None:
            missing = "db_embeddings" if db_embeddings is None else "query_embeddings"
            raise ValueError(f"{missing}: expected embeddings together with {ranking_inputs[0]}")
        held = gallery if gallery is not None and gallery.embeddings is not None else None
        dist = embedding_distances(
            query_embeddings,
            held.embeddings if held is not None else db_embeddings,
            metric,
            row0=row0,
            db_checked=held is not None,
            sliced=held.embedding_slices if held is not None else None,
        )
    matrix = dist if dist is not None else sims
    if matrix is not None:
        n_q, n_g = matrix.shape
    else:  # the codes branch above set both sides
        n_q, n_g = cast(np.ndarray, query_bits).shape[0], cast(np.ndarray, db_side).shape[0]
    if n_q == 0:
        raise ValueError(f"{ranking_inputs[0]}: expected at least one query (row), got 0")
    if n_g == 0:
        where = "column" if matrix is not None and ranking_inputs[0] in ("distances", "scores") else "row"
        name = ranking_inputs[-1]
        raise ValueError(f"{name}: expected at least one gallery item ({where}), got an empty gallery")

    rel = grades = ql = dl = None
    if relevance is not None:
        if query_labels is not None or db_labels is not None:
            raise ValueError("give exactly one relevance input: relevance= or query_labels= with db_labels=")
        rel, grades = v.relevance_matrix("relevance", relevance, (n_q, n_g), "queries x gallery")
    elif query_labels is not None and db_labels is not None:
        ql, dl = gallery.labels_pair(query_labels) if gallery is not None else v.labels_pair(query_labels, db_labels)
        if ql.shape[0] != n_q:
            raise ValueError(f"query_labels: expected {n_q} rows (one per query), got {ql.shape[0]}")
        if dl.shape[0] != n_g:
            raise ValueError(f"db_labels: expected {n_g} rows (one per gallery item), got {dl.shape[0]}")
    else:
        raise ValueError(
            "give exactly one relevance input: relevance= (queries x gallery booleans) or query_labels= with db_labels="
        )

    junk_mask = None if junk is None else v.bool_matrix("junk", junk, (n_q, n_g), "queries x gallery")
    qc = dc = None
    if query_cams is not None or db_cams is not None:
        if query_cams is None or db_cams is None:
            raise ValueError("query_cams, db_cams: expected both camera arrays, or neither")
        if ql is None or ql.ndim != 1:
            raise ValueError(
                "query_cams: camera junk (same id and same camera) needs single-id labels "
                "(query_labels and db_labels as 1-D id arrays)"
            )
        qc, dc = (
            gallery.cams_pair(query_cams, n_q, n_g)
            if gallery is not None
            else v.cams_pair(query_cams, db_cams, n_q, n_g)
        )
    junk_ids = tuple(int(i) for i in junk_ids)
    if junk_ids and (ql is None or ql.ndim != 1):
        junk_ids = ()  # id-based junk needs single ids; with other inputs it has nothing to act on
    db_bits, db_words = (None, db_side) if packed_codes else (db_side, None)
    return Problem(
        n_queries=int(n_q),
        n_gallery=int(n_g),
        distances=dist,
        scores=sims,
        query_bits=query_bits,
        db_bits=db_bits,
        relevance=rel,
        grades=grades,
        query_labels=ql,
        db_labels=dl,
        junk=junk_mask,
        query_cams=qc,
        db_cams=dc,
        junk_ids=junk_ids,
        db_words=db_words,
        finite=matrix is not None and (check_finite or (distances is None and scores is None)),
    )


_UNSET: Any = object()
#: cut-offs one call evaluates at most (each is a full evaluation)
MAX_CUTOFFS = 100


@options_table.documented(
    "evaluate",
    protocol="``retrieval-conformance presets`` lists the presets' conventions.",
    k="The presets' k is None, except ``gldv2``'s: 100.  Any Python or numpy integer >= 1, of any size: a k beyond the "
    "gallery gives full AP and R@k = 1, and P@k = R/k still divides by k (spec §6).  bools, floats and "
    "strings are errors.  A tuple or list of cut-offs (``k=(1, 5, 10, 100)``) returns a :class:`ResultsAtK` "
    "(``{k: Result}``, in the order given).",
    max_rank="It sets the length of ``cmc`` and of every row of ``per_query.cmc``, 1 .. 10**7 "
    "(``validation.MAX_RANK_LIMIT``).  Beyond the gallery the CMC is flat (§7 cmc_length=max_rank): "
    "computed up to the gallery size and extended by its last value.  A max_rank beyond the gallery "
    "whose per-query rows would exceed 2**27 values (1 GiB) is an error that says so.",
    implementation='``result.implementation`` says who did.  ``"auto"``: the fastest available (C, then '
    'numpy, then torch; torch is not imported unless it is picked).  ``"reference"`` is the '
    "slow exact yardstick, the only one that also returns exact ``Fraction`` values "
    '(``result.exact``).  ``"dask"`` runs the queries on the current ``dask.distributed`` '
    "client (``pip install '.[dask]'``).  A registered third-party implementation is named "
    "the same way.",
    device='Only with ``implementation="torch"`` or ``"auto"`` (which then means torch).  Default: the '
    "environment variable ``RC_TORCH_DEVICE``, else CUDA when present, else the CPU.  The numbers do not "
    "depend on the device.",
)
def evaluate(
    distances=None,
    scores=None,
    query_codes=None,
    db_codes=None,
    relevance=None,
    query_labels=None,
    db_labels=None,
    query_cams=None,
    db_cams=None,
    junk=None,
    protocol: str = "hashing",
    k: Optional[int] = _UNSET,
    max_rank: int = 50,
    ties: Optional[str] = None,
    ap_rule: Optional[str] = None,
    ap_at_k: Optional[str] = None,
    empty: Optional[str] = None,
    radius: Optional[float] = None,
    implementation: str = "auto",
    query_embeddings=None,
    db_embeddings=None,
    metric: str = "euclidean",
    block_size: Optional[int] = None,
    progress=False,
    gain: Optional[str] = None,
    recall: Optional[str] = None,
    discount: Optional[str] = None,
    device=None,
    metrics=None,
) -> Result:
    """Evaluate a retrieval run under a named protocol, with any implementation.

    Parameters
    ----------
    distances, scores, query_codes + db_codes, query_embeddings + db_embeddings
        Exactly one ranking input: a (Q, N) distance matrix (smaller is closer), a (Q, N)
        similarity matrix (larger is closer), binary codes in {-1, +1} or {0, 1} (Hamming
        distance), or embeddings (``metric="euclidean"`` or ``"cosine"``).
    relevance, query_labels + db_labels
        Exactly one relevance input: a (Q, N) boolean matrix, single ids (1-D: relevant iff
        equal) or multi-hot rows (2-D: relevant iff they share a label).  ``relevance`` may
        hold integer grades 0 .. 52 (graded relevance: grade > 0 is relevant; nDCG weighs
        each item by the gain of its grade).
    query_cams, db_cams, junk
        Junk items are removed before ranking.  With cameras, a gallery item with the query's
        id and camera is junk (ReID presets); ``junk`` is an explicit (Q, N) mask.
    {options}
    block_size : int, optional
        Queries per block.  Inputs are validated and evaluated one query block at a time
        (a memory-mapped ``distances`` array is read block by block, embeddings and codes give
        one block of distances at a time), so memory stays bounded; the result is identical
        for any block size.  Default: about 256 MiB of float64 per block.
    progress : bool or callable
        True prints progress to stderr; a callable gets ``(queries_done, queries)``.

    Returns
    -------
    Result
        ``map``, ``ap`` (per query; NaN where the query is left out), ``precision_at_k``,
        ``recall_at_k``, ``cmc`` (``cmc[0]`` = Rank-1), ``minp``, ``r_precision``,
        ``ndcg_at_k`` (nDCG@k, of the whole ranking without k), ``mrr`` (MRR@k with k),
        ``map_at_r``, ``exact``.

    Examples
    --------
    Seed 000 (±1 codes, multi-hot labels): mAP@5 = 107/180.

    >>> import retrieval_conformance as rc
    >>> res = rc.evaluate(query_codes=[[1, -1, 1, 1], [-1, 1, -1, -1], [1, -1, -1, -1]],
    ...     db_codes=[[1, -1, -1, -1], [-1, 1, 1, -1], [1, 1, 1, -1], [-1, -1, 1, 1],
    ...               [1, 1, -1, -1], [1, 1, 1, -1], [-1, 1, -1, -1]],
    ...     query_labels=[[1, 0, 0], [1, 1, 0], [0, 0, 1]],
    ...     db_labels=[[0, 1, 0], [1, 1, 0], [1, 0, 1], [0, 0, 1], [0, 1, 0], [0, 0, 1], [1, 1, 0]],
    ...     protocol="hashing", k=5, implementation="reference")
    >>> res.exact.map
    Fraction(107, 180)
    """
    if isinstance(k, (tuple, list)):
        # several cut-offs: one evaluation each (AP@k, P@k and R@k all depend on k)
        arguments = dict(locals())
        if len(k) > MAX_CUTOFFS:
            raise ValueError(f"k: at most {MAX_CUTOFFS} cut-offs in one call, got {len(k)}; each is one evaluation")
        cutoffs = [v.positive_int("k", value) for value in k]
        if not cutoffs or len(set(cutoffs)) != len(cutoffs):
            raise ValueError(f"k: expected distinct cut-offs, got {v.shown(list(k))}; e.g. k=(1, 5, 10, 100)")
        arguments.pop("k")
        # a name with a cut-off (P_10, nDCG@10) is checked against all of them, then asked of each by its field
        arguments["metrics"] = resolve_metrics(metrics, cutoffs=tuple(cutoffs))
        return ResultsAtK((c, evaluate(**arguments, k=c)) for c in cutoffs)
    options = resolve_options(
        protocol,
        None if k is _UNSET else k,
        max_rank,
        ties,
        ap_rule,
        ap_at_k,
        empty,
        radius,
        k_given=k is not _UNSET,
        gain=gain,
        recall=recall,
        discount=discount,
        metrics=metrics,
    )
    preset = get_preset(protocol)
    metric = v.choice("metric", metric, METRICS)
    check_camera_rule(protocol, preset, query_cams, db_cams, junk, query_labels)
    query_side = dict(
        distances=distances,
        scores=scores,
        query_codes=query_codes,
        query_embeddings=query_embeddings,
        relevance=relevance,
        query_labels=query_labels,
        query_cams=query_cams if "same_id_cam" in preset.junk else None,
        junk=junk,
    )
    gallery_side = dict(
        db_codes=db_codes,
        db_embeddings=db_embeddings,
        db_labels=db_labels,
        db_cams=db_cams if "same_id_cam" in preset.junk else None,
        metric=metric,
        junk_ids=(-1,) if "minus_one" in preset.junk else (),
    )
    impl = get(implementation) if device is None else on_device(implementation, device)
    kinds = precisions({**query_side, **gallery_side})  # before the conversion reads bfloat16 as float32
    n_q, n_g = read_sides(query_side, gallery_side)
    warn_low_precision(kinds, {**query_side, **gallery_side}, lambda q, d: embedding_distances(q, d, metric))
    per_block = block_rows(n_q, n_g, block_size)
    report = progress_callback(progress, n_q)
    parts = []
    # with several blocks, the gallery is checked once and the implementation prepares it once
    gallery = prepare_gallery(gallery_side) if per_block < n_q else None
    # ±1 or {0, 1} codes is decided on all query rows at once, not per block (a 0 is an error in
    # ±1 codes wherever their -1 is)
    codes_signed = per_block < n_q and holds_minus_one(query_side["query_codes"])
    state = None
    for start in range(0, max(n_q, 1), per_block):
        stop = min(start + per_block, n_q)
        # each block is validated and evaluated on its own: queries are independent, so
        # the result is identical to one block, while memory stays bounded
        block = {key: query_rows(value, start, stop) for key, value in query_side.items()}
        problem = None  # the previous block's arrays (negated scores, distances) go before the next's are made
        try:
            problem = build_problem(
                **block,
                **gallery_side,
                row0=start,
                gallery=gallery,
                codes_signed=codes_signed,
                keep_scores=getattr(impl, "reads_scores", False),
                packed_codes=getattr(impl, "reads_packed_codes", False),
                check_finite=not getattr(impl, "checks_finite", False),
            )
        except (ValueError, TypeError) as exc:
            if per_block < n_q:
                raise type(exc)(f"{exc} (in the query block starting at row {start})") from None
            raise
        check_cmc_size(n_q, problem.n_gallery, options.max_rank)
        if gallery is not None and state is None and hasattr(impl, "prepare"):  # a third party may have none
            state = impl.prepare(problem)
        within = None  # progress inside the block, from implementations that report it
        if report is not None and takes(impl.compute, "progress"):
            within = block_progress(report, start)
        try:
            parts.append(compute_block(impl, problem, options, state, within))
        except v.NonFiniteError as exc:  # the implementation's own check: the error of ours
            if exc.at is None or problem.finite:
                raise
            message = v.nonfinite_message(exc.name, _matrix_value(problem, exc.name, exc.at), exc.at)
            if per_block < n_q:
                message += f" (in the query block starting at row {start})"
            raise v.NonFiniteError(message, exc.name, exc.at) from None
        if report is not None:
            report(stop)
    n_gallery = cast(Problem, problem).n_gallery  # the loop runs at least once
    return aggregate(PerQuery.concat(parts), options, protocol, impl.name, n_gallery=n_gallery)


def _matrix_value(problem: Problem, name: str, at) -> Any:
    """The value at ``at`` of the ranking matrix the caller gave as ``name`` (scores held as
    negated distances are negated back)."""
    if name == "scores" and problem.scores is not None:
        return problem.scores[at]
    value = cast(np.ndarray, problem.distances)[at]
    return -value if name == "scores" else value
