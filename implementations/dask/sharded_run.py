"""One block of queries over gallery shards: the parts, pass 1, the merge, pass 2 (see
:mod:`.shards` and :mod:`.merge`), driven from the client as the tasks complete."""

from __future__ import annotations

import uuid
from typing import Any, Dict, List, Optional, Tuple, cast

from retrieval_conformance.implementations.dask.chunks import ChunkError, raise_failure
from retrieval_conformance.implementations.dask.client import cancel_pending
from retrieval_conformance.implementations.dask.galleries import ShardedGallery
from retrieval_conformance.implementations.dask.merge import (
    MergedChunk,
    chunk_metrics,
    is_float64,
    merge_statistics,
    points_for,
)
from retrieval_conformance.implementations.dask.shards import query_part, shard_counts, shard_statistics
from retrieval_conformance.reference.contract.problem import Options, PerQuery, Problem


def hold(part: Problem) -> Problem:
    """A task whose value is its argument: a (chunk, shard) part lives on a worker for both
    passes, and the scheduler can make it again from the task when that worker dies."""
    return part


class ShardedRun:
    """The tasks of one sharded block: per chunk and shard, the part (its query rows against the
    shard's items), pass 1 (statistics), then, once every shard's statistics of the chunk are
    merged on the client, pass 2 (counts); the chunk's metrics when every count is in."""

    def __init__(
        self, client, problem: Problem, options: Options, gallery: ShardedGallery, chunks: List[Tuple[int, int]]
    ):
        self.client, self.problem, self.options, self.gallery, self.chunks = client, problem, options, gallery, chunks
        self.token = uuid.uuid4().hex
        self.live: Dict[int, List[object]] = {i: [] for i in range(len(chunks))}  # dropped when a chunk is done
        self.where: Dict[str, Tuple[int, int, int]] = {}  # key -> (chunk, pass, shard)
        n_shards = len(gallery.bounds)
        self.parts = [
            [
                self._submit(hold, (i, 0, j), query_part(problem, start, stop, lo, hi))
                for j, (lo, hi) in enumerate(gallery.bounds)
            ]
            for i, (start, stop) in enumerate(chunks)
        ]
        # per chunk, each pass's result from each shard (None until it arrives; the chunk's entry is None once done)
        self.results: List[Any] = [[[None] * n_shards, [None] * n_shards] for _ in chunks]
        self.merged: List[Optional[MergedChunk]] = [None] * len(chunks)
        self.first_pass = [
            self._submit(shard_statistics, (i, 1, j), self.parts[i][j], gallery.futures[j], lo, options)
            for i in range(len(chunks))
            for j, (lo, _) in enumerate(gallery.bounds)
        ]

    def _submit(self, function, where: Tuple[int, int, int], *args):
        i, step, j = where
        key = f"rc-dask-{'part' if step == 0 else 'shard'}-{self.token}-{i}-{step}-{j}"
        future = self.client.submit(function, *args, key=key, pure=False)
        self.live[i].append(future)
        self.where[key] = where
        return future

    def cancel(self) -> None:
        cancel_pending(self.client, [f for futures in self.live.values() for f in futures])

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
            raise_failure(first_failure[1], *self.chunks[first_failure[0]])
        return values  # type: ignore[return-value]

    def _advance(self, future, i: int, step: int, j: int, completed):
        """Record one finished task of chunk ``i``; start pass 2 when pass 1 is complete, and
        return the chunk's values (or its queries' error, a :class:`ChunkError`) when pass 2 is
        (else None).  A task's failure is the cluster's, and raises."""
        slot = self.results[i][step - 1]
        slot[j] = future.result()
        if any(value is None for value in slot):
            return None
        if step == 1:
            start, _ = self.chunks[i]
            self.merged[i] = merged = merge_statistics(
                slot,
                self.options,
                int(self.problem.n_gallery),
                start,
                self.problem.grades is not None,
                is_float64(self.problem),
            )
            points = points_for(merged)
            second = [
                self._submit(
                    shard_counts, (i, 2, jj), self.parts[i][jj], self.gallery.futures[jj], lo, self.options.ties, points
                )
                for jj, (lo, _) in enumerate(self.gallery.bounds)
            ]
            completed.update(second)
            return None
        try:
            arrays = chunk_metrics(cast(MergedChunk, self.merged[i]), slot)  # merged by pass 1
            return PerQuery(**arrays)  # type: ignore[arg-type]  # arrays by field name
        except ValueError as exc:  # the queries' error (grouped: a cut-off inside a tie group)
            return ChunkError(exc)
