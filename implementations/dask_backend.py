"""The dask implementation: the queries of a problem computed on the current ``dask.distributed`` cluster.

``rc.evaluate(..., implementation="dask")`` runs on the client the caller already started
(``from distributed import Client; client = Client(...)``); this module never starts a cluster, and
without a current client the implementation is unavailable (its reason says so).  ``auto`` never
picks it (``speed_rank`` is high): a cluster is something the caller asks for.

What it does with one block of queries (a :class:`Problem`):

* the **gallery** arrays (``db_*``) are scattered once, to every worker (``broadcast=True``), once per
  evaluation (:meth:`DaskImplementation.prepare`, when ``evaluate`` walks several query blocks) or once
  per block;
* the **queries** are cut into chunks of rows (every per-query array of the problem, ``distances``,
  ``relevance``, ``junk``, codes, labels, cameras, grades, sliced alike); each chunk is one task, its
  rows carried in the task itself, so that the scheduler can run it again elsewhere when a worker
  dies;
* on the worker a chunk is computed by the best local implementation there (C when its library
  loads, else numpy) with the same options; queries are independent, so the concatenated chunks
  (:meth:`PerQuery.concat`, in query order) are bit for bit what one machine computes, for any chunk
  size;
* ``progress(done, total)`` is called as chunks complete (``done`` counts the queries of the
  completed chunks, in whatever order they complete);
* an error raised by a chunk (the ``ValueError`` of a ``k`` inside a tie group under
  ``ties='grouped'``) reaches the caller as the same exception with the reference's message: the
  chunk's query index is shifted to the block's, and the failure of the first query in order wins
  (the remaining chunks are cancelled as soon as every chunk before the failing one is done);
* a chunk the cluster cannot compute (its worker died more often than the scheduler's
  ``allowed-failures``, a lost scattered gallery, a cancelled task) raises
  :class:`DaskEvaluationError`: never a partial or wrong result.  A single lost worker costs
  nothing: the scheduler reruns its tasks on the others.

Not done yet: **gallery sharding**.  Every worker holds the whole gallery; a gallery too large for
one worker would need per-shard counts (relevant items and tie groups ahead of each relevant item)
merged exactly, which no implementation returns yet.  ``evaluate`` hands over one query block at a
time (about 256 MiB of float64 distances each); ``block_size=`` hands over larger ones.

Chunk size (``DaskImplementation(chunk_queries=...)``, else chosen per block): about two tasks per
worker thread, at least ``MIN_CHUNK_PAIRS`` (query, item) pairs per task (the task overhead stays
small) and at most ``CHUNK_BYTES`` of per-query input per task (below dask's large-graph warning).
Each chunk prepares the gallery on its worker (packed codes, sorted ids: ``O(N log N)``, small
next to the chunk's ``O(rows x N)``).

Importing this module does not import dask: :meth:`DaskImplementation.unavailable_reason` looks for
``distributed`` only in ``sys.modules`` (a client cannot exist before it is imported) and otherwise
checks that it is installed, without importing it.  Install with ``pip install
'retrieval-conformance[dask]'``.
"""
from __future__ import annotations

import importlib.util
import re
import sys
import uuid
from dataclasses import fields, replace
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
from retrieval_conformance.reference.contract.cutoffs import within_gallery
from retrieval_conformance.reference.contract.problem import Options, PerQuery, Problem, zero_arrays
from retrieval_conformance.reference.contract.registry import (
    Implementation,
    ImplementationUnavailable,
    get,
    unavailable_reason,
)

INSTALL = "pip install 'retrieval-conformance[dask]'"
NOT_INSTALLED = f"dask.distributed is not installed; {INSTALL}"
NO_CLIENT = ("no dask.distributed client is running; start one before evaluating (from distributed import "
             "Client; client = Client() for a local cluster, or Client('scheduler-address:8786')): "
             "implementation='dask' never starts a cluster itself")
#: per-query input bytes per task at most (dask warns about task graphs above 10 MB)
CHUNK_BYTES = 8 * 2**20
#: (query, item) pairs per task at least, unless fewer are asked for
MIN_CHUNK_PAIRS = 2**20
#: tasks per worker thread (more evens out uneven chunks; fewer saves task overhead)
TASKS_PER_THREAD = 2
#: the gallery side of a :class:`Problem`: scattered once, never sliced
GALLERY_FIELDS = tuple(f.name for f in fields(Problem) if f.name.startswith("db_"))
#: where a message of an implementation names a query by its index in the problem (spec §4 ties=grouped:
#: "... of query 12; ...", and the C library's non-finite distance "... at [12, 3]")
_QUERY_INDEX = re.compile(r"(of query |value at \[)(\d+)")


class DaskEvaluationError(RuntimeError):
    """A chunk of queries could not be computed on the cluster (not an error of the queries)."""


def current_client() -> Tuple[Optional[object], Optional[str]]:
    """(the current ``dask.distributed`` client, None), or (None, why there is none).

    Never imports ``distributed``: before it is imported no client can exist."""
    module = sys.modules.get("distributed")
    if module is None:
        try:
            installed = importlib.util.find_spec("distributed") is not None
        except (ImportError, ValueError):
            installed = False
        return None, NO_CLIENT if installed else NOT_INSTALLED
    try:
        client = module.default_client()
    except (ValueError, AttributeError):
        return None, NO_CLIENT
    status = getattr(client, "status", "running")
    if status != "running":
        return None, f"the current dask.distributed client is {status!r}, not running; start a new Client"
    return client, None


