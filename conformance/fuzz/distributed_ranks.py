"""The fuzz campaign for ``Accumulator(distributed=True)``: many cases on one gloo process group.

``world`` processes (2 or 3) join one process group on loopback, once; each draws every case
from ``(seed, index)`` (:func:`draw_case`: the same case on every rank), takes its rank's part,
runs the accumulator and writes one JSON line per case: ``["ok", digest, map]`` (the digest of
the per-query arrays' dtypes, shapes and bytes) or ``["error", type, message]``.  Reusing the
group is what makes 10,000 cases feasible: a case costs a few collectives, not a process start.

A case is tie-heavy data (embeddings of few distinct values in float32 or float64, or ±1 codes)
cut into uneven shards and query slices (empty ones included), under a drawn protocol, tie
policy and cut-off, with at most one change (:data:`CHANGES`): one rank given another value of
an option, one rank's arrays of other columns, one rank's shard or queries in another dtype, a
NaN in one rank's shard, or a rank whose pass 1 or pass 2 raises ``MemoryError``.

What is right (:func:`classify_case`, in the parent): every rank ends the same way; an option or
a width that differs is one ``ValueError`` naming it on every rank; a rank that raises makes every
rank raise; otherwise every rank has, bit for bit, ``rc.evaluate``'s result on the concatenation
of the non-empty parts (or its error type).  A rank that dies, or no progress within the time
limit, ends the campaign with a ``crash`` or ``hang`` finding at the case where it happened.

Run with ``python -m retrieval_conformance.conformance.fuzz --target distributed --cases N
--workers 2``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
from retrieval_conformance.conformance.crosscheck import ARRAY_FIELDS
from retrieval_conformance.conformance.loopback import free_port, join_group
from retrieval_conformance.conformance.problems.choices import RandomChoices, case_rng

from .classify import Outcome, names_an_argument

__all__ = ["CHANGES", "classify_case", "distributed_main", "draw_case", "run_distributed_campaign"]

#: the errors of a bad input, as one process raises them
_NAMED_TYPES = ("ValueError", "TypeError", "NonFiniteError")
CHANGES = ("plain", "plain", "plain", "option", "width", "dtype", "nan", "raise")
#: one rank's other value of an option (the others keep the case's)
_OTHER = {
    "k": (3, 4),
    "ties": ("optimistic", "grouped"),
    "metric": ("cosine",),
    "protocol": ("pml",),
    "empty": ("error",),
    "max_rank": (7,),
    "recall": ("hit",),
    "metrics": (["map"],),
}


def draw_case(d, world: int) -> Dict[str, Any]:
    """The case every rank builds alike: whole arrays, the rank sizes, options and the change."""
    n_q, n_g, dim = d.integer(0, 7), d.integer(1, 12), d.integer(1, 3)
    q_sizes, g_sizes = _cuts(d, n_q, world), _cuts(d, n_g, world)
    rng = d.arrays()
    codes = d.chance(0.2)
    if codes:
        queries = {"query_codes": rng.choice([-1, 1], (n_q, dim + 3))}
        gallery = {"db_codes": rng.choice([-1, 1], (n_g, dim + 3))}
    else:
        dtype = d.choice(("float32", "float64"))
        queries = {"query_embeddings": rng.integers(1, 4, (n_q, dim)).astype(dtype)}
        gallery = {"db_embeddings": rng.integers(1, 4, (n_g, dim)).astype(dtype)}
    queries["query_labels"], gallery["db_labels"] = rng.integers(0, 3, n_q), rng.integers(0, 3, n_g)
    options: Dict[str, Any] = {"protocol": "hashing", "ties": d.choice(("stable", "reverse", "expected", "grouped"))}
    if d.boolean():
        options["k"] = d.integer(1, 5)
    change = d.choice(CHANGES)
    per_rank: List[Dict[str, Any]] = [{} for _ in range(world)]
    rank = d.integer(0, world - 1)
    side = d.choice(("query_embeddings", "db_embeddings"))
    widest = max(range(world), key=lambda r: (q_sizes if side == "query_embeddings" else g_sizes)[r])
    if change == "option":
        name = d.choice(sorted(_OTHER))
        value = d.choice(_OTHER[name])
        per_rank[rank] = {"options": {name: value}} if value != options.get(name) else {}
        change = f"option-{name}" if per_rank[rank] else "plain"
    elif change == "width" and not codes and (q_sizes + g_sizes)[widest + (world if side == "db_embeddings" else 0)]:
        per_rank[widest] = {"extra_columns": side}  # a rank with rows of it: one that states its columns
    elif change == "dtype" and not codes:
        per_rank[rank] = {"astype": {side: d.choice(("float32", "float64", "int32"))}}
    elif change == "nan" and not codes and g_sizes[rank]:
        per_rank[rank] = {"nan": True}
    elif change == "raise" and g_sizes[rank] and n_q:  # a rank with a shard runs both passes
        per_rank[rank] = {"raise": d.choice(("shard_statistics", "shard_counts"))}
    else:
        change = "plain"
    return {
        "queries": queries,
        "gallery": gallery,
        "q_sizes": q_sizes,
        "g_sizes": g_sizes,
        "options": options,
        "per_rank": per_rank,
        "change": change,
    }


def _cuts(d, n: int, world: int) -> List[int]:
    """``n`` rows cut into ``world`` consecutive parts, some of them empty."""
    marks = sorted(d.integer(0, n) for _ in range(world - 1))
    return [b - a for a, b in zip([0] + marks, marks + [n])]


def rank_arrays(case: Dict[str, Any], rank: int) -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]:
    """Rank ``rank``'s queries and gallery shard, with its change applied."""
    parts = []
    for side, sizes in (("queries", case["q_sizes"]), ("gallery", case["g_sizes"])):
        lo = sum(sizes[:rank])
        parts.append({name: value[lo : lo + sizes[rank]] for name, value in case[side].items()})
    mine = case["per_rank"][rank]
    for part in parts:
        for name, dtype in mine.get("astype", {}).items():
            if name in part:
                part[name] = part[name].astype(dtype)
        name = mine.get("extra_columns")
        if name in part:
            part[name] = np.concatenate([part[name], np.ones((part[name].shape[0], 1), part[name].dtype)], axis=1)
    if mine.get("nan"):
        shard = parts[1]["db_embeddings"].copy()
        shard[0, 0] = np.nan
        parts[1]["db_embeddings"] = shard
    return parts[0], parts[1]


