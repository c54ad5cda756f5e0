"""The C implementation: a plain C library (``_rc_core.c``, no ``Python.h``) called with ctypes.

The library is compiled at install time by the project's own ``setup.py`` (an optional
setuptools ``Extension``; ``RC_BUILD_C=1`` makes it required, ``RC_BUILD_C=0`` skips it).
Without it this implementation reports itself unavailable and says how to build it.
``RC_C_LIBRARY=/path/to/lib.so`` loads that library instead of the installed one (the
sanitizer run uses it); if that file cannot be loaded, ``c`` is unavailable and says why,
it never falls back to the installed library.

What the C code does per query (CONVENTIONS §4, §12), never sorting the whole gallery:

* Hamming codes are packed to ``uint64`` words; one XOR + popcount pass fills histograms of
  all and of relevant non-junk items per distance.  Concrete tie policies get the relevant
  items' ranks from a counting sort done in the same pass; ``expected`` and ``grouped``
  need only the per-distance counts.
* Float distances: the G relevant distances are sorted and every other item is
  binary-searched among them, ``O(N log G)``; the tie policy decides where an item at a
  relevant item's exact distance goes.
* Relevance and junk come from labels (single ids compared as int64; multi-hot labels packed
  to uint64 words and ANDed) or from the boolean matrices, one query at a time: no
  ``Q x N`` matrix is ever built.
* Queries are independent and run in parallel with OpenMP; results do not depend on the
  thread count (``RC_NUM_THREADS`` or ``num_threads=``).

Every array is checked here (dtype, shape, C-contiguity) before the C call, so nothing that
could make the C code read out of bounds reaches it.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
from typing import Callable, Optional

import numpy as np
from retrieval_conformance.implementations.registry import Implementation, ImplementationUnavailable
from retrieval_conformance.reference.cutoffs import within_gallery
from retrieval_conformance.reference.problem import (
    AP_AT_K_DENOMINATORS,
    AP_RULES,
    TIE_POLICIES,
    Options,
    PerQuery,
    Problem,
)

MODULE = "retrieval_conformance.implementations._rc_core"
ABI_VERSION = 5  # must equal RC_ABI_VERSION in _rc_core.c
NOT_BUILT = (
    "C library not built (no compiler at install, or RC_BUILD_C=0); reinstall with a "
    "compiler: RC_BUILD_C=1 pip install ..."
)
#: queries per C call: bounds the latency of a progress callback, not the memory (the C code
#: never holds more than O(N) per thread)
BLOCK_QUERIES = 4096
#: below this many (query, item) pairs the default thread count is one
SMALL_PROBLEM = 1 << 18

_TIES = {name: i for i, name in enumerate(TIE_POLICIES)}
_RULES = {name: i for i, name in enumerate(AP_RULES)}
_DENOMINATORS = {name: i for i, name in enumerate(AP_AT_K_DENOMINATORS)}
assert list(_TIES) == ["stable", "reverse", "optimistic", "pessimistic", "expected", "grouped"]
assert list(_RULES) == ["precision_sum", "trapezoid"]
assert list(_DENOMINATORS) == ["hits", "r", "min_k_r", "dcmh"]

D_F64, D_F32, D_CODES = 0, 1, 2
REL_MATRIX, REL_IDS, REL_MULTI = 0, 1, 2
RC_OK, RC_ERR_QUERY, RC_ERR_NOMEM, RC_ERR_ARGS = 0, 1, 2, 3
Q_OK, Q_GROUPED_K, Q_NONFINITE = 0, 1, 2

_p = ctypes.c_void_p
_i64 = ctypes.c_int64


class _Input(ctypes.Structure):
    _fields_ = [
        ("n_queries", _i64), ("n_gallery", _i64),
        ("dist_kind", _i64), ("distances", _p),
        ("query_codes", _p), ("db_codes", _p), ("code_words", _i64), ("n_bits", _i64),
        ("rel_kind", _i64), ("relevance", _p),
        ("query_ids", _p), ("db_ids", _p),
        ("query_label_bits", _p), ("db_label_bits", _p), ("label_words", _i64),
        ("junk", _p), ("query_cams", _p), ("db_cams", _p), ("gallery_junk", _p),
        ("db_order", _p), ("id_start", _p), ("id_stop", _p),
    ]


class _Options(ctypes.Structure):
    _fields_ = [
        ("ties", _i64), ("ap_rule", _i64), ("k", _i64), ("ap_at_k", _i64),
        ("max_rank", _i64), ("has_radius", _i64), ("radius", ctypes.c_double),
    ]


class _Output(ctypes.Structure):
    _fields_ = [
        ("ap", _p), ("n_relevant", _p), ("hits_at_k", _p), ("precision_at_k", _p),
        ("recall_at_k", _p), ("cmc", _p), ("inp", _p), ("r_precision", _p),
        ("precision_at_radius", _p), ("recall_at_radius", _p),
        ("status", _p), ("err_a", _p), ("err_b", _p),
    ]


_LIB = None
_LOAD_ERROR: Optional[str] = None


def _load():
    """Load the shared object once; remember why if it cannot be loaded.

    ``RC_C_LIBRARY`` (a path) replaces the installed library; when it is set and that file
    cannot be loaded, the reason names it and the installed library is not tried.
    """
    global _LIB, _LOAD_ERROR
    if _LIB is not None or _LOAD_ERROR is not None:
        return _LIB
    override = os.environ.get("RC_C_LIBRARY", "").strip()
    if override:
        origin = os.path.abspath(override)  # a bare name would make dlopen search the system
        where = f"C library RC_C_LIBRARY={override}"
        fix = "unset RC_C_LIBRARY to use the installed library, or point it to a built one"
        if not os.path.isfile(origin):
            _LOAD_ERROR = f"{where} does not exist (or is not a file); {fix}"
            return None
    else:
        try:
            spec = importlib.util.find_spec(MODULE)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.origin or not os.path.exists(spec.origin):
            _LOAD_ERROR = NOT_BUILT
            return None
        origin = spec.origin
        where = f"C library at {origin}"
        fix = NOT_BUILT
    try:
        lib = ctypes.CDLL(origin)
        lib.rc_abi_version.restype = _i64
        lib.rc_abi_version.argtypes = []
        lib.rc_max_threads.restype = _i64
        lib.rc_max_threads.argtypes = []
        lib.rc_set_features.restype = _i64
        lib.rc_set_features.argtypes = [_i64]
        lib.rc_evaluate.restype = _i64
        lib.rc_evaluate.argtypes = [
            ctypes.POINTER(_Input), ctypes.POINTER(_Options), ctypes.POINTER(_Output), _i64,
        ]
    except (OSError, AttributeError) as exc:
        _LOAD_ERROR = f"{where} cannot be loaded ({exc}); {fix}"
        return None
    version = lib.rc_abi_version()
    if version != ABI_VERSION:
        rebuild = "rebuild it" if override else "rebuild it: RC_BUILD_C=1 pip install ..."
        _LOAD_ERROR = (
            f"{where} is stale (interface version {version}, expected "
            f"{ABI_VERSION}); {rebuild}"
        )
        return None
    _LIB = lib
    return lib


_FEATURE_MASK = 3


def cpu_features(mask: Optional[int] = None) -> int:
    """CPU features the C code can use here (bit 0 popcnt, bit 1 fma).

    With ``mask``, the C code uses only the features in ``mask`` from now on (tests compare
    the generic and the accelerated paths; results are identical).  Returns the features
    the CPU has.
    """
    global _FEATURE_MASK
    lib = _load()
    if lib is None:
        raise ImplementationUnavailable(f"implementation 'c' is unavailable: {_LOAD_ERROR}")
    if mask is not None:
        _FEATURE_MASK = int(mask)
    return int(lib.rc_set_features(_FEATURE_MASK))


def max_threads() -> int:
    """Threads the C code uses by default here (OpenMP's default: every core)."""
    lib = _load()
    if lib is None:
        raise ImplementationUnavailable(f"implementation 'c' is unavailable: {_LOAD_ERROR}")
    return int(lib.rc_max_threads())


def _ptr(arr: Optional[np.ndarray]) -> Optional[int]:
    return None if arr is None else arr.ctypes.data


# GNU OpenMP's worker threads do not survive fork(): a child forked after the parent ran the
# C code in parallel would wait for them forever.  A forked child runs on one thread.
_FORKED_CHILD = False


def _mark_forked_child() -> None:
    global _FORKED_CHILD
    _FORKED_CHILD = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_mark_forked_child)


