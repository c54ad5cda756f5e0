"""Ranks of a distributed Accumulator that were given different options or arrays of different
shapes get one named error, the same on every rank, before any pass: never two numbers, a number
of neither, a hang or an abort inside gloo.  Gallery shards of different dtypes are read in the
dtype of their concatenation (numpy's ``result_type``), as one process reads the concatenation."""

from __future__ import annotations

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.crosscheck import same_bits
from retrieval_conformance.conformance.support.distributed_support import requires_gloo, run_ranks

pytestmark = requires_gloo


def _data(rng, n_q=6, n_g=10, dim=3):
    return {
        "queries": {"query_embeddings": rng.random((n_q, dim)), "query_labels": rng.integers(0, 3, n_q)},
        "gallery": {"db_embeddings": rng.random((n_g, dim)), "db_labels": rng.integers(0, 3, n_g)},
        "query_sizes": [n_q // 2, n_q - n_q // 2],
        "gallery_sizes": [n_g // 2, n_g - n_g // 2],
        "options": {},
    }


def _disagree(rng, per_rank, **options):
    return dict(_data(rng), per_rank=per_rank, options=options)


def _said(argument, what, told):
    return (
        f"{argument}: the 2 ranks of a distributed Accumulator must be given the same {what}, got {told}; "
        f"pass the same {argument if what == 'value' else what} on every rank (the ranks are compared before any pass)"
    )


def test_ranks_that_disagree_get_one_named_error_on_every_rank():
    rng = np.random.default_rng(35)
    cases, messages = [], []

    def add(case, message):
        cases.append(case)
        messages.append(message)

    for name, a, b in [
        ("k", 5, 10),
        ("metric", "euclidean", "cosine"),
        ("ties", "stable", "optimistic"),  # different pass-2 shapes: gloo aborted rank 0
        ("protocol", "hashing", "pml"),
        ("empty", "zero", "error"),
        ("max_rank", 10, 20),
        ("recall", "fraction", "hit"),
        ("metrics", ["map"], None),
    ]:
        shown = [repr(tuple(x)) if isinstance(x, list) else repr(x) for x in (a, b)]
        add(
            _disagree(rng, [{"options": {name: a}}, {"options": {name: b}}]),
            _said(name, "value", f"{shown[0]} on rank 0, {shown[1]} on rank 1"),
        )
    # widths: the queries' and the gallery's columns (numpy's concatenation message before)
    both = {"columns": {"query_embeddings": 2, "db_embeddings": 2}}
    add(_disagree(rng, [{}, both]), _said("query_embeddings", "columns", "(3,) on rank 0, (2,) on rank 1"))
    add(
        _disagree(rng, [{}, {"columns": {"db_embeddings": 2}}]),
        _said("db_embeddings", "columns", "(3,) on rank 0, (2,) on rank 1"),
    )
    add(
        _disagree(rng, [{"astype": {"db_labels": "U2"}}, {}]),
        _said("db_labels", "kind of values", "'strings' on rank 0, 'numbers' on rank 1"),
    )
    add(
        _disagree(rng, [{}, {"astype": {"query_embeddings": "U8"}}]),
        _said("query_embeddings", "kind of values", "'numbers' on rank 0, 'strings' on rank 1"),
    )
    # a NaN in rank 1's shard (item 6, its row 1) is the one-process NonFiniteError (a ValueError) on
    # every rank, not a RuntimeError (found by the distributed fuzz target)
    nan = _data(rng)
    nan["gallery"]["db_embeddings"][6, 2] = np.nan
    add(
        nan,
        "db_embeddings: expected finite values, found nan at [1, 2]; replace NaN/inf (e.g. by a large "
        "distance) before evaluating (raised on rank 1, whose gallery shard starts at item 5)",
    )
    replies = run_ranks(2, cases)
    for i, message in enumerate(messages):
        kind = "NonFiniteError" if "finite" in message else "ValueError"
        assert [r[i] for r in replies] == [("error", kind, message)] * 2, cases[i].get("per_rank")


def test_shards_of_different_dtypes_are_read_as_their_concatenation():
    """Rank 0's shard [-1] (label 1) in float32, rank 1's [1 + 2**-25] (label 0) in float64; one
    query 2**-25 (label 1) on rank 0.  The concatenation is float64: distances 1 + 2**-25 to the
    relevant item and exactly 1 to the other, the relevant item second, AP 1/2.  Rank 0's
    distance rounded to float32 is 1.0, a tie the stable order would give to item 0: AP 1."""
    case = {
        "queries": {"query_embeddings": np.array([[2.0**-25]]), "query_labels": np.array([1])},
        "gallery": {"db_embeddings": np.array([[-1.0], [1.0 + 2.0**-25]]), "db_labels": np.array([1, 0])},
        "query_sizes": [1, 0],
        "gallery_sizes": [1, 1],
        "options": {},
        "per_rank": [{"astype": {"db_embeddings": "float32", "query_embeddings": "float32"}}, {}],
    }
    # and the queries: float32 on rank 0, float64 on rank 1, against a float32 gallery everywhere
    mixed = dict(_data(np.random.default_rng(5)), per_rank=[{"astype": {"query_embeddings": "float32"}}, {}])
    mixed["gallery"]["db_embeddings"] = mixed["gallery"]["db_embeddings"].astype(np.float32)
    replies = run_ranks(2, [case, mixed])
    want = rc.evaluate(**case["queries"], **case["gallery"])
    assert want.map == 0.5
    lo = mixed["query_sizes"][0]
    queries = dict(
        mixed["queries"],
        query_embeddings=np.concatenate(
            [mixed["queries"]["query_embeddings"][:lo].astype(np.float32), mixed["queries"]["query_embeddings"][lo:]]
        ),
    )
    assert queries["query_embeddings"].dtype == np.float64
    want_mixed = rc.evaluate(**queries, **mixed["gallery"])
    for per_rank in replies:
        assert per_rank[0][0] == "ok" and per_rank[0][1].map == 0.5
        assert not same_bits(want.per_query, per_rank[0][1].per_query)
        assert per_rank[1][0] == "ok" and not same_bits(want_mixed.per_query, per_rank[1][1].per_query)


class _Group:
    """Three ranks' descriptions, as an all-gather returns them (no process group needed)."""

    world = 3

    def __init__(self, payloads):
        self.payloads = payloads

    def all_gather(self, payload):
        return self.payloads


def test_the_message_groups_the_ranks_by_value_and_empty_parts_say_nothing():
    import json

    from retrieval_conformance.implementations.distributed.agreement import agree, describe
    from retrieval_conformance.reference.contract.problem import Options

    gallery = {"db_embeddings": np.zeros((2, 3), np.float32), "db_labels": np.zeros(2, int)}
    empty = {"db_embeddings": np.zeros((0, 5)), "db_labels": np.zeros(0, int)}  # other columns, no rows
    ranks = [
        describe(Options(ties=ties), {"protocol": "hashing"}, {}, shard)
        for ties, shard in (("stable", gallery), ("expected", empty), ("stable", gallery))
    ]
    payloads = [json.dumps(r, sort_keys=True).encode() for r in ranks]
    with pytest.raises(ValueError) as caught:
        agree(_Group(payloads), ranks[0])
    assert str(caught.value) == (
        "ties: the 3 ranks of a distributed Accumulator must be given the same value, got 'stable' on ranks 0, 2, "
        "'expected' on rank 1; pass the same ties on every rank (the ranks are compared before any pass)"
    )
    ranks[1] = describe(Options(), {"protocol": "hashing"}, {}, empty)
    payloads[1] = json.dumps(ranks[1], sort_keys=True).encode()
    assert len(agree(_Group(payloads), ranks[0])) == 3
