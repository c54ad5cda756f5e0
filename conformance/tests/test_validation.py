"""Bad input gets a clear error naming the argument and what was expected (before any C runs)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import retrieval_conformance as rc

Q = [[1, -1, 1, 1], [-1, 1, -1, -1]]
G = [[1, -1, -1, -1], [-1, 1, 1, -1], [1, 1, 1, -1]]
QL = [[1, 0], [0, 1]]
GL = [[1, 0], [0, 1], [1, 1]]
D = np.array([[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]])
IDS_Q, IDS_G = [1, 2], [1, 2, 2]


def codes(**kw):
    args = dict(query_codes=Q, db_codes=G, query_labels=QL, db_labels=GL)
    args.update(kw)
    return rc.evaluate(**args)


def dists(**kw):
    args = dict(distances=D, query_labels=IDS_Q, db_labels=IDS_G)
    args.update(kw)
    return rc.evaluate(**args)


@pytest.mark.parametrize(
    "call, error, pattern",
    [
        # codes
        (
            lambda: codes(query_codes=[[1, -1, 0, 1], [-1, 1, -1, -1]]),
            ValueError,
            r"query_codes: .*found 0 at \[0, 2\].*sign\(0\)",
        ),
        (
            lambda: codes(db_codes=[[1, -1, -1, 2], [-1, 1, 1, -1], [1, 1, 1, -1]]),
            ValueError,
            r"db_codes: expected codes in \{-1, \+1\}",
        ),
        (
            lambda: codes(
                query_codes=[[1, 0, 1, 1], [0, 1, 0, 0]], db_codes=[[1, 0, 0, 2], [0, 1, 1, 0], [1, 1, 1, 0]]
            ),
            ValueError,
            r"db_codes: expected codes in \{-1, \+1\} or \{0, 1\}, found 2",
        ),
        (lambda: codes(db_codes=[[1, -1, -1], [-1, 1, 1], [1, 1, 1]]), ValueError, r"db_codes: expected 4 bits"),
        (lambda: codes(query_codes=[1, -1, 1, 1]), ValueError, r"query_codes: expected a 2-D array"),
        (
            lambda: codes(query_codes=[[1.0, -1.0, np.nan, 1.0], [-1, 1, -1, -1]]),
            ValueError,
            r"query_codes: expected finite values",
        ),
        (lambda: codes(db_codes=None), ValueError, r"db_codes: expected codes together with query_codes"),
        # labels
        (
            lambda: codes(query_labels=[[1, 0], [0, 2]]),
            ValueError,
            r"query_labels: expected multi-hot labels in \{0, 1\}, found 2 at \[1, 1\]",
        ),
        (
            lambda: codes(db_labels=[[1, 0, 0], [0, 1, 0], [1, 1, 0]]),
            ValueError,
            r"db_labels: expected 2 label columns",
        ),
        (lambda: codes(query_labels=[[1, 0]]), ValueError, r"query_labels: expected 2 rows"),
        (lambda: codes(query_labels=[1, 2]), ValueError, r"query_labels, db_labels: expected both 1-D"),
        (lambda: dists(db_labels=[1.5, 2, 2]), ValueError, r"db_labels: expected integer ids"),
        (
            lambda: dists(db_labels=["a", "b", "c"]),
            TypeError,
            r"query_labels: db_labels holds strings but query_labels holds dtype=int",
        ),
        # distances and scores
        (
            lambda: dists(distances=np.array([[0.1, np.nan, 0.3], [0.3, 0.2, 0.1]])),
            ValueError,
            r"distances: expected finite values, found nan at \[0, 1\]",
        ),
        (
            lambda: dists(distances=np.array([[0.1, np.inf, 0.3], [0.3, 0.2, 0.1]])),
            ValueError,
            r"distances: expected finite values, found inf",
        ),
        (
            lambda: rc.evaluate(
                scores=np.array([[0.1, -np.inf, 0.3], [0.3, 0.2, 0.1]]), query_labels=IDS_Q, db_labels=IDS_G
            ),
            ValueError,
            r"scores: expected finite values",
        ),
        (lambda: dists(distances=np.array([0.1, 0.2, 0.3])), ValueError, r"distances: expected a 2-D array"),
        (
            lambda: dists(distances=np.array([["a", "b", "c"], ["a", "b", "c"]])),
            TypeError,
            r"distances: expected a float or integer array",
        ),
        (
            lambda: dists(distances=np.zeros((2, 0))),
            ValueError,
            r"distances: expected at least one gallery item \(column\)",
        ),
        (
            lambda: rc.evaluate(distances=np.zeros((0, 3)), relevance=np.zeros((0, 3), bool)),
            ValueError,
            r"distances: expected at least one query \(row\)",
        ),
        (
            lambda: rc.evaluate(distances=D, scores=D, query_labels=IDS_Q, db_labels=IDS_G),
            ValueError,
            r"give exactly one ranking input",
        ),
        (lambda: rc.evaluate(query_labels=IDS_Q, db_labels=IDS_G), ValueError, r"give exactly one ranking input"),
        # relevance and junk
        (lambda: rc.evaluate(distances=D), ValueError, r"give exactly one relevance input"),
        (
            lambda: rc.evaluate(distances=D, relevance=np.ones((2, 4), bool)),
            ValueError,
            r"relevance: expected shape \(2, 3\)",
        ),
        (
            lambda: rc.evaluate(distances=D, relevance=[[0, 1, -1], [0, 0, 1]]),
            ValueError,
            r"relevance: expected bool or integer grades 0 \.\. 52 \(0 = not relevant\), found -1",
        ),
        (
            lambda: dists(junk=np.ones((3, 3), bool)),
            ValueError,
            r"junk: expected 2 rows \(one per query\), got shape \(3, 3\)",
        ),
        (lambda: dists(protocol="reid", query_cams=[0, 1]), ValueError, r"query_cams, db_cams: expected both"),
        (lambda: dists(protocol="reid", query_cams=[0, 1], db_cams=[0, 1]), ValueError, r"db_cams: expected length 3"),
        (
            lambda: dists(query_cams=[0, 1], db_cams=[0, 1, 1]),
            ValueError,
            r"query_cams: protocol 'hashing' has no camera junk rule",
        ),
        (
            lambda: codes(protocol="reid", query_cams=[0, 1], db_cams=[0, 1, 1]),
            ValueError,
            r"query_cams: camera junk .* needs single-id labels",
        ),
        # options
        (lambda: codes(k=0), ValueError, r"k: expected a positive integer \(>= 1\), got 0 \(use k=None"),
        (lambda: codes(k=-1), ValueError, r"k: expected a positive integer"),
        (lambda: codes(k=2.5), TypeError, r"k: expected a positive integer, got 2.5"),
        (lambda: codes(k=True), TypeError, r"k: expected a positive integer"),
        (lambda: codes(max_rank=0), ValueError, r"max_rank: expected a positive integer"),
        (lambda: codes(radius=-1), ValueError, r"radius: expected a finite non-negative number"),
        (lambda: codes(protocol="cifar"), ValueError, r"protocol: unknown preset 'cifar'; expected one of"),
        (lambda: codes(ties="random"), ValueError, r"ties: expected one of \['stable', 'reverse'"),
        (lambda: codes(ap_rule="11point"), ValueError, r"ap_rule: expected one of"),
        (lambda: codes(ap_at_k="k"), ValueError, r"ap_at_k: expected one of \['hits', 'r', 'min_k_r', 'dcmh'\]"),
        (lambda: codes(empty="drop"), ValueError, r"empty: expected one of"),
        (lambda: codes(implementation="fortran"), ValueError, r"implementation: unknown implementation 'fortran'"),
        (lambda: codes(ties="grouped", k=1), ValueError, r"k: k=1 falls inside a tie group"),
        (
            lambda: rc.evaluate(
                query_embeddings=[[0.0, 0.0]], db_embeddings=[[1.0, 0.0]], relevance=[[1]], metric="cosine"
            ),
            ValueError,
            r"query_embeddings: row 0 is all zeros",
        ),
        (
            lambda: rc.evaluate(query_embeddings=[[0.0, 1.0]], db_embeddings=[[1.0, 0.0, 1.0]], relevance=[[1]]),
            ValueError,
            r"db_embeddings: expected dimension 2",
        ),
    ],
)
def test_bad_input_names_the_argument(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_empty_error_policy_names_the_query():
    with pytest.raises(ValueError, match=r"empty='error': 1 query with no relevant .* index 1"):
        rc.evaluate(distances=D, relevance=[[1, 0, 0], [0, 0, 0]], empty="error")


def test_torch_like_and_list_inputs_are_accepted():
    res = codes(k=2)
    assert 0 <= res.map <= 1
    res = rc.evaluate(
        query_codes=np.array(Q, dtype=np.int8),
        db_codes=np.array(G, dtype=np.float32),
        query_labels=np.array(QL, dtype=bool),
        db_labels=GL,
        implementation="reference",
    )
    assert res.exact is not None


# -- inputs that used to change the number silently, or got a misleading message -----------
def test_float16_distances_warn_that_they_tie():
    d = np.array([[1.0001, 1.0002, 3.0]], dtype=np.float16)
    with pytest.warns(UserWarning, match=r"distances: float16 values keep 11 significant bits.*float32 or float64"):
        rc.evaluate(distances=d, relevance=[[0, 1, 1]])


def test_reid_without_cameras_is_an_error_unless_junk_is_explicit():
    kw = dict(distances=[[0.1, 0.2, 0.3]], query_labels=[1], db_labels=[1, 2, 1], protocol="reid")
    with pytest.raises(ValueError, match=r"query_cams: protocol 'reid' removes .* junk=np.zeros"):
        rc.evaluate(**kw)
    res = rc.evaluate(**kw, junk=np.zeros((1, 3), bool))
    assert res.map == pytest.approx((1 + 2 / 3) / 2)


def test_transposed_matrix_is_named():
    with pytest.raises(ValueError, match=r"distances: got shape \(3, 2\) .* pass distances.T"):
        rc.evaluate(distances=np.zeros((3, 2)), query_labels=[1, 2], db_labels=[1, 2, 1])


def test_a_column_of_ids_is_named():
    with pytest.raises(ValueError, match=r"query_labels: .* column holds one id per row: pass query_labels.ravel\(\)"):
        rc.evaluate(distances=np.zeros((2, 3)), query_labels=[[1], [2]], db_labels=[[1], [2], [1]])


def test_empty_inputs_name_the_argument():
    with pytest.raises(ValueError, match=r"^query_codes: expected at least one query"):
        rc.evaluate(query_codes=np.zeros((0, 4)), db_codes=np.zeros((3, 4)), relevance=np.zeros((0, 3), bool))
    with pytest.raises(ValueError, match=r"^db_codes: expected at least one gallery item \(row\)"):
        rc.evaluate(query_codes=np.zeros((2, 4)), db_codes=np.zeros((0, 4)), relevance=np.zeros((2, 0), bool))


def test_several_cutoffs_in_one_call_equal_one_call_each():
    """Relevant at ranks 2 and 3 of 4: AP@1 = 0, AP@2 = 1/2, AP@4 = (1/2 + 2/3) / 2 = 7/12 (hits)."""
    kw = dict(distances=[[0, 1, 2, 3]], relevance=[[0, 1, 1, 0]], implementation="reference")
    results = rc.evaluate(**kw, k=(1, 2, 4))
    assert list(results) == [1, 2, 4]
    assert [r.exact.map for r in results.values()] == [0, Fraction(1, 2), Fraction(7, 12)]
    for k, r in results.items():
        assert r.summary() == rc.evaluate(**kw, k=k).summary()
    assert results.table()[2] == {"k": 4, "map": 7 / 12, "precision_at_k": 0.5, "recall_at_k": 1.0}
    with pytest.raises(ValueError, match=r"^k: expected distinct cut-offs"):
        rc.evaluate(**kw, k=(5, 5))
    with pytest.raises(ValueError, match=r"^k: expected a positive integer"):
        rc.evaluate(**kw, k=[1, 0])


def test_string_ids_mean_what_integer_ids_mean():
    """Query 'p1' matches gallery 0 and 2 but gallery 0 has its camera (junk): the match is at rank 2
    of 3 (AP 1/2); query 'p2' (camera c2) ranks gallery 3, 2, 1, 0 and matches gallery 1 at rank 3
    (AP 1/3)."""
    d = np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]])
    words = dict(
        query_labels=["p1", "p2"],
        db_labels=np.array(["p1", "p2", "p1", "x"], dtype=object),
        query_cams=["c1", "c2"],
        db_cams=["c1", "c1", "c2", "c2"],
    )
    ints = dict(query_labels=[1, 2], db_labels=[1, 2, 1, 3], query_cams=[1, 2], db_cams=[1, 1, 2, 2])
    got = rc.evaluate(distances=d, **words, protocol="reid", implementation="reference")
    assert got.exact.ap == [Fraction(1, 2), Fraction(1, 3)]
    assert got.summary() == rc.evaluate(distances=d, **ints, protocol="reid", implementation="reference").summary()
    with pytest.raises(TypeError, match=r"^db_labels: query_labels holds strings but db_labels holds dtype=int"):
        rc.evaluate(distances=d, query_labels=["p1", "p2"], db_labels=[1, 2, 1, 3])
