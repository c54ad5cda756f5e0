"""Hostile array files given to ``evaluate --npz/--distances/...``: garbage, truncated zips, object
arrays, headers that declare 64 PiB or more data than the file holds, element counts past the
limit, all arrays together past ``--max-array-bytes``, missing files, ``--k abc``: one line
``error: ...`` on stderr and status 2, before anything large is allocated.

The other hostile files (FIFOs, devices, oversize and binary text files, ``compute-ap``) are in
``test_hostile_files.py``; pickles in ``test_hostile_pickle_arrays.py`` and
``test_hostile_pickle_bombs.py``.
"""

from __future__ import annotations

import io
import re
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from retrieval_conformance.cli import main
from retrieval_conformance.reference import readers
from retrieval_conformance.reference.readers import (
    read_npy,
    read_npz,
)


def _npy_header(shape, descr="<f8") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _zip(path: Path, members: dict, compression=zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _good_npz(path: Path) -> Path:
    np.savez(path, distances=np.array([[0.1, 0.2, 0.3]]), relevance=np.array([[0, 1, 1]]))
    return path


def _bad_npz(kind: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{kind}.npz"
    if kind == "garbage":
        path.write_bytes(bytes(range(256)) * 3)
    elif kind == "truncated":
        data = _good_npz(path).read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif kind == "object":
        np.savez(path, distances=np.array([None, 1], dtype=object))
    elif kind == "declares 64 PiB":
        _zip(path, {"distances.npy": _npy_header((2**53,)) + b"\0" * 64})
    elif kind == "declares more than it holds":
        _zip(path, {"distances.npy": _npy_header((10**6,)) + b"\0" * 80}, zipfile.ZIP_DEFLATED)
    elif kind == "zero-size items":  # 0 bytes declared, 2**28 elements: once 9.7 GB and 23 s to sort
        _zip(path, {"query_labels.npy": _npy_header((2**28,), "<U0")})
    elif kind == "shape beyond intp":  # 0 elements, but numpy raised OverflowError
        _zip(path, {"distances.npy": _npy_header((0, 2**64))})
    elif kind == "huge header":
        _zip(path, {"distances.npy": b"\x93NUMPY\x02\x00" + struct.pack("<I", 2**31) + b"{"})
    elif kind == "not npy member":
        _zip(path, {"distances": b"raw bytes"})
    elif kind == "unknown array name":
        np.savez(path, weights=np.zeros(2))
    elif kind == "a .npy file":
        with open(path, "wb") as f:
            np.save(f, np.zeros(2))
    elif kind == "missing":
        pass
    elif kind == "directory":
        path.mkdir()
    return path


NPZ_CASES = {
    "garbage": r"not a readable \.npz \(zip\) archive: BadZipFile",
    "truncated": r"not a readable \.npz \(zip\) archive: BadZipFile",
    "object": r"\['distances.npy'\]: dtype \|O is not read",
    "declares 64 PiB": r"\['distances.npy'\]: array of shape \(9007199254740992,\) and dtype <f8 "
    r"\(72,057,594,037,927,936 bytes \(64 PiB\)\) beyond the limit of "
    r"2,147,483,648 bytes \(2 GiB\); raise the limit with --max-array-bytes N",
    "declares more than it holds": r"declares 8,000,000 bytes .* but the member holds 80 bytes",
    "zero-size items": r"\['query_labels.npy'\]: dtype <U0 has items of 0 bytes",
    "shape beyond intp": r"\['distances.npy'\]: \.npy shape '\(0, 18446744073709551616\)' is beyond numpy",
    "huge header": r"\.npy header of 2,147,483,648 bytes",
    "not npy member": r"\['distances'\]: not an .npy member",
    "unknown array name": r"holds 'weights'; expected names among distances, ",
    "a .npy file": "a .npy file, not an .npz archive",
    "missing": "no such file; check the path",
    "directory": r"cannot be read \(is a directory\)",
}


@pytest.mark.parametrize("kind", NPZ_CASES)
def test_evaluate_npz_errors_are_one_line_and_status_2(kind, tmp_path, capsys):
    path = _bad_npz(kind, tmp_path)
    assert main(["evaluate", "--npz", str(path), "--implementation", "reference"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"error: --npz {path}") and captured.err.count("\n") == 1
    assert re.search(NPZ_CASES[kind], captured.err), captured.err


def _bad_npy(kind: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{kind.replace(' ', '_')}.npy"
    if kind == "garbage":
        path.write_bytes(bytes(range(256)))
    elif kind == "bad header":
        path.write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': 1, 2}\n")
    elif kind == "object":
        np.save(path, np.array([None], dtype=object))
    elif kind == "declares 8 GB":
        path.write_bytes(_npy_header((10**9,)) + b"\0" * 8)
    elif kind == "truncated":
        np.save(path, np.zeros((2, 3)))
        path.write_bytes(path.read_bytes()[:-8])
    elif kind == "structured":
        np.save(path, np.zeros(2, dtype=[("a", "<f8")]))
    elif kind == "version 3":
        path.write_bytes(b"\x93NUMPY\x03\x00" + b"\0" * 20)
    elif kind == "zero-size items":
        path.write_bytes(_npy_header((2**28,), "<U0"))
    elif kind == "shape beyond intp":
        path.write_bytes(_npy_header((0, 2**64)))
    return path


NPY_CASES = {
    "garbage": r"not a \.npy array \(no NUMPY magic string\); expected a \.npy file written by "
    r"numpy\.save",
    "bad header": r"malformed \.npy header",
    "object": r"dtype \|O is not read",
    "declares 8 GB": r"8,000,000,000 bytes .* beyond the limit .*--max-array-bytes",
    "truncated": r"declares 48 bytes .* but the file holds 40 bytes",
    "structured": r"dtype \|V8 is not read",
    "version 3": r"format version 3\.0 is not read",
    "zero-size items": r"dtype <U0 has items of 0 bytes",
    "shape beyond intp": r"beyond numpy's index range",
}


@pytest.mark.parametrize("kind", NPY_CASES)
def test_evaluate_npy_errors_are_one_line_and_status_2(kind, tmp_path, capsys):
    path = _bad_npy(kind, tmp_path)
    relevance = tmp_path / "rel.npy"
    np.save(relevance, np.array([[0, 1]]))
    argv = ["evaluate", "--distances", str(path), "--relevance", str(relevance)]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: --distances {path}: ") and captured.err.count("\n") == 1
    assert re.search(NPY_CASES[kind], captured.err), captured.err


def test_element_counts_are_bounded_as_well_as_bytes(tmp_path, capsys):
    """max_elements counts the elements of all members, before anything is allocated."""
    path = tmp_path / "labels.npz"
    np.savez(path, query_labels=np.arange(6, dtype=np.int8), db_labels=np.arange(6, dtype=np.int8))
    assert readers.read_npz(path, max_elements=12)["db_labels"].size == 6
    with pytest.raises(
        readers.FileRefusedError,
        match=r"\(6 elements\), 12 with the arrays before it, beyond "
        r"the limit of 11 elements",
    ) as info:
        readers.read_npz(path, max_elements=11)
    assert info.value.limit == "max_elements"
    np.save(tmp_path / "one.npy", np.arange(6, dtype=np.int8))
    with pytest.raises(readers.FileRefusedError, match="beyond the limit of 5 elements"):
        readers.read_npy(tmp_path / "one.npy", max_elements=5)


def test_evaluate_names_the_element_limit(tmp_path, capsys):
    """Past 2**31 elements even a byte budget raised with --max-array-bytes stops: the header alone tells."""
    path = tmp_path / "flags.npy"
    path.write_bytes(_npy_header((2**31 + 1,), "|b1"))
    relevance = tmp_path / "rel.npy"
    np.save(relevance, np.array([[0, 1]]))
    assert (
        main(["evaluate", "--distances", str(path), "--relevance", str(relevance), "--max-array-bytes", str(2**33)])
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: --distances {path}: array of shape (2147483649,) and dtype |b1 "
        "(2,147,483,649 elements) beyond the limit of 2,147,483,648 elements; evaluate the data in "
        "smaller parts"
    ), err


def test_evaluate_limits_all_arrays_together(tmp_path, capsys):
    npz = _good_npz(tmp_path / "run.npz")  # 24 + 24 bytes
    base = ["evaluate", "--npz", str(npz), "--implementation", "reference", "--json"]
    assert main(base + ["--max-array-bytes", "48"]) == 0
    capsys.readouterr()
    assert main(base + ["--max-array-bytes", "47"]) == 2
    err = capsys.readouterr().err
    assert (
        "['relevance.npy']: array of shape (1, 3) and dtype <i8 (24 bytes), 48 bytes with the "
        "arrays before it, beyond the limit of 47 bytes; raise the limit with --max-array-bytes" in err
    )
    # the .npy options share the budget with the .npz
    extra = tmp_path / "labels.npy"
    np.save(extra, np.zeros(1, dtype=np.int64))
    assert main(base + ["--max-array-bytes", "50", "--query-labels", str(extra)]) == 2
    assert "error: --query-labels" in capsys.readouterr().err


def test_evaluate_compressed_zeros_declaring_more_than_the_limit(tmp_path, capsys):
    """An honest deflate bomb, small: 8 MB of zeros in a few KB, refused from its header."""
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, distances=np.zeros((1000, 1000)))
    assert path.stat().st_size < 100_000
    assert main(["evaluate", "--npz", str(path), "--max-array-bytes", str(10**6)]) == 2
    assert "8,000,000 bytes (7.63 MiB)) beyond the limit of 1,000,000" in capsys.readouterr().err
    got = read_npz(path)  # within the default limit it loads, identical to numpy's reader
    np.testing.assert_array_equal(got["distances"], np.zeros((1000, 1000)))


def test_read_npy_and_npz_load_what_numpy_writes(tmp_path):
    arrays = {
        "a": np.arange(6, dtype=">i4").reshape(2, 3),
        "b": np.asfortranarray(np.eye(3)),
        "c": np.array(["x", "yz"]),
        "d": np.zeros((0, 4)),
        "e": np.float64(2.5),
    }
    np.savez(tmp_path / "x.npz", **arrays)
    got = read_npz(tmp_path / "x.npz")
    assert list(got) == list(arrays)
    for key, want in arrays.items():
        np.save(tmp_path / f"{key}.npy", want)
        for value in (got[key], read_npy(tmp_path / f"{key}.npy")):
            assert value.dtype == np.asarray(want).dtype and value.shape == np.shape(want)
            np.testing.assert_array_equal(value, want)
    assert read_npy(tmp_path / "b.npy").flags.f_contiguous


@pytest.mark.parametrize(
    "k, ok",
    [("abc", False), ("1.5", False), ("", False), ("9" * 5000, False), ("2", True), (" all ", True), ("None", True)],
)
def test_evaluate_k_argument(k, ok, tmp_path, capsys):
    npz = _good_npz(tmp_path / "run.npz")
    code = main(["evaluate", "--npz", str(npz), "--k", k, "--implementation", "reference"])
    err = capsys.readouterr().err
    if ok:
        assert code == 0 and err == ""
    else:
        assert code == 2 and err.startswith(
            "error: --k: expected a positive integer, a list like 1,5,10, or 'all' for the whole gallery, got "
        )
        assert len(err) < 200  # bounded whatever the length of --k (a 45,000-character k included)


def test_evaluate_exit_status_as_a_process(tmp_path):
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"PK\x03\x04" + bytes(200))
    for argv in (
        ["--npz", str(garbage)],
        ["--distances", str(tmp_path / "absent.npy")],
        ["--npz", str(_good_npz(tmp_path / "run.npz")), "--k", "abc"],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "retrieval_conformance.cli", "evaluate", *argv],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
        assert proc.stdout == ""
