"""The C library behind the ``c`` implementation: finding and loading it, and its ctypes interface.

The library (``csrc/*.c``, no ``Python.h``) is compiled at install time by the project's own
``setup.py`` (an optional setuptools ``Extension``; ``RC_BUILD_C=1`` makes it required,
``RC_BUILD_C=0`` skips it).  Without it the ``c`` implementation reports itself unavailable and
says how to build it.  ``RC_C_LIBRARY=/path/to/lib.so`` loads that library instead of the
installed one (the sanitizer run uses it); if that file cannot be loaded, ``c`` is unavailable
and says why, it never falls back to the installed library.

Here: the load (once per process, with the ABI version and value-count checks), the ctypes
``Structure``s and enum codes of ``csrc/rc_core.h`` (the output structure built from the
contract's field lists, with no metric named), the CPU-feature and thread-count controls (a forked child
runs on one thread) and the bit packing of codes and multi-hot labels.  The calls themselves
are made by :mod:`.backend`.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
from typing import Dict, Iterator, Optional

import numpy as np
from retrieval_conformance.reference.contract.conventions import GAINS, RECALL_SENSES
from retrieval_conformance.reference.contract.metric_names import per_query_fields
from retrieval_conformance.reference.contract.problem import (
    AP_AT_K_DENOMINATORS,
    AP_RULES,
    ARRAY_FIELDS,
    TIE_POLICIES,
    VALUE_FIELDS,
)
from retrieval_conformance.reference.contract.registry import ImplementationUnavailable

MODULE = "retrieval_conformance.implementations._rc_core"
ABI_VERSION = 11  # must equal RC_ABI_VERSION in csrc/rc_core.h
NOT_BUILT = (
    "C library not built (no compiler at install, or RC_BUILD_C=0); reinstall with a "
    "compiler: RC_BUILD_C=1 pip install ..."
)

# the C library's enum codes (fixed by its ABI, not by the order of the conventions table);
# every value of the table must have one
_TIES = {"stable": 0, "reverse": 1, "optimistic": 2, "pessimistic": 3, "expected": 4, "grouped": 5}
_RULES = {"precision_sum": 0, "trapezoid": 1}
_DENOMINATORS = {"hits": 0, "r": 1, "min_k_r": 2, "dcmh": 3}
_GAINS = {"linear": 0, "exponential": 1}
_RECALLS = {"fraction": 0, "hit": 1}
assert (set(_TIES), set(_RULES), set(_DENOMINATORS)) == (set(TIE_POLICIES), set(AP_RULES), set(AP_AT_K_DENOMINATORS))
assert (set(_GAINS), set(_RECALLS)) == (set(GAINS), set(RECALL_SENSES))

D_F64, D_F32, D_CODES = 0, 1, 2
REL_MATRIX, REL_IDS, REL_MULTI = 0, 1, 2
RC_OK, RC_ERR_QUERY, RC_ERR_NOMEM, RC_ERR_ARGS = 0, 1, 2, 3
Q_OK, Q_GROUPED_K, Q_NONFINITE, Q_NOMEM = 0, 1, 2, 3

_p = ctypes.c_void_p
_i64 = ctypes.c_int64


class _Input(ctypes.Structure):
    _fields_ = [
        ("n_queries", _i64),
        ("n_gallery", _i64),
        ("dist_kind", _i64),
        ("distances", _p),
        ("negated", _i64),
        ("finite", _i64),
        ("query_codes", _p),
        ("db_codes", _p),
        ("code_words", _i64),
        ("n_bits", _i64),
        ("rel_kind", _i64),
        ("relevance", _p),
        ("query_ids", _p),
        ("db_ids", _p),
        ("query_label_bits", _p),
        ("db_label_bits", _p),
        ("label_words", _i64),
        ("junk", _p),
        ("query_cams", _p),
        ("db_cams", _p),
        ("gallery_junk", _p),
        ("db_order", _p),
        ("id_start", _p),
        ("id_stop", _p),
        ("grades", _p),
        ("discounts", _p),
        ("n_discounts", _i64),
    ]


class _Options(ctypes.Structure):
    _fields_ = [
        ("ties", _i64),
        ("ap_rule", _i64),
        ("k", _i64),
        ("ap_at_k", _i64),
        ("max_rank", _i64),
        ("has_radius", _i64),
        ("gain", _i64),
        ("recall", _i64),
        ("wanted", _i64),
        ("radius", ctypes.c_double),
    ]


def wanted_mask(metrics) -> int:
    """rc_options.wanted for the canonical ``Options.metrics`` (None: every value): bit i for
    ``VALUE_FIELDS[i]``, bit ``len(VALUE_FIELDS)`` for the CMC (RC_WANT_CMC)."""
    fields = per_query_fields(metrics)
    names = VALUE_FIELDS + ("cmc",)
    return sum(1 << i for i, name in enumerate(names) if fields is None or name in fields)


#: the contract's per-query arrays that are not scalar values (counts, the CMC curve, the
#: optional radius metrics), in its order, then the per-query status words: each has its own
#: pointer in rc_output, after the values
OTHER_FIELDS = tuple(name for name in ARRAY_FIELDS if name not in VALUE_FIELDS)
STATUS_FIELDS = ("status", "err_a", "err_b")


class _Output(ctypes.Structure):
    # rc_output (csrc/rc_core.h): values[RC_N_VALUES], one pointer per VALUE_FIELDS entry in
    # that order (the C enum RC_V_*; the count is checked at load, the names by a test), then
    # OTHER_FIELDS and STATUS_FIELDS by name (a test reads the header and checks them)
    _fields_ = [("values", _p * len(VALUE_FIELDS))] + [(name, _p) for name in OTHER_FIELDS + STATUS_FIELDS]


def output_struct(arrays: Dict[str, np.ndarray], start: int) -> _Output:
    """The rc_output of rows ``start:`` of the per-query arrays (VALUE_FIELDS, OTHER_FIELDS and
    STATUS_FIELDS by name); an array that is absent (the radius metrics when not asked) is NULL."""

    def row(name: str) -> Optional[int]:
        arr = arrays.get(name)
        return None if arr is None else arr[start:].ctypes.data

    values = (_p * len(VALUE_FIELDS))(*(row(name) for name in VALUE_FIELDS))
    return _Output(values, *(row(name) for name in OTHER_FIELDS + STATUS_FIELDS))


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
        lib.rc_n_values.restype = _i64
        lib.rc_n_values.argtypes = []
        lib.rc_max_threads.restype = _i64
        lib.rc_max_threads.argtypes = []
        lib.rc_set_features.restype = _i64
        lib.rc_set_features.argtypes = [_i64]
        lib.rc_evaluate.restype = _i64
        lib.rc_evaluate.argtypes = [
            ctypes.POINTER(_Input),
            ctypes.POINTER(_Options),
            ctypes.POINTER(_Output),
            _i64,
        ]
        lib.rc_curves.restype = _i64
        lib.rc_curves.argtypes = (
            [_i64]
            + [_p] * 3
            + [_i64] * 5
            + [_p] * 5
            + [_i64] * 3
            + [_p, _p, _i64, _p, _i64, _p, _i64]
            + [_p] * 6
            + [_i64] * 2
        )
    except (OSError, AttributeError) as exc:
        _LOAD_ERROR = f"{where} cannot be loaded ({exc}); {fix}"
        return None
    version = lib.rc_abi_version()
    rebuild = "rebuild it" if override else "rebuild it: RC_BUILD_C=1 pip install ..."
    if version != ABI_VERSION:
        _LOAD_ERROR = f"{where} is stale (interface version {version}, expected {ABI_VERSION}); {rebuild}"
        return None
    # rc_output.values has one pointer per scalar value: a count that differs from the
    # contract's would make C read pointers past the ones given
    n_values = lib.rc_n_values()
    if n_values != len(VALUE_FIELDS):
        _LOAD_ERROR = (
            f"{where} computes {n_values} per-query values, the contract has "
            f"{len(VALUE_FIELDS)} (VALUE_FIELDS); the RC_V_* enum of csrc/rc_core.h must list "
            f"them in order; {rebuild}"
        )
        return None
    _LIB = lib
    return lib


def unavailable_reason() -> Optional[str]:
    """Why the library cannot be used here, or None when it is loaded."""
    return None if _load() is not None else _LOAD_ERROR


def _require():
    """The loaded library; :class:`ImplementationUnavailable` (saying why) when there is none."""
    lib = _load()
    if lib is None:
        raise ImplementationUnavailable(f"implementation 'c' is unavailable: {_LOAD_ERROR}")
    return lib


#: every feature (``RC_FEATURE_ALL``): bit 0 popcnt, bit 1 fma, bit 2 the float prefix path,
#: bit 3 avx2 (the float path's filter; the Hamming pass and the AP terms where AVX-512 is
#: absent or masked off), bit 4 avx512 (the Hamming pass and the AP terms), bit 5 the float
#: path's AVX2 threshold pass (few distinct relevant distances; with bit 3)
ALL_FEATURES = 63
_FEATURE_MASK = ALL_FEATURES


def cpu_features(mask: Optional[int] = None) -> int:
    """CPU features the C code can use here (bit 0 popcnt, bit 1 fma, bit 3 avx2, bit 4
    avx512: F, DQ, BW, VL and VPOPCNTDQ, with BMI2), and bit 2:
    the float prefix path (only the items up to the L-th smallest distance, or up to the
    farthest relevant item, are placed; always there), and bit 5: the float path's AVX2
    threshold pass for rows with few distinct relevant distances (always there; used with bit 3).

    With ``mask``, the C code uses only the features in ``mask`` from now on (tests compare
    the generic and the accelerated paths; results are identical).  Returns the features
    the CPU has.
    """
    global _FEATURE_MASK
    lib = _require()
    if mask is not None:
        _FEATURE_MASK = int(mask)
    return int(lib.rc_set_features(_FEATURE_MASK))


def usable_features() -> int:
    """The features the C code may use now: the CPU's, within the mask of :func:`cpu_features`
    (what entry points that take a feature mask, the curves and the benchmarks, pass)."""
    return cpu_features() & _FEATURE_MASK


@contextlib.contextmanager
def limited_features(mask: int) -> Iterator[int]:
    """The C code held to the features of ``mask`` within the present mask for the duration (a
    benchmark times a slower instruction set, an AVX2-only CPU say, on a faster CPU); the mask
    as it was afterwards.  Yields the features usable meanwhile."""
    before = _FEATURE_MASK
    cpu_features(before & int(mask))
    try:
        yield usable_features()
    finally:
        cpu_features(before)


def max_threads() -> int:
    """OpenMP's thread count (``OMP_NUM_THREADS``, else every online CPU): the most the default rule of
    :mod:`.threads` picks."""
    return int(_require().rc_max_threads())


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
    """The thread count asked for: ``num_threads``, else ``RC_NUM_THREADS``, else 0 (the
    default rule, :func:`.threads.default_threads`, decides)."""
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
