"""Hostile files (issue 14), numpy arrays in pickles: crafted arrays (object and structured
dtypes, field offsets) crashed the process (segfault) through allowed globals only; they are
refused now, while real arrays of protocols 0-5, numpy 1.x and 2.x names and Python 2
pickles still load identically, and random edits of real pickles never crash.

Reproducers are built in the tests themselves; what could crash runs in a child process
(see :mod:`retrieval_conformance.conformance.support.hostile_support`).
"""

from __future__ import annotations

import pickle
import pickletools
import re

import numpy as np
import pytest
from retrieval_conformance.conformance.support.hostile_support import load_pickles_in_child, run_in_child
from retrieval_conformance.reference.readers import load_restricted_pickle, read_revisitop_gnd

# numpy's own callables, so that pickle.dumps names them as numpy does (numpy._core.* on
# numpy 2, numpy.core.* on numpy 1)
_RECONSTRUCT = np.arange(1).__reduce__()[0]
_FROMBUFFER = np.arange(1).__reduce_ex__(5)[0]
_SCALAR = np.float64(0).__reduce__()[0]


class _Reduce:
    """Pickles as ``func(*args)`` followed by ``BUILD state``: any crafted numpy object."""

    def __init__(self, func, args, state=None):
        self.func, self.args, self.state = func, args, state

    def __reduce__(self):
        if self.state is None:
            return self.func, self.args
        return self.func, self.args, self.state


def _dtype(code, state):
    return _Reduce(np.dtype, (code, False, True), state)


def _array(dtype, shape, raw, fortran=False):
    return _Reduce(_RECONSTRUCT, (np.ndarray, (0,), b"b"), (1, shape, dtype, fortran, raw))


# --------------------------------------------------------------------------- crafted arrays
_OBJECT_FIELD = (3, "|", None, ("a",), {"a": (np.dtype("O"), 0)}, 8, 1, 0)
_FAR_FIELD = (3, "|", None, ("a",), {"a": (np.dtype("f8"), 2**40)}, 8, 1, 0)

CRAFTED_ARRAYS = {
    # object field with flags 0: numpy took the 8 bytes as a PyObject* (segfault)
    "object field, flags 0": (
        _array(_dtype("V8", _OBJECT_FIELD), (1,), b"A" * 8),
        r"refused numpy\.dtype\('(V8|O8)'\)",
    ),
    "object dtype over bytes": (_array(np.dtype("O"), (1,), b"A" * 8), r"refused numpy\.dtype\('O8'\).*object"),
    "structured dtype": (_array(np.dtype([("a", "<f8")]), (1,), b"\0" * 8), r"refused numpy\.dtype\('V8'\)"),
    # a field 1 TiB past the array: reads (and prints) arbitrary memory
    "field offset 2**40": (_array(_dtype("f8", _FAR_FIELD), (1,), b"A" * 8), r"refused dtype state with fields"),
    "subarray dtype": (_array(np.dtype(("f8", (2,))), (1,), b"\0" * 16), r"refused numpy\.dtype|refused dtype state"),
    "datetime dtype": (_array(np.dtype("M8[s]"), (1,), b"\0" * 8), r"refused numpy\.dtype\('M8'\)"),
    "protocol-5 object array": (
        _Reduce(_FROMBUFFER, (b"A" * 8, np.dtype("O"), (1,), "C")),
        r"refused numpy\.dtype\('O8'\)",
    ),
    "object scalar": (_Reduce(_SCALAR, (np.dtype("O"), b"A" * 8)), r"refused numpy\.dtype\('O8'\)"),
    "object data as a list": (_array(np.dtype("f8"), (1,), [1.0]), r"not bytes"),
    "too few bytes": (_array(np.dtype("f8"), (10,), b"\0" * 8), r"8 bytes of data for shape"),
    "too many bytes": (_array(np.dtype("u1"), (1,), b"\0" * 9), r"9 bytes of data for shape"),
    "huge shape": (_array(np.dtype("f8"), (2**62, 2**62), b""), r"0 bytes of data for shape"),
    "negative shape": (_array(np.dtype("f8"), (-1,), b""), r"non-negative ints"),
    "bad code points": (_array(np.dtype("U1"), (1,), b"\xff\xff\xff\xff"), r"code points"),
    "plain dtype with its state": (
        _Reduce(
            _RECONSTRUCT,
            (np.ndarray, (0,), b"b"),
            (1, (1,), _dtype("f8", (3, "<", None, None, None, -1, -1, 0)), False, b"\0" * 8),
        ),
        None,
    ),
}