def _fork_safe(num_threads: int) -> int:
    return 1 if _FORKED_CHILD else num_threads


def thread_count(num_threads: Optional[int] = None) -> int:
    """The thread count to use: ``num_threads``, else ``RC_NUM_THREADS``, else 0 (OpenMP's
    default, every core)."""
    if num_threads is None:
        env = os.environ.get("RC_NUM_THREADS", "").strip()
        if not env:
            return 0
        try:
            num_threads = int(env)
        except ValueError:
            raise ValueError(f"RC_NUM_THREADS: expected a positive integer, got {env!r}") from None
        name = "RC_NUM_THREADS"
    else:
        name = "num_threads"
    if isinstance(num_threads, bool) or not isinstance(num_threads, (int, np.integer)) or num_threads < 1:
        raise ValueError(f"{name}: expected a positive integer, got {num_threads!r}")
    return int(num_threads)


# -- validation (cheap checks of everything the C code indexes) ------------------------------
def _array(name: str, arr, dtype, shape) -> np.ndarray:
    """``arr`` as a C-contiguous array of ``dtype`` and exactly ``shape``."""
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
    return np.ascontiguousarray(arr)


def _pack_bits(name: str, bits: np.ndarray) -> np.ndarray:
    """(rows, B) 0/1 uint8 -> (rows, ceil(B/64)) uint64, bit b of row r in word b // 64."""
    rows, B = bits.shape
    words = max(1, -(-B // 64))
    packed = np.packbits(bits != 0, axis=1, bitorder="little")
    out = np.zeros((rows, words * 8), dtype=np.uint8)
    out[:, : packed.shape[1]] = packed
    return np.ascontiguousarray(out).view("<u8").astype(np.uint64, copy=False)


def _check_options(options: Options) -> None:
    if not isinstance(options, Options):
        raise TypeError(f"options: expected Options, got {type(options).__name__}")
    for name, value, allowed in (
        ("ties", options.ties, _TIES), ("ap_rule", options.ap_rule, _RULES),
        ("ap_at_k", options.ap_at_k, _DENOMINATORS),
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
        Threads for the C code; default ``RC_NUM_THREADS`` or every core.  Any count gives
        the same arrays.
    """

    name = "c"
    speed_rank = 0

    def __init__(self, num_threads: Optional[int] = None):
        self.num_threads = num_threads

    def unavailable_reason(self) -> Optional[str]:
        return None if _load() is not None else _LOAD_ERROR

    @within_gallery
    def compute(
        self,
        problem: Problem,
        options: Options,
        num_threads: Optional[int] = None,
        progress: Optional[Callable[[int, int], None]] = None,
    ) -> PerQuery:
        """Per-query metrics of ``problem`` under ``options`` (same fields as the reference).

        ``num_threads`` overrides the instance's thread count for this call; ``progress(done,
        total)`` is called after every block of queries.  Raises ``ValueError`` for a ``k``
        inside a tie group under ``ties='grouped'`` (the reference's message) and
        :class:`ImplementationUnavailable` when the library is missing.
        """
        lib = _load()
        if lib is None:
            raise ImplementationUnavailable(f"implementation 'c' is unavailable: {_LOAD_ERROR}")
        _check_options(options)
        nt = _fork_safe(thread_count(num_threads if num_threads is not None else self.num_threads))
        Q, N = int(problem.n_queries), int(problem.n_gallery)
        if Q < 0 or N < 0:
            raise ValueError(f"problem: expected non-negative sizes, got {Q} x {N}")
        if nt == 0 and Q * N < SMALL_PROBLEM:
            nt = 1  # waking a thread team costs more than such a problem (results are equal)

        # ranking input
        keep = {}  # arrays that must stay alive during the C calls
        if problem.distances is not None:
            D = problem.distances
            if not isinstance(D, np.ndarray) or D.dtype not in (np.float32, np.float64):
                raise TypeError(
                    "distances: expected a float32 or float64 numpy array, got "
                    f"{getattr(D, 'dtype', type(D).__name__)}"
                )
            keep["D"] = _array("distances", D, D.dtype, (Q, N))
            dist_kind = D_F32 if D.dtype == np.float32 else D_F64
            n_bits = words = 0
        elif problem.query_bits is not None and problem.db_bits is not None:
            qb, db = problem.query_bits, problem.db_bits
            if not isinstance(qb, np.ndarray) or qb.ndim != 2 or qb.shape[0] != Q:
                raise ValueError(f"query_bits: expected shape ({Q}, B), got {getattr(qb, 'shape', None)}")
            n_bits = qb.shape[1]
            if n_bits < 1:
                raise ValueError("query_bits: expected at least one bit per code, got 0")
            qb = _array("query_bits", qb, np.uint8, (Q, n_bits))
            db = _array("db_bits", db, np.uint8, (N, n_bits))
            keep["qc"], keep["dc"] = _pack_bits("query_bits", qb), _pack_bits("db_bits", db)
            words = keep["qc"].shape[1]
            dist_kind = D_CODES
            if N >= 2**32:  # the counting sort packs a position below 2^32 with its distance
                raise ValueError(f"db_bits: at most 2**32 - 1 gallery items with codes, got {N}")
        else:
            raise ValueError("problem: expected distances, or query_bits with db_bits")

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
                keep["dl"] = _array("db_labels", dl, np.int64, (N,))
                rel_kind, single = REL_IDS, True
                # the items of each id, found without a Q x N comparison: gallery indices
                # sorted stably by id, and each query's slice of them
                order = np.argsort(keep["dl"], kind="stable")
                ids_sorted = keep["dl"][order]
                keep["order"] = np.ascontiguousarray(order, dtype=np.int64)
                keep["id_start"] = np.ascontiguousarray(np.searchsorted(ids_sorted, keep["ql"], "left"), dtype=np.int64)
                keep["id_stop"] = np.ascontiguousarray(np.searchsorted(ids_sorted, keep["ql"], "right"), dtype=np.int64)
            elif getattr(ql, "ndim", 0) == 2:
                L = ql.shape[1]
                ql = _array("query_labels", ql, np.uint8, (Q, L))
                dl = _array("db_labels", dl, np.uint8, (N, L))
                keep["qlb"] = _pack_bits("query_labels", ql)
                keep["dlb"] = _pack_bits("db_labels", dl)
                label_words = keep["qlb"].shape[1]
                rel_kind = REL_MULTI
            else:
                raise ValueError(f"query_labels: expected a 1-D or 2-D array, got shape {getattr(ql, 'shape', None)}")
        else:
            raise ValueError("problem: expected relevance, or query_labels with db_labels")

        # junk inputs
        if problem.junk is not None:
            keep["junk"] = _array("junk", problem.junk, np.bool_, (Q, N))
        if problem.query_cams is not None or problem.db_cams is not None:
            if problem.query_cams is None or problem.db_cams is None:
                raise ValueError("query_cams, db_cams: expected both camera arrays, or neither")
            if not single:
                raise ValueError("query_cams: camera junk needs single-id labels (1-D query_labels/db_labels)")
            keep["qcam"] = _array("query_cams", problem.query_cams, np.int64, (Q,))
            keep["dcam"] = _array("db_cams", problem.db_cams, np.int64, (N,))
        if problem.junk_ids:
            if not single:
                raise ValueError("junk_ids: id-based junk needs single-id labels (1-D db_labels)")
            ids = np.asarray([int(i) for i in problem.junk_ids], dtype=np.int64)
            keep["gj"] = np.ascontiguousarray(np.isin(keep["dl"], ids)).view(np.uint8)

        # outputs
        max_rank = int(options.max_rank)
        has_radius = options.radius is not None
        out = {
            name: np.zeros(Q, dtype=np.float64)
            for name in ("ap", "hits_at_k", "precision_at_k", "recall_at_k", "inp", "r_precision")
        }
        out["n_relevant"] = np.zeros(Q, dtype=np.int64)
        out["cmc"] = np.zeros((Q, max_rank), dtype=np.float64)
        if has_radius:
            out["precision_at_radius"] = np.zeros(Q, dtype=np.float64)
            out["recall_at_radius"] = np.zeros(Q, dtype=np.float64)
        status = np.zeros(Q, dtype=np.int64)
        err_a = np.zeros(Q, dtype=np.int64)
        err_b = np.zeros(Q, dtype=np.int64)

        opts = _Options(
            ties=_TIES[options.ties], ap_rule=_RULES[options.ap_rule],
            k=-1 if options.k is None else int(options.k), ap_at_k=_DENOMINATORS[options.ap_at_k],
            max_rank=max_rank, has_radius=int(has_radius),
            radius=float(options.radius) if has_radius else 0.0,
        )

        def row_ptr(name: str, start: int) -> Optional[int]:
            arr = keep.get(name)
            return None if arr is None else arr[start:].ctypes.data

        for start in range(0, Q, BLOCK_QUERIES):
            stop = min(Q, start + BLOCK_QUERIES)
            inp = _Input(
                n_queries=stop - start, n_gallery=N, dist_kind=dist_kind,
                distances=row_ptr("D", start),
                query_codes=row_ptr("qc", start), db_codes=_ptr(keep.get("dc")),
                code_words=words, n_bits=n_bits,
                rel_kind=rel_kind, relevance=row_ptr("rel", start),
                query_ids=row_ptr("ql", start), db_ids=_ptr(keep.get("dl")),
                query_label_bits=row_ptr("qlb", start), db_label_bits=_ptr(keep.get("dlb")),
                label_words=label_words,
                junk=row_ptr("junk", start),
                query_cams=row_ptr("qcam", start), db_cams=_ptr(keep.get("dcam")),
                gallery_junk=_ptr(keep.get("gj")),
                db_order=_ptr(keep.get("order")),
                id_start=row_ptr("id_start", start), id_stop=row_ptr("id_stop", start),
            )
            res = _Output(
                **{name: arr[start:].ctypes.data for name, arr in out.items()},
                status=status[start:].ctypes.data, err_a=err_a[start:].ctypes.data,
                err_b=err_b[start:].ctypes.data,
            )
            rc = lib.rc_evaluate(ctypes.byref(inp), ctypes.byref(opts), ctypes.byref(res), nt)
            if rc == RC_ERR_NOMEM:
                raise MemoryError(f"C implementation: cannot allocate workspace for a gallery of {N} items")
            if rc == RC_ERR_ARGS:
                raise ValueError("C implementation: inconsistent arguments (this is a bug in c_backend.py)")
            if rc == RC_ERR_QUERY:
                self._raise_for_status(status[start:stop], err_a[start:stop], err_b[start:stop], start, options)
            if progress is not None:
                progress(stop, Q)

        pq = PerQuery(
            ap=out["ap"], n_relevant=out["n_relevant"], hits_at_k=out["hits_at_k"],
            precision_at_k=out["precision_at_k"], recall_at_k=out["recall_at_k"], cmc=out["cmc"],
            inp=out["inp"], r_precision=out["r_precision"],
        )
        if has_radius:
            pq.precision_at_radius = out["precision_at_radius"]
            pq.recall_at_radius = out["recall_at_radius"]
        return pq

    @staticmethod
    def _raise_for_status(status, err_a, err_b, offset: int, options: Options) -> None:
        bad = np.flatnonzero(status == Q_NONFINITE)
        if bad.size:
            q = int(bad[0])
            raise ValueError(
                f"distances: expected finite values, found a non-finite value at "
                f"[{offset + q}, {int(err_a[q])}]; replace NaN/inf (e.g. by a large distance) "
                "before evaluating"
            )
        bad = np.flatnonzero(status == Q_GROUPED_K)
        if bad.size:
            q = int(bad[0])
            raise ValueError(_grouped_k_message(int(options.k), offset + q, int(err_a[q]), int(err_b[q])))
        raise RuntimeError(f"C implementation: unexpected status {status.max()}")
