"""What the distributed tests share: their skip mark, a run of ``world`` gloo processes that
evaluate a list of cases with ``Accumulator(distributed=True)``, and the worker they run.

The worker lives in an importable module (not in a test file) so that the spawned processes
import it by name.  Every process group gets a bounded timeout and the parent a deadline, so a
hung collective fails the test instead of hanging the run.  The cases and the replies travel
through files as the ranks' own payloads (``encode_payload``, never pickle: reading them back
builds nothing but plain values and the few result classes named in :data:`_CLASSES`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import tempfile
import time
from fractions import Fraction
from typing import Any, Dict, List
from unittest import mock

import numpy as np
import pytest
from retrieval_conformance.conformance.loopback import free_port, join_group
from retrieval_conformance.conformance.support.requirements import required_names
from retrieval_conformance.implementations.distributed.collectives import Traffic
from retrieval_conformance.implementations.distributed.payloads import decode_payload, encode_payload
from retrieval_conformance.reference.contract.problem import ExactResult, Options, PerQuery, Result

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp

    GLOO = dist.is_available() and dist.is_gloo_available()
except ImportError:  # the tests that need it are skipped
    torch = dist = mp = None
    GLOO = False

__all__ = ["one_process_group", "requires_gloo", "run_ranks", "split"]

#: the distributed tests' mark: collected and skipped without torch.distributed (gloo), unless torch is
#: required here (``RC_REQUIRE=torch``), where they run and fail (:func:`_need_gloo`)
requires_gloo = pytest.mark.skipif(
    not GLOO and "torch" not in required_names(), reason="torch.distributed with gloo is not available ([torch] extra)"
)
#: seconds a collective may wait before the process group gives up
COLLECTIVE_TIMEOUT = 60


#: the classes a reply may hold, rebuilt by name from their fields (no other class is built)
_CLASSES = {cls.__name__: cls for cls in (Result, PerQuery, Options, ExactResult, Traffic)}


def _plain(value: Any) -> Any:
    """``value`` in what a payload holds: a dataclass of :data:`_CLASSES`, a frozenset, a
    Fraction, bytes and a tuple become tagged tuples (``("@tuple", [...])``, ...)."""
    if dataclasses.is_dataclass(value) and type(value).__name__ in _CLASSES:
        # the stored fields, read past Result's guard on the metrics not computed
        fields = {f.name: _plain(object.__getattribute__(value, f.name)) for f in dataclasses.fields(value)}
        return ("@class", type(value).__name__, fields)
    if isinstance(value, frozenset):
        return ("@frozenset", sorted(value))
    if isinstance(value, Fraction):
        return ("@fraction", str(value.numerator), str(value.denominator))
    if isinstance(value, bytes):
        return ("@bytes", np.frombuffer(value, dtype=np.uint8))
    if isinstance(value, tuple):
        return ("@tuple", [_plain(v) for v in value])
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {key: _plain(v) for key, v in value.items()}
    return value  # a scalar, None or an array: the payload says what it takes


def _rebuilt(value: Any) -> Any:
    """The value :func:`_plain` turned into ``value``."""
    if isinstance(value, list):
        return [_rebuilt(v) for v in value]
    if isinstance(value, dict):
        return {key: _rebuilt(v) for key, v in value.items()}
    if not isinstance(value, tuple):
        return value
    tag = value[0]
    if tag == "@class":
        if value[1] not in _CLASSES:
            raise ValueError(f"reply: class {value[1]!r} is not one a reply may hold")
        return _CLASSES[value[1]](**_rebuilt(value[2]))
    if tag == "@frozenset":
        return frozenset(value[1])
    if tag == "@fraction":
        return Fraction(int(value[1]), int(value[2]))
    if tag == "@bytes":
        return value[1].tobytes()
    if tag == "@tuple":
        return tuple(_rebuilt(v) for v in value[1])
    raise ValueError(f"reply: unknown tag {tag!r}")


def _write(path: str, value: Any) -> None:
    with open(path, "wb") as f:
        f.write(encode_payload(_plain(value)))


def _read(path: str) -> Any:
    with open(path, "rb") as f:
        return _rebuilt(decode_payload(f.read()))


def split(arrays: Dict[str, np.ndarray], sizes: List[int], rank: int) -> Dict[str, np.ndarray]:
    """Rank ``rank``'s rows of ``arrays`` when they are cut into consecutive parts of ``sizes``."""
    lo = sum(sizes[:rank])
    return {name: value[lo : lo + sizes[rank]] for name, value in arrays.items()}


