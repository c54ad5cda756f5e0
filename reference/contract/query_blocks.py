"""Query blocks: how ``evaluate`` walks a large input without holding it whole.

Inputs are validated and evaluated one block of queries at a time (a memory-mapped distance
matrix is read block by block; embeddings and codes give one block of distances at a time);
queries are independent and the means exact, so the result does not depend on the blocks.
Also the shape checks that need the whole input (rows per query-side argument, a transposed
matrix) and the progress report.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Dict, Optional, Tuple, cast

import numpy as np
from retrieval_conformance.reference.contract import validation as v
from retrieval_conformance.reference.contract.arrays import first_where
from retrieval_conformance.reference.contract.cutoffs import compute_within_gallery
from retrieval_conformance.reference.contract.problem import Options, PerQuery, Problem

#: about this many bytes of float64 per block (the largest per-block temporaries are Q x N)
BLOCK_BYTES = 256 * 2**20


#: per-query CMC values beyond the gallery that ``evaluate`` agrees to hold (1 GiB of float64)
CMC_TAIL_LIMIT = 2**27


def check_cmc_size(n_q: int, n_g: int, max_rank: int) -> None:
    """Refuse to allocate a per-query CMC mostly made of its flat tail beyond the gallery."""
    if max_rank > n_g and n_q * max_rank > CMC_TAIL_LIMIT:
        raise ValueError(
            f"max_rank: {max_rank} CMC values for each of {n_q} queries would take "
            f"{n_q * max_rank * 8 / 2**30:.1f} GiB, but the gallery has only {n_g} items and the CMC is "
            f"flat beyond it; pass max_rank <= {n_g}"
        )


def query_rows(value, start: int, stop: int):
    """Rows ``start:stop`` of a query-side input (None stays None; lists become arrays)."""
    if value is None:
        return None
    if not hasattr(value, "shape"):
        value = np.asarray(value)
        if value.dtype == object:
            return value  # let validation say what is wrong
    if value.ndim == 0:
        return value
    return value[start:stop]


def input_shape(query_side, gallery_side):
    """(queries, gallery items) from the inputs, without converting any large array."""

    def rows_of(value):
        return len(value) if value is not None else None

    n_q = next(
        (
            rows_of(query_side[key])
            for key in ("distances", "scores", "query_codes", "query_embeddings", "relevance", "query_labels")
            if query_side[key] is not None
        ),
        0,
    )
    matrix = query_side["distances"] if query_side["distances"] is not None else query_side["scores"]
    if matrix is not None and getattr(matrix, "ndim", 2) == 2 and hasattr(matrix, "shape"):
        n_g = matrix.shape[1]
    else:
        gallery = next(
            (gallery_side[key] for key in ("db_codes", "db_embeddings", "db_labels") if gallery_side[key] is not None),
            None,
        )
        n_g = rows_of(gallery) or 1
    return n_q, n_g


def check_not_transposed(query_side, gallery_side) -> None:
    """A (gallery x queries) matrix would otherwise be reported as a row-count problem of the labels."""
    ql, dl = query_side["query_labels"], gallery_side["db_labels"]
    if ql is None or dl is None:
        return
    for key in ("distances", "scores", "relevance", "junk"):
        matrix = query_side[key]
        if matrix is None or matrix.ndim != 2 or matrix.shape[0] == matrix.shape[1]:
            continue
        if matrix.shape == (len(dl), len(ql)):
            raise ValueError(
                f"{key}: got shape {matrix.shape} (gallery x queries?), but query_labels has {len(ql)} rows "
                f"and db_labels {len(dl)}: pass {key}.T, one row per query and one column per gallery item"
            )


#: (block x N) arrays index their items with int32 in places
MAX_BLOCK_ITEMS = 2**31 - 1


def block_rows(
    n_q: int, n_g: int, block_size: Optional[int] = None, budget: int = BLOCK_BYTES, bytes_per_item: int = 8
) -> int:
    """Queries per block, the one rule every stage uses: the caller's ``block_size`` when given,
    else as many as keep one (block x N) array of ``bytes_per_item`` bytes per item under
    ``budget`` and below ``MAX_BLOCK_ITEMS`` items; at least one.

    ``evaluate`` reads the input in blocks of ``BLOCK_BYTES`` of float64; the vectorised
    implementations sort within a block in sub-blocks of their own budget
    (``implementations/vector/blocks.py``)."""
    if block_size is not None:
        return cast(int, v.positive_int("block_size", block_size))  # None only for a None value
    n_g = max(n_g, 1)
    return int(max(1, min(max(n_q, 1), budget // (n_g * bytes_per_item), MAX_BLOCK_ITEMS // n_g)))


def progress_callback(progress, n_q: int):
    if not progress:
        return None
    if callable(progress):
        return lambda done: progress(done, n_q)
    import sys
    import time

    t0 = time.perf_counter()

    def report(done: int) -> None:
        elapsed = time.perf_counter() - t0
        rate = done / elapsed if elapsed > 0 else float("inf")
        eta = (n_q - done) / rate if rate > 0 else 0.0
        sys.stderr.write(f"\rqueries {done}/{n_q} ({100 * done / n_q:.0f}%), {elapsed:.1f} s, ~{eta:.0f} s left")
        if done >= n_q:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return report


def read_sides(query_side: dict, gallery_side: dict) -> Tuple[int, int]:
    """Every array argument read as an array, in place, and the shape ``(queries, gallery)``.

    Raises
    ------
    ValueError
        Naming the argument: a wrong number of dimensions or of rows, or a transposed matrix.
    """
    # every array argument read as an array once (no copy of numpy arrays, memory maps or CPU
    # tensors), so a scalar, a generator, a ragged list or an exotic tensor is named here
    for side in (query_side, gallery_side):
        for key, value in side.items():
            if value is not None and key not in ("metric", "junk_ids"):
                side[key] = v.array_input(key, value)
    for key in ("distances", "scores", "query_codes", "query_embeddings"):
        if query_side[key] is not None:
            v.check_ndim(key, query_side[key], 2, "one row per query")
    n_q, n_g = input_shape(query_side, gallery_side)
    check_not_transposed(query_side, gallery_side)
    for key, value in query_side.items():
        if value is not None and hasattr(value, "__len__") and len(value) != n_q:
            shape = getattr(value, "shape", (len(value),))
            raise ValueError(f"{key}: expected {n_q} rows (one per query), got shape {tuple(shape)}")
    return n_q, n_g


def holds_minus_one(codes) -> bool:
    """Whether numeric codes hold a -1 anywhere (anything else is left to the block's checks);
    read in chunks, like every whole-array check."""
    if codes is None or getattr(codes, "dtype", np.dtype(object)).kind not in "fiub":
        return False
    return first_where(codes, lambda chunk: chunk == -1) is not None


def block_progress(report, first: int):
    """The ``progress(done, total)`` an implementation reports into, inside the block starting at ``first``."""
    return functools.partial(_report_from, report, first)


def _report_from(report, first: int, done: int, total: int) -> None:
    """An implementation's ``progress(done, total)`` inside the block starting at query ``first``."""
    report(first + done)


def takes(function, name: str) -> bool:
    """Whether ``function`` takes a keyword ``name`` (False when it has no signature)."""
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):  # a callable without a signature (a C function...)
        return False


def compute_block(impl, problem: Problem, options: Options, state=None, progress=None) -> PerQuery:
    """Per-query values of one block, computed with k and max_rank clipped to the gallery.

    Implementations never see a cut-off beyond the gallery (so no k wraps in int64, and no
    CMC value beyond the gallery is computed); P@k is restored with the caller's k and CMC
    rows are extended by their flat tail (``reference/contract/cutoffs.py``).
    """
    extra = {} if state is None else {"state": state}  # implementations without prepare() take none
    if progress is not None:
        extra["progress"] = progress
    return compute_within_gallery(impl.compute, problem, options, **extra)


def no_queries(block: Dict[str, Any]) -> bool:
    """A block with exactly one ranking input and 0 rows in every array given (anything else,
    0 rows included, goes to ``evaluate``, which names what is wrong)."""
    rankings = [name for name in ("query_embeddings", "query_codes", "distances", "scores") if name in block]
    return (
        len(rankings) == 1
        and block[rankings[0]].ndim == 2
        and all(arr.ndim >= 1 and arr.shape[0] == 0 for arr in block.values())
    )