def test_crafted_arrays_are_refused_not_crashing(tmp_path):
    cases = {}
    for name, (obj, _match) in CRAFTED_ARRAYS.items():
        for protocol in (2, 5):
            cases[f"{name} (protocol {protocol})"] = pickle.dumps(obj, protocol=protocol)
    got = load_pickles_in_child(tmp_path, cases)
    for name, (_obj, match) in CRAFTED_ARRAYS.items():
        for protocol in (2, 5):
            line = got[f"{name} (protocol {protocol})"]
            if match is None:  # a plain dtype state: loads
                assert line.startswith("LOADED"), (name, line)
                continue
            assert line.startswith("REFUSED UnpicklingError"), (name, line)
            assert re.search(match, line), (name, line)


def test_crafted_arrays_in_a_ground_truth_file(tmp_path):
    """Where the segfaults were found: _as_id_list on 'easy', or printing 'bbx'."""
    cases = {}
    for name in ("object field, flags 0", "field offset 2**40", "object dtype over bytes"):
        obj = CRAFTED_ARRAYS[name][0]
        for key in ("easy", "bbx"):
            gnd = {"easy": [0], "hard": [], "junk": [], key: obj}
            cases[f"{name} as {key}"] = pickle.dumps({"imlist": ["a"], "qimlist": ["q"], "gnd": [gnd]}, protocol=2)
    for name, line in load_pickles_in_child(tmp_path, cases, mode="gnd").items():
        assert line.startswith("REFUSED UnpicklingError refused"), (name, line)


def test_dtype_state_may_only_set_the_byte_order():
    state = (3, ">", None, None, None, -1, -1, 0)
    raw = b"\0\0\0\1\0\0\0\2"
    got = load_restricted_pickle(pickle.dumps(_array(_dtype("i4", state), (2,), raw)))
    assert got.dtype == np.dtype("=i4") and got.tolist() == [1, 2]  # swapped, as numpy does
    got = load_restricted_pickle(pickle.dumps(_Reduce(_FROMBUFFER, (raw, _dtype("i4", state), (2,), "C"))))
    assert got.dtype == np.dtype(">i4") and got.tolist() == [1, 2]  # protocol 5 keeps the order
    for bad, match in [
        ((3, "<", None, ("a",), None, -1, -1, 0), "fields"),
        ((3, "<", (np.dtype("f8"), (2,)), None, None, -1, -1, 0), "sub-array"),
        ((3, "<", None, None, None, 16, -1, 0), "item size"),
        ((2, "<", None, None, None, -1, -1, 0), "version"),
        ((3, "?", None, None, None, -1, -1, 0), "malformed"),
        ((4, "<", None, None, None, -1, -1, 0, {"unit": "s"}), "metadata"),
    ]:
        with pytest.raises(pickle.UnpicklingError, match=match):
            load_restricted_pickle(pickle.dumps(_array(_dtype("f8", bad), (1,), b"\0" * 8)))


# --------------------------------------------------------------------------- real pickles still load
def _real_arrays():
    transposed = np.arange(24, dtype=np.int16).reshape(2, 3, 4).transpose(1, 0, 2)
    return {
        "i8": np.array([2, 5, 7]),
        "i4": np.array([3], dtype=np.int32),
        "be": np.array([1, -2], dtype=">i4"),
        "u1": np.arange(5, dtype=np.uint8),
        "b1": np.array([True, False]),
        "f2": np.array([0.5], dtype=np.float16),
        "f4F": np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
        "c16": np.array([1 + 2j]),
        "S": np.array([b"ab", b"c"]),
        "U": np.array(["é", "xyz"]),
        "U>": np.array(["ab"], dtype=">U2"),
        "be-strided": np.arange(6, dtype=">f8")[::2],
        "empty": np.zeros((0, 3)),
        "k": transposed,
        "strided": np.arange(10.0)[::3],
        "scalars": [np.float64(0.5), np.int32(-3), np.str_("ab"), np.bool_(True)],
        "bbx": np.array([136.5, 34.1, 648.5, 955.7]),
    }


