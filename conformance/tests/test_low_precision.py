"""Inputs in another precision than float32/float64 are said, with the ties they cause counted.

Long double values were rounded to float64 without a word (distinct values became ties and AP
changed); the float16 warning counted the ties of embedding values, not of the distances
computed from them ("0 tied values in the first 1 rows" on a row whose distances tied); a
bfloat16 tensor was read as float32 and tied silently.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.reference.contract.precision import LowPrecisionWarning, tied_values

LABELS = dict(query_labels=[1], db_labels=[0, 1, 0])


def quietly(**kwargs):
    """``rc.evaluate`` with every warning an error: a warning here is a finding."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return rc.evaluate(**kwargs)


def test_tied_values_counts_every_member_of_a_tie_group():
    assert tied_values(np.array([[1.0, 1.0, 3.0], [2.0, 2.0, 2.0], [1.0, 2.0, 3.0]])) == 5
    assert tied_values(np.array([[1.0]])) == 0


def test_long_double_distances_that_float64_ties_warn():
    """1 and 1 + 2**-60 differ in long double and tie in float64: the relevant item's rank changes."""
    dist = np.array([[1.0, 1.0, 3.0]], dtype=np.longdouble)
    dist[0, 1] += np.longdouble(2.0) ** -60
    if dist[0, 1] == dist[0, 0]:
        pytest.skip("long double is float64 on this platform: nothing is rounded")
    with pytest.warns(
        LowPrecisionWarning,
        match=r"distances: long double values are compared in float64, and "
        r"rounding 1 row to float64 changed the input \(1 distinct value "
        r"of the same row became tied\).*astype\(np.float64\)",
    ):
        rc.evaluate(distances=dist, **LABELS)
    # distinct in float64 too: nothing to say
    quietly(distances=np.array([[1.0, 1.5, 3.0]], dtype=np.longdouble), **LABELS)


def test_long_double_embeddings_warn_when_rounding_changes_them():
    q = np.array([[1.0, 0.0]], dtype=np.longdouble)
    q[0, 0] += np.longdouble(2.0) ** -60
    if q[0, 0] == 1.0:
        pytest.skip("long double is float64 on this platform: nothing is rounded")
    d = np.eye(2)[[0, 1, 1]]
    with pytest.warns(
        LowPrecisionWarning,
        match=r"query_embeddings: long double .*\(1 value changed, and so may "
        r"the distances\)",
    ):
        rc.evaluate(query_embeddings=q, db_embeddings=d, **LABELS)
    quietly(query_embeddings=np.ones((1, 2), dtype=np.longdouble), db_embeddings=d, **LABELS)


def test_float16_embeddings_count_the_ties_of_their_distances():
    """One query, two gallery items at the same float16 distance: the old count said 0."""
    q = np.array([[0.0, 1.0]], dtype=np.float16)
    d = np.array([[1.0, 0.0], [0.0, 1.0001], [-1.0, 0.0]], dtype=np.float16)  # 1.0001 is 1.0 in float16
    with pytest.warns(LowPrecisionWarning) as caught:
        rc.evaluate(query_embeddings=q, db_embeddings=d.astype(np.float32), **LABELS)
    (message,) = [str(w.message) for w in caught]
    assert message.startswith("query_embeddings: float16 values keep 11 significant bits")
    assert "(2 distances computed from them tied with another of their row in the first 1 row)" in message


def test_float16_distances_count_every_tied_value():
    d = np.array([[1.0001, 1.0002, 3.0]], dtype=np.float16)
    with pytest.warns(LowPrecisionWarning, match=r"\(2 values tied with another of their row in the first 1 row\)"):
        rc.evaluate(distances=d, **LABELS)


def test_bfloat16_tensors_warn():
    torch = pytest.importorskip("torch")
    values = torch.tensor([[0.1, 0.1001, 0.3]])
    with pytest.warns(LowPrecisionWarning, match=r"distances: bfloat16 values keep 8 significant bits.*\(2 values"):
        rc.evaluate(distances=values.to(torch.bfloat16), **LABELS)
    with pytest.warns(LowPrecisionWarning, match=r"scores: bfloat16 values keep 8"):
        rc.evaluate(scores=values.to(torch.bfloat16), **LABELS)
    with pytest.warns(LowPrecisionWarning, match=r"query_embeddings: bfloat16 .*\(2 distances computed from them"):
        rc.evaluate(query_embeddings=values.to(torch.bfloat16), db_embeddings=np.eye(3), **LABELS)
    quietly(distances=values, **LABELS)  # float32: nothing to say


def test_the_accumulator_warns_as_evaluate_does():
    """Its blocks are read as numpy arrays, and its embeddings turned into distances, before
    evaluate sees them: it warns about what evaluate cannot see, once."""
    torch = pytest.importorskip("torch")
    values = torch.tensor([[0.1, 0.1001, 0.3]])
    acc = rc.Accumulator(db_labels=[0, 1, 0], implementation="numpy")
    with pytest.warns(LowPrecisionWarning, match=r"distances: bfloat16 values keep 8"):
        acc.update(distances=values.to(torch.bfloat16), query_labels=[1])
    with pytest.warns(LowPrecisionWarning) as caught:
        acc.update(distances=values.numpy().astype(np.float16), query_labels=[1])
    assert len(caught) == 1 and "distances: float16" in str(caught[0].message)
    acc = rc.Accumulator(db_embeddings=torch.eye(3).to(torch.bfloat16), db_labels=[0, 1, 0], implementation="numpy")
    with pytest.warns(LowPrecisionWarning) as caught:
        acc.update(query_embeddings=np.array([[0.0, 0.5, 0.5]]), query_labels=[1])
    assert [str(w.message).split(":")[0] for w in caught] == ["db_embeddings"]
    assert "(2 distances computed from them tied" in str(caught[0].message)
    acc = rc.Accumulator(db_embeddings=np.eye(3), db_labels=[0, 1, 0], implementation="numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        acc.update(query_embeddings=np.array([[0.0, 0.5, 0.25]]), query_labels=[1])


def test_long_double_ties_are_counted_a_chunk_of_rows_at_a_time(monkeypatch):
    """A memory-mapped long double matrix is never sorted whole: chunks of rows, the same count."""
    from retrieval_conformance.reference.contract import precision

    wide = np.ones((10, 4), dtype=np.longdouble)
    wide[:, 1] += np.longdouble(2.0) ** -60
    wide[:, 2] = 3
    if wide[0, 1] == wide[0, 0]:
        pytest.skip("long double is float64 on this platform: nothing is rounded")
    whole = precision.merged_by_rounding(wide)
    monkeypatch.setattr(precision, "CHUNK_VALUES", 8)  # two rows per chunk
    assert precision.merged_by_rounding(wide) == whole == 10
