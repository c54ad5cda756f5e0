"""The C implementation: a plain C library (``csrc/*.c``, no ``Python.h``) called with ctypes.

Loading the library (``RC_C_LIBRARY``, the "not built" reason, the ABI check), its ctypes
structures and enum codes, the thread count and the bit packing live in :mod:`.library`;
here: :class:`CImplementation`, which checks and packs the arguments and calls the library
once per block of queries, and maps its error codes to Python exceptions.

What the C code does per query (spec §4, §12), never sorting the whole gallery:

* Hamming codes are packed to ``uint64`` words; one XOR + popcount pass fills histograms of
  all and of relevant non-junk items per distance (codes of one word without junk in vectors:
  AVX-512, ``cpu_features`` bit 4, else AVX2, bit 3, where the CPU has them; same counts).
  Concrete tie policies get the relevant items' ranks from a counting sort done in the same
  pass; ``expected`` and ``grouped`` need only the per-distance counts.
* Float distances (or similarity scores, read as they are and negated inside C): the G
  relevant distances are sorted and every other item is placed among them in one pass through
  a bucket table, ``O(N + G log G)``; the tie policy decides where an item at a relevant
  item's exact distance goes.  With a cut-off k only the items up to the L-th smallest
  distance are placed, L = max(k, R, max_rank) (the prefix path; ``cpu_features`` bit 2);
  otherwise, when they are at most 1/8 of the row, only the items up to the farthest relevant
  distance (the bounded pass, same bit: a farther item changes no rank).  The filter of both
  compares with AVX2 where the CPU has it (``cpu_features`` bit 3), else SSE2.  A whole float32
  row with at most 32 distinct relevant distances is counted by compares with each (bit 5).
* Relevance and junk come from labels (single ids compared as int64; multi-hot labels packed
  to uint64 words and ANDed) or from the boolean matrices, one query at a time: no
  ``Q x N`` matrix is ever built.
* Queries are independent and run in parallel, in chunks handed out as threads become free
  (``csrc/rc_threads.c``); results do not depend on the thread count (``num_threads=``,
  ``RC_NUM_THREADS``, or the default rule of :mod:`.threads`).
* nDCG, RR, AP@R and the hit rate come from the same ranks or tie groups (``csrc/rc_rank.c``):
  DCG reads the discount table of ``reference/contract/discounts.py`` (``rank_discounts``, by
  pointer: C computes no logarithm), graded relevance goes to C as one uint8 grade per item.

Every array is checked here (dtype, shape, C-contiguity) before the C call, so nothing that
could make the C code read out of bounds reaches it.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Dict, Optional, Tuple, cast

import numpy as np
from retrieval_conformance.implementations.c import library as c_library
from retrieval_conformance.implementations.c.library import (  # noqa: F401 (re-exported: the names c_backend had)
    _DENOMINATORS,
    _GAINS,
    _RECALLS,
    _RULES,
    _TIES,
    ABI_VERSION,
    ALL_FEATURES,
    D_CODES,
    D_F32,
    D_F64,
    MODULE,
    NOT_BUILT,
    Q_GROUPED_K,
    Q_NONFINITE,
    Q_OK,
    RC_ERR_ARGS,
    RC_ERR_NOMEM,
    RC_ERR_QUERY,
    RC_OK,
    REL_IDS,
    REL_MATRIX,
    REL_MULTI,
    _Input,
    _load,
    _Options,
    _Output,
    _require,
    cpu_features,
    max_threads,
    output_struct,
    thread_count,
)
from retrieval_conformance.implementations.c.threads import resolve_threads
from retrieval_conformance.reference.contract.arrays import CHUNK_ITEMS
from retrieval_conformance.reference.contract.codes import pack_words, padding_is_zero, word_count
from retrieval_conformance.reference.contract.conventions import DISCOUNTS
from retrieval_conformance.reference.contract.cutoffs import within_gallery
from retrieval_conformance.reference.contract.discounts import rank_discounts
from retrieval_conformance.reference.contract.problem import Options, PerQuery, Problem, zero_arrays
from retrieval_conformance.reference.contract.registry import Implementation, PreparedGallery, gallery_store
from retrieval_conformance.reference.contract.validation import MAX_GRADE, NonFiniteError

#: queries per C call: bounds the latency of a progress callback, not the memory (the C code
#: never holds more than O(N) per thread)
BLOCK_QUERIES = 4096

#: the load state changes after import and lives in c_library; ``c_backend._LIB`` and the like
#: read it there
_LIBRARY_STATE = ("_LIB", "_LOAD_ERROR", "_FEATURE_MASK", "_FORKED_CHILD")


def __getattr__(name: str):
    if name in _LIBRARY_STATE:
        return getattr(c_library, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _ptr(arr: Optional[np.ndarray]) -> Optional[int]:
    return None if arr is None else arr.ctypes.data


# -- validation (cheap checks of everything the C code indexes) ------------------------------
def _array(name: str, arr, dtype, shape) -> np.ndarray:
    """``arr`` as a C-contiguous, aligned array of ``dtype`` and exactly ``shape`` (an array
    unpickled from a buffer, as dask's workers get them, may start at any byte: C reads its
    values as doubles, so such an array is copied)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name}: expected a numpy array, got {type(arr).__name__}")
    if arr.shape != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)}, got {arr.shape}")
    if dtype is np.bool_:
        if arr.dtype != np.bool_:
            raise TypeError(f"{name}: expected a bool array, got dtype={arr.dtype}")
        return np.ascontiguousarray(arr).view(np.uint8)
    if arr.dtype != dtype:
        raise TypeError(f"{name}: expected dtype {np.dtype(dtype)}, got dtype={arr.dtype}")
    return np.require(arr, requirements=["C_CONTIGUOUS", "ALIGNED"])