def _assert_same(got, want, protocol=5):
    """``got`` equals what numpy's own unpickling gives for ``want``."""
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, np.ndarray):
        dtype = want.dtype
        if protocol < 5 or not (want.flags.c_contiguous or want.flags.f_contiguous):
            dtype = dtype.newbyteorder("=")  # numpy's __setstate__ swaps to native order
        assert got.dtype == dtype and got.dtype.str == dtype.str
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert got.flags.writeable
        if want.flags.f_contiguous and not want.flags.c_contiguous:
            assert got.flags.f_contiguous
    elif isinstance(want, dict):
        assert got.keys() == want.keys()
        for key in want:
            _assert_same(got[key], want[key], protocol)
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            _assert_same(a, b, protocol)
    else:
        assert got == want


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_real_numpy_pickles_load_identically(protocol):
    want = {
        "imlist": ["img0", "img1"],
        "arrays": _real_arrays(),
        "set": {1, "a"},
        "bytes": b"\x00\xff",
        "ba": bytearray(b"xy"),
        "c": 1 - 2j,
        "empty": b"",
        "fs": frozenset([2.5, None]),
        "keys": {b"k": 1, 3: "three", -1: None},
    }
    _assert_same(load_restricted_pickle(pickle.dumps(want, protocol=protocol)), want, protocol)


def _with_numpy1_names(data: bytes) -> bytes:
    """The same pickle as numpy 1.x writes it: ``numpy.core.*`` names (frames dropped)."""
    ops = list(pickletools.genops(data))
    out = bytearray()
    for i, (op, arg, pos) in enumerate(ops):
        chunk = data[pos : ops[i + 1][2] if i + 1 < len(ops) else len(data)]
        if op.name == "FRAME":
            continue
        if op.name == "GLOBAL" and arg.startswith("numpy._core"):
            chunk = b"c" + arg.replace("numpy._core", "numpy.core").replace(" ", "\n").encode() + b"\n"
        elif op.name == "SHORT_BINUNICODE" and arg.startswith("numpy._core"):
            new = arg.replace("numpy._core", "numpy.core").encode()
            chunk = b"\x8c" + bytes([len(new)]) + new
        out += chunk
    return bytes(out)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_numpy1_names_load_identically(protocol):
    want = _real_arrays()
    data = pickle.dumps(want, protocol=protocol)
    if b"numpy._core" not in data:
        pytest.skip("numpy 1.x writes numpy.core names already")
    old = _with_numpy1_names(data)
    assert b"numpy._core" not in old and b"numpy.core" in old
    _assert_same(load_restricted_pickle(old), want, protocol)


def test_python2_ground_truth_pickle():
    """What Python 2's cPickle wrote (protocol 2, str as SHORT_BINSTRING, array data as str)."""
    raw = np.array([0, 2], dtype="<i8").tobytes()
    array = (
        b"cnumpy.core.multiarray\n_reconstruct\nq\x01cnumpy\nndarray\nq\x02K\x00\x85U\x01b\x87R"
        b"(K\x01K\x02\x85cnumpy\ndtype\nU\x02i8K\x00K\x01\x87R"
        b"(K\x03U\x01<NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb\x89U\x10" + raw + b"tb"
    )
    data = (
        b"\x80\x02}(U\x06imlist](U\x01aU\x01bU\x01ceU\x07qimlist]U\x01qaU\x03gnd]"
        b"}(U\x02ok" + array + b"U\x04junk]K\x01aU\x03bbx]G?\xf0\x00\x00\x00\x00\x00\x00auau."
    )
    cfg = read_revisitop_gnd(data)
    assert cfg["kind"] == "cirtorch" and cfg["imlist"] == ["a", "b", "c"]
    assert cfg["gnd"][0]["ok"] == [0, 2] and cfg["gnd"][0]["junk"] == [1]
    assert cfg["gnd"][0]["bbx"] == [1.0]


_MUTATE = r"""
import pickle, random, sys
from retrieval_conformance.reference.readers import load_restricted_pickle
seeds = [open(path, "rb").read() for path in sys.argv[1:]]
rng, other = random.Random(14), []
for i in range(600):
    data = bytearray(seeds[i % len(seeds)])
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data))
        if rng.random() < 0.7:
            data[at] = rng.randrange(256)
        else:
            del data[at:at + rng.randint(1, 8)]
    try:
        load_restricted_pickle(bytes(data))
    except pickle.UnpicklingError:
        pass
    except Exception as exc:
        other.append(type(exc).__name__)
print("OTHER", sorted(set(other)))
"""


def test_mutated_real_pickles_never_crash(tmp_path):
    """Random byte edits of real pickles: only UnpicklingError, never a crash."""
    paths = []
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        paths.append(tmp_path / f"p{protocol}.pkl")
        paths[-1].write_bytes(
            pickle.dumps({"imlist": ["a"], "arrays": _real_arrays(), "s": {1}, "b": b"xy", "c": 1j}, protocol=protocol)
        )
    proc = run_in_child(_MUTATE, *map(str, paths))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "OTHER []"
