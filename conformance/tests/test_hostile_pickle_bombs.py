"""Hostile files (issue 14), pickle bombs and refusals: exponential nested tuples,
``list(range(10**8))``, ``bytes(10**8)``, a huge memo index or a reference cycle in a tiny
file end with a bounded error naming the limit; globals, opcodes and keys outside what
plain data needs are refused, and error messages never print the data.
"""

from __future__ import annotations

import pickle
import re
import struct
import time

import numpy as np
import pytest
from retrieval_conformance.conformance.support.hostile_support import load_pickles_in_child
from retrieval_conformance.reference.readers import (
    FileRefusedError,
    load_restricted_pickle,
    read_revisitop_gnd,
)
from retrieval_conformance.reference.readers.pickles import proxies as pickle_proxies


# --------------------------------------------------------------------------- bombs
def _tuple_bomb(depth: int) -> bytes:
    """Nested tuples, each holding the previous one twice (memo references): tiny file,
    2**depth leaves when printed, hashed or compared."""
    out = b"\x80\x02N" + b"q\x00"
    for i in range(depth):  # POP the previous level (kept in the memo), GET it twice, TUPLE2
        out += b"0" + b"h" + bytes([i]) + b"h" + bytes([i]) + b"\x86" + b"q" + bytes([i + 1])
    return out


BOMBS = {
    # 485 bytes; str() of an error message holding it never ends
    "tuple bomb, depth 60": (_tuple_bomb(60) + b".", r"deeper than 32 containers \(max_depth\)"),
    "tuple bomb, depth 24": (_tuple_bomb(24) + b".", r"more than 10,000,000 elements .*max_items"),
    # hashing a tuple key is exponential: refused before the C unpickler hashes it
    "tuple bomb as a dict key": (b"\x80\x02}" + _tuple_bomb(24)[2:] + b"K\x01s.", r"dict key"),
    "tuple bomb in a set": (b"\x80\x04\x8f(" + _tuple_bomb(24)[2:] + b"\x90.", r"set item"),
    # list(range(10**8)) in 49 bytes
    "list(range(10**8))": (
        b"\x80\x02c__builtin__\nlist\nc__builtin__\nrange\nJ\x00\xe1\xf5\x05\x85R\x85R.",
        r"refused global builtins\.(list|range)",
    ),
    "range(10**8)": (b"\x80\x02c__builtin__\nrange\nJ\x00\xe1\xf5\x05\x85R.", r"refused global builtins\.range"),
    "bytes(10**8)": (b"\x80\x02c__builtin__\nbytes\nJ\x00\xe1\xf5\x05\x85R.", r"not a size"),
    "bytearray(10**8)": (b"\x80\x02c__builtin__\nbytearray\nJ\x00\xe1\xf5\x05\x85R.", r"not a size"),
    "set(range)": (
        b"\x80\x02c__builtin__\nset\nc__builtin__\nrange\nJ\x00\xe1\xf5\x05\x85R\x85R.",
        r"refused global builtins\.range",
    ),
    # the C unpickler allocates and clears a memo table of 2 * index entries (32 GiB)
    "memo index 2**31": (b"\x80\x04N" + b"r" + struct.pack("<I", 2**31) + b".", r"memo index"),
    # the C unpickler allocates the claimed size before reading
    "bytes8 claiming 2**60": (b"\x80\x04\x8e" + struct.pack("<Q", 2**60) + b"x.", r"malformed pickle"),
    "list containing itself": (b"\x80\x02]q\x00h\x00a.", r"reference cycle"),
    "many refs to a big list": (
        b"\x80\x02]q\x00(" + b"K\x00" * 1000 + b"e]q\x01(" + b"h\x00" * 20000 + b"e.",
        r"more than 10,000,000 elements",
    ),
}


def test_bombs_from_tiny_files_are_bounded(tmp_path):
    cases = {name: data for name, (data, _m) in BOMBS.items()}
    assert len(BOMBS["tuple bomb, depth 60"][0]) < 500 and len(BOMBS["list(range(10**8))"][0]) < 50
    t0 = time.perf_counter()
    got = load_pickles_in_child(tmp_path, cases)
    for name, (_data, match) in BOMBS.items():
        assert got[name].startswith("REFUSED UnpicklingError"), (name, got[name])
        assert re.search(match, got[name]), (name, got[name])
    assert time.perf_counter() - t0 < 60  # each takes milliseconds; the bombs took forever


def test_error_messages_never_print_the_data():
    """A nested-tuple bomb small enough to load gives a bounded, immediate message."""
    bomb = _tuple_bomb(20)[2:-2]  # without PROTO and the last BINPUT: 2**21 elements
    for key in (b"imlist", b"qimlist", b"gnd"):
        # {"imlist": [], "qimlist": ["q", "r"], "gnd": [], key: bomb}
        data = b"\x80\x02}(U\x06imlist]U\x07qimlist](U\x01qU\x01reU\x03gnd]U" + bytes([len(key)]) + key + bomb + b"u."
        t0 = time.perf_counter()
        with pytest.raises(ValueError, match="got tuple of length 2") as info:
            read_revisitop_gnd(data)
        assert len(str(info.value)) < 200 and time.perf_counter() - t0 < 10
    # 10**6 bytes as imlist would be a million ints: refused by type, named by length
    data = pickle.dumps({"imlist": bytes(10**6), "qimlist": [], "gnd": []}, protocol=3)
    with pytest.raises(
        ValueError,
        match=r"'imlist' must be a list of image names, got bytes "
        r"of length 1000000",
    ):
        read_revisitop_gnd(data)
    # unsortable and huge keys are summarised, not sorted or printed whole
    g = {1: 2, "x" * 10**6: 3, b"k": 4}
    with pytest.raises(ValueError, match="neither") as info:
        read_revisitop_gnd(pickle.dumps({"imlist": [], "qimlist": ["q"], "gnd": [g]}))
    assert len(str(info.value)) < 300


