"""Hostile files (issue 14), files and commands: every reader and the
``evaluate``/``compute-ap`` commands end with a clean error naming the file, the limit and
what to do -- never a crash, a hang, a traceback or unbounded memory.

1. FIFOs and ``/dev/zero`` (or links to them), oversize and binary files, directories and
   missing files: refused or read as documented, by every reader.
2. ``compute-ap`` on FIFOs, devices, oversize and binary files: clean, documented output.
3. ``evaluate --npz/--distances``: garbage, truncated zips, object arrays, headers that
   declare 64 PiB or more data than the file holds, missing files, ``--k abc``: one line
   ``error: ...`` on stderr and status 2.

Pickles: see ``test_hostile_pickle_arrays.py`` and ``test_hostile_pickle_bombs.py``.
Whatever could hang runs in a child process (see
:mod:`retrieval_conformance.conformance.support.hostile_support`).
"""
from __future__ import annotations

import functools
import io
import os
import re
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from retrieval_conformance.cli import main
from retrieval_conformance.conformance.support.hostile_support import needs_dev_zero, needs_fifo, run_in_child
from retrieval_conformance.reference import readers
from retrieval_conformance.reference.protocols.landmark import cli as landmark_cli
from retrieval_conformance.reference.protocols.landmark import format_cpp_float, oxford_ap
from retrieval_conformance.reference.readers import (
    FileRefusedError,
    load_restricted_pickle,
    read_lines,
    read_npy,
    read_npz,
    read_revisitop_gnd,
)

# --------------------------------------------------------------------------- 1. files
_READ_IN_CHILD = r"""
import sys
from retrieval_conformance.reference import readers
for name in sys.argv[2:]:
    try:
        getattr(readers, name)(sys.argv[1])
        print(name, "READ", flush=True)
    except Exception as exc:
        print(name, type(exc).__name__, str(exc).replace("\n", " ")[:300], flush=True)
"""
_READERS = ("read_lines", "read_ranked_list", "load_restricted_pickle", "read_revisitop_gnd",
            "read_npy", "read_npz")


def _read_special(path: Path) -> list:
    proc = run_in_child(_READ_IN_CHILD, str(path), *_READERS, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.splitlines()


@needs_fifo
def test_readers_refuse_a_fifo_instead_of_blocking(tmp_path):
    fifo = tmp_path / "ranked.txt"
    os.mkfifo(fifo)
    lines = _read_special(fifo)  # a reader that opens the FIFO blocks: the timeout fails it
    assert len(lines) == len(_READERS)
    for line in lines:
        assert f"FileRefusedError {fifo}: not a regular file (a FIFO)" in line, line
        assert "copy the data into a regular file" in line


@needs_dev_zero
def test_readers_refuse_a_link_to_dev_zero_instead_of_reading_forever(tmp_path):
    link = tmp_path / "gnd.pkl"
    link.symlink_to("/dev/zero")
    for line in _read_special(link):
        assert f"FileRefusedError {link}: not a regular file (a character device)" in line, line


def test_read_lines_byte_and_line_limits(tmp_path):
    path = tmp_path / "r.txt"
    path.write_bytes(b"a\nbb\nc\n")
    assert read_lines(path, max_bytes=7, max_lines=3) == ["a", "bb", "c"]
    with pytest.raises(FileRefusedError, match=r"r\.txt: 7 bytes, more than the limit of 6 bytes; "
                                               r"pass max_bytes=") as info:
        read_lines(path, max_bytes=6)
    assert info.value.limit == "max_bytes" and info.value.path == str(path)
    with pytest.raises(FileRefusedError, match=r"r\.txt: more than 2 lines \(3\); pass max_lines="):
        read_lines(path, max_lines=2)
    path.write_bytes(b"\n" * 5)  # five empty names
    with pytest.raises(FileRefusedError, match="more than 4 lines"):
        read_lines(path, max_lines=4)
    assert readers.MAX_FILE_BYTES == 1 << 30 and readers.MAX_LINES == 10**7


def test_read_lines_binary_garbage_and_long_lines(tmp_path):
    garbage = bytes(range(256)) * 64 + b"x" * 100_000
    (tmp_path / "g.txt").write_bytes(garbage)
    names = read_lines(tmp_path / "g.txt")
    assert b"\n".join(n.encode("utf-8", "surrogateescape") for n in names) == garbage


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_read_lines_reads_files_that_report_no_size():
    assert os.stat("/proc/self/status").st_size == 0
    assert any(n.startswith("Name:") for n in read_lines("/proc/self/status"))
    with pytest.raises(FileRefusedError, match="larger than the limit of 10 bytes"):
        read_lines("/proc/self/status", max_bytes=10)


def test_directories_and_missing_files(tmp_path):
    assert read_lines(tmp_path) == []  # std::ifstream reads a directory as empty
    for reader in (load_restricted_pickle, read_revisitop_gnd, read_npy, read_npz):
        with pytest.raises(IsADirectoryError):
            reader(tmp_path)
        with pytest.raises(FileNotFoundError):
            reader(tmp_path / "absent")


@needs_fifo
def test_ground_truth_query_with_a_fifo(tmp_path):
    for kind in ("good", "junk"):
        (tmp_path / f"q_{kind}.txt").write_bytes(b"a\n")
    os.mkfifo(tmp_path / "q_ok.txt")
    proc = run_in_child("import sys; from retrieval_conformance.reference.readers import read_gt_query;"
                  " read_gt_query(sys.argv[1])", str(tmp_path / "q"), timeout=120)
    assert proc.returncode == 1 and "FileRefusedError" in proc.stderr
    assert "q_ok.txt: not a regular file (a FIFO)" in proc.stderr


# --------------------------------------------------------------------------- 2. compute-ap
def _compute_ap_in_child(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "retrieval_conformance.cli", "compute-ap", *argv],
                          capture_output=True, timeout=120)


