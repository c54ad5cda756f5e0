"""Benchmark of ``Accumulator(distributed=True)``: bytes moved and time, against gathering every
embedding on every rank (what an evaluation that needs the whole gallery in one process does).

Run ``python -m retrieval_conformance.conformance.bench.distributed --world 2 --queries 3368
--gallery 15913 --dim 64`` (Market-1501's query and gallery counts; the embedding width is the
caller's choice, since the exact dot products cost ``Q N d``).  Each of ``world`` gloo processes
on this machine holds ``Q / world`` queries and ``N / world`` gallery items (float32 embeddings,
ids from ``--ids`` identities, two cameras, protocol ``reid``) and measures, after a barrier:

* **sharded**: ``Accumulator(distributed=True)`` (update with its queries, compute), the bytes
  it reports (``traffic``);
* **gather-all**: ``all_gather`` of every rank's queries, gallery embeddings, ids and cameras,
  then one local ``evaluate`` of its own queries against the whole gallery (the C implementation
  when it loads), and the mean over ranks gathered (its bytes counted under the same model:
  padded payloads times the other ranks).

Both results are checked to agree (mAP, bit for bit), and rank 0 prints one JSON line per
method: seconds (the slowest rank), bytes sent and received per rank (rank 0's); then the
largest rank's peak resident memory after the sharded run and after the gather-all run (a
high-water mark: the second includes the first).
"""
from __future__ import annotations

import argparse
import datetime
import json
import resource
import socket
import time
from dataclasses import fields

import numpy as np


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _data(args, rank: int):
    """This rank's queries and gallery shard (the same global arrays whatever the world size)."""
    rng = np.random.default_rng(args.seed)
    n_q, n_g = args.queries, args.gallery
    ids = rng.integers(0, args.ids, n_q + n_g)
    centres = rng.standard_normal((args.ids, args.dim)).astype(np.float32)
    emb = centres[ids] + args.noise * rng.standard_normal((n_q + n_g, args.dim)).astype(np.float32)
    cams = rng.integers(0, 2, n_q + n_g)
    q_bounds = np.linspace(0, n_q, args.world + 1).astype(int)
    g_bounds = n_q + np.linspace(0, n_g, args.world + 1).astype(int)
    qs, gs = slice(q_bounds[rank], q_bounds[rank + 1]), slice(g_bounds[rank], g_bounds[rank + 1])
    return (dict(query_embeddings=emb[qs], query_labels=ids[qs], query_cams=cams[qs]),
            dict(db_embeddings=emb[gs], db_labels=ids[gs], db_cams=cams[gs]))


def _gather_all(group, queries, gallery, rc, options):
    """Every rank's gallery gathered here, this rank's queries evaluated against it, the
    per-query values gathered and averaged (the baseline)."""
    from retrieval_conformance.reference.contract.aggregation import aggregate
    from retrieval_conformance.reference.contract.problem import PerQuery

    shards = group.all_gather_objects(gallery)
    whole = {name: np.concatenate([s[name] for s in shards]) for name in gallery}
    mine = rc.evaluate(**queries, **whole, protocol="reid", empty="zero").per_query
    arrays = {f.name: getattr(mine, f.name) for f in fields(mine) if isinstance(getattr(mine, f.name), np.ndarray)}
    parts = [PerQuery(**part) for part in group.all_gather_objects(arrays)]  # arrays travel, not objects
    return aggregate(PerQuery.concat(parts), options, "reid", "c", n_gallery=whole["db_labels"].shape[0])


def _worker(rank: int, args, port: int, queue) -> None:
    import retrieval_conformance as rc
    import torch
    import torch.distributed as dist
    from retrieval_conformance.implementations.distributed import ProcessGroup

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.world,
                            timeout=datetime.timedelta(seconds=600))
    queries, gallery = _data(args, rank)
    out = {}
    dist.barrier()
    start = time.perf_counter()
    acc = rc.Accumulator(**gallery, protocol="reid", distributed=True)
    acc.update(**queries)
    sharded = acc.compute()
    out["sharded"] = (time.perf_counter() - start, acc.traffic.bytes_sent, acc.traffic.bytes_received)
    peak_sharded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    dist.barrier()
    group = ProcessGroup()
    start = time.perf_counter()
    gathered = _gather_all(group, queries, gallery, rc, acc.options)
    out["gather-all"] = (time.perf_counter() - start, group.traffic.bytes_sent, group.traffic.bytes_received)
    out["same_map"] = sharded.map == gathered.map
    out["map"] = sharded.map
    out["peak_after_sharded"] = peak_sharded
    out["peak_after_gather"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    queue.put((rank, out))
    dist.barrier()
    dist.destroy_process_group()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m retrieval_conformance.conformance.bench.distributed",
                                description=__doc__.splitlines()[0])
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--queries", type=int, default=3368)
    p.add_argument("--gallery", type=int, default=15913)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--ids", type=int, default=751)
    p.add_argument("--noise", type=float, default=1.0, help="spread of an identity's embeddings (its centre: 1)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    import torch.multiprocessing as mp

    queue = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(_worker, args=(args, _free_port(), queue), nprocs=args.world, start_method="spawn")
    replies = dict(queue.get() for _ in range(args.world))
    for method in ("sharded", "gather-all"):
        print(json.dumps({
            "method": method, "world": args.world, "queries": args.queries, "gallery": args.gallery, "dim": args.dim,
            "seconds": round(max(r[method][0] for r in replies.values()), 3),
            "bytes_sent_rank0": replies[0][method][1], "bytes_received_rank0": replies[0][method][2],
            "map": replies[0]["map"], "same_map": all(r["same_map"] for r in replies.values()),
        }))
    print(json.dumps({"peak_rss_after_sharded": max(r["peak_after_sharded"] for r in replies.values()),
                      "peak_rss_after_gather_all": max(r["peak_after_gather"] for r in replies.values())}))


if __name__ == "__main__":
    main()
