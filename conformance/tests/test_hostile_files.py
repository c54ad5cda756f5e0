"""Hostile files (issue 14), files and commands: every reader and the
``evaluate``/``compute-ap`` commands end with a clean error naming the file, the limit and
what to do -- never a crash, a hang, a traceback or unbounded memory.

1. FIFOs and ``/dev/zero`` (or links to them), oversize and binary files, directories and
   missing files: refused or read as documented, by every reader.
2. ``compute-ap`` on FIFOs, devices, oversize and binary files: clean, documented output.
3. ``evaluate``'s array files: ``test_hostile_arrays.py``.

Pickles: see ``test_hostile_pickle_arrays.py`` and ``test_hostile_pickle_bombs.py``.
Whatever could hang runs in a child process (see
:mod:`retrieval_conformance.conformance.support.hostile_support`).
"""

from __future__ import annotations

import functools
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
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
_READERS = ("read_lines", "read_ranked_list", "load_restricted_pickle", "read_revisitop_gnd", "read_npy", "read_npz")


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
    with pytest.raises(
        FileRefusedError,
        match=r"r\.txt: 7 bytes, more than the limit of 6 bytes; "
        r"pass max_bytes=",
    ) as info:
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
    proc = run_in_child(
        "import sys; from retrieval_conformance.reference.readers import read_gt_query; read_gt_query(sys.argv[1])",
        str(tmp_path / "q"),
        timeout=120,
    )
    assert proc.returncode == 1 and "FileRefusedError" in proc.stderr
    assert "q_ok.txt: not a regular file (a FIFO)" in proc.stderr


# --------------------------------------------------------------------------- 2. compute-ap
def _compute_ap_in_child(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "retrieval_conformance.cli", "compute-ap", *argv], capture_output=True, timeout=120
    )


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
    assert proc.stderr == (f"File {tmp_path}/zero.txt not read: not a regular file (a character device)\n").encode()
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
    assert (
        err.getvalue()
        == (f"File {tmp_path}/r.txt not read: {len(ranked)} bytes, more than the limit of 10 bytes\n").encode()
    )
