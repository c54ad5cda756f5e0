"""The queries of an :class:`~retrieval_conformance.Accumulator` made with ``distributed=True``.

Each rank of the current ``torch.distributed`` process group gives the accumulator its shard of
the gallery (the constructor's ``db_*`` arrays on that rank) and its queries (``update()``);
``compute()``, called on every rank, returns on every rank the result of all queries (in rank
order) against the whole gallery (shards in rank order), bit for bit what one process computes
on the concatenation.  How: :mod:`retrieval_conformance.implementations.distributed`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np
from retrieval_conformance.implementations.distributed import ProcessGroup, Traffic, evaluate_sharded
from retrieval_conformance.reference.contract import validation as v
from retrieval_conformance.reference.contract.aggregation import aggregate
from retrieval_conformance.reference.contract.presets import get_preset
from retrieval_conformance.reference.contract.problem import Options, Result

#: what computes the metrics from the merged counts (the numpy kernels)
IMPLEMENTATION = "numpy"
#: update() inputs that hold one column per gallery item: a rank sees only its shard's columns
COLUMN_INPUTS = ("distances", "scores", "relevance", "junk")


class DistributedQueries:
    """The accumulator's state under ``distributed=True``: this rank's gallery shard and query
    blocks, and the :class:`Traffic` of the last :meth:`compute`."""

    implementation = IMPLEMENTATION

    def __init__(
        self, gallery: Dict[str, Any], options: Options, protocol: str, metric: str, implementation: str, device
    ) -> None:
        if implementation not in ("auto", IMPLEMENTATION):
            raise ValueError(
                f"implementation: distributed=True computes with the numpy kernels from exact counts, "
                f"got implementation={implementation!r}; leave it out or pass 'numpy'"
            )
        if device is not None:
            raise ValueError(
                f"device: distributed=True computes on the CPU of each rank, got device={device!r}; "
                "leave device out (the process group's backend, gloo or nccl, moves the counts)"
            )
        rows = {name: arr.shape[0] for name, arr in gallery.items()}
        if len(set(rows.values())) > 1:
            raise ValueError(f"db_*: expected the same rows (one per gallery item of this rank's shard), got {rows}")
        self.group = ProcessGroup()
        self.gallery, self.options, self.protocol, self.metric = gallery, options, protocol, metric
        junk = get_preset(protocol).junk
        self.cameras, self.junk_ids = "same_id_cam" in junk, ((-1,) if "minus_one" in junk else ())
        self.traffic: Optional[Traffic] = None
        self.n_gallery: Optional[int] = None  # the whole gallery's items, known at compute()
        self.reset()

    def reset(self) -> None:
        self.blocks: List[Dict[str, np.ndarray]] = []

    def update(self, block: Dict[str, Any]) -> int:
        """Keep one block of this rank's queries; returns its rows."""
        given = {name: value for name, value in block.items() if value is not None}
        for name in COLUMN_INPUTS:
            if name in given:
                raise ValueError(
                    f"{name}: distributed=True ranks each query against every rank's gallery shard, so it takes "
                    "query_embeddings= or query_codes= (with db_embeddings= / db_codes= at construction), not a "
                    f"(queries x gallery) matrix; got {name}="
                )
        ranking = [name for name in ("query_embeddings", "query_codes") if name in given]
        if len(ranking) != 1:
            raise ValueError(
                f"update(): expected exactly one of query_embeddings=, query_codes=, got {ranking or 'none'}"
            )
        if "query_labels" not in given:
            raise ValueError(
                "query_labels: expected the block's labels (relevance comes from labels under distributed=True)"
            )
        if self.cameras and "query_cams" not in given:
            raise ValueError(
                f"query_cams: protocol {self.protocol!r} removes gallery items with the query's id and "
                "camera as junk, so it needs query_cams= (and db_cams= at construction)"
            )
        if not self.cameras and "query_cams" in given:
            raise ValueError(
                f"query_cams: protocol {self.protocol!r} has no camera junk rule; use protocol='reid' or "
                "'reid-matlab', or leave query_cams out"
            )
        arrays = {name: np.asarray(v.array_input(name, value)) for name, value in given.items()}
        v.check_ndim(ranking[0], arrays[ranking[0]], 2, "one row per query")
        n = arrays[ranking[0]].shape[0]
        for name, arr in arrays.items():
            if arr.ndim == 0 or arr.shape[0] != n:
                raise ValueError(f"{name}: expected {n} rows (one per query, as {ranking[0]}), got shape {arr.shape}")
        if n:
            self.blocks.append(arrays)
        return n

    def compute(self) -> Result:
        """Every rank's queries against every rank's shard; a collective: call it on every rank."""
        queries = (
            {name: np.concatenate([b[name] for b in self.blocks]) for name in self.blocks[0]} if self.blocks else {}
        )
        before = Traffic(**vars(self.group.traffic))
        per_query, self.n_gallery = evaluate_sharded(
            self.group,
            queries,
            self.gallery,
            self.options,
            self.metric,
            self.junk_ids,
            settings={"protocol": self.protocol, "implementation": IMPLEMENTATION},
        )
        now = self.group.traffic
        self.traffic = Traffic(
            now.bytes_sent - before.bytes_sent,
            now.bytes_received - before.bytes_received,
            now.collectives - before.collectives,
        )
        return aggregate(per_query, self.options, self.protocol, IMPLEMENTATION, n_gallery=self.n_gallery)
