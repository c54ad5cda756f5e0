"""C's two-level filter of a float32 row gives the numbers of the whole pass.

With a cut-off, AVX2, float32 and no junk, C reads the row once for the best value of each
block of 32 items, finds by bisection the largest value t reached by at least L block bests
(L different items: the row's L-th best is at least t), and reads again only the blocks whose
best reaches t (``csrc/rc_float_filter.c``, ``row_filter32_tops``).  It runs when the row has
at least 4 blocks per rank read (``RC_PREFIX_TOPS_PER_L``): the problems below are built so.

* Rows in every order, with ties across the threshold (few levels: the block bests tie, so
  the blocks that reach t hold more items than the room, and the selection compacts or gives
  up), negative values and both zeros, scores and distances, a short last block: bit for bit
  the arrays of the whole pass, and of the streaming selection (AVX2 off).
* Without INP (and junk and grades), a relevance row is only counted: the relevant items C
  needs are among those it places (one beyond the threshold ranks past L), found by their
  flags; with few relevant items, none may be among them (then every one is read).
* The finite check rides on a running sum of the row: a row of huge finite values whose sum
  overflows is still accepted (the row is scanned again), and a NaN or infinity is named as
  numpy names it, wherever it lies.

Skipped when the library is not built, or fails with ``RC_REQUIRE=c``.
"""

from __future__ import annotations

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.support.c_test_support import TIES
from retrieval_conformance.reference.contract.metric_names import PER_QUERY_FIELD
from retrieval_conformance.reference.contract.problem import Options, Problem

#: the prefix path (and the bounded pass) off: popcnt and fma only
WITHOUT_PREFIX = 3
#: every feature but AVX2: the streaming selection with SSE2
WITHOUT_AVX2 = 7
#: cpu_features bit 3
AVX2 = 8
#: the metrics asked for: each reads ranks up to k (INP: the last relevant item, from counts).
#: Without INP, C only counts a relevance row and finds the relevant items among those placed.
ASKED = [("map", "precision_at_k", "mrr", "ndcg_at_k", "minp"), ("map", "recall_at_k", "mrr", "ndcg_at_k")]


def _rows(rng, n: int, order: str, levels: int) -> np.ndarray:
    """Three float32 rows on ``levels`` values in [-1, 1) (zeros of both signs), in ``order``."""
    D = (np.sort(rng.integers(-levels, levels, size=(3, n)), axis=1) / levels).astype(np.float32)
    D[D == 0] = np.where(rng.random(int((D == 0).sum())) < 0.5, np.float32(-0.0), np.float32(0.0))
    if order == "descending":
        D = D[:, ::-1]
    elif order == "random":
        D = rng.permuted(D, axis=1)
    return np.ascontiguousarray(D)


def _computed(c_backend, p: Problem, o: Options, mask: int):
    impl = c_backend.CImplementation(num_threads=1)
    try:
        c_backend.cpu_features(mask)
        return impl.compute(p, o)
    finally:
        c_backend.cpu_features(c_backend.ALL_FEATURES)


@pytest.mark.parametrize("order", ["ascending", "descending", "random"])
@pytest.mark.parametrize("ties", TIES)
def test_two_level_filter_equals_the_whole_pass(c_backend, order, ties):
    if not c_backend.cpu_features() & AVX2:
        pytest.skip("the two-level filter needs AVX2")
    rng = np.random.default_rng(1300 + TIES.index(ties))
    compared = 0
    for case, levels in enumerate((10**6, 3000, 40, 5)):
        n = int(rng.integers(6000, 12000)) + (17 if case % 2 else 0)  # a short last block
        D = _rows(rng, n, order, levels)
        rel = rng.random(D.shape) < 0.004
        rel[:, 0] = True
        ranking = {"scores": -D} if case % 2 else {"distances": D}
        p = Problem(n_queries=3, n_gallery=n, relevance=rel, **ranking)
        for k, asked in [(k, asked) for k in (1, 9, 40) for asked in ASKED]:
            o = Options(ties=ties, k=k, ap_at_k=("hits", "r")[k % 2], metrics=asked)
            try:
                taken = _computed(c_backend, p, o, c_backend.ALL_FEATURES)
            except ValueError:  # grouped: a cut-off inside a tie group
                assert ties == "grouped"
                continue
            for mask in (WITHOUT_PREFIX, WITHOUT_AVX2):
                other = _computed(c_backend, p, o, mask)
                for field in [PER_QUERY_FIELD[name] for name in asked] + ["n_relevant", "hits_at_k"]:
                    got, want = getattr(taken, field), getattr(other, field)
                    assert got.tobytes() == want.tobytes(), f"{field} {order} levels={levels} k={k} mask={mask}"
            compared += 1
    assert compared >= (4 if ties == "grouped" else 24)


def test_an_overflowing_sum_is_no_error(c_backend):
    rng = np.random.default_rng(14)
    S = rng.random((2, 4000)).astype(np.float32)
    S[0, 100:4000:7] = np.float32(3e38)  # finite, but their sum is not
    S[1, 3999] = np.finfo(np.float32).max
    rel = rng.random(S.shape) < 0.01
    kwargs = dict(scores=S, relevance=rel, k=5, metrics=["map"])
    c = rc.evaluate(implementation="c", **kwargs)
    assert np.asarray(c.ap).tobytes() == np.asarray(rc.evaluate(implementation="numpy", **kwargs).ap).tobytes()


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("kind", ["scores", "distances"])
def test_a_nonfinite_value_is_named_as_numpy_names_it(c_backend, bad, kind):
    rng = np.random.default_rng(15)
    for place in [(0, 0), (1, 31), (1, 2000), (2, 4015), (2, 4000)]:  # 4016 = 125 blocks and 16
        M = rng.random((3, 4016)).astype(np.float32)
        M[place] = bad
        M[2, 4010] = np.nan  # a later one is not the one named
        kwargs = {kind: M, "relevance": rng.random(M.shape) < 0.01, "k": 5, "metrics": ["map"]}
        with pytest.raises(ValueError) as expected:
            rc.evaluate(implementation="numpy", **kwargs)
        with pytest.raises(ValueError) as got:
            rc.evaluate(implementation="c", **kwargs)
        assert str(got.value) == str(expected.value), f"{place}"
