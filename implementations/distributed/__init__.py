"""Exact evaluation over ``torch.distributed``: every rank holds a slice of the queries and a
shard of the gallery, and every rank gets the metrics of all queries against the whole gallery.

* :mod:`.collectives`: the few collectives used (all-gather of byte payloads, a sum of integer
  counts), on the current process group, with the bytes each moves counted;
* :mod:`.sharded`: the evaluation itself, the gallery-shard passes of the dask implementation
  (``dask/shards.py``, ``dask/merge.py``) with the ranks as the shards.

Importing it imports no torch: :mod:`.collectives` imports ``torch.distributed`` when a group is
used.
"""

from retrieval_conformance.implementations.distributed.collectives import ProcessGroup, Traffic
from retrieval_conformance.implementations.distributed.sharded import evaluate_sharded

__all__ = ["ProcessGroup", "Traffic", "evaluate_sharded"]
