"""Every file format the project reads, read within limits, with errors that name the file and line.

Modules
-------
:mod:`~retrieval_conformance.reference.readers.limits`
    The limits (``MAX_FILE_BYTES``, ``MAX_LINES``, ``MAX_ARRAY_BYTES``, ...), the error a refused
    file raises (:class:`FileRefusedError`), and opening and reading regular files within a byte
    budget.
:mod:`~retrieval_conformance.reference.readers.trec`
    TREC run and qrels files, ranx-style dicts and ``ranx`` objects
    (:func:`read_run`, :func:`read_qrels`, :func:`as_run`, :func:`as_qrels`).
:mod:`~retrieval_conformance.reference.readers.npy`
    ``.npy`` and ``.npz`` files of plain arrays, headers checked (bytes and element counts)
    before anything is allocated (:func:`read_npy`, :func:`read_npz`).
:mod:`~retrieval_conformance.reference.readers.landmark_text`
    The VGG text layouts of Oxford5k / Paris6k ground truth and ranked lists.

The ground-truth pickles of revisitop and cirtorch are read by
:mod:`~retrieval_conformance.reference.safe_pickle` and
:mod:`~retrieval_conformance.reference.revisitop_gnd`; their readers are re-exported here so that
every reader is importable from this package.

A pickle can run arbitrary code when loaded: ground-truth pickles are only ever opened through
:class:`RestrictedUnpickler`; never hand an untrusted file to the standard library's loader.
"""
from __future__ import annotations

from retrieval_conformance.reference.readers.landmark_text import (
    GroundTruthQuery,
    decode_name,
    read_gt_folder,
    read_gt_query,
    read_lines,
    read_ranked_list,
    split_lines,
)
from retrieval_conformance.reference.readers.limits import (
    MAX_ARRAY_BYTES,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_IDS,
    MAX_ITEMS,
    MAX_LINES,
    MAX_NPZ_MEMBERS,
    FileRefusedError,
)
from retrieval_conformance.reference.readers.npy import read_npy, read_npz
from retrieval_conformance.reference.readers.trec import as_qrels, as_run, read_qrels, read_run
from retrieval_conformance.reference.revisitop_gnd import read_revisitop_gnd
from retrieval_conformance.reference.safe_pickle import RestrictedUnpickler, load_restricted_pickle

__all__ = [
    "MAX_ARRAY_BYTES",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_IDS",
    "MAX_ITEMS",
    "MAX_LINES",
    "MAX_NPZ_MEMBERS",
    "FileRefusedError",
    "GroundTruthQuery",
    "RestrictedUnpickler",
    "as_qrels",
    "as_run",
    "decode_name",
    "load_restricted_pickle",
    "read_gt_folder",
    "read_gt_query",
    "read_lines",
    "read_npy",
    "read_npz",
    "read_qrels",
    "read_ranked_list",
    "read_revisitop_gnd",
    "read_run",
    "split_lines",
]