def _need_gloo() -> None:
    if not GLOO:
        pytest.fail("torch.distributed with gloo is required here (RC_REQUIRE=torch) but not available")


@contextlib.contextmanager
def one_process_group():
    """A gloo process group of this process alone (world size 1), destroyed at the end."""
    _need_gloo()
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{free_port()}",
        rank=0,
        world_size=1,
        timeout=datetime.timedelta(seconds=COLLECTIVE_TIMEOUT),
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


def run_ranks(world: int, cases: List[Dict[str, Any]], deadline_s: float = 120.0) -> List[List[Any]]:
    """Each case run on ``world`` gloo processes; per rank, per case, ``("ok", Result, Traffic)``
    or ``("error", type name, message)``; then the probe of the collectives (:func:`_probe`).  A
    case's ``fail = (rank, "shard_statistics" or "shard_counts")`` makes that pass raise
    ``MemoryError`` on that rank; its ``per_rank`` (one dict per rank) gives a rank other
    ``options`` and changes its arrays (:func:`_changed`).  Fails (and kills the processes) past ``deadline_s``."""
    _need_gloo()
    with tempfile.TemporaryDirectory() as folder:
        _write(os.path.join(folder, "cases.payload"), cases)
        context = mp.start_processes(
            _worker, args=(world, free_port(), folder), nprocs=world, join=False, start_method="spawn"
        )
        stop = time.monotonic() + deadline_s
        while not context.join(timeout=max(0.1, stop - time.monotonic())):
            if time.monotonic() >= stop:
                for process in context.processes:
                    if process.is_alive():
                        process.kill()
                pytest.fail(f"the {world} processes did not finish within {deadline_s} s (a hung collective?)")
        return [_read(os.path.join(folder, f"rank{rank}.payload")) for rank in range(world)]


def _probe(rank: int):
    """The collectives on known payloads (rank r gathers 100 r + 50 bytes, then sums 10 int64):
    what came back, and the traffic counted."""
    from retrieval_conformance.implementations.distributed import ProcessGroup

    group = ProcessGroup()
    gathered = group.all_gather(bytes([rank]) * (100 * rank + 50))
    total = group.all_sum(np.full(10, rank + 1, np.int64))
    return gathered, total, group.traffic


def _changed(arrays: Dict[str, np.ndarray], mine: Dict[str, Any]) -> Dict[str, np.ndarray]:
    """A rank's arrays with its case's ``per_rank`` changes: ``astype`` (name -> dtype) and
    ``columns`` (name -> the first columns kept)."""
    out = dict(arrays)
    for name, dtype in mine.get("astype", {}).items():
        if name in out:
            out[name] = out[name].astype(dtype)
    for name, n in mine.get("columns", {}).items():
        if name in out:
            out[name] = out[name][:, :n]
    return out


def _worker(rank: int, world: int, port: int, folder: str) -> None:
    import retrieval_conformance as rc
    from retrieval_conformance.implementations.distributed import sharded

    join_group(rank, world, port, COLLECTIVE_TIMEOUT)
    cases = _read(os.path.join(folder, "cases.payload"))
    replies = []
    for case in cases:
        failing_rank, step = case.get("fail", (None, None))
        injected = (
            mock.patch.object(sharded, step, side_effect=MemoryError("injected"))
            if failing_rank == rank
            else contextlib.nullcontext()
        )
        try:
            with injected:
                mine = case.get("per_rank", [{}] * world)[rank]
                acc = rc.Accumulator(
                    **_changed(split(case["gallery"], case["gallery_sizes"], rank), mine),
                    **{**case["options"], **mine.get("options", {})},
                    distributed=True,
                )
                queries = _changed(split(case["queries"], case["query_sizes"], rank), mine)
                n = case["query_sizes"][rank]
                for lo, hi in ((0, n // 2), (n // 2, n)):  # two blocks (the first may be empty)
                    acc.update(**{name: value[lo:hi] for name, value in queries.items()})
                result = acc.compute()
            replies.append(("ok", result, acc.traffic))
        except Exception as exc:  # noqa: BLE001 (every error is compared with the one process's)
            replies.append(("error", type(exc).__name__, str(exc)))
    replies.append(_probe(rank))
    _write(os.path.join(folder, f"rank{rank}.payload"), replies)
    dist.destroy_process_group()
