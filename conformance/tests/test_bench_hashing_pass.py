"""The Hamming pass benchmark (``conformance/bench/hashing_pass.py``): the anchor and the
library's pass (``csrc/rc_bench.c``) count exactly what numpy counts, refuse inputs they do not
take, and the figures come out at smoke scale.  Skipped when the C library is not built.
"""

from __future__ import annotations

import numpy as np
import pytest
from retrieval_conformance.conformance.bench.hashing import cifar10


@pytest.fixture(scope="module")
def bench(c_backend):
    from retrieval_conformance.conformance.bench import hashing_pass

    return hashing_pass


def _numpy_histograms(arrays):
    """hist[q, 2 d + relevant]: Hamming distances and shared labels counted by numpy."""
    q_bits, db_bits = arrays["query_codes"] > 0, arrays["db_codes"] > 0
    dist = (q_bits[:, None, :] != db_bits[None, :, :]).sum(axis=2)
    relevant = (arrays["query_labels"] @ arrays["db_labels"].T) > 0
    bins = 2 * q_bits.shape[1] + 2
    return np.stack([np.bincount(2 * d + r, minlength=bins) for d, r in zip(dist, relevant.astype(int))])


@pytest.mark.parametrize("entry, extra", [("anchor", ()), ("pass", (1,)), ("pass", (0,))])
def test_counts_equal_numpy(bench, entry, extra):
    arrays = cifar10("smoke", None, "cifar10-all").arrays
    packed = bench.packed_inputs(arrays)
    functions = dict(zip(("anchor", "pass"), bench._bench_functions()))
    _, hist = bench._timed_histograms(functions[entry], packed, *extra)
    np.testing.assert_array_equal(hist, _numpy_histograms(arrays))


@pytest.mark.parametrize("masked", [0, 16, 8 | 16], ids=["default", "avx512-off", "avx2-avx512-off"])
def test_every_instruction_set_counts_what_numpy_counts(bench, masked):
    """The anchor and the pass in each instruction set (AVX-512, AVX2, scalar: the ones the CPU
    has, the others masked off) on a gallery that is no multiple of their blocks."""
    from retrieval_conformance.implementations.c import library as c_library

    rng = np.random.default_rng(4)
    arrays = {
        "query_codes": rng.choice([-1.0, 1.0], (6, 64)),
        "db_codes": rng.choice([-1.0, 1.0], (1000, 64)),
        "query_labels": np.eye(5)[rng.integers(0, 5, 6)],
        "db_labels": np.eye(5)[rng.integers(0, 5, 1000)],
    }
    packed = bench.packed_inputs(arrays)
    anchor, real_pass = bench._bench_functions()
    with c_library.limited_features(c_library.ALL_FEATURES & ~masked) as usable:
        assert not usable & masked
        for function, extra in ((anchor, ()), (real_pass, (1,)), (real_pass, (0,))):
            hist = bench._timed_histograms(function, packed, *extra)[1]
            np.testing.assert_array_equal(hist, _numpy_histograms(arrays))
    assert c_library.usable_features() == c_library.cpu_features()  # the mask as it was


def test_paths_are_the_cpus_instruction_sets(bench):
    """The first path is what evaluate runs; AVX2 follows AVX-512 where the CPU has both."""
    from retrieval_conformance.implementations.c import library as c_library

    paths = bench.pass_paths()
    have = c_library.usable_features()
    assert paths[0] == (bench.instruction_set(have), have)
    if have & bench.AVX512_FEATURE and have & bench.AVX2_FEATURE:
        assert paths[1] == ("AVX2", have & ~bench.AVX512_FEATURE)
    assert bench.instruction_set(bench.AVX2_FEATURE | bench.POPCNT_FEATURE) == "AVX2"
    assert bench.instruction_set(bench.POPCNT_FEATURE) == "scalar, hardware popcount"
    assert bench.instruction_set(0) == "scalar, plain C"


def test_short_codes_and_odd_gallery(bench):
    """Fewer than 64 bits and a gallery that is not a multiple of the unrolling."""
    rng = np.random.default_rng(3)
    arrays = {
        "query_codes": rng.choice([-1.0, 1.0], (5, 13)),
        "db_codes": rng.choice([-1.0, 1.0], (103, 13)),
        "query_labels": np.eye(3)[rng.integers(0, 3, 5)],
        "db_labels": np.eye(3)[rng.integers(0, 3, 103)],
    }
    packed = bench.packed_inputs(arrays)
    anchor, real_pass = bench._bench_functions()
    for function, extra in ((anchor, ()), (real_pass, (1,)), (real_pass, (0,))):
        np.testing.assert_array_equal(bench._timed_histograms(function, packed, *extra)[1], _numpy_histograms(arrays))


def test_refuses_what_it_does_not_take(bench):
    arrays = cifar10("smoke", None, "cifar10-all").arrays
    packed = bench.packed_inputs(arrays)
    packed["bits"] = 65
    anchor, _ = bench._bench_functions()
    with pytest.raises(RuntimeError, match="refused"):
        bench._timed_histograms(anchor, packed)
    wide = dict(arrays, db_codes=np.ones((4, 96)), query_codes=np.ones((2, 96)))
    with pytest.raises(ValueError, match="at most 64 bits"):
        bench.packed_inputs(wide)


def test_figures_at_smoke_scale(bench):
    fig = bench.hashing_pass_figures("smoke", rounds=1)
    assert set(fig["seconds"]) >= {"anchor", "pass", "pass, histogram only", "evaluate"}
    assert fig["ratio_to_anchor"]["anchor"] == 1.0 and fig["same_counts"]
    assert fig["queries"] == 20 and fig["gallery"] == 600
    assert "x anchor" in bench.report("smoke", rounds=1)
    with pytest.raises(ValueError, match="rounds"):
        bench.hashing_pass_figures("smoke", rounds=0)


def test_feature_section_figures(bench):
    """The section ``hashing-pass`` of the feature benchmarks reads as figures, the pass with its target."""
    from retrieval_conformance.conformance.bench.features.figures import check_figures

    figs = check_figures(bench.figures("smoke"), "hashing_pass.figures")
    assert figs["pass"]["target"] == "<= 1.5x" and figs["pass"]["unit"] == "x the anchor"
    assert figs["anchor (bare XOR, popcount, count per distance)"]["unit"] == "ms"
    for name, _ in bench.pass_paths()[1:]:  # each further path against its own anchor
        assert figs[f"{name} path: pass"]["target"] == "<= 1.5x"
        assert figs[f"{name} path: pass"]["baseline"]["name"] == f"{name} path: the anchor"
        assert name in figs[f"{name} path: anchor (bare XOR, popcount, count per distance)"]["note"]
    with pytest.raises(ValueError, match="scale"):
        bench.figures("huge")
