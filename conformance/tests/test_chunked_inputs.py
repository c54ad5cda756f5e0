"""Large inputs are checked and converted a chunk at a time (reference/contract/codes.py,
``arrays.first_where``, the discount table, the C gallery's id runs): the same bits and the same
errors, word for word, as the whole-array rules, wherever a bad value falls relative to the
chunks, and no temporary as large as the gallery.

The oracles below are the whole-array formulations the chunked code replaced.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.reference.contract import arrays, codes, discounts, validation
from retrieval_conformance.reference.contract.arrays import position_text
from retrieval_conformance.reference.contract.evaluate import build_problem
from retrieval_conformance.reference.contract.gallery import prepare_gallery
from retrieval_conformance.reference.contract.problem import Options, Problem

B = 5  # bits per code: a chunk of CHUNK_ITEMS values holds CHUNK_ITEMS // 5 rows
#: chunk sizes in values: 1 row, 2 rows, 3 rows, and the default (one chunk)
CHUNKS = [1, 10, 15, arrays.CHUNK_ITEMS]


def _whole_array_codes_pair(query_codes, db_codes, signed_elsewhere=False):
    """``validation.codes_pair`` as one whole-array pass (before the chunked scan), for valid
    shapes and dtypes: the bits, or the ValueError it raised."""
    named = {"query_codes": np.asarray(query_codes), "db_codes": np.asarray(db_codes)}
    for name, arr in named.items():
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            bad = ~np.isfinite(arr)
            raise ValueError(
                f"{name}: expected finite values, found {arr[bad].flat[0]} at {position_text(arr, bad)}; "
                "replace NaN/inf (e.g. by a large distance) before evaluating"
            )
    signed = signed_elsewhere or any((a == -1).any() for a in named.values())
    for name, arr in named.items():
        bad = ~(((arr == -1) | (arr == 1)) if signed else ((arr == 0) | (arr == 1)))
        if bad.any():
            value = arr[bad].flat[0]
            hint = (
                (
                    "; a 0 in ±1 codes usually comes from sign(0) = 0 (np.sign/torch.sign): "
                    "binarise with np.where(x >= 0, 1, -1)"
                )
                if signed and value == 0
                else ""
            )
            expected = "{-1, +1}" if signed else "{-1, +1} or {0, 1}"
            raise ValueError(f"{name}: expected codes in {expected}, found {value} at {position_text(arr, bad)}{hint}")
    q, d = (np.ascontiguousarray(a > 0, dtype=np.uint8) for a in named.values())
    if q.shape[1] != d.shape[1]:
        raise ValueError(f"db_codes: expected {q.shape[1]} bits per code like query_codes, got {d.shape[1]}")
    return q, d


def _outcome(call):
    try:
        return call()
    except ValueError as exc:
        return f"ValueError: {exc}"


def _pm1(rng, rows, bits=B, dtype=np.int8):
    return np.where(rng.random((rows, bits)) < 0.5, 1, -1).astype(dtype)


def _cases():
    """(query_codes, db_codes, signed_elsewhere) with the bad value at the first or last value of
    a row, in the first, a middle or the last row (chunk starts and ends for every size)."""
    rng = np.random.default_rng(5)
    out = {}
    for row in (0, 1, 2, 3, 5, 8):
        for col in (0, B - 1):
            d = _pm1(rng, 9)
            d[row, col] = 0
            out[f"0 in ±1 gallery at [{row}, {col}]"] = (_pm1(rng, 4), d, False)
            d01 = (_pm1(rng, 9) > 0).astype(np.int16)
            d01[row, col] = 2
            out[f"2 in 0/1 gallery at [{row}, {col}]"] = ((_pm1(rng, 4) > 0).astype(np.int16), d01, False)
            df = _pm1(rng, 9, dtype=np.float32)
            df[row, col] = np.nan
            df[8, B - 1] = np.inf  # a later non-finite value is not the one reported
            out[f"NaN in the gallery at [{row}, {col}]"] = (_pm1(rng, 4, dtype=np.float32), df, False)
    # 0/1 codes but one -1 in the last row: ±1 codes, so the first 0 (an earlier chunk) is the error
    late = (_pm1(rng, 9) > 0).astype(np.int8)
    late[8, 3] = -1
    out["-1 only in the gallery's last row"] = ((_pm1(rng, 4) > 0).astype(np.int8), late, False)
    early = (_pm1(rng, 9) > 0).astype(np.int8)
    early[0] = -1  # the chunks after it hold no -1: still ±1 codes, so a 0 there is the error
    early[0, 4] = 1
    out["-1 only in the gallery's first row"] = (np.ones((4, B), np.int8), early, False)
    out["-1 only in another query block"] = ((_pm1(rng, 4) > 0).astype(np.int8), (_pm1(rng, 9) > 0), True)
    q = _pm1(rng, 4)
    q[3, 2] = 0
    out["0 in the last query row"] = (q, _pm1(rng, 9), False)
    out["valid ±1, Fortran order"] = (_pm1(rng, 4), np.asfortranarray(_pm1(rng, 9, dtype=np.float64)), False)
    out["valid 0/1 bool"] = ((_pm1(rng, 4) > 0), (_pm1(rng, 9) > 0), False)
    out["valid ±1, rows reversed"] = (_pm1(rng, 4), _pm1(rng, 9)[::-1], False)
    out["bits differ"] = (_pm1(rng, 4), _pm1(rng, 9, bits=B + 1), False)
    return out


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("case", list(_cases()))
def test_chunked_codes_give_the_bits_and_errors_of_the_whole_array(monkeypatch, case, chunk):
    monkeypatch.setattr(codes, "CHUNK_ITEMS", chunk)
    q, d, elsewhere = _cases()[case]
    expected = _outcome(lambda: _whole_array_codes_pair(q, d, elsewhere))
    got = _outcome(lambda: validation.codes_pair(q, d, elsewhere))
    prepared = _outcome(lambda: prepare_gallery({"db_codes": d}).codes_pair(q, elsewhere))
    for outcome in (got, prepared):
        if isinstance(expected, str):
            assert outcome == expected
        else:
            assert all(a.dtype == np.uint8 and np.array_equal(a, b) for a, b in zip(outcome, expected))
    if not isinstance(expected, str):  # packed: the gallery's bits as C's words
        q_bits, words = validation.codes_pair(q, d, elsewhere, packed=True)
        assert np.array_equal(q_bits, expected[0])
        assert words.dtype == np.uint64 and np.array_equal(codes.unpack_words(words, B), expected[1])
        assert np.array_equal(words, codes.pack_words(expected[1]))


@pytest.mark.parametrize("bits", [1, 7, 63, 64, 65, 130])
def test_words_hold_bit_b_in_word_b_div_64(bits):
    rng = np.random.default_rng(bits)
    b = rng.integers(0, 2, (11, bits)).astype(np.uint8)
    words = codes.pack_words(b)
    assert words.shape == (11, codes.word_count(bits)) and words.dtype == np.uint64
    for r, c in zip(*(index.tolist() for index in np.nonzero(b))):
        assert int(words[r, c // 64]) >> (c % 64) & 1
    assert sum(bin(int(w)).count("1") for w in words.ravel()) == int(b.sum())
    assert codes.padding_is_zero(words, bits) and np.array_equal(codes.unpack_words(words, bits), b)
    if bits % 64:
        words[10, -1] |= np.uint64(1) << np.uint64(63)
        assert not codes.padding_is_zero(words, bits)


@pytest.mark.parametrize("chunk", [1, 4, 7, arrays.CHUNK_ITEMS])
def test_check_finite_reports_the_first_bad_value_in_row_major_order(monkeypatch, chunk):
    monkeypatch.setattr(arrays, "CHUNK_ITEMS", chunk)
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    base[4, 3], base[2, 9], base[5, 0] = np.inf, np.nan, -np.inf
    for arr in (base, base.T, base[:, ::-2], np.asfortranarray(base), base[::-1], base.reshape(3, 4, 5), base[2]):
        bad = ~np.isfinite(arr)
        with pytest.raises(ValueError) as err:
            validation.check_finite("distances", arr)
        assert str(err.value) == (
            f"distances: expected finite values, found {arr[bad].flat[0]} at "
            f"{position_text(arr, bad)}; replace NaN/inf (e.g. by a large distance) before "
            "evaluating"
        )
    validation.check_finite("distances", np.zeros((3, 0)))


def _peak_bytes(call):
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_no_temporary_grows_with_the_gallery():
    """The whole-array rules held several gallery-sized masks (12.8 MB each here); chunked, the
    peak is the packed gallery plus a few chunks."""
    rng = np.random.default_rng(0)
    d = _pm1(rng, 200_000, bits=64)  # 12.8 MB of int8
    (_, words), peak = _peak_bytes(lambda: validation.codes_pair(d[:10], d, packed=True))
    assert peak < words.nbytes + 4 * 2**20
    gallery, peak = _peak_bytes(lambda: prepare_gallery({"db_codes": d}))
    assert peak < words.nbytes + 4 * 2**20 and gallery.codes.bits is None  # bits only when asked for
    scores = rng.random((8, 1_000_000), dtype=np.float32)  # 32 MB
    _, peak = _peak_bytes(lambda: validation.check_finite("scores", scores))
    assert peak < 2**20


def test_the_discount_table_is_grown_in_chunks_with_the_same_bits(monkeypatch):
    monkeypatch.setattr(discounts, "_table", np.ones(0))
    monkeypatch.setattr(discounts, "_CHUNK", 1000)
    one_pass = discounts._compute(5000)
    assert np.array_equal(discounts.discount_table(2500), one_pass[:2500])  # 2500 ranks in chunks
    assert np.array_equal(discounts.discount_table(5000), one_pass)  # grown by the ranks after them
    assert not discounts.discount_table(5000).flags.writeable
    monkeypatch.setattr(discounts, "_table", np.ones(0))
    monkeypatch.setattr(discounts, "_CHUNK", 1 << 14)
    table, peak = _peak_bytes(lambda: discounts.discount_table(500_000))
    assert peak < table.nbytes + 8 * 2**20  # the whole range at once took ~260 bytes per rank


def _codes_problem(rng, bits, n_q=6, n_g=40):
    q, d = rng.integers(0, 2, (n_q, bits)).astype(np.uint8), rng.integers(0, 2, (n_g, bits)).astype(np.uint8)
    return dict(
        n_queries=n_q,
        n_gallery=n_g,
        query_bits=q,
        query_labels=rng.integers(0, 4, n_q),
        db_labels=rng.integers(0, 4, n_g),
    ), d


@pytest.mark.parametrize("bits", [5, 64, 70])
def test_c_reads_packed_gallery_words_like_bits(cimpl, bits):
    rng = np.random.default_rng(bits)
    common, d = _codes_problem(rng, bits)
    options = Options(ties="stable", k=7)
    from_bits = cimpl.compute(Problem(**common, db_bits=d), options)
    from_words = cimpl.compute(Problem(**common, db_words=codes.pack_words(d)), options)
    for name in ("ap", "ndcg", "cmc", "precision_at_k"):
        np.testing.assert_array_equal(getattr(from_words, name), getattr(from_bits, name))
    if bits % 64:
        words = codes.pack_words(d)
        words[3, -1] |= np.uint64(1) << np.uint64(63)  # past the code: a distance beyond B
        with pytest.raises(ValueError, match=rf"db_words: expected every bit past the first {bits} of a code"):
            cimpl.compute(Problem(**common, db_words=words), options)


def test_evaluate_hands_packed_words_only_to_implementations_that_read_them(cimpl):
    rng = np.random.default_rng(3)
    q, d = _pm1(rng, 5, bits=70), _pm1(rng, 300, bits=70)
    labels = dict(query_labels=rng.integers(0, 5, 5), db_labels=rng.integers(0, 5, 300))
    packed = build_problem(query_codes=q, db_codes=d, **labels, packed_codes=True)
    unpacked = build_problem(query_codes=q, db_codes=d, **labels)
    assert packed.db_bits is None and unpacked.db_words is None
    assert np.array_equal(packed.db_words, codes.pack_words(unpacked.db_bits))
    assert cimpl.reads_packed_codes
    kwargs = dict(query_codes=q, db_codes=d, **labels, ties="expected", k=40)
    numpy = rc.evaluate(**kwargs, implementation="numpy")
    for block_size in (None, 2):
        c = rc.evaluate(**kwargs, implementation="c", block_size=block_size)
        np.testing.assert_array_equal(c.ap, numpy.ap)
        np.testing.assert_array_equal(c.per_query.ndcg, numpy.per_query.ndcg)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1 << 18])
def test_c_id_runs_slice_the_gallery_like_the_sorted_ids(c_backend, monkeypatch, chunk):
    monkeypatch.setattr(c_backend, "CHUNK_ITEMS", chunk)
    rng = np.random.default_rng(chunk)
    for n in (1, 2, 9, 50):
        db_ids = rng.integers(-3, 4, n).astype(np.int64)
        order = np.argsort(db_ids, kind="stable")
        ids, starts = c_backend._id_runs(db_ids, order)
        query_ids = np.arange(-5, 6)
        for side in ("left", "right"):
            expected = np.searchsorted(db_ids[order], query_ids, side)
            np.testing.assert_array_equal(starts[np.searchsorted(ids, query_ids, side)], expected)
