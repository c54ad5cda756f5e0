"""Search results ``(D, I)`` of every numeric dtype rank as their values say: an unsigned distance
is never negated in its own dtype (where ``-1`` wraps to the largest value), integers beyond
float64's exact range and booleans are refused by name, and ``evaluate --search`` agrees."""

from __future__ import annotations

import json
from fractions import Fraction as F

import numpy as np
import pytest
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run
from retrieval_conformance.reference.readers.tables import qrels_from_labels, run_from_search

INTEGERS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [np.float16, np.float32, np.float64]
#: one query of label 5; database labels [5, 7, 7]: only row 0 is relevant
QRELS = qrels_from_labels([5], [5, 7, 7])


def _map(d, i, metric="l2"):
    return evaluate_run(run_from_search(d, i, metric=metric), QRELS, implementation="reference").exact.map


@pytest.mark.parametrize("dtype", INTEGERS + FLOATS, ids=lambda t: np.dtype(t).name)
def test_the_exact_match_ranks_first_in_every_dtype(dtype):
    """l2 distances 0, 1, 2 to rows 0, 1, 2: the relevant row 0 is nearest, AP = 1/1 = 1.  Negated
    in uint8 they would be 0, 255, 254: row 0 last, AP = 1/3."""
    d, i = np.array([[0, 1, 2]], dtype=dtype), np.array([[0, 1, 2]])
    assert _map(d, i) == 1
    # as similarities (inner_product, larger is closer), row 2 first, row 0 last: AP = 1/3
    assert _map(d, i, "inner_product") == F(1, 3)
    # with the distances as scores (ties="trec_eval"), they are the values, negated exactly
    assert run_from_search(d, i, metric="l2", ties="trec_eval") == {"0": {"0": 0.0, "1": -1.0, "2": -2.0}}


@pytest.mark.parametrize("dtype", INTEGERS, ids=lambda t: np.dtype(t).name)
def test_padding_after_the_neighbours_is_ignored_whatever_it_holds(dtype):
    """``I = -1`` marks no neighbour; its ``D`` (here the dtype's largest value) is not read."""
    d = np.array([[0, 1, np.iinfo(dtype).max]], dtype=dtype)
    assert _map(d, np.array([[0, 1, -1]])) == 1


@pytest.mark.parametrize(
    "value, dtype",
    [(2**53, np.int64), (-(2**63), np.int64), (2**63 - 1, np.int64), (2**64 - 1, np.uint64), (2**53 + 1, np.uint64)],
)
def test_integers_beyond_float64s_exact_range_are_refused_by_name(value, dtype):
    """Beyond 2**53, distinct integer distances can become one float64 score (a tie that is not
    one in the data), so they are refused, naming the element."""
    d = np.array([[1, value]], dtype=dtype)
    with pytest.raises(ValueError, match=r"^distances\[0, 1\]: .*2\*\*53"):
        run_from_search(d, np.array([[0, 1]]), metric="l2")


def test_booleans_and_other_kinds_are_refused():
    for d in (np.array([[True, False]]), np.array([[1 + 0j, 2]]), np.array([["a", "b"]])):
        with pytest.raises(ValueError, match=r"^distances, indices: expected real distances"):
            run_from_search(d, np.array([[0, 1]]), metric="l2")


def test_cli_search_of_unsigned_distances(tmp_path, capsys):
    from retrieval_conformance.cli import main

    for dtype in (np.uint8, np.uint64, np.int32):
        path = tmp_path / f"search_{np.dtype(dtype).name}.npz"
        np.savez(
            path,
            D=np.array([[0, 1, 2]], dtype=dtype),
            I=np.array([[0, 1, 2]]),
            query_labels=np.array([5]),
            db_labels=np.array([5, 7, 7]),
        )
        assert main(["evaluate", "--search", str(path), "--search-metric", "l2", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["trec_eval"]["map"] == 1.0, dtype