def digest(result) -> str:
    """The per-query arrays' dtypes, shapes and bytes, and the map's bits, as one hash."""
    h = hashlib.sha256(np.float64(result.map).tobytes())
    for name in ARRAY_FIELDS:
        value = getattr(result.per_query, name)
        if value is not None:
            value = np.ascontiguousarray(value)
            h.update(f"{name}:{value.dtype.str}:{value.shape}".encode() + value.tobytes())
    return h.hexdigest()


def run_case(rc, case: Dict[str, Any], rank: int) -> List[Any]:
    """What this rank's accumulator does with the case, as a JSON-able record."""
    from unittest import mock

    from retrieval_conformance.implementations.distributed import sharded

    queries, gallery = rank_arrays(case, rank)
    mine = case["per_rank"][rank]
    failing = mine.get("raise")
    injected = (
        mock.patch.object(sharded, failing, side_effect=MemoryError("injected"))
        if failing
        else contextlib.nullcontext()
    )
    try:
        with injected:
            acc = rc.Accumulator(**gallery, **{**case["options"], **mine.get("options", {})}, distributed=True)
            n = next(iter(queries.values())).shape[0]
            for lo, hi in ((0, n // 2), (n // 2, n)):
                acc.update(**{name: value[lo:hi] for name, value in queries.items()})
            result = acc.compute()
        return ["ok", digest(result), float(result.map).hex()]
    except Exception as exc:  # noqa: BLE001 (every outcome is compared in the parent)
        return ["error", type(exc).__name__, str(exc)]


def one_process(rc, case: Dict[str, Any], world: int) -> List[Any]:
    """``rc.evaluate`` on the concatenation of the ranks' non-empty parts (their changes applied)."""
    parts = [rank_arrays(case, r) for r in range(world)]
    joined: Dict[str, np.ndarray] = {}
    for side in (0, 1):
        for name in parts[0][side]:
            given = [p[side][name] for p in parts if p[side][name].shape[0]]
            joined[name] = np.concatenate(given) if given else parts[0][side][name]
    try:
        return ["ok", digest(rc.evaluate(**joined, **case["options"])), ""]
    except (ValueError, TypeError) as exc:
        return ["error", type(exc).__name__, str(exc)]


def classify_case(case: Dict[str, Any], got: List[List[Any]], want: Optional[List[Any]]) -> Outcome:
    """The outcome of one case from every rank's record (``want``: :func:`one_process`'s)."""
    world, change = len(got), case["change"]
    if change == "raise":
        if any(g[0] == "ok" for g in got):
            return Outcome("inconsistent", f"a rank raised, yet ranks returned: {[g[:2] for g in got]}")
        return Outcome("named_error")
    if any(g != got[0] for g in got[1:]):
        return Outcome("inconsistent", f"the ranks differ: {[g[:3] for g in got]}")
    mine = got[0]
    if mine[0] == "error" and not (mine[1] in _NAMED_TYPES and names_an_argument(mine[2])):
        if mine[1] != "ValueError" or not mine[2].startswith("Accumulator.compute: no queries"):
            return Outcome("unnamed_error", f"{change}: {mine[:3]}")
    if change.startswith("option-"):
        # the handshake comes first: the option is named, whatever else is wrong
        if mine[0] == "error" and mine[1] == "ValueError" and mine[2].startswith(f"{change[7:]}: the {world} ranks"):
            return Outcome("named_error")
        return Outcome("accepted_invalid" if mine[0] == "ok" else "unnamed_error", f"{change}: {mine[:3]}")
    if change == "width":  # named by the handshake, or by a rank whose queries and shard differ
        return Outcome("named_error") if mine[0] == "error" else Outcome("accepted_invalid", f"width: {mine[:3]}")
    assert want is not None
    if mine[0] == "error" and want[0] == "error":
        # the same kind of error (a rank's shard is checked in another order than one process's)
        return Outcome("named_error")
    if mine[0] != want[0] or mine[1] != want[1]:
        kind = "wrong_number" if mine[0] == want[0] == "ok" else "inconsistent"
        return Outcome(kind, f"{change}: ranks {mine[:3]}, one process {want[:3]}")
    return Outcome("value" if mine[0] == "ok" else "named_error")


# --------------------------------------------------------------------------- the campaign
def _worker(rank: int, world: int, port: int, folder: str, seed: int, start: int, cases: int) -> None:
    import warnings

    import retrieval_conformance as rc
    import torch.distributed as dist

    warnings.simplefilter("ignore")  # NoQueryCountedWarning and the like: the outcomes are compared
    join_group(rank, world, port, COLLECTIVE_TIMEOUT)
    with open(os.path.join(folder, f"rank{rank}.jsonl"), "w") as out:
        for index in range(start, start + cases):
            case = draw_case(RandomChoices(case_rng(seed, index)), world)
            out.write(json.dumps(run_case(rc, case, rank)) + "\n")
            out.flush()
    dist.destroy_process_group()


#: seconds a collective waits before gloo gives up (a case that desynchronises the ranks ends there)
COLLECTIVE_TIMEOUT = 30
#: seconds the spawned ranks may take to import torch and join the group (slow on a loaded machine)
STARTUP_SECONDS = 600


def _lines(folder: str, world: int) -> List[List[List[Any]]]:
    out = []
    for rank in range(world):
        path = os.path.join(folder, f"rank{rank}.jsonl")
        with open(path) if os.path.exists(path) else contextlib.nullcontext([]) as f:
            out.append([json.loads(line) for line in f if line.endswith("\n")])
    return out


def run_distributed_campaign(
    seed: int = 0, cases: int = 200, start: int = 0, world: int = 2, timeout: float = 60.0, progress=None
):
    """Cases ``start .. start + cases - 1`` of ``seed`` on ``world`` gloo ranks of one process
    group; a :class:`~.files.FileReport` (``timeout``: seconds without a case done that count as
    a hang)."""
    import retrieval_conformance as rc
    import torch.multiprocessing as mp

    from .files import FileReport

    report, t0 = FileReport(seed), time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        context = mp.start_processes(
            _worker,
            args=(world, free_port(), folder, seed, start, cases),
            nprocs=world,
            join=False,
            start_method="spawn",
        )
        done, last, stopped, started = 0, time.monotonic(), "", False
        while True:
            try:
                if context.join(timeout=1.0):
                    break
            except Exception as exc:  # noqa: BLE001 (a rank died: a crash at the case it was on)
                stopped = f"crash: {type(exc).__name__}: {str(exc)[:200]}"
                break
            joined = all(os.path.exists(os.path.join(folder, f"rank{r}.jsonl")) for r in range(world))
            now = min(len(lines) for lines in _lines(folder, world))
            if now > done:
                done, last = now, time.monotonic()
                if progress is not None:
                    progress(done, cases)
            elif not joined and time.monotonic() - last > STARTUP_SECONDS:
                stopped = f"hang: the {world} ranks did not join the process group within {STARTUP_SECONDS} s"
                break
            elif joined and time.monotonic() - last > timeout:
                stopped = f"hang: no case done within {timeout:g} s"
                break
            if joined and not done and not started:  # the time limit counts from the group's start
                started, last = True, time.monotonic()
        for process in context.processes:
            if process.is_alive():
                process.kill()
        records = _lines(folder, world)
    for offset in range(cases):
        index = start + offset
        case = draw_case(RandomChoices(case_rng(seed, index)), world)
        if any(len(lines) <= offset for lines in records):
            kind, _, detail = (stopped or "crash: a rank stopped without a record").partition(": ")
            report.findings.append((index, case["change"], kind, detail))
            report.counts[kind] += 1
            report.cases += 1
            break
        got = [lines[offset] for lines in records]
        want = (
            None
            if case["change"] == "raise" or case["change"].startswith("option-") or case["change"] == "width"
            else one_process(rc, case, world)
        )
        outcome = classify_case(case, got, want)
        report.cases += 1
        report.counts[outcome.kind] += 1
        report.kinds[case["change"]] += 1
        if not outcome.clean:
            report.findings.append((index, case["change"], outcome.kind, outcome.detail))
    report.seconds = time.monotonic() - t0
    return report


def distributed_main(args) -> int:
    """``--target distributed``: the campaign on ``--workers`` ranks (2 by default)."""
    for flag, value in (("--implementations", args.implementations), ("--case", args.case), ("--json", args.json)):
        if value is not None:
            print(f"error: {flag}: not used with --target distributed; drop it", file=sys.stderr)
            return 2
    world = args.workers if args.workers is not None else 2
    cases = args.cases if args.cases is not None else (10_000 if args.profile == "long" else 200)
    if world < 2 or cases < 1:
        print(
            f"error: --workers, --cases: expected 2 or more ranks and 1 or more cases, got {world} and {cases}",
            file=sys.stderr,
        )
        return 2

    def progress(done: int, total: int) -> None:
        if not args.quiet and done % 100 == 0:
            sys.stderr.write(f"\rcases {done}/{total}   ")
            sys.stderr.flush()

    report = run_distributed_campaign(args.seed, cases, args.start, world, args.timeout or 60.0, progress)
    if not args.quiet:
        sys.stderr.write("\n")
    print(f"distributed fuzz campaign, seed {args.seed}, {world} ranks: {report.cases} cases in {report.seconds:.1f} s")
    for kind, count in sorted(report.counts.items(), key=lambda kv: -kv[1]):
        print(f"  {kind:<17} {count}")
    print("  changes: " + ", ".join(f"{k} {n}" for k, n in sorted(report.kinds.items())))
    if not report.findings and report.cases == cases:
        print("PASSED: 0 wrong numbers, 0 unnamed errors, 0 crashes, 0 hangs")
        return 0
    print(f"FAILED: {len(report.findings)} finding(s)")
    for index, kind, outcome, detail in report.findings[:50]:
        print(f"  case {index} [{kind}] {outcome}: {detail[:300]}")
    return 1
