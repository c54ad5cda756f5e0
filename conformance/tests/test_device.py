"""``device=``: where torch computes, checked before any data moves (spec: evaluate's parameters).

The numbers do not depend on the device; a device this machine lacks, a misspelt one, or a
device for an implementation that runs on the CPU only is a named error.  On a machine with a
GPU the torch implementation is also run there (skipped where none is).
"""

from __future__ import annotations

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.crosscheck import same_bits
from retrieval_conformance.conformance.support.requirements import require_implementation


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    return dict(
        distances=rng.integers(0, 4, (6, 40)).astype(np.float32),
        relevance=rng.integers(0, 3, (6, 40)) * (rng.random((6, 40)) < 0.3),
        k=7,
    )


def _torch():
    require_implementation("torch")
    import torch

    return torch


@pytest.mark.parametrize("ties", ["stable", "expected"])
def test_torch_on_the_cpu_gives_the_c_and_numpy_numbers(ties):
    torch = _torch()
    kw = dict(_problem(), ties=ties)
    got = rc.evaluate(**kw, implementation="torch", device="cpu")
    also = rc.evaluate(**kw, implementation="torch", device=torch.device("cpu"))
    want = rc.evaluate(**kw, implementation="numpy")
    assert got.implementation == "torch"
    assert not same_bits(got.per_query, want.per_query)
    assert not same_bits(also.per_query, want.per_query)


def test_auto_with_a_device_means_torch():
    _torch()
    assert rc.evaluate(**_problem(), device="cpu").implementation == "torch"


@pytest.mark.parametrize(
    "device, error, words",
    [
        ("nope", ValueError, "is not a torch device"),
        (5, TypeError, "expected a torch device name"),
        ("meta", ValueError, "holds no data"),
    ],
)
def test_a_bad_device_is_named(device, error, words):
    _torch()
    with pytest.raises(error, match="device: ") as info:
        rc.evaluate(**_problem(), implementation="torch", device=device)
    assert words in str(info.value)


def test_cuda_without_a_gpu_is_named():
    torch = _torch()
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ValueError, match=r"device: 'cuda' asks for CUDA, but torch .* sees no CUDA device"):
        rc.evaluate(**_problem(), implementation="torch", device="cuda")


@pytest.mark.parametrize("name", ["c", "numpy", "reference"])
def test_a_device_for_a_cpu_implementation_is_an_error(name):
    require_implementation(name)
    with pytest.raises(ValueError, match=f"device: implementation '{name}' runs on the CPU and takes no device"):
        rc.evaluate(**_problem(), implementation=name, device="cpu")


def test_the_accumulator_takes_a_device():
    _torch()
    kw = _problem()
    acc = rc.Accumulator(k=7, implementation="torch", device="cpu")
    acc.update(distances=kw["distances"][:3], relevance=kw["relevance"][:3])
    acc.update(distances=kw["distances"][3:], relevance=kw["relevance"][3:])
    want = rc.evaluate(**kw, implementation="torch", device="cpu")
    assert not same_bits(acc.compute().per_query, want.per_query)
    with pytest.raises(ValueError, match="device: implementation 'c'"):
        rc.Accumulator(implementation="c", device="cpu")


def test_the_gpu_gives_the_same_numbers_where_there_is_one():
    torch = _torch()
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine")
    for ties in ("stable", "expected", "grouped"):
        kw = dict(_problem(1), ties=ties, k=None if ties == "grouped" else 7)
        got = rc.evaluate(**kw, implementation="torch", device="cuda")
        want = rc.evaluate(**kw, implementation="numpy")
        assert not same_bits(got.per_query, want.per_query), ties
