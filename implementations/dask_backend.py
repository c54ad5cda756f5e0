"""The dask implementation: the queries of a problem computed on the current ``dask.distributed`` cluster.

``rc.evaluate(..., implementation="dask")`` runs on the client the caller already started
(``from distributed import Client; client = Client(...)``); this module never starts a cluster, and
without a current client the implementation is unavailable (its reason says so).  ``auto`` never
picks it (``speed_rank`` is high): a cluster is something the caller asks for.

What it does with one block of queries (a :class:`Problem`):

* without shards (below), the **gallery** arrays (``db_*``) are scattered once, to every worker
  (``broadcast=True``), once per evaluation (:meth:`DaskImplementation.prepare`, when ``evaluate``
  walks several query blocks) or once per block;
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

**Gallery shards** (``DaskImplementation(gallery_shards=S)``, a count or a list of sizes; by default
when one worker would hold more than ``SHARD_BYTES`` = 1 GiB of the gallery: its arrays plus 16 bytes
per item, then the fewest equal shards under that budget, ``shard_bytes=`` changes it):

* each shard is a contiguous range of gallery items ``lo:hi``; its gallery arrays (codes, ids,
  cameras, multi-hot rows) are scattered once per evaluation to ``SHARD_REPLICAS`` = 2 workers (a
  lost worker loses no shard), never to every worker;
* per chunk of queries and shard, one task holds the part (the chunk's rows of the per-query
  arrays, the (Q, N) matrices cut to the shard's columns; only those bytes are read, from a memory
  map too), and two tasks run on it (``dask_shards.py``): **pass 1** returns per query the shard's
  relevant non-junk items (distance key, global index, grade), its non-junk count, its counts within
  ``radius``, and under ``ties='grouped'`` with ``k`` its ``k + 1`` smallest distances; the client
  sorts each query's relevant items under the tie policy and sends them back: **pass 2** returns,
  per relevant item, the shard's non-junk items ranked ahead of it (``stable``, ``reverse``: ties by
  global index), or per relevant distance the items below and at it (the other policies);
* **what travels**: to the cluster, each part once (rows x shard columns of the per-query inputs)
  and the relevant items; back, only per-query statistics (O(relevant items + k) integers per query
  and shard), never a (Q, N) block;
* **exactness**: the shards partition the gallery, so every statistic of the whole gallery is a
  sum of integer counts over shards: a relevant item's rank is one plus the items ahead of it, a
  tie group's items before it and its size are sums.  The client turns them into the metrics with
  the numpy implementation's own kernels (``vector.concrete``, ``vector.expected``,
  ``vector.rank_metrics``) fed in the same order, so the values are bit for bit the one-machine
  ones for any number and sizes of shards (the caveat beyond 2**26 items is in ``dask_shards.py``);
* a cut-off inside a tie group (``grouped``) raises the one-machine error word for word, for the
  first such query; a worker lost mid-run costs nothing (its parts are remade from their tasks, its
  shards have a second copy); what the cluster cannot compute raises :class:`DaskEvaluationError`.

Inputs: everything ``evaluate`` accepts (distances or scores, codes, embeddings, which ``evaluate``
turns into distances one query block at a time, ids, multi-hot labels, relevance matrices with
grades, junk, cameras), numpy arrays and memory-mapped ``.npy`` files (``np.load(path,
mmap_mode='r')``: ``evaluate`` reads one query block at a time and a part copies only its columns).
A dask array is not supported as such: ``evaluate`` would convert it whole on the client.
Without shards ``evaluate`` hands over one query block at a time (about 256 MiB of float64
distances each); ``block_size=`` hands over larger ones.

Chunk size (``DaskImplementation(chunk_queries=...)``, else chosen per block): about two tasks (per
shard) per worker thread, at least ``MIN_CHUNK_PAIRS`` (query, item) pairs per task (the task
overhead stays small) and at most ``CHUNK_BYTES`` of per-query input per task (below dask's large-graph warning).
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
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from retrieval_conformance.implementations.dask_shards import (
    MATRIX_FIELDS,
    MergedChunk,
    chunk_metrics,
    gallery_part,
    is_float64,
    merge_statistics,
    points_for,
    query_part,
    shard_bounds,
    shard_counts,
    shard_statistics,
)
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
#: without ``gallery_shards``, the gallery is sharded when a worker would hold more than this many bytes
#: of it (module docstring: the gallery arrays plus 16 bytes per item)
SHARD_BYTES = 2**30
#: workers that hold each gallery shard (a lost worker then loses no shard)
SHARD_REPLICAS = 2
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


def _same_gallery(sources: tuple, problem: Problem) -> bool:
    """Whether ``problem`` holds the very gallery arrays ``sources`` (by identity, in
    ``GALLERY_FIELDS`` order): a prepared gallery serves only the evaluation it was made for."""
    return all(a is getattr(problem, name) for a, name in zip(sources, GALLERY_FIELDS))


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
        return client is self.client and _same_gallery(self._sources, problem)


class ShardedGallery:
    """The gallery arrays of one evaluation cut into shards (items ``lo:hi``), each scattered to
    ``SHARD_REPLICAS`` workers (what :meth:`DaskImplementation.prepare` returns when the gallery is
    sharded).  Bound, like :class:`ScatteredGallery`, to its arrays, its client and its bounds."""

    def __init__(self, problem: Problem, client, bounds: List[Tuple[int, int]]):
        self.client, self.bounds = client, bounds
        self._sources = tuple(getattr(problem, name) for name in GALLERY_FIELDS)
        self.futures: List[Dict[str, object]] = []
        for lo, hi in bounds:
            part = gallery_part(problem, lo, hi)
            names = list(part)
            futures = client.scatter([part[n] for n in names], hash=False) if names else []
            self.futures.append(dict(zip(names, futures)))
        scattered = [f for shard in self.futures for f in shard.values()]
        if scattered:
            client.replicate(scattered, n=min(SHARD_REPLICAS, max(1, len(client.nthreads()))))

    def matches(self, problem: Problem, client, bounds: List[Tuple[int, int]]) -> bool:
        return client is self.client and bounds == self.bounds and _same_gallery(self._sources, problem)


def gallery_bytes(problem: Problem) -> int:
    """What one worker holds of the gallery without shards: its arrays, plus 16 bytes per item
    (one query row of distances and its int64 sort keys)."""
    arrays = sum(getattr(problem, name).nbytes for name in GALLERY_FIELDS if getattr(problem, name) is not None)
    return int(arrays + 16 * problem.n_gallery)


def _row_bytes(problem: Problem, width: int) -> int:
    """Per-query input bytes of one row of a task over ``width`` gallery items."""
    n_q, n_g = max(int(problem.n_queries), 1), max(int(problem.n_gallery), 1)
    total = 0
    for f in fields(Problem):
        value = getattr(problem, f.name)
        if f.name in GALLERY_FIELDS or not isinstance(value, np.ndarray):
            continue
        total += value.nbytes * width // n_g if f.name in MATRIX_FIELDS else value.nbytes
    return total // n_q


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
    gallery_shards : int or sequence of int, optional
        Cut the gallery into this many contiguous shards (nearly equal sizes), or into shards of
        these sizes (positive, summing to the gallery size).  Default: no shards, unless one worker
        would hold more than ``shard_bytes`` of the gallery (:func:`gallery_bytes`); then the
        fewest equal shards under that budget.  Any sharding gives the same arrays.
    shard_bytes : int, optional
        The per-worker gallery budget of the default rule (``SHARD_BYTES``, 1 GiB).
    """

    name = "dask"
    speed_rank = 500

    def __init__(self, chunk_queries: Optional[int] = None,
                 gallery_shards: Optional[Union[int, Sequence[int]]] = None, shard_bytes: Optional[int] = None):
        self.chunk_queries = None if chunk_queries is None else _positive("chunk_queries", chunk_queries)
        if gallery_shards is None or isinstance(gallery_shards, (int, np.integer)) and not isinstance(
                gallery_shards, bool):
            self.gallery_shards = None if gallery_shards is None else _positive("gallery_shards", gallery_shards)
        else:
            try:
                self.gallery_shards = tuple(_positive("gallery_shards", size) for size in gallery_shards)
            except TypeError:
                raise ValueError(f"gallery_shards: expected None, a positive integer or a sequence of shard sizes, "
                                 f"got {gallery_shards!r}") from None
            if not self.gallery_shards:
                raise ValueError("gallery_shards: expected at least one shard size, got an empty sequence")
        self.shard_bytes = SHARD_BYTES if shard_bytes is None else _positive("shard_bytes", shard_bytes)

    def unavailable_reason(self) -> Optional[str]:
        return current_client()[1]

    def shards(self, problem: Problem) -> Optional[List[Tuple[int, int]]]:
        """The gallery shards ``[(lo, hi), ...]`` for ``problem``, or None (the whole gallery on
        every worker)."""
        if problem.n_gallery < 1:
            return None  # nothing to shard (every value is 0)
        if self.gallery_shards is not None:
            return shard_bounds(int(problem.n_gallery), self.gallery_shards)
        need = gallery_bytes(problem)
        if need <= self.shard_bytes or problem.n_gallery < 2:
            return None
        return shard_bounds(int(problem.n_gallery), -(-need // self.shard_bytes))

    def prepare(self, problem: Problem):
        """The gallery scattered once for every query block of this evaluation: whole to every
        worker, or as shards."""
        client = _require_client()
        bounds = self.shards(problem)
        return ScatteredGallery(problem, client) if bounds is None else ShardedGallery(problem, client, bounds)

    def chunk_rows(self, problem: Problem, client, shards: int = 1) -> int:
        """Queries per task for ``problem`` on ``client``'s cluster (the widest of ``shards``
        equal shards per task)."""
        if self.chunk_queries is not None:
            return self.chunk_queries
        n_q = max(int(problem.n_queries), 1)
        width = max(1, -(-int(problem.n_gallery) // shards))
        threads = max(1, sum(client.nthreads().values()))
        balanced = -(-n_q * shards // (TASKS_PER_THREAD * threads))
        return max(1, min(CHUNK_BYTES // max(_row_bytes(problem, width), 1), max(MIN_CHUNK_PAIRS // width, balanced)))

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
        bounds = self.shards(problem)
        if bounds is not None:
            return self._compute_sharded(problem, options, progress, state, client, bounds)
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


    def _compute_sharded(self, problem: Problem, options: Options, progress, state, client,
                         bounds: List[Tuple[int, int]]) -> PerQuery:
        """The two passes over the gallery shards, chunk by chunk (module docstring)."""
        gallery = state if isinstance(state, ShardedGallery) and state.matches(problem, client, bounds) else \
            ShardedGallery(problem, client, bounds)
        n_q = int(problem.n_queries)
        size = self.chunk_rows(problem, client, len(bounds))
        chunks = [(start, min(n_q, start + size)) for start in range(0, n_q, size)]
        run = _ShardedRun(client, problem, options, gallery, chunks)
        try:
            return PerQuery.concat(run.gather(progress))
        finally:
            run.cancel()


def _positive(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: expected None or a positive integer, got {value!r}")
    return int(value)


def _hold(part: Problem) -> Problem:
    """A task whose value is its argument: a (chunk, shard) part lives on a worker for both
    passes, and the scheduler can make it again from the task when that worker dies."""
    return part


class _ShardedRun:
    """The tasks of one sharded block: per chunk and shard, the part (its query rows against the
    shard's items), pass 1 (statistics), then, once every shard's statistics of the chunk are
    merged on the client, pass 2 (counts); the chunk's metrics when every count is in."""

    def __init__(self, client, problem: Problem, options: Options, gallery: ShardedGallery,
                 chunks: List[Tuple[int, int]]):
        self.client, self.problem, self.options, self.gallery, self.chunks = client, problem, options, gallery, chunks
        self.token = uuid.uuid4().hex
        self.live: Dict[int, List[object]] = {i: [] for i in range(len(chunks))}  # dropped when a chunk is done
        self.where: Dict[str, Tuple[int, int, int]] = {}  # key -> (chunk, pass, shard)
        n_shards = len(gallery.bounds)
        self.parts = [[self._submit(_hold, (i, 0, j), query_part(problem, start, stop, lo, hi))
                       for j, (lo, hi) in enumerate(gallery.bounds)] for i, (start, stop) in enumerate(chunks)]
        self.results = [[[None] * n_shards, [None] * n_shards] for _ in chunks]
        self.merged: List[Optional[MergedChunk]] = [None] * len(chunks)
        self.first_pass = [self._submit(shard_statistics, (i, 1, j), self.parts[i][j], gallery.futures[j], lo,
                                        options) for i in range(len(chunks))
                           for j, (lo, _) in enumerate(gallery.bounds)]

    def _submit(self, function, where: Tuple[int, int, int], *args):
        i, step, j = where
        key = f"rc-dask-{'part' if step == 0 else 'shard'}-{self.token}-{i}-{step}-{j}"
        future = self.client.submit(function, *args, key=key, pure=False)
        self.live[i].append(future)
        self.where[key] = where
        return future

    def cancel(self) -> None:
        self.client.cancel([f for futures in self.live.values() for f in futures if not f.done()])

    def _release(self, i: int) -> None:
        """Forget chunk ``i``'s tasks and statistics: its parts leave the workers' memory."""
        self.live.pop(i, None)
        self.parts[i], self.results[i], self.merged[i] = [], None, None

    def gather(self, progress) -> List[PerQuery]:
        """The chunks' values in query order; the failure of the first failing chunk in order
        raised as soon as every chunk before it is done."""
        from distributed import as_completed

        values: List[Optional[PerQuery]] = [None] * len(self.chunks)
        pending = set(range(len(self.chunks)))
        first_failure: Optional[Tuple[int, object]] = None
        done, n_q = 0, int(self.problem.n_queries)
        completed = as_completed(self.first_pass)
        self.first_pass = []  # as_completed holds them until they are done
        for future in completed:
            i, step, j = self.where[future.key]
            if i not in pending:
                continue
            try:
                outcome = self._advance(future, i, step, j, completed)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001 (the cluster's failure; a cancelled future raises one)
                outcome = exc
            if isinstance(outcome, PerQuery):
                values[i] = outcome
                pending.discard(i)
                self._release(i)
                done += self.chunks[i][1] - self.chunks[i][0]
                if progress is not None:
                    progress(done, n_q)
            elif outcome is not None:
                pending.discard(i)
                if first_failure is None or i < first_failure[0]:
                    first_failure = (i, outcome)
            if first_failure is not None and not any(c < first_failure[0] for c in pending):
                break
        if first_failure is not None:
            _raise_failure(first_failure[1], *self.chunks[first_failure[0]])
        return values  # type: ignore[return-value]

    def _advance(self, future, i: int, step: int, j: int, completed):
        """Record one finished task of chunk ``i``; start pass 2 when pass 1 is complete, and
        return the chunk's values (or its queries' error, a :class:`_ChunkError`) when pass 2 is
        (else None).  A task's failure is the cluster's, and raises."""
        slot = self.results[i][step - 1]
        slot[j] = future.result()
        if any(value is None for value in slot):
            return None
        if step == 1:
            start, _ = self.chunks[i]
            self.merged[i] = merge_statistics(slot, self.options, int(self.problem.n_gallery), start,
                                              self.problem.grades is not None, is_float64(self.problem))
            points = points_for(self.merged[i])
            second = [self._submit(shard_counts, (i, 2, jj), self.parts[i][jj], self.gallery.futures[jj], lo,
                                   self.options.ties, points) for jj, (lo, _) in enumerate(self.gallery.bounds)]
            completed.update(second)
            return None
        try:
            return PerQuery(**chunk_metrics(self.merged[i], slot))
        except ValueError as exc:  # the queries' error (grouped: a cut-off inside a tie group)
            return _ChunkError(exc)


def _raise_failure(failure, start: int, stop: int) -> None:
    if isinstance(failure, _ChunkError):
        raise failure.error
    raise DaskEvaluationError(
        f"implementation 'dask': queries {start}..{stop - 1} of this block could not be computed on the "
        f"cluster ({type(failure).__name__}: {failure}); no partial result is returned") from failure


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
        _raise_failure(first_failure[1], *bounds[first_failure[0]])
    return values  # type: ignore[return-value]
