"""Blocks of query embeddings in different dtypes: one promotion rule (numpy's ``result_type`` of
every non-empty block, as their concatenation has it), so the Accumulator gives ``evaluate``'s bits
on the concatenation, or refuses by name the block it cannot (the earlier blocks, already
evaluated in another precision, are not kept).

The hand case: a gallery of two float32 points, -1 (label 1) and +1 (label 0).

* ``Q0 = 2**-25`` (label 1): its distances are ``1 + 2**-25`` to the relevant item 0 and
  ``1 - 2**-25`` to item 1.  In float64 item 1 is nearer: the relevant item is at rank 2, AP 1/2.
  Rounded to float32 both are 1.0, a tie that the stable order gives to item 0: AP 1.
* ``Q1 = 0`` (label 0): distances 1 and 1 in any dtype, the relevant item 1 second: AP 1/2.
"""

from __future__ import annotations

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.crosscheck import same_bits

GALLERY = dict(db_embeddings=np.array([[-1.0], [1.0]], np.float32), db_labels=[1, 0])
Q0, Q1 = np.array([[2.0**-25]]), np.array([[0.0]])


def _evaluate(*blocks, **gallery):
    embeddings = np.concatenate([b for b, _ in blocks])
    labels = np.concatenate([lab for _, lab in blocks])
    return rc.evaluate(**{**GALLERY, **gallery}, query_embeddings=embeddings, query_labels=labels)


def test_the_hand_case_by_dtype():
    assert _evaluate((Q0.astype(np.float32), [1])).map == 1.0
    assert _evaluate((Q0, [1])).map == 0.5


def test_a_narrower_block_after_a_wider_one_is_read_as_their_concatenation():
    """float64 then float32 (gallery float32): the concatenation is float64, so Q0 is computed in
    float64 too: AP 1/2 + 1/2, map 1/2 (Q0 alone in float32 would give AP 1, map 3/4)."""
    blocks = [(Q1, [0]), (Q0.astype(np.float32), [1])]
    acc = rc.Accumulator(**GALLERY)
    for embeddings, labels in blocks:
        acc.update(query_embeddings=embeddings, query_labels=labels)
    got, want = acc.compute(), _evaluate(*blocks)
    assert got.map == want.map == 0.5
    assert not same_bits(want.per_query, got.per_query)


@pytest.mark.filterwarnings("ignore::retrieval_conformance.reference.contract.precision.LowPrecisionWarning")
@pytest.mark.parametrize(
    "first, then",
    [(np.float32, np.float64), (np.float16, np.float32), (np.int8, np.float32), (np.float32, np.int32)],
    ids=lambda t: np.dtype(t).name,
)
def test_a_block_that_changes_the_precision_of_earlier_ones_is_refused(first, then):
    """float32 then float64: the concatenation computes every distance in float64 (map 1/2), but
    the first block was evaluated in float32 (its AP 1 would make it 3/4).  float16 or int8 alone
    are computed in float64, but concatenated with float32 they are float32; int32 with float32
    is float64.  Each is refused, naming both dtypes and the way out; the accumulator keeps what
    it had."""
    acc = rc.Accumulator(**GALLERY)
    acc.update(query_embeddings=Q1.astype(first), query_labels=[0])
    message = (
        rf"^query_embeddings: a block of {np.dtype(then).name} after blocks of {np.dtype(first).name} .* "
        r"\(in the update\(\) block starting at query 1\)$"
    )
    with pytest.raises(ValueError, match=message):
        acc.update(query_embeddings=Q0.astype(then), query_labels=[1])
    assert len(acc) == 1
    acc.update(query_embeddings=Q0.astype(first).astype(acc.query_dtype), query_labels=[1])
    assert len(acc) == 2


def test_a_float64_gallery_computes_every_block_in_float64():
    blocks = [(Q0.astype(np.float32), [1]), (Q1, [0])]
    gallery = dict(db_embeddings=GALLERY["db_embeddings"].astype(np.float64))
    acc = rc.Accumulator(**{**GALLERY, **gallery})
    for embeddings, labels in blocks:
        acc.update(query_embeddings=embeddings, query_labels=labels)
    assert acc.compute().map == _evaluate(*blocks, **gallery).map == 0.5


def test_empty_blocks_take_no_part_and_reset_forgets_the_dtype():
    acc = rc.Accumulator(**GALLERY)
    acc.update(query_embeddings=np.zeros((0, 1), np.float64), query_labels=np.zeros(0, int))
    acc.update(query_embeddings=Q0.astype(np.float32), query_labels=[1])
    assert acc.query_dtype == np.float32 and acc.compute().map == 1.0
    acc.reset()
    assert acc.query_dtype is None
    acc.update(query_embeddings=Q0, query_labels=[1])
    assert acc.compute().map == 0.5
