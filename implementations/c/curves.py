"""Per-query curves in C (``rc.curves(..., implementation="c")``).

The C unit ``csrc/rc_curves.c`` counts the items and relevant items of every tie group (Hamming
codes: at every distance, in one XOR + popcount pass, no sort; float distances: after a stable
radix sort of the row) and reads every curve off those counts; here the inputs are packed for
it: the codes as uint64 words, distances as they are (float32 or float64); relevance from labels
as C compares them (single ids as int64, multi-hot labels packed into words), or, with a
relevance matrix or junk, a block of queries at a time as one byte per (query, item) (0 other,
1 relevant, 2 junk), read by the same ``relevance_block`` / ``junk_block`` as numpy.  P@N comes
back as ``num / (scale N)`` and is divided here in Python integers (one correctly rounded
division, for any N).
"""

from __future__ import annotations

from typing import Optional, cast

import numpy as np
from retrieval_conformance.implementations.c.library import (
    _TIES,
    _require,
    usable_features,
)
from retrieval_conformance.implementations.c.library import (
    unavailable_reason as library_unavailable,
)
from retrieval_conformance.implementations.c.threads import resolve_threads
from retrieval_conformance.implementations.numpy_backend import pack_bits
from retrieval_conformance.implementations.vector.relevance_blocks import junk_block, relevance_block
from retrieval_conformance.reference.contract.codes import pack_words
from retrieval_conformance.reference.contract.curves import CurveRequest, CurveValues
from retrieval_conformance.reference.contract.problem import Problem
from retrieval_conformance.reference.contract.registry import ImplementationUnavailable

_KINDS = {"pr_interpolated": 0, "pr_radius": 1, "precision_at_n": 2}
_GROUPED_N, _NOMEM = 1, 2
_REL_STATE, _REL_IDS, _REL_MULTI = 0, 1, 2
_CODES, _F64, _F32 = 0, 1, 2
#: (query, item) bytes of one block's relevance-and-junk matrix: 32 MiB
BLOCK_ITEMS = 2**25
#: level numerators and denominators travel as int64
LEVEL_LIMIT = 2**62


def unavailable_reason(problem: Optional[Problem] = None) -> Optional[str]:
    """Why C cannot draw this problem's curves, or None."""
    reason = library_unavailable()
    if reason is not None:
        return reason
    return None


def _ptr(array: Optional[np.ndarray]) -> Optional[int]:
    return None if array is None else array.ctypes.data


def _label_source(problem: Problem):
    """(mode, query side, gallery side) when C reads relevance from labels (no junk), else None."""
    if problem.has_junk or problem.query_labels is None:
        return None
    if problem.multi_label:  # labels are given on both sides when query_labels is
        return (
            _REL_MULTI,
            np.ascontiguousarray(pack_words(problem.query_labels)),
            np.ascontiguousarray(pack_words(cast(np.ndarray, problem.db_labels))),
        )
    return (
        _REL_IDS,
        np.ascontiguousarray(problem.query_labels, dtype=np.int64),
        np.ascontiguousarray(problem.db_labels, dtype=np.int64),
    )


