"""``rc.Accumulator``'s refusals: a bad option, gallery or block is named when it is given, and a
refused block leaves the accumulator as it was.

The accumulated results themselves are checked in ``test_accumulator.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.support.identical import assert_identical

# -- errors name the argument -----------------------------------------------------------------
BAD_OPTIONS = [
    (dict(ties="random"), ValueError, r"^ties: expected one of"),
    (dict(ap_rule="area"), ValueError, r"^ap_rule: expected one of"),
    (dict(ap_at_k="k"), ValueError, r"^ap_at_k: expected one of"),
    (dict(empty="drop"), ValueError, r"^empty: expected one of"),
    (dict(k=0), ValueError, r"^k: expected a positive integer"),
    (dict(k=2.5), TypeError, r"^k: expected a positive integer"),
    (dict(max_rank=0), ValueError, r"^max_rank: expected a positive integer"),
    (dict(radius=-1), ValueError, r"^radius: expected a finite non-negative number"),
    (dict(protocol="market"), ValueError, r"^protocol: unknown preset 'market'"),
    (dict(metric="manhattan"), ValueError, r"^metric: expected one of"),
    (dict(implementation="fortran"), ValueError, r"^implementation: unknown implementation 'fortran'"),
]


@pytest.mark.parametrize("options, error, message", BAD_OPTIONS, ids=[str(o) for o, _, _ in BAD_OPTIONS])
def test_a_bad_option_fails_at_construction(options, error, message):
    with pytest.raises(error, match=message):
        rc.Accumulator(db_labels=[0, 1], **options)


BAD_GALLERIES = [
    (dict(db_embeddings=np.ones((3, 2)), db_codes=np.ones((3, 2))), r"^db_embeddings, db_codes: expected one"),
    (dict(db_embeddings=np.ones(3)), r"^db_embeddings: expected a 2-D array"),
    (
        dict(db_labels=[0, 1, 2], db_cams=[0, 1], protocol="reid"),
        r"^db_cams: expected 3 rows \(one per gallery item, as db_labels\)",
    ),
    (dict(db_labels=np.zeros(0, int)), r"^db_labels: expected at least one gallery item"),
    (dict(db_labels=[0, 1], db_cams=[0, 1], protocol="hashing"), r"^db_cams: protocol 'hashing' has no camera"),
]


def _gallery_id(gallery: dict) -> str:
    return ",".join(f"{key}={value}" if key == "protocol" else key for key, value in gallery.items())


@pytest.mark.parametrize("gallery, message", BAD_GALLERIES, ids=[_gallery_id(g) for g, _ in BAD_GALLERIES])
def test_a_bad_gallery_fails_at_construction(gallery, message):
    with pytest.raises(ValueError, match=message):
        rc.Accumulator(**gallery)


def test_a_bad_gallery_type_is_named():
    with pytest.raises(TypeError, match=r"^db_labels: expected an array"):
        rc.Accumulator(db_labels=(i for i in range(3)))


def test_compute_before_update():
    with pytest.raises(ValueError, match=r"^Accumulator.compute: no queries yet; call update"):
        rc.Accumulator(db_labels=[0, 1]).compute()


def test_a_block_with_another_gallery_size_is_refused_and_changes_nothing():
    acc = rc.Accumulator(implementation="reference")
    acc.update(distances=np.zeros((2, 5)), relevance=np.eye(2, 5, dtype=bool))
    before = acc.compute()
    with pytest.raises(
        ValueError,
        match=r"^distances: expected 5 columns \(one per gallery item\), got shape "
        r"\(3, 6\); earlier update\(\) blocks had 5 .* reset\(\).* query 2\)$",
    ):
        acc.update(distances=np.zeros((3, 6)), relevance=np.ones((3, 6), bool))
    with pytest.raises(ValueError, match=r"^relevance: expected 5 columns"):
        acc.update(distances=np.zeros((3, 5)), relevance=np.ones((3, 4), bool))
    assert len(acc) == 2
    assert_identical(acc.compute(), before)


def test_a_block_must_match_the_gallery_given_at_construction():
    acc = rc.Accumulator(db_labels=[0, 1, 2, 0])
    with pytest.raises(
        ValueError,
        match=r"^scores: expected 4 columns .*got shape \(2, 3\); the gallery given "
        r"to Accumulator \(db_labels\) has 4 items",
    ):
        acc.update(scores=np.zeros((2, 3)), query_labels=[0, 1])
    assert len(acc) == 0


def test_block_errors_say_where_the_block_starts():
    acc = rc.Accumulator(db_labels=[0, 1, 1])
    acc.update(distances=np.zeros((3, 3)), query_labels=[0, 1, 0])
    bad = np.zeros((2, 3))
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"^distances: expected finite values.*update\(\) block starting at query 3"):
        acc.update(distances=bad, query_labels=[0, 1])
    with pytest.raises(ValueError, match=r"^query_labels: expected 2 rows"):
        acc.update(distances=np.zeros((2, 3)), query_labels=[0, 1, 1])
    with pytest.raises(TypeError, match=r"^query_labels: expected an array"):
        acc.update(distances=np.zeros((2, 3)), query_labels=5)
    with pytest.raises(ValueError, match=r"^give exactly one ranking input"):
        acc.update(query_labels=[0])
    assert len(acc) == 3


def test_reid_needs_cameras_in_every_block():
    acc = rc.Accumulator(db_labels=[0, 1, 1], db_cams=[0, 0, 1], protocol="reid")
    with pytest.raises(ValueError, match=r"^query_cams, db_cams: expected both camera arrays"):
        acc.update(distances=np.zeros((1, 3)), query_labels=[1])
    without = rc.Accumulator(db_labels=[0, 1, 1], protocol="reid")
    with pytest.raises(ValueError, match=r"^query_cams: protocol 'reid' removes gallery items"):
        without.update(distances=np.zeros((1, 3)), query_labels=[1])
    without.update(distances=np.zeros((1, 3)), query_labels=[1], junk=np.zeros((1, 3), bool))  # said explicitly
    assert len(without) == 1 and len(acc) == 0


@pytest.mark.parametrize("batches", [([[0]], [[-1]]), ([[-1]], [[0]])])
def test_pm1_and_01_codes_in_different_updates_are_an_error(batches):
    # one evaluate call on every query refuses a 0 beside a -1; so do updates, whichever comes first
    acc = rc.Accumulator(db_codes=np.array([[1]]), db_labels=[1], protocol="hashing")
    acc.update(query_codes=np.array(batches[0]), query_labels=[1])
    with pytest.raises(ValueError, match="one evaluation takes one kind of codes"):
        acc.update(query_codes=np.array(batches[1]), query_labels=[1])
    assert len(acc) == 1  # the refused block left the accumulator as it was
    with pytest.raises(ValueError, match=r"expected codes in \{-1, \+1\}, found 0"):
        rc.evaluate(
            query_codes=np.array(batches[0] + batches[1]), db_codes=np.array([[1]]), query_labels=[1, 1], db_labels=[1]
        )


def test_a_block_of_no_queries_changes_nothing():
    """The last batch of a sharded loader can be empty: it raised "expected at least one query"."""
    gallery = np.eye(3)
    acc = rc.Accumulator(db_embeddings=gallery, db_labels=[0, 1, 2], k=1, implementation="numpy")
    acc.update(query_embeddings=np.zeros((0, 3)), query_labels=np.zeros(0, dtype=int))  # before any query
    acc.update(query_embeddings=gallery[:2], query_labels=[0, 1])
    acc.update(query_embeddings=np.zeros((0, 3)), query_labels=[])
    assert len(acc) == 2
    want = rc.evaluate(
        query_embeddings=gallery[:2],
        db_embeddings=gallery,
        query_labels=[0, 1],
        db_labels=[0, 1, 2],
        k=1,
        implementation="numpy",
    )
    assert acc.compute().map == want.map and np.array_equal(acc.compute().ap, want.ap)
    plain = rc.Accumulator(db_labels=[0, 1, 2], implementation="numpy")
    plain.update(distances=np.zeros((0, 3)), query_labels=np.zeros(0, dtype=int))
    assert len(plain) == 0 and plain.n_gallery == 3
    # an empty block is still checked for what it can be wrong about
    with pytest.raises(ValueError, match=r"^distances: expected 3 columns"):
        plain.update(distances=np.zeros((0, 4)), query_labels=np.zeros(0, dtype=int))
    with pytest.raises(ValueError, match=r"query_labels: expected 0 rows"):
        plain.update(distances=np.zeros((0, 3)), query_labels=[1, 2])
    with pytest.raises(ValueError, match=r"give exactly one ranking input"):
        plain.update(distances=np.zeros((0, 3)), scores=np.zeros((0, 3)), query_labels=np.zeros(0, dtype=int))
