"""Benchmark of ``Accumulator(distributed=True)``: bytes moved and time, against gathering every
embedding on every rank (what an evaluation that needs the whole gallery in one process does).

Run ``python -m retrieval_conformance.conformance.bench.distributed --world 2 --queries 3368
--gallery 15913 --dim 64`` (Market-1501's query and gallery counts; the embedding width is the
caller's choice, since the exact dot products cost ``Q N d``).  Each of ``world`` gloo processes
on this machine holds ``Q / world`` queries and ``N / world`` gallery items (float32 embeddings,
ids from ``--ids`` identities, two cameras, protocol ``reid``), runs both methods once on a few
rows (untimed: the first calls' costs fall on neither method) and measures, after a barrier:

* **sharded**: ``Accumulator(distributed=True)`` (update with its queries, compute), the bytes
  it reports (``traffic``);
* **gather-all**: ``all_gather`` of every rank's queries, gallery embeddings, ids and cameras,
  then one local ``evaluate`` of its own queries against the whole gallery (the C implementation
  when it loads), and the mean over ranks gathered (its bytes counted under the same model:
  padded payloads times the other ranks).

``--rounds`` times both (default 2), the order alternating from round to round (the method that
runs second finds its large arrays' memory already mapped by the process), and reports each
method's best round.

Both results are checked to agree (mAP, bit for bit), and rank 0 prints one JSON line per
method: seconds (the slowest rank of the best round), bytes sent and received per rank (rank 0's); then the
largest rank's peak resident memory before its data, after the first sharded run and after the first
gather-all run (a high-water mark: each includes the ones before).  A rank draws only its own
rows of the embeddings (seeded block by block), so its memory is its shard's.  :func:`figures`
gives the same for the feature page (:mod:`.features`).
"""

from __future__ import annotations

import argparse
import json
import resource
import time
import warnings
from dataclasses import fields
from typing import Any, Dict, List

import numpy as np
from retrieval_conformance.conformance.loopback import free_port, join_group

#: items whose noise one generator draws: a rank draws only the blocks its rows fall in
_BLOCK = 1 << 16


