"""Accumulator(distributed=True) on 2 and 3 gloo processes: every rank gets, bit for bit, what one
process computes with the C implementation on the concatenated queries and gallery, for every
preset and tie policy, with uneven shards, an empty shard and a rank without queries."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.crosscheck import same_bits
from retrieval_conformance.conformance.support.distributed_support import one_process_group, requires_gloo, run_ranks
from retrieval_conformance.reference.contract import registry
from retrieval_conformance.reference.contract.conventions import TIE_POLICIES
from retrieval_conformance.reference.contract.presets import PRESETS

pytestmark = requires_gloo
YARDSTICK = "c" if registry.unavailable_reason("c") is None else "numpy"
SCALARS = [
    f.name
    for f in dataclasses.fields(rc.Result)
    if f.name not in ("per_query", "options", "implementation", "protocol", "exact", "extras")
]


def _case(rng, protocol, query_sizes, gallery_sizes, kind="embeddings", **options):
    """Random tie-heavy data (few distinct coordinates, few ids) cut into the given rank sizes."""
    n_q, n_g = sum(query_sizes), sum(gallery_sizes)
    cams = "same_id_cam" in PRESETS[protocol].junk
    if kind == "codes":
        queries = {"query_codes": rng.choice([-1, 1], (n_q, 6))}
        gallery = {"db_codes": rng.choice([-1, 1], (n_g, 6))}
    else:
        dtype = np.float64 if kind == "float64" else np.float32
        low = 1 if options.get("metric") == "cosine" else 0  # no all-zero row
        queries = {"query_embeddings": rng.integers(low, 3, (n_q, 3)).astype(dtype)}
        gallery = {"db_embeddings": rng.integers(low, 3, (n_g, 3)).astype(dtype)}
    if kind == "codes" and not cams:
        queries["query_labels"] = rng.integers(0, 2, (n_q, 3))
        gallery["db_labels"] = rng.integers(0, 2, (n_g, 3))
    else:
        queries["query_labels"] = rng.integers(0, 4, n_q)
        gallery["db_labels"] = rng.integers(-1 if protocol == "reid-matlab" else 0, 4, n_g)
    if cams:
        queries["query_cams"], gallery["db_cams"] = rng.integers(0, 2, n_q), rng.integers(0, 2, n_g)
    return {
        "queries": queries,
        "gallery": gallery,
        "query_sizes": query_sizes,
        "gallery_sizes": gallery_sizes,
        "options": dict(protocol=protocol, **options),
    }


def _one_process(case):
    try:
        return "ok", rc.evaluate(**case["queries"], **case["gallery"], **case["options"], implementation=YARDSTICK)
    except ValueError as exc:
        return "error", "ValueError", str(exc)


def _check_probe(replies):
    """The gathered payloads and sums are right, and the bytes counted follow the documented model:
    an all-gather moves its padded payload to and from each other rank (after 8 bytes of size), an
    all-reduce of S bytes 2 S (W - 1) / W each way."""
    world = len(replies)
    for per_rank in replies:
        gathered, total, traffic = per_rank[-1]
        assert gathered == [bytes([r]) * (100 * r + 50) for r in range(world)]
        assert total.tolist() == [world * (world + 1) // 2] * 10
        moved = (8 + 100 * (world - 1) + 50) * (world - 1) + 2 * 80 * (world - 1) // world
        assert (traffic.bytes_sent, traffic.bytes_received, traffic.collectives) == (moved, moved, 3)


def _check(cases, replies):
    _check_probe(replies)
    problems = []
    for i, case in enumerate(cases):
        if "fail" in case:
            continue
        want = _one_process(case)
        for rank, per_rank in enumerate(replies):
            got, label = per_rank[i], f"case {i} {case['options']} rank {rank}:"
            if want[0] == "error" or got[0] == "error":
                # the same error; one found in a rank's shard names the rank and where its shard starts
                if got[:2] != want[:2] or got[2] != case.get("message", want[2]):
                    problems.append(f"{label} got {got[:3]}, one process {want[:3]}")
                continue
            problems += same_bits(want[1].per_query, got[1].per_query, label)
            for name in SCALARS:
                a, b = (np.asarray(getattr(r, name), dtype=np.float64) for r in (want[1], got[1]))
                if a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
                    problems.append(f"{label} {name}: {b.tolist()} != one process {a.tolist()}")
            # at least the other ranks' queries reach this rank, and all of them leave it
            # (integer codes travel as int8)
            queries = sum(
                a.nbytes // (a.itemsize if name == "query_codes" else 1) for name, a in case["queries"].items()
            ) // sum(case["query_sizes"])
            others = queries * (sum(case["query_sizes"]) - case["query_sizes"][rank])
            mine = queries * case["query_sizes"][rank] * (len(replies) - 1)
            traffic = got[2]
            if traffic.bytes_received < others or traffic.bytes_sent < mine or traffic.collectives < 4:
                problems.append(
                    f"{label} traffic {traffic}: expected at least {others} bytes received and "
                    f"{mine} sent (the queries)"
                )
    assert not problems, "\n".join(problems[:20])


def test_two_ranks_every_preset_and_tie_policy():
    rng = np.random.default_rng(29)
    cases = [
        _case(rng, protocol, [7, 5], [13, 19], ties=ties, k=k)
        for protocol in PRESETS
        for ties in TIE_POLICIES
        for k in ([None, 4] if ties == "grouped" else [5])
    ]
    cases += [_case(rng, "hashing", [6, 6], [20, 11], kind="codes", radius=2, ties=ties) for ties in TIE_POLICIES]
    cases += [_case(rng, "reid", [5, 9], [9, 22], kind="float64", ties=ties) for ties in TIE_POLICIES]
    cases += [_case(rng, "pml", [8, 3], [4, 30], metric="cosine", k=3)]
    broken = _case(rng, "pml", [8, 3], [4, 30], metric="cosine")
    broken["gallery"]["db_embeddings"][7] = 0  # item 7 is row 3 of rank 1's shard
    broken["message"] = (
        "db_embeddings: row 3 is all zeros; cosine distance is undefined (raised on rank 1, whose "
        "gallery shard starts at item 4)"
    )
    cases.append(broken)
    _check(cases, run_ranks(2, cases))


def test_three_ranks_empty_shard_and_rank_without_queries():
    rng = np.random.default_rng(2929)
    sizes = dict(query_sizes=[0, 8, 4], gallery_sizes=[17, 0, 15])
    cases = [_case(rng, protocol, **sizes) for protocol in PRESETS]
    cases += [_case(rng, "hashing", kind="codes", ties=ties, k=6, **sizes) for ties in TIE_POLICIES]
    cases += [_case(rng, "reid", [1, 1, 1], [1, 2, 40], k=10**12, max_rank=10**4)]  # cut-offs beyond the gallery
    # ±1 or {0, 1} codes is decided over the whole gallery: a -1 on rank 1 makes rank 0's 0 an error
    codes = _case(rng, "hashing", [2, 2, 2], [3, 3, 3], kind="codes")
    codes["queries"]["query_codes"][:] = 1
    codes["gallery"]["db_codes"][:3] = 1
    codes["gallery"]["db_codes"][1, 2] = 0
    codes["message"] = _one_process(codes)[2] + " (raised on rank 0, whose gallery shard starts at item 0)"
    cases.append(codes)
    # a failure on one rank, in either pass, is raised on every rank instead of leaving them waiting
    cases += [dict(_case(rng, "reid", **sizes), fail=(2, step)) for step in ("shard_statistics", "shard_counts")]
    replies = run_ranks(3, cases)
    _check(cases, replies)
    first = "MemoryError: injected (raised on rank 2, whose gallery shard starts at item 17)"
    assert [r[-3] for r in replies] == [("error", "RuntimeError", first)] * 3
    other = "pass 2 failed on 1 other rank(s) (their own error is raised there)"
    assert [r[-2] for r in replies] == [("error", "RuntimeError", other)] * 2 + [("error", "MemoryError", "injected")]


def test_refuses_without_process_group_and_what_it_cannot_honour():
    gallery = dict(db_embeddings=np.eye(3), db_labels=[0, 1, 2])
    with pytest.raises(RuntimeError, match="init_process_group"):
        rc.Accumulator(**gallery, distributed=True)
    with pytest.raises(TypeError, match="^distributed: expected True or False, got 'yes'"):
        rc.Accumulator(**gallery, distributed="yes")
    with pytest.raises(ValueError, match="implementation"):
        rc.Accumulator(**gallery, distributed=True, implementation="c")
    with pytest.raises(ValueError, match="device"):
        rc.Accumulator(**gallery, distributed=True, device="cpu")
    with one_process_group():
        acc = rc.Accumulator(**gallery, distributed=True, k=2)
        with pytest.raises(ValueError, match="^distances: distributed=True"):
            acc.update(distances=np.eye(3), query_labels=[0, 1, 2])
        with pytest.raises(ValueError, match="^query_labels: .* block starting at query 0"):
            acc.update(query_embeddings=np.eye(3))
        with pytest.raises(ValueError, match="^query_cams: protocol 'hashing' has no camera junk rule"):
            acc.update(query_embeddings=np.eye(3), query_labels=[0, 1, 2], query_cams=[0, 0, 0])
        acc.update(query_embeddings=np.eye(3)[::-1], query_labels=[2, 1, 0])
        got = acc.compute()
        want = rc.evaluate(**gallery, query_embeddings=np.eye(3)[::-1], query_labels=[2, 1, 0], k=2)
        assert not same_bits(want.per_query, got.per_query)
        assert acc.traffic.bytes_sent == 0 and acc.traffic.collectives > 0  # one rank: nothing leaves it
        assert (len(acc), acc.n_gallery, acc.implementation) == (3, 3, "numpy")


def test_integer_codes_travel_as_int8_and_nothing_else_changes():
    from retrieval_conformance.implementations.distributed.sharded import _compact

    codes = np.array([[1, -1, 0], [1, 1, -1]], np.int64)
    sent = _compact({"query_codes": codes, "query_labels": np.array([1, 2])})
    assert sent["query_codes"].dtype == np.int8 and np.array_equal(sent["query_codes"], codes)
    assert sent["query_labels"].dtype == np.int64
    for kept in (codes * 2, codes.astype(np.float32), codes.astype(bool)):  # left to the validation as given
        assert _compact({"query_codes": kept})["query_codes"] is kept


def test_the_shard_is_sliced_once_for_all_query_chunks(monkeypatch):
    """With several chunks of queries, the shard's embeddings are cut into exact slices once (the
    prepared gallery), not once per chunk; the values are those of one chunk."""
    from retrieval_conformance.implementations.distributed import ProcessGroup, evaluate_sharded
    from retrieval_conformance.reference.contract import embeddings
    from retrieval_conformance.reference.contract.problem import Options

    rng = np.random.default_rng(3)
    gallery = {"db_embeddings": rng.integers(0, 3, (40, 3)).astype(np.float32), "db_labels": rng.integers(0, 4, 40)}
    queries = {"query_embeddings": rng.integers(0, 3, (6, 3)).astype(np.float32), "query_labels": rng.integers(0, 4, 6)}
    sliced, slice_rows = [], embeddings.slice_rows
    monkeypatch.setattr(embeddings, "slice_rows", lambda x, *a: sliced.append(x.shape[0]) or slice_rows(x, *a))
    with one_process_group():
        group = ProcessGroup()
        whole, _ = evaluate_sharded(group, queries, gallery, Options())
        sliced.clear()
        chunked, _ = evaluate_sharded(group, queries, gallery, Options(), block_size=2)  # three chunks
    assert sliced.count(40) == 1 and sliced.count(2) == 3
    assert not same_bits(whole, chunked)