def _require_client():
    client, reason = current_client()
    if client is None:
        raise ImplementationUnavailable(f"implementation 'dask' is unavailable: {reason}")
    return client


class ScatteredGallery:
    """The gallery arrays of one evaluation, scattered to every worker once (what
    :meth:`DaskImplementation.prepare` returns).  Bound to the arrays it was made from (by
    identity) and to the client that holds them; dropped, it releases them on the cluster."""

    def __init__(self, problem: Problem, client):
        self.client = client
        self._sources = tuple(getattr(problem, name) for name in GALLERY_FIELDS)
        names = [name for name, value in zip(GALLERY_FIELDS, self._sources) if value is not None]
        # a list (not a dict, whose keys would become the data's keys on the cluster); random keys
        futures = client.scatter([getattr(problem, n) for n in names], broadcast=True, hash=False) if names else []
        self.futures: Dict[str, object] = dict(zip(names, futures))

    def matches(self, problem: Problem, client) -> bool:
        return client is self.client and all(
            a is getattr(problem, name) for a, name in zip(self._sources, GALLERY_FIELDS))


def query_chunk(problem: Problem, start: int, stop: int) -> Problem:
    """Queries ``start:stop`` of ``problem``: every per-query array sliced by rows, the gallery
    arrays left out (None; they travel scattered), the scalars kept."""
    changes: Dict[str, object] = {"n_queries": stop - start}
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


class _ChunkError:
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
    or a :class:`_ChunkError`."""
    problem = replace(rows, **gallery)
    try:
        return local_implementation().compute(problem, options)
    except Exception as exc:  # noqa: BLE001 (every error of the queries goes back to the caller as it is)
        _shift_query_index(exc, start)
        return _ChunkError(exc)


class DaskImplementation(Implementation):
    """Per-query metrics on the current ``dask.distributed`` cluster; see the module docstring.

    Parameters
    ----------
    chunk_queries : int, optional
        Queries per task; default: chosen per block (module docstring).  Any size gives the same
        arrays.
    """

    name = "dask"
    speed_rank = 500

    def __init__(self, chunk_queries: Optional[int] = None):
        if chunk_queries is not None and (isinstance(chunk_queries, bool) or not isinstance(
                chunk_queries, (int, np.integer)) or chunk_queries < 1):
            raise ValueError(f"chunk_queries: expected None or a positive integer, got {chunk_queries!r}")
        self.chunk_queries = None if chunk_queries is None else int(chunk_queries)

    def unavailable_reason(self) -> Optional[str]:
        return current_client()[1]

    def prepare(self, problem: Problem) -> ScatteredGallery:
        """The gallery scattered to every worker, once for every query block of this evaluation."""
        return ScatteredGallery(problem, _require_client())

    def chunk_rows(self, problem: Problem, client) -> int:
        """Queries per task for ``problem`` on ``client``'s cluster."""
        if self.chunk_queries is not None:
            return self.chunk_queries
        n_q, n_g = max(int(problem.n_queries), 1), max(int(problem.n_gallery), 1)
        row_bytes = sum(getattr(problem, f.name).nbytes for f in fields(Problem)
                        if f.name not in GALLERY_FIELDS and isinstance(getattr(problem, f.name), np.ndarray)) // n_q
        threads = max(1, sum(client.nthreads().values()))
        balanced = -(-n_q // (TASKS_PER_THREAD * threads))
        return max(1, min(CHUNK_BYTES // max(row_bytes, 1), max(MIN_CHUNK_PAIRS // n_g, balanced)))

    @within_gallery
    def compute(
        self,
        problem: Problem,
        options: Options,
        progress: Optional[Callable[[int, int], None]] = None,
        state: Optional[ScatteredGallery] = None,
    ) -> PerQuery:
        """Per-query metrics of ``problem`` under ``options``, computed chunk by chunk on the
        cluster; ``progress(done, total)`` as chunks complete; ``state`` from :meth:`prepare`.

        Raises what the local implementation raises for the first failing query (its message
        naming the query's index in ``problem``), :class:`DaskEvaluationError` when the cluster
        cannot compute a chunk, :class:`ImplementationUnavailable` without a current client.
        """
        client = _require_client()
        n_q = int(problem.n_queries)
        if n_q == 0:
            return PerQuery(**zero_arrays(0, options))
        gallery = state if isinstance(state, ScatteredGallery) and state.matches(problem, client) else \
            ScatteredGallery(problem, client)
        size = self.chunk_rows(problem, client)
        bounds = [(start, min(n_q, start + size)) for start in range(0, n_q, size)]
        token = uuid.uuid4().hex
        futures = [client.submit(compute_chunk, query_chunk(problem, start, stop), gallery.futures, options, start,
                                 key=f"rc-dask-chunk-{token}-{i}", pure=False)
                   for i, (start, stop) in enumerate(bounds)]
        try:
            return PerQuery.concat(_gather_in_order(futures, bounds, progress, n_q))
        finally:
            client.cancel([f for f in futures if not f.done()])


def _gather_in_order(futures: list, bounds: List[Tuple[int, int]], progress, n_q: int) -> List[PerQuery]:
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
        i, failure = first_failure
        if isinstance(failure, _ChunkError):
            raise failure.error
        start, stop = bounds[i]
        raise DaskEvaluationError(
            f"implementation 'dask': queries {start}..{stop - 1} of this block could not be computed on the "
            f"cluster ({type(failure).__name__}: {failure}); no partial result is returned") from failure
    return values  # type: ignore[return-value]
