"""The families of generated inputs: each aims at one clause, and says how its inputs are drawn.

A :class:`Family` entry carries everything :func:`~..generate.generate` does differently for it:
the ranges of its query and gallery counts, how few distinct distances it uses, its ``shape``
(the edit that gives every input the family's property, and the cut-off k it asks for), whether a
cut-off may be added at random, whether max_rank runs past the gallery, and whether a score
adapter gets scores <= 0.  :class:`Capabilities` says what an adapter can express, and
:func:`family_skip_reason` why a family cannot run with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Tuple, Union

import numpy as np
from retrieval_conformance.conformance.harness.inputs.drawing import Drawer, IdRelevance, MaskRelevance

Relevance = Union[MaskRelevance, IdRelevance]
#: shape(drawer, distances (Q, N), relevance, Q, N) -> the case's cut-off k (None: whole gallery);
#: edits the distances and the relevance in place
Shape = Callable[[Drawer, np.ndarray, Relevance, int, int], Optional[int]]


@dataclass(frozen=True)
class Capabilities:
    """What the adapter under test can express (decides what the generators produce)."""

    k: bool = True  # the function takes a cut-off
    junk: bool = False  # it can be told about junk (explicitly or by ReID cameras)
    ids: bool = False  # relevance must be identity-based (ReID)
    multi_query: bool = True  # it receives several queries at once
    protocol_k: bool = True  # the protocol defines AP@k
    scores: bool = False  # it takes similarity scores (the score values themselves can matter)
    grades: bool = False  # it takes graded relevance (nDCG)
    metric: str = "ap"  # the per-query value its main field is the mean of (ap, ndcg, rr, ap_at_r, recall)


# -- shapes: the edit that gives an input its family's property --------------------------------


def _pick(d: Drawer, mask: np.ndarray) -> int:
    """One index where ``mask`` is True (``mask`` must have one)."""
    where = np.flatnonzero(mask)
    return int(where[d.integer(0, where.size - 1)])


def _two_items(d: Drawer, n_g: int) -> Tuple[int, int]:
    """Two distinct gallery indices (``n_g >= 2``)."""
    a = d.integer(0, n_g - 1)
    b = d.integer(0, n_g - 2)
    return a, b + 1 if b >= a else b


def as_drawn(d: Drawer, dist: np.ndarray, g: Relevance, n_q: int, n_g: int) -> Optional[int]:
    """No edit: the input as drawn, over the whole gallery."""
    return None


def tied_relevant_and_other(d: Drawer, dist: np.ndarray, g: Relevance, n_q: int, n_g: int) -> Optional[int]:
    """Some query has a relevant and a non-relevant item at one distance."""
    q = d.integer(0, n_q - 1)
    a, b = _two_items(d, n_g)
    g.make_other(q, a)
    g.make_relevant(q, b)
    dist[q, b] = dist[q, a]
    return None


def query_without_relevant(d: Drawer, dist: np.ndarray, g: Relevance, n_q: int, n_g: int) -> Optional[int]:
    g.no_relevant(d.integer(0, n_q - 1))
    return None


def no_hit_in_top_k(d: Drawer, dist: np.ndarray, g: Relevance, n_q: int, n_g: int) -> Optional[int]:
    """One relevant and one non-relevant item at least; every relevant item is moved (keeping
    their order) after every non-relevant one, and k <= the non-relevant ones."""
    q = d.integer(0, n_q - 1)
    a, b = _two_items(d, n_g)
    g.make_other(q, a)
    g.make_relevant(q, b)
    rel_q, other_q = g.view(q)
    dist[q, rel_q] += dist[q, other_q].max() + 1 - dist[q, rel_q].min()
    return d.integer(1, int(other_q.sum()))


def relevant_last(d: Drawer, dist: np.ndarray, g: Relevance, n_q: int, n_g: int) -> Optional[int]:
    g.relevant_last(dist)
    return None


def k_inside(d: Drawer, dist: np.ndarray, g: Relevance, n_q: int, n_g: int) -> Optional[int]:
    """1 <= k < N, and some query with R > k: the AP@k divisors (hits, R, min(k, R), k) differ."""
    k = d.integer(1, n_g - 1)
    q = d.integer(0, n_q - 1)
    while True:
        rel_q, _ = g.view(q)
        if rel_q.sum() > k:
            return k
        g.make_relevant(q, _pick(d, ~rel_q))


def k_at_gallery(d: Drawer, dist: np.ndarray, g: Relevance, n_q: int, n_g: int) -> Optional[int]:
    return n_g


def k_beyond_gallery(d: Drawer, dist: np.ndarray, g: Relevance, n_q: int, n_g: int) -> Optional[int]:
    return n_g + d.integer(1, 5)


def junk_before_first_relevant(d: Drawer, dist: np.ndarray, g: Relevance, n_q: int, n_g: int) -> Optional[int]:
    """Some query has a junk item ranked strictly first, before its relevant items."""
    q = d.integer(0, n_q - 1)
    a, b = _two_items(d, n_g)
    g.make_relevant(q, b)
    g.make_junk(q, a)
    dist[q] += 1
    dist[q, a] = 0
    return None


@dataclass(frozen=True)
class Family:
    """A family of generated inputs aimed at one clause (spec §11 bugs), and how it is drawn."""

    id: str
    clause: str
    purpose: str
    needs_k: bool = False
    needs_multi_query: bool = False
    needs_ids: bool = False
    needs_scores: bool = False
    queries: Tuple[int, int] = (1, 3)  # range of the number of queries (one query without a draw when lo == hi)
    gallery: Tuple[int, int] = (1, 8)  # range of the gallery size (likewise)
    max_levels: Optional[int] = None  # at most this many distinct distances (None: up to N + 2)
    shape: Shape = field(default=as_drawn, repr=False, compare=False)
    optional_k: bool = False  # a cut-off in 1..N is added half of the time (when the adapter takes one)
    max_rank_past_gallery: bool = False  # max_rank = N + 1..5 instead of its usual draw
    non_positive_scores: bool = False  # score adapters get similarities <= 0
    graded: bool = False  # relevant items get grades 1..3 (adapters that take grades; 1 for the others)
    metrics: Tuple[str, ...] = ()  # only for adapters whose main value is one of these (empty: every adapter)
    needs_junk: bool = False


FAMILIES: Tuple[Family, ...] = (
    Family(
        "ties/tie-heavy",
        "spec §4 ties",
        "few distinct distances, relevant and non-relevant items tied (unstable, reversed or grouped ties)",
        gallery=(2, 24),  # > 16 so that non-AVX numpy introsort is unstable too
        max_levels=3,
        shape=tied_relevant_and_other,
        optional_k=True,
    ),
    Family(
        "empty/no-relevant",
        "spec §8 empty",
        "queries with no relevant item at all, or none in the top k (dropped instead of counted)",
        shape=query_without_relevant,
        optional_k=True,
    ),
    Family(
        "empty/no-hit-in-top-k",
        "spec §8 empty",
        "a query whose relevant items all rank below the cut-off k (zero vs skip_no_hit)",
        needs_k=True,
        gallery=(2, 8),
        shape=no_hit_in_top_k,
    ),
    Family(
        "ap/relevant-last",
        "spec §5 ap_rule",
        "relevant items ranked last (gnd[0:-1], off-by-one ranks, trapezoid vs precision-sum)",
        gallery=(2, 8),
        shape=relevant_last,
    ),
    Family(
        "k/inside",
        "spec §6 ap_at_k",
        "1 <= k < N with R > k (what AP@k divides by; topk ignored)",
        needs_k=True,
        gallery=(2, 8),
        shape=k_inside,
    ),
    Family(
        "k/at-gallery", "spec §6 k", "k equal to the gallery size (AP@N is full AP)", needs_k=True, shape=k_at_gallery
    ),
    Family("k/beyond-gallery", "spec §6 k", "k larger than the gallery", needs_k=True, shape=k_beyond_gallery),
    Family("size/single-item", "spec §0 gallery", "a one-item gallery", gallery=(1, 1)),
    Family("mean/one-query", "spec §8 mean over queries", "a single query", queries=(1, 1)),
    Family(
        "mean/many-queries",
        "spec §8 mean over queries",
        "many queries (a stray break after the first query)",
        needs_multi_query=True,
        queries=(2, 6),
        optional_k=True,
    ),
    Family(
        "cmc/short-gallery",
        "spec §7 cmc",
        "fewer gallery items than max_rank (CMC must stay flat)",
        needs_ids=True,
        max_rank_past_gallery=True,
    ),
    Family(
        "scores/non-positive",
        "spec §2 relevance",
        "similarity scores <= 0 (a relevant item counts whatever its score)",
        needs_scores=True,
        non_positive_scores=True,
    ),
    Family(
        "ndcg/graded",
        "spec §7 nDCG",
        "graded relevance 0..3 (linear against exponential gain; the ideal over every relevant item)",
        gallery=(2, 8),
        graded=True,
        optional_k=True,
        metrics=("ndcg",),
    ),
    Family(
        "ndcg/graded-ties",
        "spec §4 ties",
        "graded items tied with items of other grades (tie-averaged gains against one order)",
        gallery=(2, 20),
        max_levels=3,
        shape=tied_relevant_and_other,
        graded=True,
        optional_k=True,
        metrics=("ndcg",),
    ),
    Family(
        "junk/before-first-relevant",
        "spec §3 junk is removed before ranking",
        "a junk item ranked before a query's first relevant item (junk takes no rank)",
        gallery=(2, 8),
        shape=junk_before_first_relevant,
        needs_junk=True,
        optional_k=True,
        metrics=("rr",),
    ),
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
    if f.metrics and caps.metric not in f.metrics:
        return f"only meaningful for adapters returning {' or '.join(f.metrics)}"
    if f.needs_junk and not caps.junk:
        return "the adapter's function cannot be told about junk items"
    return None