def per_query_curves(problem: Problem, request: CurveRequest) -> CurveValues:
    """Per-query values of ``request.kind`` for every query of ``problem`` (codes)."""
    reason = unavailable_reason(problem)
    if reason is not None:
        raise ImplementationUnavailable(f"implementation 'c' cannot draw curves here: {reason}")
    for level in request.levels:
        if level.numerator >= LEVEL_LIMIT or level.denominator >= LEVEL_LIMIT:
            raise ValueError(
                f"recall_levels: implementation='c' takes levels whose numerator and denominator "
                f"are below 2**62, got {level}; use implementation='numpy'"
            )
    lib = _require()
    Q, N = problem.n_queries, problem.n_gallery
    if problem.query_bits is not None:
        dist_kind, distances, bits = _CODES, None, problem.query_bits.shape[1]
        q_words = np.ascontiguousarray(pack_bits(problem.query_bits))
        db_words = np.ascontiguousarray(
            problem.db_words if problem.db_words is not None else pack_bits(cast(np.ndarray, problem.db_bits))
        )  # codes on both sides
    else:
        distances = cast(np.ndarray, problem.distances)  # a problem has codes or distances
        if distances.dtype not in (np.float32, np.float64):  # validated input is float; anything else widened
            distances = distances.astype(np.float64)
        distances = np.ascontiguousarray(distances)
        dist_kind, bits, q_words, db_words = (_F32 if distances.dtype == np.float32 else _F64), 0, None, None
    kind = request.kind
    width = {
        "pr_interpolated": len(request.levels),
        "pr_radius": len(request.radii),
        "precision_at_n": len(request.ns),
    }[kind]
    out_a, out_b = np.zeros((Q, width)), np.zeros((Q, width))
    out_num, out_scale = np.zeros((Q, width), dtype=np.int64), np.ones((Q, width), dtype=np.int64)
    n_relevant = np.zeros(Q, dtype=np.int64)
    level_num = np.array([lv.numerator for lv in request.levels], dtype=np.int64)
    level_den = np.array([lv.denominator for lv in request.levels], dtype=np.int64)
    radii = np.array(request.radii or (0.0,), dtype=np.float64)
    ns = np.array(request.ns or (1,), dtype=np.int64)
    failure = np.zeros(2, dtype=np.int64)
    features = usable_features()  # bit 0 popcount, bit 4 the AVX-512 pass
    threads = resolve_threads(None, Q, N)
    labels = _label_source(problem)
    step = max(1, BLOCK_ITEMS // N) if labels is None else Q
    for s in range(0, Q, step):
        e = min(Q, s + step)
        state = q_ids = db_ids = q_labels = db_labels = None
        if labels is None:  # a relevance matrix or junk: one byte per (query, item)
            state = relevance_block(problem, s, e).astype(np.uint8)
            if problem.has_junk:
                state[junk_block(problem, s, e)] = 2
            state = np.ascontiguousarray(state)
            mode, label_words = _REL_STATE, 0
        elif labels[0] == _REL_IDS:
            mode, q_ids, db_ids, label_words = _REL_IDS, labels[1][s:e], labels[2], 0
        else:
            mode, q_labels, db_labels = _REL_MULTI, labels[1][s:e], labels[2]
            label_words = db_labels.shape[1]
        status = lib.rc_curves(
            dist_kind,
            _ptr(None if distances is None else distances[s:e]),
            _ptr(None if q_words is None else q_words[s:e]),
            _ptr(db_words),
            e - s,
            N,
            1 if db_words is None else db_words.shape[1],
            bits,
            mode,
            _ptr(state),
            _ptr(q_ids),
            _ptr(db_ids),
            _ptr(q_labels),
            _ptr(db_labels),
            label_words,
            _KINDS[kind],
            _TIES[request.ties],
            _ptr(level_num),
            _ptr(level_den),
            len(request.levels),
            _ptr(radii),
            len(request.radii),
            _ptr(ns),
            len(request.ns),
            _ptr(out_a[s:e]),
            _ptr(out_b[s:e]),
            _ptr(out_num[s:e]),
            _ptr(out_scale[s:e]),
            _ptr(n_relevant[s:e]),
            _ptr(failure),
            features,
            threads,
        )
        if status == _GROUPED_N:
            _raise_grouped(problem, request, s + int(failure[0]), int(failure[1]))
        if status == _NOMEM:
            raise MemoryError(f"implementation 'c': no memory for the curves' per-thread arrays ({N} items)")
        if status != 0:
            raise RuntimeError(f"implementation 'c': rc_curves refused its arguments (status {status})")
    if kind == "precision_at_n":  # H / N = num / (scale N), one correctly rounded division each
        out_a = np.array(
            [
                [int(a) / (int(c) * n) for a, c, n in zip(row_a, row_c, request.ns)]
                for row_a, row_c in zip(out_num.tolist(), out_scale.tolist())
            ]
        ).reshape(Q, width)
    return CurveValues(n_relevant, out_a, out_b if kind == "pr_radius" else None)


def _raise_grouped(problem: Problem, request: CurveRequest, query: int, index: int) -> None:
    """The error of an N inside a tie group, with the group's ranks (recounted for that query)."""
    n = request.ns[index]
    if problem.query_bits is None:
        dist = cast(np.ndarray, problem.distances)[query].astype(np.float64) + 0.0  # -0.0 ties with 0.0
    else:
        words = pack_bits(problem.query_bits[query : query + 1])
        db_words = problem.db_words if problem.db_words is not None else pack_bits(cast(np.ndarray, problem.db_bits))
        dist = np.bitwise_count(words[:, None, :] ^ db_words[None, :, :]).sum(axis=2)[0]
    if problem.has_junk:
        dist = dist[~junk_block(problem, query, query + 1)[0]]
    depth = min(n, dist.shape[0])
    at = np.sort(dist)[depth - 1]
    first, end = int((dist < at).sum()), int((dist <= at).sum())
    raise ValueError(
        f"n: N={n} falls inside a tie group (ranks {first + 1}..{end}) of query {query}; under "
        "ties='grouped' a list length inside a tie group has no meaning. Use ties='expected', or an N "
        "at a tie-group boundary"
    )
