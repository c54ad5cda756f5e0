"""The gallery of one evaluation on the cluster: scattered whole to every worker, or as shards."""

from __future__ import annotations

from typing import Dict, List, Tuple

from retrieval_conformance.implementations.dask.shards import GALLERY_FIELDS, gallery_part
from retrieval_conformance.reference.contract.problem import Problem

#: workers that hold each gallery shard (a lost worker then loses no shard)
SHARD_REPLICAS = 2


def same_gallery(sources: tuple, problem: Problem) -> bool:
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
        return client is self.client and same_gallery(self._sources, problem)


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
        return client is self.client and bounds == self.bounds and same_gallery(self._sources, problem)


def gallery_bytes(problem: Problem) -> int:
    """What one worker holds of the gallery without shards: its arrays, plus 16 bytes per item
    (one query row of distances and its int64 sort keys)."""
    arrays = sum(getattr(problem, name).nbytes for name in GALLERY_FIELDS if getattr(problem, name) is not None)
    return int(arrays + 16 * problem.n_gallery)