def _gallery_words(problem: Problem, N: int, n_bits: int) -> np.ndarray:
    """The gallery's codes as C reads them: ``db_words`` checked (dtype, shape, and no bit set
    past the code, which would make a distance exceed the histograms' B + 1 bins), or
    ``db_bits`` packed."""
    if problem.db_words is None:
        return pack_words(_array("db_bits", problem.db_bits, np.uint8, (N, n_bits)))
    words = _array("db_words", problem.db_words, np.uint64, (N, word_count(n_bits)))
    if not padding_is_zero(words, n_bits):
        raise ValueError(f"db_words: expected every bit past the first {n_bits} of a code to be 0")
    return words


def _id_runs(db_ids: np.ndarray, order: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The distinct gallery ids, sorted, and where the run of each starts in ``db_ids[order]``
    (then N): a query's slice of ``order`` is ``starts[searchsorted(ids, id, "left")]`` up to
    ``starts[searchsorted(ids, id, "right")]``, as in the sorted ids, which are never held whole."""
    ids, starts, last = [np.zeros(0, dtype=np.int64)], [], None
    for first in range(0, order.shape[0], CHUNK_ITEMS):
        chunk = db_ids[order[first : first + CHUNK_ITEMS]]
        new = np.flatnonzero(chunk[1:] != chunk[:-1]) + 1
        if last is None or chunk[0] != last:
            new = np.concatenate([[0], new])
        ids.append(chunk[new])
        starts.append(new + first)
        last = chunk[-1]
    starts.append(np.array([order.shape[0]]))
    return np.concatenate(ids, dtype=np.int64), np.concatenate(starts, dtype=np.int64)


def _check_options(options: Options) -> None:
    if not isinstance(options, Options):
        raise TypeError(f"options: expected Options, got {type(options).__name__}")
    for name, value, allowed in (
        ("ties", options.ties, _TIES),
        ("ap_rule", options.ap_rule, _RULES),
        ("ap_at_k", options.ap_at_k, _DENOMINATORS),
        ("gain", options.gain, _GAINS),
        ("recall", options.recall, _RECALLS),
        ("discount", options.discount, DISCOUNTS),
    ):
        if value not in allowed:
            raise ValueError(f"{name}: expected one of {list(allowed)}, got {value!r}")
    k = options.k
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise ValueError(f"k: expected None or a positive integer, got {k!r}")
    mr = options.max_rank
    if isinstance(mr, bool) or not isinstance(mr, (int, np.integer)) or mr < 0:
        raise ValueError(f"max_rank: expected a non-negative integer, got {mr!r}")
    r = options.radius
    if r is not None:
        if isinstance(r, bool) or not isinstance(r, (int, float, np.integer, np.floating)):
            raise TypeError(f"radius: expected a number, got {r!r}")
        if not np.isfinite(r) or r < 0:
            raise ValueError(f"radius: expected a finite non-negative number, got {r!r}")


def _grades(grades, relevance: Optional[np.ndarray], Q: int, N: int) -> Optional[np.ndarray]:
    """Graded relevance for C: one uint8 grade per (query, item), checked to be 0 ..
    MAX_GRADE and positive exactly where ``relevance`` is (None: binary relevance)."""
    if grades is None:
        return None
    if relevance is None:
        raise ValueError("grades: graded relevance needs a relevance matrix (not labels)")
    grades = _array("grades", grades, np.int64, (Q, N))
    if grades.size and (grades.min() < 0 or grades.max() > MAX_GRADE):
        raise ValueError(
            f"grades: expected integer grades 0 .. {MAX_GRADE}, got values {int(grades.min())} .. {int(grades.max())}"
        )
    if not np.array_equal(grades > 0, relevance.view(np.bool_)):
        raise ValueError("grades: expected relevance == (grades > 0) (a relevant item has a positive grade)")
    return np.ascontiguousarray(grades.astype(np.uint8))


def _discounts(N: int, rule: str, table: Optional[np.ndarray] = None) -> np.ndarray:
    """The DCG discounts d(1) .. d(N) under ``Options.discount`` the C code reads (spec §7 nDCG),
    checked: a C-contiguous float64 vector of at least N entries (C never computes a log2)."""
    table = rank_discounts(max(N, 1), rule) if table is None else table
    if not isinstance(table, np.ndarray) or table.dtype != np.float64 or table.ndim != 1:
        raise TypeError(f"discounts: expected a 1-D float64 numpy array, got {getattr(table, 'dtype', type(table))}")
    if table.shape[0] < N:
        raise ValueError(f"discounts: expected at least {N} entries (one per gallery rank), got {table.shape[0]}")
    return np.ascontiguousarray(table)


def _grouped_k_message(k: int, query: int, before: int, end: int) -> str:
    # the same text as the reference's grouped_cutoff_error
    return (
        f"k: k={k} falls inside a tie group (ranks {before + 1}..{end}) of query "
        f"{query}; under ties='grouped' a cut-off inside a tie group has no meaning. Use "
        "ties='expected', or a k at a tie-group boundary"
    )


class CImplementation(Implementation):
    """Per-query metrics in C (ctypes), parallel over queries; see the module docstring.

    Parameters
    ----------
    num_threads : int, optional
        Threads for the C code; default ``RC_NUM_THREADS``, else the default rule of
        :mod:`.threads` (one thread for small problems, else one per CPU this process may
        use).  Any count gives the same arrays.
    """

    name = "c"
    speed_rank = 0
    reads_packed_codes = True  # the gallery's codes packed once, by validation: no (N, B) bytes
    reads_scores = True  # negated inside C: no negated copy of a score matrix
    checks_finite = True  # each row checked for NaN/inf as C reads it: no separate pass in Python

    def __init__(self, num_threads: Optional[int] = None):
        self.num_threads = num_threads

    def unavailable_reason(self) -> Optional[str]:
        return c_library.unavailable_reason()

    def prepare(self, problem: Problem) -> "PreparedGallery":
        """An empty store of gallery arrays (packed codes, sorted ids, ...): each is made by
        the first block that needs it and reused by the others."""
        return PreparedGallery(problem)

    @within_gallery
    def compute(
        self,
        problem: Problem,
        options: Options,
        num_threads: Optional[int] = None,
        progress: Optional[Callable[[int, int], None]] = None,
        state: Optional["PreparedGallery"] = None,
    ) -> PerQuery:
        """Per-query metrics of ``problem`` under ``options`` (same fields as the reference).

        ``num_threads`` overrides the instance's thread count for this call; ``progress(done,
        total)`` is called after every block of queries; ``state``: what :meth:`prepare` returned
        for this gallery (used only if it was made from the same gallery arrays).  Raises ``ValueError`` for a ``k``
        inside a tie group under ``ties='grouped'`` (the reference's message) and
        :class:`ImplementationUnavailable` when the library is missing.
        """
        lib = _require()
        _check_options(options)
        Q, N = int(problem.n_queries), int(problem.n_gallery)
        nt = resolve_threads(num_threads if num_threads is not None else self.num_threads, Q, N)
        if Q < 0 or N < 0:
            raise ValueError(f"problem: expected non-negative sizes, got {Q} x {N}")

        # ranking input
        keep: Dict[str, Any] = {}  # arrays (None: not given) that must stay alive during the C calls
        gallery = gallery_store(state, problem)
        negated = 0
        if problem.distances is not None or problem.scores is not None:
            # scores are read as they are and negated inside C (exact): no copy of the matrix
            name, D = ("distances", problem.distances) if problem.distances is not None else ("scores", problem.scores)
            negated = int(name == "scores")
            if not isinstance(D, np.ndarray) or D.dtype not in (np.float32, np.float64):
                raise TypeError(
                    f"{name}: expected a float32 or float64 numpy array, got {getattr(D, 'dtype', type(D).__name__)}"
                )
            keep["D"] = _array(name, D, D.dtype, (Q, N))
            dist_kind = D_F32 if D.dtype == np.float32 else D_F64
            n_bits = words = 0
        elif problem.query_bits is not None and (problem.db_bits is not None or problem.db_words is not None):
            qb = problem.query_bits
            if not isinstance(qb, np.ndarray) or qb.ndim != 2 or qb.shape[0] != Q:
                raise ValueError(f"query_bits: expected shape ({Q}, B), got {getattr(qb, 'shape', None)}")
            n_bits = qb.shape[1]
            if n_bits < 1:
                raise ValueError("query_bits: expected at least one bit per code, got 0")
            qb = _array("query_bits", qb, np.uint8, (Q, n_bits))
            keep["qc"] = pack_words(qb)
            keep["dc"] = gallery.get("dc", lambda: _gallery_words(problem, N, n_bits))
            words = keep["qc"].shape[1]
            dist_kind = D_CODES
            if N >= 2**32:  # the counting sort packs a position below 2^32 with its distance
                raise ValueError(f"db_bits: at most 2**32 - 1 gallery items with codes, got {N}")
        else:
            raise ValueError("problem: expected distances, or query_bits with db_bits or db_words")

        # relevance input
        label_words = 0
        single = False
        if problem.relevance is not None:
            keep["rel"] = _array("relevance", problem.relevance, np.bool_, (Q, N))
            rel_kind = REL_MATRIX
        elif problem.query_labels is not None and problem.db_labels is not None:
            ql, dl = problem.query_labels, problem.db_labels
            if getattr(ql, "ndim", 0) == 1:
                keep["ql"] = _array("query_labels", ql, np.int64, (Q,))
                keep["dl"] = gallery.get("dl", lambda: _array("db_labels", dl, np.int64, (N,)))
                rel_kind, single = REL_IDS, True
                # the items of each id, found without a Q x N comparison: gallery indices
                # sorted stably by id, and each query's slice of them.  The float path reads
                # its relevant items there and camera junk its same-id items; Hamming codes
                # compare ids item by item, so without cameras they need no such index (N int64)
                if dist_kind != D_CODES or problem.query_cams is not None:
                    keep["order"] = gallery.get(
                        "order", lambda: np.ascontiguousarray(np.argsort(keep["dl"], kind="stable"), dtype=np.int64)
                    )
                    ids, starts = gallery.get("id_runs", lambda: _id_runs(keep["dl"], keep["order"]))
                    keep["id_start"] = starts[np.searchsorted(ids, keep["ql"], "left")]
                    keep["id_stop"] = starts[np.searchsorted(ids, keep["ql"], "right")]
            elif getattr(ql, "ndim", 0) == 2:
                L = ql.shape[1]
                ql = _array("query_labels", ql, np.uint8, (Q, L))
                keep["qlb"] = pack_words(ql)
                keep["dlb"] = gallery.get("dlb", lambda: pack_words(_array("db_labels", dl, np.uint8, (N, L))))
                label_words = keep["qlb"].shape[1]
                rel_kind = REL_MULTI
            else:
                raise ValueError(f"query_labels: expected a 1-D or 2-D array, got shape {getattr(ql, 'shape', None)}")
        else:
            raise ValueError("problem: expected relevance, or query_labels with db_labels")

        keep["grades"] = _grades(problem.grades, keep.get("rel"), Q, N)
        keep["disc"] = gallery.get(f"discounts {options.discount}", lambda: _discounts(N, options.discount))

        # junk inputs
        if problem.junk is not None:
            keep["junk"] = _array("junk", problem.junk, np.bool_, (Q, N))
        if problem.query_cams is not None or problem.db_cams is not None:
            if problem.query_cams is None or problem.db_cams is None:
                raise ValueError("query_cams, db_cams: expected both camera arrays, or neither")
            if not single:
                raise ValueError("query_cams: camera junk needs single-id labels (1-D query_labels/db_labels)")
            keep["qcam"] = _array("query_cams", problem.query_cams, np.int64, (Q,))
            keep["dcam"] = gallery.get("dcam", lambda: _array("db_cams", problem.db_cams, np.int64, (N,)))
        if problem.junk_ids:
            if not single:
                raise ValueError("junk_ids: id-based junk needs single-id labels (1-D db_labels)")
            ids = np.asarray([int(i) for i in problem.junk_ids], dtype=np.int64)
            keep["gj"] = gallery.get("gj", lambda: np.ascontiguousarray(np.isin(keep["dl"], ids)).view(np.uint8))

        # outputs
        max_rank = int(options.max_rank)
        has_radius = options.radius is not None
        out = zero_arrays(Q, options)
        status = np.zeros(Q, dtype=np.int64)
        err_a = np.zeros(Q, dtype=np.int64)
        err_b = np.zeros(Q, dtype=np.int64)

        opts = _Options(
            ties=_TIES[options.ties],
            ap_rule=_RULES[options.ap_rule],
            k=-1 if options.k is None else int(options.k),
            ap_at_k=_DENOMINATORS[options.ap_at_k],
            max_rank=max_rank,
            has_radius=int(has_radius),
            gain=_GAINS[options.gain],
            recall=_RECALLS[options.recall],
            wanted=c_library.wanted_mask(options.metrics),
            radius=float(options.radius) if options.radius is not None else 0.0,
        )

        def row_ptr(name: str, start: int) -> Optional[int]:
            arr = keep.get(name)
            return None if arr is None else arr[start:].ctypes.data

        for start in range(0, Q, BLOCK_QUERIES):
            stop = min(Q, start + BLOCK_QUERIES)
            inp = _Input(
                n_queries=stop - start,
                n_gallery=N,
                dist_kind=dist_kind,
                distances=row_ptr("D", start),
                negated=negated,
                finite=int(bool(problem.finite)),
                query_codes=row_ptr("qc", start),
                db_codes=_ptr(keep.get("dc")),
                code_words=words,
                n_bits=n_bits,
                rel_kind=rel_kind,
                relevance=row_ptr("rel", start),
                query_ids=row_ptr("ql", start),
                db_ids=_ptr(keep.get("dl")),
                query_label_bits=row_ptr("qlb", start),
                db_label_bits=_ptr(keep.get("dlb")),
                label_words=label_words,
                junk=row_ptr("junk", start),
                query_cams=row_ptr("qcam", start),
                db_cams=_ptr(keep.get("dcam")),
                gallery_junk=_ptr(keep.get("gj")),
                db_order=_ptr(keep.get("order")),
                id_start=row_ptr("id_start", start),
                id_stop=row_ptr("id_stop", start),
                grades=row_ptr("grades", start),
                discounts=_ptr(keep["disc"]),
                n_discounts=keep["disc"].shape[0],
            )
            res = output_struct({**out, "status": status, "err_a": err_a, "err_b": err_b}, start)
            rc = lib.rc_evaluate(ctypes.byref(inp), ctypes.byref(opts), ctypes.byref(res), nt)
            if rc == RC_ERR_NOMEM:
                raise MemoryError(f"C implementation: cannot allocate workspace for a gallery of {N} items")
            if rc == RC_ERR_ARGS:
                raise ValueError("C implementation: inconsistent arguments (this is a bug in c/backend.py)")
            if rc == RC_ERR_QUERY:
                self._raise_for_status(
                    status[start:stop],
                    err_a[start:stop],
                    err_b[start:stop],
                    start,
                    options,
                    "scores" if negated else "distances",
                )
            if progress is not None:
                progress(stop, Q)

        return PerQuery(**out)  # type: ignore[arg-type]  # arrays by field name

    @staticmethod
    def _raise_for_status(status, err_a, err_b, offset: int, options: Options, ranking: str = "distances") -> None:
        bad = np.flatnonzero(status == Q_NONFINITE)
        if bad.size:
            q = int(bad[0])
            raise NonFiniteError(
                f"{ranking}: expected finite values, found a non-finite value at "
                f"[{offset + q}, {int(err_a[q])}]; replace NaN/inf (e.g. by a large distance) "
                "before evaluating",
                ranking,
                (offset + q, int(err_a[q])),
            )
        bad = np.flatnonzero(status == Q_GROUPED_K)
        if bad.size:
            q = int(bad[0])
            # a cut-off inside a tie group: there is a cut-off
            raise ValueError(_grouped_k_message(int(cast(int, options.k)), offset + q, int(err_a[q]), int(err_b[q])))
        raise RuntimeError(f"C implementation: unexpected status {status.max()}")