def test_limits_are_keyword_arguments(tmp_path):
    data = pickle.dumps(list(range(101)))
    assert load_restricted_pickle(data, max_items=101) == list(range(101))
    with pytest.raises(pickle.UnpicklingError, match=r"more than 100 container elements.*max_items"):
        load_restricted_pickle(data, max_items=100)
    arrays = pickle.dumps([np.zeros(10), np.zeros(1)], protocol=4)
    assert len(load_restricted_pickle(arrays, max_array_bytes=88)) == 2
    with pytest.raises(pickle.UnpicklingError, match=r"exceed 80 bytes in total \(max_array_bytes\)"):
        load_restricted_pickle(arrays, max_array_bytes=80)
    nested = pickle.dumps([[[1]]])
    assert load_restricted_pickle(nested, max_depth=3) == [[[1]]]
    with pytest.raises(pickle.UnpicklingError, match="deeper than 2"):
        load_restricted_pickle(nested, max_depth=2)
    with pytest.raises(FileRefusedError, match="max_bytes"):
        load_restricted_pickle(data, max_bytes=10)
    (tmp_path / "g.pkl").write_bytes(data)
    with pytest.raises(FileRefusedError, match=r"g\.pkl: .* more than the limit of 10 bytes"):
        load_restricted_pickle(tmp_path / "g.pkl", max_bytes=10)
    gnd = {"imlist": ["a", "b"], "qimlist": ["q"], "gnd": [{"easy": np.arange(5), "hard": [], "junk": []}]}
    # 2 + 1 names and 5 ids
    assert read_revisitop_gnd(pickle.dumps(gnd), max_ids=8)["gnd"][0]["easy"] == [0, 1, 2, 3, 4]
    with pytest.raises(
        ValueError,
        match=r"gnd\[0\]\['easy'\].*more ids and names than the "
        r"limit \(max_ids\)",
    ):
        read_revisitop_gnd(pickle.dumps(gnd), max_ids=7)


def test_build_cannot_rewrite_our_callables():
    """BUILD (state) on a global would setattr on it: __defaults__ for the whole process."""
    before = pickle_proxies._latin1_encode.__defaults__
    data = b"\x80\x02c_codecs\nencode\nN}X\x0c\x00\x00\x00__defaults__X\x05\x00\x00\x00rot13\x85s\x86b."
    with pytest.raises(pickle.UnpicklingError, match="refused BUILD"):
        load_restricted_pickle(data)
    assert pickle_proxies._latin1_encode.__defaults__ == before
    for data in (
        pickle.dumps(np.arange(3), protocol=5)[:-1] + b"N}\x86b.",  # on a finished array
        b"\x80\x02cnumpy\ndtype\nX\x02\x00\x00\x00f8\x85RN\x85b.",
    ):  # malformed dtype state
        with pytest.raises(pickle.UnpicklingError, match="refused"):
            load_restricted_pickle(data)


@pytest.mark.parametrize(
    "data, match",
    [
        (pickle.dumps({(1, 2): 3}), "dict key"),
        (pickle.dumps({2**61 - 1: 1, 2 * (2**61 - 1): 2}), "dict key"),  # equal hashes
        (pickle.dumps({frozenset([1]): 1}), "dict key"),
        (pickle.dumps({(1,), (2,)}, protocol=4), "set item"),
        (pickle.dumps({(1,), (2,)}, protocol=2), r"set\(\) of list"),
        (pickle.dumps(frozenset([(1,)]), protocol=4), "frozenset item"),
        (pickle.dumps({np.int64(1): 1}), "dict key"),
        (b"\x80\x02cnumpy\nndarray\nK\n\x85\x81.", "NEWOBJ"),  # ndarray.__new__(ndarray, 10)
        (b"(inumpy\nndarray\n.", "INST"),
        (b"\x80\x02U\x01xQ.", "persistent id"),
        (b"\x80\x02cnumpy\nndarray\nK\n\x85R.", r"call of numpy\.ndarray"),
        (b"\x80\x02c__builtin__\nset\n.", r"bare global \(builtins\.set\)"),
        (b"\x80\x02c__builtin__\ncomplex\nU\x031+jK\x00\x86R.", "two numbers"),
        (b"\x80\x02c__builtin__\nbytes\nX\x01\x00\x00\x00aX\x05\x00\x00\x00rot13\x86R.", "codec"),
        (b"\x80\x02]q\x00K\x01a", "malformed"),  # no STOP
        (b"\x80\x02a.", "malformed"),
    ],
)
def test_restricted_unpickler_refusals(data, match):
    with pytest.raises(pickle.UnpicklingError, match=match):
        load_restricted_pickle(data)


def test_scalar_keys_and_items_still_load():
    obj = {"a": 1, b"b": 2, 3: {4, "x", None}, -5: frozenset([1.5, True]), None: 0.25}
    assert load_restricted_pickle(pickle.dumps(obj, protocol=2)) == obj
    assert load_restricted_pickle(pickle.dumps(obj, protocol=5)) == obj
