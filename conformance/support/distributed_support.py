"""What the distributed tests share: their skip mark, a run of ``world`` gloo processes that
evaluate a list of cases with ``Accumulator(distributed=True)``, and the worker they run.

The worker lives in an importable module (not in a test file) so that the spawned processes
import it by name.  Every process group gets a bounded timeout and the parent a deadline, so a
hung collective fails the test instead of hanging the run.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import pickle
import socket
import tempfile
import time
from typing import Any, Dict, List
from unittest import mock

import numpy as np
import pytest
from retrieval_conformance.conformance.support.requirements import required_names

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


def split(arrays: Dict[str, np.ndarray], sizes: List[int], rank: int) -> Dict[str, np.ndarray]:
    """Rank ``rank``'s rows of ``arrays`` when they are cut into consecutive parts of ``sizes``."""
    lo = sum(sizes[:rank])
    return {name: value[lo : lo + sizes[rank]] for name, value in arrays.items()}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _need_gloo() -> None:
    if not GLOO:
        pytest.fail("torch.distributed with gloo is required here (RC_REQUIRE=torch) but not available")


@contextlib.contextmanager
def one_process_group():
    """A gloo process group of this process alone (world size 1), destroyed at the end."""
    _need_gloo()
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{_free_port()}",
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
    ``MemoryError`` on that rank.  Fails (and kills the processes) past ``deadline_s``."""
    _need_gloo()
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "cases.pkl"), "wb") as f:
            pickle.dump(cases, f)
        context = mp.start_processes(
            _worker, args=(world, _free_port(), folder), nprocs=world, join=False, start_method="spawn"
        )
        stop = time.monotonic() + deadline_s
        while not context.join(timeout=max(0.1, stop - time.monotonic())):
            if time.monotonic() >= stop:
                for process in context.processes:
                    if process.is_alive():
                        process.kill()
                pytest.fail(f"the {world} processes did not finish within {deadline_s} s (a hung collective?)")
        out = []
        for rank in range(world):
            with open(os.path.join(folder, f"rank{rank}.pkl"), "rb") as f:
                out.append(pickle.load(f))
        return out


def _probe(rank: int):
    """The collectives on known payloads (rank r gathers 100 r + 50 bytes, then sums 10 int64):
    what came back, and the traffic counted."""
    from retrieval_conformance.implementations.distributed import ProcessGroup

    group = ProcessGroup()
    gathered = group.all_gather(bytes([rank]) * (100 * rank + 50))
    total = group.all_sum(np.full(10, rank + 1, np.int64))
    return gathered, total, group.traffic


def _worker(rank: int, world: int, port: int, folder: str) -> None:
    import retrieval_conformance as rc
    from retrieval_conformance.implementations.distributed import sharded

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=COLLECTIVE_TIMEOUT),
    )
    with open(os.path.join(folder, "cases.pkl"), "rb") as f:
        cases = pickle.load(f)
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
                acc = rc.Accumulator(
                    **split(case["gallery"], case["gallery_sizes"], rank), **case["options"], distributed=True
                )
                queries = split(case["queries"], case["query_sizes"], rank)
                n = case["query_sizes"][rank]
                for lo, hi in ((0, n // 2), (n // 2, n)):  # two blocks (the first may be empty)
                    acc.update(**{name: value[lo:hi] for name, value in queries.items()})
                result = acc.compute()
            replies.append(("ok", result, acc.traffic))
        except Exception as exc:  # noqa: BLE001 (every error is compared with the one process's)
            replies.append(("error", type(exc).__name__, str(exc)))
    replies.append(_probe(rank))
    with open(os.path.join(folder, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(replies, f)
    dist.destroy_process_group()
