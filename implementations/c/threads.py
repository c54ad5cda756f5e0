"""How many threads the C code runs on: the caller's count, ``RC_NUM_THREADS``, or the default rule.

The default rule (:func:`default_threads`), for a call of ``n_queries`` x ``n_gallery``:

1. one thread when the problem has fewer than :data:`SMALL_PROBLEM` (query, item) pairs: waking
   a thread team costs more than such a problem;
2. otherwise one thread per CPU this process may run on (:func:`usable_cpus`: its CPU affinity
   set, ``os.sched_getaffinity``, cut to the CPU quota of its cgroup where one is set, as in a
   container started with ``--cpus``), at most OpenMP's own count (``OMP_NUM_THREADS`` where
   set) and at most one per :data:`MIN_QUERIES_PER_THREAD` queries.

Threads never outnumber the CPUs the process may use, so no two of its threads take turns on
one core; the queries are handed out in small chunks as threads become free (the C loop's
dynamic schedule), so a thread slowed by another process on its core takes fewer of them and
costs only its share.  Every thread count gives the same bits.  A process forked from another
runs on one thread.
"""

from __future__ import annotations

import math
import os
from functools import lru_cache
from typing import Optional

from retrieval_conformance.implementations.c.library import _fork_safe, max_threads, thread_count

#: below this many (query, item) pairs the default is one thread
SMALL_PROBLEM = 1 << 18
#: the default gives each thread at least this many queries (a few chunks of the C loop's
#: dynamic schedule), so that the last chunks can go to whichever thread is free
MIN_QUERIES_PER_THREAD = 8
#: where the CPU quota of the process's cgroup is read: v2 ("quota period" or "max period"),
#: then v1 (quota in microseconds, -1 for none; and the period)
CGROUP_V2_MAX = "/sys/fs/cgroup/cpu.max"
CGROUP_V1_QUOTA = "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"
CGROUP_V1_PERIOD = "/sys/fs/cgroup/cpu/cpu.cfs_period_us"


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as f:
            return f.read().strip()
    except (OSError, ValueError):
        return None


@lru_cache(maxsize=1)
def cgroup_cpu_quota() -> Optional[int]:
    """CPUs the process's cgroup quota allows (rounded up), or None where no quota is set."""
    text = _read(CGROUP_V2_MAX)
    if text is not None:
        parts = text.split()
        if len(parts) == 2 and parts[0] != "max":
            try:
                quota, period = int(parts[0]), int(parts[1])
            except ValueError:
                return None
            return max(1, math.ceil(quota / period)) if quota > 0 and period > 0 else None
        return None
    quota_text, period_text = _read(CGROUP_V1_QUOTA), _read(CGROUP_V1_PERIOD)
    try:
        quota, period = int(quota_text or "-1"), int(period_text or "0")
    except ValueError:
        return None
    return max(1, math.ceil(quota / period)) if quota > 0 and period > 0 else None


def usable_cpus() -> int:
    """CPUs this process may run on: its affinity set, cut to its cgroup's CPU quota."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    cpus = len(getaffinity(0)) if getaffinity is not None else (os.cpu_count() or 1)
    quota = cgroup_cpu_quota()
    return max(1, min(cpus, quota) if quota is not None else cpus)


def default_threads(n_queries: int, n_gallery: int) -> int:
    """The default thread count for ``n_queries`` x ``n_gallery`` (the rule in the module docstring)."""
    if n_queries * n_gallery < SMALL_PROBLEM:
        return 1
    return max(1, min(usable_cpus(), max_threads(), n_queries // MIN_QUERIES_PER_THREAD))


def resolve_threads(num_threads: Optional[int], n_queries: int, n_gallery: int) -> int:
    """The thread count of one call: ``num_threads``, else ``RC_NUM_THREADS``, else
    :func:`default_threads`; one in a forked child.  Raises ``ValueError`` naming a count that
    is not a positive integer."""
    threads = thread_count(num_threads)
    if threads == 0:
        threads = default_threads(n_queries, n_gallery)
    return _fork_safe(threads)
