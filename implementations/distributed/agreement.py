"""The handshake of a distributed evaluation: before any pass, every rank learns what every other
rank was given, and ranks that disagree get the same named error, all of them, instead of two
different numbers, a number that is neither, a hang or an abort inside the backend.

Each rank describes itself in :func:`describe`: the settings that must be equal everywhere (the
options, protocol, metric and implementation), and what its arrays must share with the other
ranks' (which inputs it holds, their columns, whether its labels are numbers or strings; a rank
with no rows of an input says nothing about it).  The description travels as canonical JSON
(entries in a fixed order, sets as sorted lists), so equal settings are equal text; :func:`agree` all-gathers
them, and names the first entry on which ranks differ with each rank's value.

It also carries the dtype of the rank's gallery embeddings, which need not agree: the shards are
read in the dtype of their concatenation (:func:`gallery_dtype`, the rule of
:mod:`~retrieval_conformance.reference.contract.promotion`).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List, Optional

import numpy as np
from retrieval_conformance.implementations.distributed.collectives import ProcessGroup
from retrieval_conformance.reference.contract.problem import Options
from retrieval_conformance.reference.contract.promotion import concatenated_dtype

__all__ = ["agree", "describe", "gallery_dtype"]


def describe(
    options: Options,
    settings: Dict[str, Any],
    queries: Dict[str, np.ndarray],
    gallery: Dict[str, np.ndarray],
) -> Dict[str, Any]:
    """This rank's description: ``"settings"`` (``settings``: protocol, implementation, metric ...,
    then every field of ``options``), ``"arrays"`` (the names of the query and gallery inputs,
    then per input given with rows its columns and the kind of its values), each a list of
    ``[name, value]`` in the order a disagreement is looked for, and ``"db_dtype"``."""
    # each array entry is "ARGUMENT|what it says", so that a disagreement names the argument
    arrays: List[List[Any]] = []
    for side, given in (("update()|query inputs", queries), ("db_*|gallery inputs", gallery)):
        rows = {name: value for name, value in given.items() if value.shape[0]}
        arrays.append([side, sorted(rows) if rows else None])
        for name in sorted(rows):
            arrays.append([f"{name}|columns", list(rows[name].shape[1:])])
            arrays.append([f"{name}|kind of values", _kind(rows[name].dtype)])
    embeddings = gallery.get("db_embeddings")
    db_dtype = None  # no shard, or not numbers: the first pass refuses what is not
    if embeddings is not None and embeddings.shape[0] and embeddings.dtype.kind in "fiu":
        db_dtype = embeddings.dtype.str
    every = _plain({**settings, **dataclasses.asdict(options)})
    return {"settings": [[name, value] for name, value in every.items()], "arrays": arrays, "db_dtype": db_dtype}


def agree(group: ProcessGroup, mine: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Every rank's description (:func:`describe`), in rank order, once they agree.

    Raises ``ValueError``, the same on every rank, naming the first setting that differs (every
    rank's value of it), or the first array entry that differs between ranks that state it.
    """
    # default=repr: a value JSON has no form for still travels (as its repr), and no rank raises alone here
    text = json.dumps(mine, sort_keys=True, separators=(",", ":"), default=repr)
    everyone = [json.loads(raw.decode("utf-8")) for raw in group.all_gather(text.encode("utf-8"))]
    for part in ("settings", "arrays"):
        stated = [dict(d[part]) for d in everyone]
        names = list(dict.fromkeys(name for d in everyone for name, _ in d[part]))  # in the ranks' order
        for name in names:
            values = {rank: said.get(name) for rank, said in enumerate(stated)}
            if part == "arrays":  # a rank without rows of an input says nothing about it
                values = {rank: value for rank, value in values.items() if value is not None}
            if len({json.dumps(value) for value in values.values()}) > 1:
                raise ValueError(_message(name, values, group.world))
    return everyone


def gallery_dtype(everyone: List[Dict[str, Any]]) -> Optional[np.dtype]:
    """The dtype of the gallery embeddings' concatenation over the ranks with a non-empty shard."""
    return concatenated_dtype(np.dtype(d["db_dtype"]) for d in everyone if d["db_dtype"] is not None)


def _message(name: str, values: Dict[int, Any], world: int) -> str:
    """``name: ...`` with each distinct value and the ranks that gave it."""
    by_value: Dict[str, List[int]] = {}
    for rank, value in values.items():
        by_value.setdefault(json.dumps(value), []).append(rank)
    told = ", ".join(
        f"{_shown(json.loads(value))} on rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"
        for value, ranks in by_value.items()
    )
    argument, _, what = name.partition("|")
    return (
        f"{argument}: the {world} ranks of a distributed Accumulator must be given the same "
        f"{what or 'value'}, got {told}; pass the same {what or argument} on every rank (the ranks "
        "are compared before any pass)"
    )


def _shown(value: Any) -> str:
    return repr(tuple(value)) if isinstance(value, list) else repr(value)


def _kind(dtype: np.dtype) -> str:
    """What the values of an input are, as far as ranks must agree: numbers or text."""
    return {"U": "strings", "S": "bytes", "O": "objects"}.get(dtype.kind, "numbers")


def _plain(value: Any) -> Any:
    """``value`` as canonical JSON values: sets sorted, tuples as lists, floats and ints as they are."""
    if isinstance(value, dict):
        return {str(key): _plain(v) for key, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value
