"""Binary codes read in chunks of rows: checked and packed into 64-bit words in one pass (spec §1).

A gallery of codes can be the largest input of an evaluation (4,000,000 64-bit codes as int8 are
256 MB), and every whole-array temporary (a boolean mask, the bits as uint8) would cost as much
again.  So codes are read a chunk of rows at a time (about ``arrays.CHUNK_ITEMS`` values), and
one pass gives everything validation asks of them (:class:`CodeScan`) together with the codes
packed as the C library reads them: bit b of a code in word b // 64, at bit b % 64, a 1 where
the value is > 0 (+1 -> 1; -1 and 0 -> 0, which keeps the Hamming distance of valid codes).
One bit per byte (uint8), what the other implementations read, is unpacked from the words, also
in chunks, only when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
from retrieval_conformance.reference.contract.arrays import CHUNK_ITEMS

__all__ = ["CodeScan", "pack_words", "padding_is_zero", "scan_codes", "unpack_words", "word_count"]

WORD_BITS = 64


def word_count(n_bits: int) -> int:
    """64-bit words per packed code (at least one)."""
    return max(1, -(-n_bits // WORD_BITS))


def _chunk_rows(n_bits: int) -> int:
    return max(1, CHUNK_ITEMS // max(n_bits, 1))


def _words(rows: int, n_bits: int) -> np.ndarray:
    # little-endian words filled through their bytes: bit b lands in word b // 64 on any host
    return np.zeros((rows, word_count(n_bits)), dtype="<u8")


def _pack_into(words: np.ndarray, start: int, bits: np.ndarray) -> None:
    """Rows ``start:`` of the little-endian ``words`` from the boolean rows ``bits``.

    The rows are packed as one flat run of bits (several times faster than ``np.packbits``
    along rows of a few bytes): as they are when a row is whole bytes, else padded with 0s to
    whole words first."""
    rows, n_bits = bits.shape
    if rows == 0 or n_bits == 0:
        return
    if n_bits % 8:
        padded = np.zeros((rows, words.shape[1] * WORD_BITS), dtype=bool)
        padded[:, :n_bits] = bits
        bits = padded
    packed = np.packbits(np.ascontiguousarray(bits).reshape(-1), bitorder="little").reshape(rows, -1)
    words.view(np.uint8)[start : start + rows, : packed.shape[1]] = packed


def pack_words(bits: np.ndarray) -> np.ndarray:
    """(rows, B) values -> (rows, ceil(B/64)) uint64 words, a 1 for every nonzero value."""
    rows, n_bits = bits.shape
    words, step = _words(rows, n_bits), _chunk_rows(n_bits)
    for start in range(0, rows, step):
        _pack_into(words, start, bits[start : start + step] != 0)
    return words.astype(np.uint64, copy=False)


def unpack_words(words: np.ndarray, n_bits: int) -> np.ndarray:
    """The (rows, n_bits) uint8 0/1 bits of (rows, W) words packed by this module."""
    out = np.empty((words.shape[0], n_bits), dtype=np.uint8)
    step = _chunk_rows(n_bits)
    for start in range(0, words.shape[0], step):
        chunk = words[start : start + step].astype("<u8", copy=False).view(np.uint8)
        out[start : start + step] = np.unpackbits(chunk, axis=1, count=n_bits, bitorder="little")
    return out


def padding_is_zero(words: np.ndarray, n_bits: int) -> bool:
    """Whether the bits past ``n_bits`` in the last word of every code are all 0 (a 1 there would
    add to a Hamming distance, beyond the code length)."""
    pad = word_count(n_bits) * WORD_BITS - n_bits
    if pad == 0:
        return True
    mask = np.uint64(((1 << pad) - 1) << (WORD_BITS - pad))
    last = words[:, -1]
    for start in range(0, last.shape[0], CHUNK_ITEMS):
        if (last[start : start + CHUNK_ITEMS] & mask).any():
            return False
    return True


@dataclass
class CodeScan:
    """What one pass over a (rows, B) numeric code array found, and its packed words.

    Positions are (row, column) of the first such value in row-major order (what
    ``np.argwhere`` lists first), or None when there is none.
    """

    words: np.ndarray  # (rows, ceil(B/64)) uint64: a 1 where the value is > 0
    n_bits: int
    minus_one: bool = False  # a -1 somewhere
    nonfinite: Optional[Tuple[int, int]] = None  # the first NaN or inf
    not_signed: Optional[Tuple[int, int]] = None  # the first value outside {-1, +1}
    not_binary: Optional[Tuple[int, int]] = None  # the first value outside {0, 1}

    def first_invalid(self, signed: bool) -> Optional[Tuple[int, int]]:
        """The first value outside {-1, +1} (``signed``) or outside {0, 1}."""
        return self.not_signed if signed else self.not_binary


def scan_codes(arr: np.ndarray) -> CodeScan:
    """Check and pack a 2-D numeric code array, a chunk of rows at a time."""
    rows, n_bits = arr.shape
    words, step = _words(rows, n_bits), _chunk_rows(n_bits)
    scan = CodeScan(words, n_bits)
    for start in range(0, rows, step):
        chunk = arr[start : start + step]
        if _scan_valid_chunk(scan, words, start, chunk):
            continue
        if arr.dtype.kind == "f" and scan.nonfinite is None:
            scan.nonfinite = _first_false(np.isfinite(chunk), start)
        minus, plus = chunk == -1, chunk == 1
        scan.minus_one = scan.minus_one or bool(minus.any())
        if scan.not_signed is None:
            scan.not_signed = _first_false(minus | plus, start)
        if scan.not_binary is None:
            scan.not_binary = _first_false((chunk == 0) | plus, start)
        _pack_into(words, start, chunk > 0)
    scan.words = words.astype(np.uint64, copy=False)
    return scan


def _scan_valid_chunk(scan: CodeScan, words: np.ndarray, start: int, chunk: np.ndarray) -> bool:
    """The usual chunk, every value in {-1, +1} or every value in {0, 1}, scanned and packed with
    fewer passes over it than :func:`scan_codes`'s general one (codes are the largest input);
    False, with nothing recorded, for any other chunk."""
    plus = chunk == 1
    n_plus = np.count_nonzero(plus)
    other = chunk == -1
    n_other = np.count_nonzero(other)
    if n_plus + n_other != chunk.size:
        other = chunk == 0
        n_other = np.count_nonzero(other)
        if n_plus + n_other != chunk.size:
            return False
        if scan.not_signed is None and n_other:  # a 0: the first value outside {-1, +1}
            scan.not_signed = _first_true(other, start)
    elif n_other:
        scan.minus_one = True
        if scan.not_binary is None:  # a -1: the first value outside {0, 1}
            scan.not_binary = _first_true(other, start)
    _pack_into(words, start, plus)
    return True


def _first_true(hit: np.ndarray, row0: int) -> Tuple[int, int]:
    """(row, column) of the first True of the boolean rows ``hit`` (which holds one)."""
    row, column = divmod(int(hit.argmax()), hit.shape[1])
    return row0 + row, column


def _first_false(ok: np.ndarray, row0: int) -> Optional[Tuple[int, int]]:
    """(row, column) of the first False of the boolean rows ``ok`` (row ``row0`` on), or None."""
    if ok.size == 0:
        return None
    i = int(ok.argmin())
    if ok.flat[i]:
        return None
    row, column = divmod(i, ok.shape[1])
    return row0 + row, column