@needs_fifo
@needs_dev_zero
def test_compute_ap_on_fifos_and_devices(tmp_path):
    (tmp_path / "q_good.txt").write_bytes(b"a\nb\n")
    (tmp_path / "q_ok.txt").write_bytes(b"")
    (tmp_path / "q_junk.txt").write_bytes(b"")
    os.mkfifo(tmp_path / "fifo.txt")
    (tmp_path / "zero.txt").symlink_to("/dev/zero")
    q = str(tmp_path / "q")
    proc = _compute_ap_in_child(q, str(tmp_path / "fifo.txt"))
    assert (proc.returncode, proc.stdout) == (255, b"")
    assert proc.stderr == f"File {tmp_path}/fifo.txt not read: not a regular file (a FIFO)\n".encode()
    proc = _compute_ap_in_child(q, str(tmp_path / "zero.txt"))
    assert (proc.returncode, proc.stdout) == (255, b"")
    assert proc.stderr == (f"File {tmp_path}/zero.txt not read: not a regular file "
                           "(a character device)\n").encode()
    # a gt file that is a device, after a readable ranked list: reported in the program's order
    (tmp_path / "r.txt").write_bytes(b"a\n")
    (tmp_path / "d_good.txt").write_bytes(b"a\n")
    (tmp_path / "d_ok.txt").symlink_to("/dev/zero")
    (tmp_path / "d_junk.txt").write_bytes(b"")
    proc = _compute_ap_in_child(str(tmp_path / "d"), str(tmp_path / "r.txt"))
    assert proc.returncode == 255 and proc.stderr.startswith(f"File {tmp_path}/d_ok.txt not read".encode())
    # the program's own message for a missing file is unchanged
    proc = _compute_ap_in_child(q, str(tmp_path / "absent.txt"))
    assert (proc.returncode, proc.stderr) == (255, f"File {tmp_path}/absent.txt not found!\n".encode())


