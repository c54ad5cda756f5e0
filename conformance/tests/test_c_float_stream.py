"""C reads a float row once: the top-L filter is a streaming selection that also checks the row.

* With a cut-off, the items up to the L-th smallest distance come from one read of the row
  (``rc_float_filter.c``): the threshold starts at +inf and comes down (the L-th smallest of
  what was kept) whenever the room for candidates is full.  Rows in every order (ascending:
  few compactions; descending: every item admitted, a compaction every few hundred items), with
  ties at the threshold (the filter gives up: the whole pass), junk, scores, float32 and
  float64: bit for bit the arrays of the whole pass.
* ``evaluate`` leaves the NaN/inf check of distances and scores to C
  (``Implementation.checks_finite``), which checks each row on that read; the error is the
  front end's own (numpy's, which still checks up front): same message, same first index,
  same block suffix, for every path C takes (cut-off or not, a query without relevant items,
  ``grouped`` with a cut-off, a radius, ids, multi-hot labels, junk).

Skipped when the library is not built, or fails with ``RC_REQUIRE=c``.
"""

from __future__ import annotations

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.crosscheck import same_bits
from retrieval_conformance.conformance.support.c_test_support import TIES
from retrieval_conformance.reference.contract import validation
from retrieval_conformance.reference.contract.problem import Options, Problem

#: the prefix path (and the bounded pass) off: popcnt and fma only
WITHOUT_PREFIX = 3


def _ordered_rows(rng, n: int, order: str, levels: int, dtype) -> np.ndarray:
    """Three rows on ``levels`` distance values, in gallery order ``order``."""
    D = np.sort(rng.integers(0, levels, size=(3, n)), axis=1).astype(dtype) / levels
    if order == "descending":
        D = D[:, ::-1]
    elif order == "random":
        D = rng.permuted(D, axis=1)
    return np.ascontiguousarray(D)


@pytest.mark.parametrize("order", ["ascending", "descending", "random"])
@pytest.mark.parametrize("ties", TIES)
def test_streaming_selection_equals_the_whole_pass(c_backend, order, ties):
    rng = np.random.default_rng(900 + TIES.index(ties))
    impl = c_backend.CImplementation(num_threads=1)
    compared = 0
    for case, levels in enumerate((10**6, 3000, 40)):  # 40 levels: ties fill the room, the filter gives up
        n = int(rng.integers(5000, 9000))
        D = _ordered_rows(rng, n, order, levels, (np.float32, np.float64)[case % 2])
        rel = rng.random(D.shape) < 0.01
        junk = rng.random(D.shape) < 0.05 if case != 1 else None
        ranking = {"scores": -D} if case == 1 else {"distances": D}
        p = Problem(n_queries=3, n_gallery=n, relevance=rel, junk=junk, **ranking)
        for k in (1, 25, 300):
            o = Options(ties=ties, k=k, ap_at_k="r", max_rank=5, metrics=("map",) if k == 25 else None)
            try:
                taken = impl.compute(p, o)
                c_backend.cpu_features(WITHOUT_PREFIX)
                whole = impl.compute(p, o)
            except ValueError:  # grouped: a cut-off inside a tie group
                assert ties == "grouped"
                continue
            finally:
                c_backend.cpu_features(c_backend.ALL_FEATURES)
            if o.metrics is None:
                assert same_bits(taken, whole, f"{order} levels={levels} k={k}") == []
            else:  # the values not asked for are not computed (the result shows none of them)
                assert taken.ap.tobytes() == whole.ap.tobytes(), f"{order} levels={levels} k={k}"
            compared += 1
    assert compared >= (3 if ties == "grouped" else 9)


def test_evaluate_leaves_the_finite_check_to_c(c_backend, monkeypatch):
    checked = []
    original = validation.check_finite
    monkeypatch.setattr(validation, "check_finite", lambda name, arr: (checked.append(name), original(name, arr)))
    rng = np.random.default_rng(3)
    S, rel = rng.random((4, 2000)), rng.random((4, 2000)) < 0.02
    rc.evaluate(scores=S, relevance=rel, k=10, implementation="c")
    assert checked == []
    rc.evaluate(scores=S, relevance=rel, k=10, implementation="numpy")
    assert checked == ["scores"]


def _error(implementation: str, **kwargs) -> str:
    with pytest.raises(ValueError) as err:
        rc.evaluate(implementation=implementation, **kwargs)
    return str(err.value)


#: where the first NaN/inf lies, (query, column) of a 5 x 3000 matrix (3000 = 93 blocks of 32 and 24)
PLACES = [(0, 0), (2, 2999), (3, 1500), (4, 31)]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_c_names_a_nonfinite_value_as_the_front_end_does(c_backend, place, bad):
    rng = np.random.default_rng(11)
    Q, N = 5, 3000
    ids_q, ids_g = rng.integers(0, 40, Q), rng.integers(0, 40, N)
    ids_q[1] = 99  # a query without relevant items
    rel = ids_q[:, None] == ids_g[None, :]
    multi_hot = np.eye(100, dtype=np.uint8)
    cases = [
        dict(k=10),
        dict(k=None),
        dict(k=10, ties="grouped"),
        dict(k=10, radius=0.5),
        dict(k=None, ties="grouped"),
        dict(k=200, metrics=["map"]),
    ]
    for dtype in (np.float32, np.float64):
        for kind in ("distances", "scores"):
            M = rng.random((Q, N)).astype(dtype)
            M[place] = bad
            M[4, 2000] = np.nan  # a later one is not the one named
            inputs = [
                dict(relevance=rel),
                dict(query_labels=ids_q, db_labels=ids_g),
                dict(query_labels=multi_hot[ids_q], db_labels=multi_hot[ids_g]),
                dict(relevance=rel, junk=rng.random((Q, N)) < 0.1),
            ]
            for given in inputs:
                for case in cases:
                    kwargs = {kind: M, **given, **case}
                    expected = _error("numpy", **kwargs)
                    assert expected.startswith(f"{kind}: expected finite values, found {M[place]} at [")
                    assert _error("c", **kwargs) == expected, f"{dtype} {kind} {list(given)} {case}"


def test_c_nonfinite_error_in_a_later_block(c_backend):
    rng = np.random.default_rng(12)
    D = rng.random((7, 2048))
    D[5, 1030] = np.nan
    kwargs = dict(distances=D, relevance=rng.random((7, 2048)) < 0.01, k=20, block_size=3)
    expected = _error("numpy", **kwargs)
    assert expected.endswith("(in the query block starting at row 3)")
    assert _error("c", **kwargs) == expected
