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
  ``allowed-failures``, a lost scattered gallery, a cancelled task, the client closed during the
  evaluation) raises :class:`DaskEvaluationError`: never a partial or wrong result, never one of
  distributed's own errors.  A single lost worker costs
  nothing: the scheduler reruns its tasks on the others.

**Gallery shards** (``DaskImplementation(gallery_shards=S)``, a count or a list of sizes; by default
when one worker would hold more than ``SHARD_BYTES`` = 1 GiB of the gallery: its arrays plus 16 bytes
per item, then the fewest equal shards under that budget, ``shard_bytes=`` changes it):

* each shard is a contiguous range of gallery items ``lo:hi``; its gallery arrays (codes, ids,
  cameras, multi-hot rows) are scattered once per evaluation to ``SHARD_REPLICAS`` = 2 workers (a
  lost worker loses no shard), never to every worker;
* per chunk of queries and shard, one task holds the part (the chunk's rows of the per-query
  arrays, the (Q, N) matrices cut to the shard's columns; only those bytes are read, from a memory
  map too), and two tasks run on it (:mod:`.shards`, merged by :mod:`.merge`): **pass 1** returns per query the shard's
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
  the numpy implementation's own kernels (``vector_concrete``, ``vector_expected``,
  ``vector_rank_metrics``) fed in the same order, so the values are bit for bit the one-machine
  ones for any number and sizes of shards (the caveat beyond 2**26 items is in :mod:`.shards`);
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

import uuid
from dataclasses import fields
from typing import Callable, List, Optional, Sequence, Tuple, Union

import numpy as np
from retrieval_conformance.implementations.dask.chunks import compute_chunk, gather_in_order, query_chunk
from retrieval_conformance.implementations.dask.client import cancel_pending, current_client, on_cluster, require_client
from retrieval_conformance.implementations.dask.galleries import ScatteredGallery, ShardedGallery, gallery_bytes
from retrieval_conformance.implementations.dask.sharded_run import ShardedRun
from retrieval_conformance.implementations.dask.shards import GALLERY_FIELDS, MATRIX_FIELDS, shard_bounds
from retrieval_conformance.reference.contract.cutoffs import within_gallery
from retrieval_conformance.reference.contract.problem import Options, PerQuery, Problem, zero_arrays
from retrieval_conformance.reference.contract.registry import Implementation

#: per-query input bytes per task at most (dask warns about task graphs above 10 MB)
CHUNK_BYTES = 8 * 2**20
#: (query, item) pairs per task at least, unless fewer are asked for
MIN_CHUNK_PAIRS = 2**20
#: tasks per worker thread (more evens out uneven chunks; fewer saves task overhead)
TASKS_PER_THREAD = 2
#: without ``gallery_shards``, the gallery is sharded when a worker would hold more than this many bytes
#: of it (module docstring: the gallery arrays plus 16 bytes per item)
SHARD_BYTES = 2**30


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

    def __init__(
        self,
        chunk_queries: Optional[int] = None,
        gallery_shards: Optional[Union[int, Sequence[int]]] = None,
        shard_bytes: Optional[int] = None,
    ):
        self.chunk_queries = None if chunk_queries is None else _positive("chunk_queries", chunk_queries)
        if (
            gallery_shards is None
            or isinstance(gallery_shards, (int, np.integer))
            and not isinstance(gallery_shards, bool)
        ):
            self.gallery_shards: Optional[Union[int, Tuple[int, ...]]] = (
                None if gallery_shards is None else _positive("gallery_shards", gallery_shards)
            )
        else:
            try:
                # a bool lands here and raises the TypeError answered below
                self.gallery_shards = tuple(_positive("gallery_shards", size) for size in gallery_shards)  # type: ignore[union-attr]
            except TypeError:
                raise ValueError(
                    f"gallery_shards: expected None, a positive integer or a sequence of shard sizes, "
                    f"got {gallery_shards!r}"
                ) from None
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
        client = require_client()
        bounds = self.shards(problem)
        return on_cluster(
            client,
            lambda: ScatteredGallery(problem, client) if bounds is None else ShardedGallery(problem, client, bounds),
        )

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
        cannot compute a chunk or the client is closed during the evaluation,
        :class:`ImplementationUnavailable` without a current client at its start.
        """
        client = require_client(state if isinstance(state, (ScatteredGallery, ShardedGallery)) else None)
        n_q = int(problem.n_queries)
        if n_q == 0:
            return PerQuery(**zero_arrays(0, options))  # type: ignore[arg-type]  # arrays by field name
        bounds = self.shards(problem)
        if bounds is not None:
            return on_cluster(client, lambda: self._compute_sharded(problem, options, progress, state, client, bounds))
        return on_cluster(client, lambda: self._compute_whole(problem, options, progress, state, client))

    def _compute_whole(self, problem: Problem, options: Options, progress, state, client) -> PerQuery:
        """The chunks of queries against the gallery scattered whole (module docstring)."""
        n_q = int(problem.n_queries)
        gallery = (
            state
            if isinstance(state, ScatteredGallery) and state.matches(problem, client)
            else ScatteredGallery(problem, client)
        )
        size = self.chunk_rows(problem, client)
        bounds = [(start, min(n_q, start + size)) for start in range(0, n_q, size)]
        token = uuid.uuid4().hex
        futures = [
            client.submit(
                compute_chunk,
                query_chunk(problem, start, stop),
                gallery.futures,
                options,
                start,
                key=f"rc-dask-chunk-{token}-{i}",
                pure=False,
            )
            for i, (start, stop) in enumerate(bounds)
        ]
        try:
            return PerQuery.concat(gather_in_order(futures, bounds, progress, n_q))
        finally:
            cancel_pending(client, futures)

    def _compute_sharded(
        self, problem: Problem, options: Options, progress, state, client, bounds: List[Tuple[int, int]]
    ) -> PerQuery:
        """The two passes over the gallery shards, chunk by chunk (module docstring)."""
        gallery = (
            state
            if isinstance(state, ShardedGallery) and state.matches(problem, client, bounds)
            else ShardedGallery(problem, client, bounds)
        )
        n_q = int(problem.n_queries)
        size = self.chunk_rows(problem, client, len(bounds))
        chunks = [(start, min(n_q, start + size)) for start in range(0, n_q, size)]
        run = ShardedRun(client, problem, options, gallery, chunks)
        try:
            return PerQuery.concat(run.gather(progress))
        finally:
            run.cancel()


def _positive(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: expected None or a positive integer, got {value!r}")
    return int(value)
