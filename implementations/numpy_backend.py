"""The numpy implementation: vectorised over queries, in blocks of bounded memory.

Per block of queries (``block * N * 8`` bytes stays under 16 MB, so no Q x N int64 array
ever exists):

1. distances: given float32/float64, or Hamming distances from codes packed into uint64
   words (XOR + ``np.bitwise_count``);
2. one sort per row with an explicit tie key.  float32 and integer distances are mapped to
   an order-preserving integer and packed with the tie key (gallery index, or N-1-index
   for ``reverse``) and the relevance bit into one integer key per item; the sort is of
   values, so the result does not depend on how a sort orders equal keys.  float64
   distances use ``np.argsort(kind="stable")`` (on the reversed row for ``reverse``).  Junk
   items get a sentinel that sorts after every distance, so they take no rank;
3. the metrics of the sorted block (shared with torch): ``_vector_common.block_metrics``.
"""
from __future__ import annotations

import sys
from typing import Optional

import numpy as np
from retrieval_conformance.implementations._vector_common import (
    FIELDS,
    NumpyOps,
    block_metrics,
    block_rows,
    empty_per_query,
    radius_values,
    to_per_query,
)
from retrieval_conformance.implementations.registry import Implementation
from retrieval_conformance.reference.cutoffs import within_gallery
from retrieval_conformance.reference.problem import Options, PerQuery, Problem

_SENTINEL32 = np.int64(0x7FFFFFFF)  # above every order-mapped finite float32