def test_compute_ap_on_binary_garbage_and_oversize_files(tmp_path, monkeypatch):
    (tmp_path / "q_good.txt").write_bytes(b"\xff\x00\n")
    (tmp_path / "q_ok.txt").write_bytes(b"")
    (tmp_path / "q_junk.txt").write_bytes(b"")
    ranked = b"\x00\x01\n\xff\x00\n" + bytes(range(256))
    (tmp_path / "r.txt").write_bytes(ranked)
    out, err = io.BytesIO(), io.BytesIO()
    argv = [str(tmp_path / "q"), str(tmp_path / "r.txt")]
    assert landmark_cli.compute_ap_main(argv, stdout=out, stderr=err) == 0
    names = read_lines(tmp_path / "r.txt")
    assert len(names) == 4 and names[1] == read_lines(tmp_path / "q_good.txt")[0]
    want = format_cpp_float(oxford_ap(names, names[1:2], [], [])) + "\n"
    assert (out.getvalue(), err.getvalue()) == (want.encode(), b"")
    # beyond the byte limit (1 GiB by default, lowered here): a clean message, status 255
    monkeypatch.setattr(landmark_cli, "read_lines", functools.partial(read_lines, max_bytes=10))
    out, err = io.BytesIO(), io.BytesIO()
    assert landmark_cli.compute_ap_main(argv, stdout=out, stderr=err) == 255
    assert out.getvalue() == b""
    assert err.getvalue() == (f"File {tmp_path}/r.txt not read: {len(ranked)} bytes, more than "
                              "the limit of 10 bytes\n").encode()


# --------------------------------------------------------------------------- 3. evaluate
def _npy_header(shape, descr="<f8") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False,
                                               "shape": shape})
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
    with pytest.raises(readers.FileRefusedError, match=r"\(6 elements\), 12 with the arrays before it, beyond "
                       r"the limit of 11 elements") as info:
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
    assert main(["evaluate", "--distances", str(path), "--relevance", str(relevance),
                 "--max-array-bytes", str(2**33)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --distances {path}: array of shape (2147483649,) and dtype |b1 "
                          "(2,147,483,649 elements) beyond the limit of 2,147,483,648 elements; evaluate the data in "
                          "smaller parts"), err


def test_evaluate_limits_all_arrays_together(tmp_path, capsys):
    npz = _good_npz(tmp_path / "run.npz")  # 24 + 24 bytes
    base = ["evaluate", "--npz", str(npz), "--implementation", "reference", "--json"]
    assert main(base + ["--max-array-bytes", "48"]) == 0
    capsys.readouterr()
    assert main(base + ["--max-array-bytes", "47"]) == 2
    err = capsys.readouterr().err
    assert "['relevance.npy']: array of shape (1, 3) and dtype <i8 (24 bytes), 48 bytes with the " \
           "arrays before it, beyond the limit of 47 bytes; raise the limit with --max-array-bytes" in err
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
    arrays = {"a": np.arange(6, dtype=">i4").reshape(2, 3), "b": np.asfortranarray(np.eye(3)),
              "c": np.array(["x", "yz"]), "d": np.zeros((0, 4)), "e": np.float64(2.5)}
    np.savez(tmp_path / "x.npz", **arrays)
    got = read_npz(tmp_path / "x.npz")
    assert list(got) == list(arrays)
    for key, want in arrays.items():
        np.save(tmp_path / f"{key}.npy", want)
        for value in (got[key], read_npy(tmp_path / f"{key}.npy")):
            assert value.dtype == np.asarray(want).dtype and value.shape == np.shape(want)
            np.testing.assert_array_equal(value, want)
    assert read_npy(tmp_path / "b.npy").flags.f_contiguous


@pytest.mark.parametrize("k, ok", [("abc", False), ("1.5", False), ("", False), ("9" * 5000, False),
                                   ("2", True), (" all ", True), ("None", True)])
def test_evaluate_k_argument(k, ok, tmp_path, capsys):
    npz = _good_npz(tmp_path / "run.npz")
    code = main(["evaluate", "--npz", str(npz), "--k", k, "--implementation", "reference"])
    err = capsys.readouterr().err
    if ok:
        assert code == 0 and err == ""
    else:
        assert code == 2 and err.startswith(
            "error: --k: expected a positive integer, a list like 1,5,10, or 'all' for the whole gallery, got ")
        assert len(err) < 200  # bounded whatever the length of --k (a 45,000-character k included)


def test_evaluate_exit_status_as_a_process(tmp_path):
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"PK\x03\x04" + bytes(200))
    for argv in (["--npz", str(garbage)], ["--distances", str(tmp_path / "absent.npy")],
                 ["--npz", str(_good_npz(tmp_path / "run.npz")), "--k", "abc"]):
        proc = subprocess.run([sys.executable, "-m", "retrieval_conformance.cli", "evaluate", *argv],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
        assert proc.stdout == ""