def _embeddings(args, centres: np.ndarray, ids: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Rows ``lo:hi`` of the global embeddings (identity centre + noise), drawn block by block from
    seeds of their own, so every rank sees the same rows and holds only its own."""
    blocks = []
    for b in range(lo // _BLOCK, -(-hi // _BLOCK)):
        rng = np.random.default_rng([args.seed, 1, b])
        noise = rng.standard_normal((_BLOCK, args.dim), dtype=np.float32)
        a, z = max(lo, b * _BLOCK), min(hi, (b + 1) * _BLOCK)
        blocks.append(noise[a - b * _BLOCK : z - b * _BLOCK])
    noise = np.concatenate(blocks) if blocks else np.zeros((0, args.dim), np.float32)
    return centres[ids[lo:hi]] + np.float32(args.noise) * noise


def _data(args, rank: int):
    """This rank's queries and gallery shard (the same global arrays whatever the world size)."""
    rng = np.random.default_rng(args.seed)
    n_q, n_g = args.queries, args.gallery
    ids = rng.integers(0, args.ids, n_q + n_g)
    centres = rng.standard_normal((args.ids, args.dim)).astype(np.float32)
    cams = rng.integers(0, 2, n_q + n_g)
    q_bounds = np.linspace(0, n_q, args.world + 1).astype(int)
    g_bounds = n_q + np.linspace(0, n_g, args.world + 1).astype(int)
    (q0, q1), (g0, g1) = q_bounds[rank : rank + 2], g_bounds[rank : rank + 2]
    return (
        dict(query_embeddings=_embeddings(args, centres, ids, q0, q1), query_labels=ids[q0:q1], query_cams=cams[q0:q1]),
        dict(db_embeddings=_embeddings(args, centres, ids, g0, g1), db_labels=ids[g0:g1], db_cams=cams[g0:g1]),
    )


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


def _warm_up(rc, queries, gallery) -> None:
    """Both methods once on a few rows, untimed, so that the first calls' costs (imports, the C
    library's load, the BLAS start) fall on neither method's time."""
    few_queries = {name: value[:2] for name, value in queries.items()}
    few_items = {name: value[:50] for name, value in gallery.items()}
    with warnings.catch_warnings():  # a few rows may hold no relevant item: their NaN means are not read
        warnings.simplefilter("ignore")
        acc = rc.Accumulator(**few_items, protocol="reid", distributed=True)
        acc.update(**few_queries)
        acc.compute()
        if len(few_queries["query_labels"]) and len(few_items["db_labels"]):
            rc.evaluate(**few_queries, **few_items, protocol="reid")


def _worker(rank: int, args, port: int, queue) -> None:
    import retrieval_conformance as rc
    import torch.distributed as dist
    from retrieval_conformance.implementations.distributed import ProcessGroup

    join_group(rank, args.world, port, 600)
    out = {"peak_at_start": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    queries, gallery = _data(args, rank)
    _warm_up(rc, queries, gallery)
    maps = []
    for round_ in range(args.rounds):
        # the first round in the documented order (its peaks are read after each method); then
        # the order alternates, as whichever method runs second finds the memory already mapped
        for method in ("sharded", "gather-all") if round_ % 2 == 0 else ("gather-all", "sharded"):
            dist.barrier()
            start = time.perf_counter()
            if method == "sharded":
                acc = rc.Accumulator(**gallery, protocol="reid", distributed=True)
                acc.update(**queries)
                result, traffic = acc.compute(), acc.traffic
            else:
                group = ProcessGroup()
                result, traffic = _gather_all(group, queries, gallery, rc, acc.options), group.traffic
            seconds = time.perf_counter() - start
            out.setdefault(method, []).append((seconds, traffic.bytes_sent, traffic.bytes_received))
            maps.append(result.map)
            if round_ == 0:
                out[f"peak_after_{method}"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["same_map"] = all(m == maps[0] for m in maps)
    out["map"] = maps[0]
    queue.put((rank, out))
    dist.barrier()
    dist.destroy_process_group()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m retrieval_conformance.conformance.bench.distributed",
        description=(__doc__ or "").splitlines()[0],
    )
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--queries", type=int, default=3368)
    p.add_argument("--gallery", type=int, default=15913)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--ids", type=int, default=751)
    p.add_argument("--noise", type=float, default=1.0, help="spread of an identity's embeddings (its centre: 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="timed rounds, the order of the methods alternating; the best round is reported",
    )
    return p


def measure(args) -> List[Dict[str, Any]]:
    """One JSON-able row per method (sharded, gather-all), then the peak memory row (see the
    module docstring)."""
    import torch.multiprocessing as mp

    queue = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(_worker, args=(args, free_port(), queue), nprocs=args.world, start_method="spawn")
    replies = dict(queue.get() for _ in range(args.world))
    rows: List[Dict[str, Any]] = []
    for method in ("sharded", "gather-all"):
        rows.append(
            {
                "method": method,
                "world": args.world,
                "queries": args.queries,
                "gallery": args.gallery,
                "dim": args.dim,
                # per round the slowest rank; the best round
                "seconds": round(min(max(r[method][i][0] for r in replies.values()) for i in range(args.rounds)), 3),
                "rounds": args.rounds,
                "bytes_sent_rank0": replies[0][method][0][1],
                "bytes_received_rank0": replies[0][method][0][2],
                "map": replies[0]["map"],
                "same_map": all(r["same_map"] for r in replies.values()),
            }
        )
    rows.append(
        {
            "peak_rss_at_start": max(r["peak_at_start"] for r in replies.values()),
            "peak_rss_after_sharded": max(r["peak_after_sharded"] for r in replies.values()),
            "peak_rss_after_gather_all": max(r["peak_after_gather-all"] for r in replies.values()),
        }
    )
    return rows


#: the feature page's configurations per scale: (label, command-line arguments)
CONFIGURATIONS = {
    "full": (
        ("Market-1501 (3,368 x 15,913, d = 64)", []),
        ("1M-item gallery (200 queries, d = 64)", ["--queries", "200", "--gallery", "1000000"]),
    ),
    "smoke": (
        ("small (100 x 2,000, d = 16)", ["--queries", "100", "--gallery", "2000", "--dim", "16", "--ids", "50"]),
    ),
}


def figures(scale: str = "full") -> Dict[str, Dict[str, Any]]:
    """The figures of the feature page (:mod:`.features`): per configuration of :data:`CONFIGURATIONS`,
    the sharded accumulator's time, bytes and peak memory against gathering every embedding (two gloo
    ranks).  Raises ``RuntimeError`` when the two methods' mAP differ: a time is not shown for a
    wrong number."""
    out: Dict[str, Dict[str, Any]] = {}
    for label, argv in CONFIGURATIONS[scale]:
        sharded, gathered, peaks = measure(_parser().parse_args(argv))
        if not (sharded["same_map"] and gathered["same_map"]):
            raise RuntimeError(
                f"{label}: the sharded accumulator's mAP {sharded['map']!r} differs from the "
                f"gather-all evaluation's on some rank"
            )
        note = f"{sharded['world']} gloo ranks; the same mAP ({sharded['map']:.6f}) from both methods"
        out[f"{label}: time, sharded"] = {
            "value": sharded["seconds"],
            "unit": "s",
            "note": note + f"; the slowest rank, best of {sharded['rounds']} rounds (the order alternating)",
            "baseline": {"name": "gather-all", "value": gathered["seconds"], "unit": "s"},
        }
        out[f"{label}: bytes sent per rank, sharded"] = {
            "value": sharded["bytes_sent_rank0"] / 1e6,
            "unit": "MB",
            "note": "rank 0; as many received",
            "baseline": {"name": "gather-all", "value": gathered["bytes_sent_rank0"] / 1e6, "unit": "MB"},
        }
        start = peaks["peak_rss_at_start"]
        out[f"{label}: peak extra resident memory, sharded"] = {
            "value": (peaks["peak_rss_after_sharded"] - start) / 2**20,
            "unit": "MiB",
            "note": "the largest rank, its data included, above its peak before the data; the gather-all "
            "peak is the high-water mark after both runs",
            "baseline": {
                "name": "gather-all",
                "value": (peaks["peak_rss_after_gather_all"] - start) / 2**20,
                "unit": "MiB",
            },
        }
    return out


def main(argv=None) -> None:
    for row in measure(_parser().parse_args(argv)):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
