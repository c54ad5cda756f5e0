"""Chunks of queries: the task a worker runs on one, and their results gathered in query order.

A chunk's queries' own error (a cut-off inside a tie group) comes back as a value, with the
query index of its message made the block's; a failure of the cluster raises
:class:`.client.DaskEvaluationError`.
"""

from __future__ import annotations

import re
from dataclasses import fields, replace
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from retrieval_conformance.implementations.dask.client import DaskEvaluationError
from retrieval_conformance.implementations.dask.shards import GALLERY_FIELDS
from retrieval_conformance.reference.contract.problem import Options, PerQuery, Problem
from retrieval_conformance.reference.contract.registry import Implementation, get, unavailable_reason

#: where a message of an implementation names a query by its index in the problem (spec §4 ties=grouped:
#: "... of query 12; ...", and the C library's non-finite distance "... at [12, 3]")
_QUERY_INDEX = re.compile(r"(of query |value at \[)(\d+)")


def query_chunk(problem: Problem, start: int, stop: int) -> Problem:
    """Queries ``start:stop`` of ``problem``: every per-query array sliced by rows, the gallery
    arrays left out (None; they travel scattered), the scalars kept."""
    changes: Dict[str, Any] = {"n_queries": stop - start}  # keyword arguments of replace()
    for f in fields(Problem):
        value = getattr(problem, f.name)
        if f.name in GALLERY_FIELDS:
            changes[f.name] = None
        elif isinstance(value, np.ndarray):
            changes[f.name] = value[start:stop]
    return replace(problem, **changes)


def local_implementation() -> Implementation:
    """The best implementation of this machine: C when its library loads, else numpy."""
    return get("c" if unavailable_reason("c") is None else "numpy")


class ChunkError:
    """An exception raised by the computation of a chunk, returned as a value (so that it is told
    apart from a failure of the cluster), with the query index of its message made the block's."""

    def __init__(self, error: BaseException):
        self.error = error


def _shift_query_index(error: BaseException, start: int) -> None:
    if start and error.args and isinstance(error.args[0], str):
        message = _QUERY_INDEX.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + start}", error.args[0], count=1)
        error.args = (message,) + error.args[1:]


def compute_chunk(rows: Problem, gallery: Dict[str, np.ndarray], options: Options, start: int):
    """The task run on a worker: the per-query values of one chunk (the rows from ``start`` on),
    or a :class:`ChunkError`."""
    problem = replace(rows, **gallery)  # type: ignore[arg-type]  # arrays by field name
    try:
        return local_implementation().compute(problem, options)
    except Exception as exc:  # noqa: BLE001 (every error of the queries goes back to the caller as it is)
        _shift_query_index(exc, start)
        return ChunkError(exc)


def raise_failure(failure, start: int, stop: int) -> None:
    if isinstance(failure, ChunkError):
        raise failure.error
    raise DaskEvaluationError(
        f"implementation 'dask': queries {start}..{stop - 1} of this block could not be computed on the "
        f"cluster ({type(failure).__name__}: {failure}); no partial result is returned"
    ) from failure


def gather_in_order(futures: list, bounds: List[Tuple[int, int]], progress, n_q: int) -> List[PerQuery]:
    """The chunks' values in query order; the failure of the first failing chunk in order raised
    as soon as every chunk before it is done."""
    from distributed import as_completed

    index = {f.key: i for i, f in enumerate(futures)}
    values: List[Optional[PerQuery]] = [None] * len(futures)
    pending = set(range(len(futures)))
    first_failure: Optional[Tuple[int, object]] = None
    done = 0
    for future in as_completed(futures):
        i = index[future.key]
        pending.discard(i)
        try:
            value = future.result()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 (a cancelled future raises a BaseException)
            value = exc  # the cluster's failure: the task itself returns its errors
        if isinstance(value, PerQuery):
            values[i] = value
            done += bounds[i][1] - bounds[i][0]
            if progress is not None:
                progress(done, n_q)
        elif first_failure is None or i < first_failure[0]:
            first_failure = (i, value)
        if first_failure is not None and not any(j < first_failure[0] for j in pending):
            break
    if first_failure is not None:
        raise_failure(first_failure[1], *bounds[first_failure[0]])
    return values  # type: ignore[return-value]
