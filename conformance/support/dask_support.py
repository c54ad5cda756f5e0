"""What the dask tests share: their skip mark, the local yardstick, a two-process cluster and a
worker that dies in the middle of an evaluation.

The plugin lives in an importable module (not in a test file), so that the workers unpickle it
by reference; without ``distributed`` it is a plain class the tests never use (they skip).
"""

from __future__ import annotations

import contextlib
import logging
import os

import pytest
from retrieval_conformance.reference.contract import registry

try:
    import distributed
except ImportError:  # the tests that need it are skipped
    distributed = None

__all__ = ["LOCAL", "KillOnce", "a_worker_killed", "local_cluster", "requires_distributed"]

#: the dask tests' mark: collected and skipped without distributed (not a module-level skip: the
#: harness's pytest route counts items)
requires_distributed = pytest.mark.skipif(
    distributed is None, reason="dask.distributed is not installed ([dask] extra)"
)

#: what the workers compute with, and what the dask results must equal bit for bit
LOCAL = "c" if registry.unavailable_reason("c") is None else "numpy"


@contextlib.contextmanager
def local_cluster():
    """(LocalCluster, Client): two worker processes of one thread each, closed at the end."""
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.CRITICAL
        ) as local,
        distributed.Client(local) as client,
    ):
        yield local, client


class KillOnce(distributed.WorkerPlugin if distributed is not None else object):
    """Ends the worker process that starts the first task whose key begins with ``prefix`` (the
    one that removes the flag file, so exactly one worker dies)."""

    def __init__(self, prefix: str, flag: str):
        self.prefix = prefix
        self.flag = flag
        self.name = f"rc-kill-once-{prefix}"

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and str(key).startswith(self.prefix):
            try:
                os.remove(self.flag)
            except FileNotFoundError:
                return
            os._exit(1)


@contextlib.contextmanager
def a_worker_killed(local, client, prefix: str, folder, allowed_failures: int):
    """Within the block, the worker that starts the first task keyed ``prefix...`` dies, and the
    scheduler allows ``allowed_failures`` failures per task; afterwards a worker did die, and the
    cluster is as before (its failure allowance, its plugins, two workers)."""
    flag = folder / "kill"
    flag.touch()
    before = local.scheduler.allowed_failures
    local.scheduler.allowed_failures = allowed_failures
    plugin = KillOnce(prefix, str(flag))
    register = getattr(client, "register_plugin", None) or client.register_worker_plugin
    register(plugin)
    try:
        yield
        assert not flag.exists(), "no worker died"
    finally:
        local.scheduler.allowed_failures = before
        client.unregister_worker_plugin(plugin.name)
        client.wait_for_workers(2, timeout=120)
