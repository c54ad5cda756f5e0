"""Every small text file a command reads (``--known-deviations``, ``bench gate FILE``) is read within limits.

A plain ``open()`` waits forever on a FIFO, grows to ``MemoryError`` on ``/dev/zero`` and raises
``UnicodeDecodeError`` on bytes that are not UTF-8: each of these is a named ``ValueError`` here.
"""

from __future__ import annotations

import os
import threading

import pytest
from retrieval_conformance.conformance.bench.runs import load_run
from retrieval_conformance.conformance.harness.calling.loading import read_known_deviations
from retrieval_conformance.reference.readers import FileRefusedError
from retrieval_conformance.reference.readers.text import TextFileError, read_text_file, read_text_lines

READERS = {"known deviations": read_known_deviations, "bench run": load_run, "text": read_text_file}


def _unblock_later(path, seconds: float = 10.0) -> threading.Timer:
    """If a reader regresses to a plain open() of the FIFO, it blocks: a writer opened later lets it
    return, so the test fails on its assertion instead of hanging the suite."""

    def open_writer():
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # nobody is blocked on it: the reader refused it, as it should
            pass

    timer = threading.Timer(seconds, open_writer)
    timer.daemon = True
    timer.start()
    return timer


def _hostile(tmp_path, kind):
    path = tmp_path / "file"
    if kind == "fifo":
        os.mkfifo(path)
        _unblock_later(str(path))
    elif kind == "device":
        return "/dev/zero"
    elif kind == "not utf-8":
        path.write_bytes(b'{"a":\n"\xc3\x28"}\n')
    else:
        path.write_bytes(b"x" * 200)
    return str(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("kind", ["fifo", "device", "not utf-8"])
def test_hostile_text_files_give_a_named_error(reader, kind, tmp_path):
    path = _hostile(tmp_path, kind)
    with pytest.raises(ValueError) as info:
        READERS[reader](path)
    message = str(info.value)
    assert message.startswith(path)
    expected = {"fifo": "a FIFO", "device": "a character device", "not utf-8": "line 2: byte 0xc3 is not UTF-8"}
    assert expected[kind] in message


def test_limits_are_named(tmp_path):
    path = _hostile(tmp_path, "large")
    with pytest.raises(FileRefusedError) as info:
        read_text_file(path, max_bytes=100)
    assert info.value.limit == "max_bytes"
    (tmp_path / "lines").write_text("a\n" * 11)
    with pytest.raises(FileRefusedError, match="more than 10 lines"):
        read_text_file(tmp_path / "lines", max_lines=10)
    (tmp_path / "nul").write_bytes(b"a\n\0")
    with pytest.raises(TextFileError, match="line 2: NUL byte"):
        read_text_file(tmp_path / "nul")


def test_lines_comments_bom_and_crlf(tmp_path):
    path = tmp_path / "known.txt"
    path.write_bytes(b"\xef\xbb\xbfrank1*  # a comment\r\n\r\n  # only a comment\nmap_at_k\n")
    assert read_text_lines(path, comments=True) == ["rank1*", "map_at_k"]
    assert read_known_deviations(str(path)) == ["rank1*", "map_at_k"]
    assert read_text_lines(path)[0] == "rank1*  # a comment"
