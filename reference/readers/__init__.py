"""Every file format the project reads, read within limits, with errors that name the file and line.

Modules
-------
:mod:`~retrieval_conformance.reference.readers.limits`
    The limits (``MAX_FILE_BYTES``, ``MAX_LINES``, ``MAX_ARRAY_BYTES``, ...), the error a refused
    file raises (:class:`FileRefusedError`), and opening and reading regular files within a byte
    budget, gzip-compressed text included (the budget bounds the decompressed bytes).
:mod:`~retrieval_conformance.reference.readers.text`
    :func:`read_text_file`: a small text file of the command line (query ids, a list of known
    deviations, a benchmark baseline) as UTF-8 text, within the same limits.
:mod:`~retrieval_conformance.reference.readers.trec`
    TREC run and qrels files (plain or gzip; ``.jsonl`` as JSON Lines), ranx-style dicts, DataFrames
    and ``ranx`` objects
    (:func:`read_run`, :func:`read_qrels`, :func:`as_run`, :func:`as_qrels`).
:mod:`~retrieval_conformance.reference.readers.tables`
    Runs and qrels from tables: JSON Lines files, DataFrames (duck-typed, pandas is never
    imported), and nearest-neighbour search results ``(D, I)`` such as faiss returns, with qrels
    from class labels (:func:`run_from_search`, :func:`qrels_from_labels`).
:mod:`~retrieval_conformance.reference.readers.npy`
    ``.npy`` and ``.npz`` files of plain arrays, headers checked (bytes and element counts)
    before anything is allocated (:func:`read_npy`, :func:`read_npz`).
:mod:`~retrieval_conformance.reference.readers.landmark_text`
    The VGG text layouts of Oxford5k / Paris6k ground truth and ranked lists.

:mod:`~retrieval_conformance.reference.readers.pickles`
    The ground-truth pickles of revisitop and cirtorch, checked opcode by opcode and loaded by a
    restricted unpickler (re-exported here, so that every reader is importable from this package).

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
    MAX_ARRAY_ELEMENTS,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_IDS,
    MAX_ITEMS,
    MAX_LINES,
    MAX_NPZ_MEMBERS,
    FileRefusedError,
)
from retrieval_conformance.reference.readers.npy import read_npy, read_npz
from retrieval_conformance.reference.readers.pickles.restricted import RestrictedUnpickler, load_restricted_pickle
from retrieval_conformance.reference.readers.pickles.revisitop_gnd import read_revisitop_gnd
from retrieval_conformance.reference.readers.tables import (
    qrels_from_labels,
    read_json_lines,
    read_table,
    run_from_search,
)
from retrieval_conformance.reference.readers.text import read_text_file, read_text_lines
from retrieval_conformance.reference.readers.trec import as_qrels, as_run, read_qrels, read_run

__all__ = [
    "MAX_ARRAY_BYTES",
    "MAX_ARRAY_ELEMENTS",
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
    "qrels_from_labels",
    "read_gt_folder",
    "read_gt_query",
    "read_json_lines",
    "read_lines",
    "read_npy",
    "read_npz",
    "read_qrels",
    "read_ranked_list",
    "read_revisitop_gnd",
    "read_run",
    "read_table",
    "read_text_file",
    "read_text_lines",
    "run_from_search",
    "split_lines",
]
