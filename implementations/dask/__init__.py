"""The dask implementation: the queries of an evaluation computed on the current
``dask.distributed`` cluster (:mod:`.backend` says how), in small modules:

* :mod:`.backend`: :class:`DaskImplementation` (chunk sizes, shards or not, the two paths);
* :mod:`.client`: the current client, :class:`DaskEvaluationError` and what a closed client raises;
* :mod:`.galleries`: the gallery scattered whole or as shards, once per evaluation;
* :mod:`.chunks`: the task of one chunk of queries, and the chunks gathered in query order;
* :mod:`.sharded_run`: one block over gallery shards, pass 1 and pass 2 as tasks complete;
* :mod:`.shards` (the workers' side of the passes) and :mod:`.merge` (the client's side).

Importing it imports no dask: ``distributed`` is imported where a client is used.
"""

from retrieval_conformance.implementations.dask.backend import DaskImplementation
from retrieval_conformance.implementations.dask.client import DaskEvaluationError

__all__ = ["DaskEvaluationError", "DaskImplementation"]
