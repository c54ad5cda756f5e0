"""What ranks exchange travels without pickle (``implementations/distributed/payloads.py``): every
kind of value a distributed evaluation sends comes back exact, anything else is refused by name on
the sending side, and bytes that are not a payload are a named error, never code run."""

from __future__ import annotations

import math
import pickle
from unittest import mock

import numpy as np
import pytest
from retrieval_conformance.conformance.support.distributed_support import one_process_group, requires_gloo
from retrieval_conformance.implementations.distributed.payloads import decode_payload, encode_payload


def _same(a, b) -> bool:
    """Equal values of the same types, arrays by dtype, shape and bits, floats by bits."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, float):
        return a.hex() == b.hex()
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


PASS_ONE_REPLY = {  # what a rank sends after pass 1, and the query block it sends first
    "stats": {
        "n_kept": np.array([5, 7], np.int64),
        "row": np.array([0, 0, 1], np.int64),
        "key": np.array([-3, 2**62, 7], np.int64),
        "smallest": np.full((2, 0), 2**63 - 1, np.int64),
    },
    "float64": True,
    "graded": False,
    "error": None,
    "queries": {"query_codes": np.array([[1, -1, 0]], np.int8), "query_embeddings": np.zeros((0, 4), np.float32)},
    "n_gallery": 0,
    "minus_one": np.bool_(True),
}


@pytest.mark.parametrize(
    "value",
    [
        PASS_ONE_REPLY,
        {"stats": None, "float64": None, "graded": False, "error": ("ValueError", "db_labels: expected … got 'x'")},
        (1, 2.5, -0.0, math.inf, -math.inf, 2**100, -7, "", None, True, False),
        [np.float32(0.1), np.int64(-1), np.bool_(False), np.float64(1e-310)],
        {
            "strided": np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2],
            "fortran": np.asfortranarray(np.eye(3)),
            "scalar0d": np.array(3.5, np.float16),
            "strings": np.array(["a", "bé"]),
            "empty": {},
            "nested": [[], ()],
        },
        None,
        [],
        0.1,
    ],
    ids=["pass-one", "error", "scalars", "numpy-scalars", "arrays", "none", "empty-list", "float"],
)
def test_round_trip_is_exact(value):
    assert _same(decode_payload(encode_payload(value)), value)


def test_nan_keeps_its_bits():
    back = decode_payload(encode_payload({"x": math.nan, "a": np.array([np.nan, -np.nan])}))
    assert math.isnan(back["x"]) and back["a"].tobytes() == np.array([np.nan, -np.nan]).tobytes()


def test_decoding_never_unpickles():
    """A payload is read with pickle switched off: nothing in it can name code to run."""
    data = encode_payload(PASS_ONE_REPLY)
    with (
        mock.patch.object(pickle, "loads", side_effect=AssertionError("pickle.loads called")),
        mock.patch.object(pickle, "load", side_effect=AssertionError("pickle.load called")),
    ):
        assert _same(decode_payload(data), PASS_ONE_REPLY)
    assert b"\x80\x04" not in data[:16] and data[8:9] == b"{"  # a JSON header, not a pickle stream


@pytest.mark.parametrize(
    "value, where",
    [
        ({1: "a"}, "dict key must be a str"),
        ({"x": [set()]}, "payload['x'][0]: a builtins.set cannot travel"),
        (np.array([1, None], dtype=object), "dtype object cannot travel without pickle"),
        ({"f": lambda: 0}, "payload['f']: a builtins.function cannot travel"),
        (b"raw", "a builtins.bytes cannot travel"),
    ],
)
def test_refuses_what_cannot_travel_by_name(value, where):
    with pytest.raises(TypeError, match=where.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        encode_payload(value)


def test_a_pickle_is_not_a_payload():
    """Bytes from ``pickle.dumps`` (or anything else) are refused with a named error."""
    with pytest.raises(ValueError, match="payload: "):
        decode_payload(pickle.dumps({"a": 1}))
    for bad, what in [
        (b"", "at least 8 bytes"),
        (b"\x05" + bytes(7) + b"ab", "claims 5 bytes"),
        (b"\x02" + bytes(7) + b"{}", "not an .npz archive"),
        (b"\x04" + bytes(7) + b"nope", "not UTF-8 JSON"),
        (b"\x0b" + bytes(7) + b'{"array":0}' + encode_payload(None)[12:], "archive holds 0"),
        (b"\x0b" + bytes(7) + b'{"thing":0}' + encode_payload(None)[12:], "unknown header node"),
    ]:
        with pytest.raises(ValueError, match=what):
            decode_payload(bad)


@requires_gloo
def test_all_gather_objects_uses_the_payloads():
    """Through a process group of one: the payload round trip, and a set (which pickle would carry)
    refused by name."""
    from retrieval_conformance.implementations.distributed import ProcessGroup

    with one_process_group():
        group = ProcessGroup()
        (back,) = group.all_gather_objects(PASS_ONE_REPLY)
        assert _same(back, PASS_ONE_REPLY)
        with pytest.raises(TypeError, match="builtins.set cannot travel"):
            group.all_gather_objects({"queries": {1, 2}})