def pack_bits(bits: np.ndarray) -> np.ndarray:
    """(n, B) {0,1} uint8 -> (n, ceil(B/64)) uint64 words (zero padding keeps Hamming)."""
    packed = np.packbits(bits.astype(np.uint8, copy=False), axis=1)
    words = -(-packed.shape[1] // 8)
    out = np.zeros((packed.shape[0], words * 8), dtype=np.uint8)
    out[:, : packed.shape[1]] = packed
    return out.view(np.uint64)


def hamming_block(q_words: np.ndarray, db_words: np.ndarray) -> np.ndarray:
    """popcount(q XOR r) summed over words: (b, N), uint8 for one word, else uint16/int32."""
    W = q_words.shape[1]
    if W == 1:
        return np.bitwise_count(q_words[:, 0, None] ^ db_words[None, :, 0])
    out = np.zeros((q_words.shape[0], db_words.shape[0]), dtype=np.uint16 if W < 1024 else np.int32)
    for w in range(W):
        out += np.bitwise_count(q_words[:, w, None] ^ db_words[None, :, w])
    return out


def float32_order_key(d: np.ndarray) -> np.ndarray:
    """Order-preserving int32 image of finite float32 values; -0.0 and 0.0 map to 0.

    Negative floats have their magnitude bits flipped (larger magnitude sorts lower) and
    are shifted up by one, so that -0.0 lands on +0.0 and equal floats get equal keys.
    """
    b = np.ascontiguousarray(d).view(np.int32)
    sign = b >> 31  # -1 for negative floats, 0 otherwise
    out = b ^ (sign & np.int32(0x7FFFFFFF))
    out -= sign
    return out


class _Source:
    """Builds the sorted blocks of one problem."""

    def __init__(self, problem: Problem, ties: str):
        self.p = problem
        self.ties = ties
        self.n = problem.n_gallery
        if problem.distances is None:
            self.q_words = pack_bits(problem.query_bits)
            self.db_words = pack_bits(problem.db_bits)
        else:
            self.q_words = self.db_words = None

    def distances(self, s: int, e: int) -> np.ndarray:
        if self.q_words is not None:
            return hamming_block(self.q_words[s:e], self.db_words)
        d = self.p.distances[s:e]
        # validated input is float32/float64; anything else is widened (order kept)
        return d if d.dtype in (np.float32, np.float64) else d.astype(np.float64)

    def sorted_block(self, dist: np.ndarray, rel: np.ndarray, junk: Optional[np.ndarray]):
        """(key_s, rel_s): rows sorted by (distance, tie key), junk last.

        float32 and integer distances: one unsigned/int64 key per item,
        ``(order-mapped distance, tie key, relevance bit)``, sorted by value.  With a tie key
        (``stable``: index, ``reverse``: N-1-index) the keys are unique; the other policies
        need only per-group counts, so the key is (distance, relevance) and equal keys are
        equal values.  Sorting values (not indices) leaves nothing to the sort's tie order.
        """
        n = self.n
        reverse = self.ties == "reverse"
        if dist.dtype == np.float64:
            d = dist + 0.0  # -0.0 + 0.0 = +0.0
            if junk is not None:
                d = np.where(junk, np.inf, d)
            if reverse:
                idx = np.argsort(d[:, ::-1], axis=1, kind="stable")
                idx = (n - 1) - idx
            else:
                idx = np.argsort(d, axis=1, kind="stable")
            return np.take_along_axis(d, idx, axis=1), np.take_along_axis(rel, idx, axis=1)
        tie_bits = int(n - 1).bit_length() if self.ties in ("stable", "reverse") else 0
        if dist.dtype == np.float32:
            key = float32_order_key(dist).astype(np.int64)
            sentinel, key_type = _SENTINEL32, np.int64
        else:
            top = self.p.query_bits.shape[1] + 1  # Hamming distances are <= the code length
            sentinel = top
            total = int(top).bit_length() + tie_bits + 1
            key_type = next(t for t, b in ((np.uint8, 8), (np.uint16, 16), (np.uint32, 32), (np.int64, 63))
                            if total <= b)
            key = dist.astype(key_type)
        if junk is not None:
            key[junk] = sentinel
        shift = key_type(tie_bits + 1)
        key <<= shift
        if tie_bits:
            tie = np.arange(n, dtype=key_type)
            if reverse:
                tie = tie[::-1]
            key |= tie[None, :] << key_type(1)
        key |= rel
        # radix sort for 8/16-bit keys, the vectorised quicksort otherwise (values: either is exact)
        key.sort(axis=1, kind="stable" if key.itemsize <= 2 else None)
        if sys.byteorder == "little":  # the relevance bit sits in the lowest byte
            rel_s = (key.view(np.uint8)[:, :: key.itemsize] & np.uint8(1)).view(bool)
        else:  # pragma: no cover
            rel_s = (key & key_type(1)).astype(bool)
        key_s = key >> shift if self.ties not in ("stable", "reverse") else None
        return key_s, rel_s


class NumpyImplementation(Implementation):
    """Vectorised numpy: blocks of queries, one sort per row, explicit tie keys."""

    name = "numpy"
    speed_rank = 10

    def __init__(self, block_bytes: Optional[int] = None):
        self.block_bytes = block_bytes

    @within_gallery
    def compute(self, problem: Problem, options: Options) -> PerQuery:
        """Per-query metrics of ``problem`` under ``options`` (see ``_vector_common``)."""
        ops = NumpyOps()
        Q, N = problem.n_queries, problem.n_gallery
        out = empty_per_query(Q, options)
        if Q == 0 or N == 0:
            return to_per_query(out, options)
        if N >= 2 ** 31:
            raise ValueError(f"gallery: at most 2**31 - 1 items are supported, got {N}")
        src = _Source(problem, options.ties)
        kwargs = {} if self.block_bytes is None else {"budget": self.block_bytes}
        step = block_rows(Q, N, **kwargs)
        for s in range(0, Q, step):
            e = min(Q, s + step)
            dist = src.distances(s, e)
            rel = problem.relevance_block(s, e)
            junk = problem.junk_block(s, e) if problem.has_junk else None
            if junk is not None:
                rel = rel & ~junk  # junk takes no rank and is never counted as relevant
            key_s, rel_s = src.sorted_block(dist, rel, junk)
            n_kept = np.full(e - s, N, dtype=np.int64)
            if junk is not None:
                n_kept -= junk.sum(axis=1)
            res = block_metrics(ops, key_s, rel_s, n_kept, options, row0=s)
            for name in FIELDS:
                out[name][s:e] = res[name]
            if options.radius is not None:
                within = dist.astype(np.float64) <= float(options.radius)
                if junk is not None:
                    within &= ~junk
                p, r = radius_values(ops, within, rel, res["n_relevant"])
                out["precision_at_radius"][s:e] = p
                out["recall_at_radius"][s:e] = r
        return to_per_query(out, options)
