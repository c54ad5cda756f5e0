"""Process groups of gloo ranks on this machine, for the tests, the fuzz campaign and the benchmarks.

Each rank is a process of its own; they meet at a TCP port of 127.0.0.1 that :func:`free_port`
found free, and every collective has a bounded ``timeout``, so a rank that never arrives ends
the others with an error instead of a hang.
"""

from __future__ import annotations

import datetime
import socket


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def join_group(rank: int, world: int, port: int, timeout: float) -> None:
    """Join the gloo process group of ``world`` ranks at ``port``, on one torch thread (the ranks
    share the machine's cores)."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=timeout),
    )
