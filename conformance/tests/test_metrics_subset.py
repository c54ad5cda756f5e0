"""``metrics=``: only the metrics asked for are computed, with the bits they have among all.

For every implementation, tie policy and protocol, every metric asked for alone (and random
subsets) gives bit for bit the value it has when every metric is computed; a metric not asked
for refuses to be read, by name; C and numpy skip the work of the values nobody asked for.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import retrieval_conformance as rc
from hypothesis import given, settings
from hypothesis import strategies as st
from retrieval_conformance.conformance.support.requirements import require_implementation
from retrieval_conformance.conformance.support.strategies import option_sets, tie_heavy_problems
from retrieval_conformance.reference.contract.conventions import TIE_POLICIES
from retrieval_conformance.reference.contract.metric_names import METRIC_NAMES, resolve_metrics
from retrieval_conformance.reference.contract.presets import PRESETS
from retrieval_conformance.reference.contract.problem import NotComputedError, Options

IMPLEMENTATIONS = ["reference", "numpy", "torch", "c"]
#: the metrics that need an option set (P@k and R@k: a cut-off; the radius pair: radius=)
NEEDS_K = ("precision_at_k", "recall_at_k")
NEEDS_RADIUS = ("precision_at_radius", "recall_at_radius")


def _bits(value) -> bytes:
    """The exact bits of a metric (a float, an array, or None)."""
    return b"none" if value is None else np.asarray(value, dtype=np.float64).tobytes()


def _per_query_arrays(res, name: str):
    """The per-query arrays behind a metric of ``res`` (AP and INP are also ``Result`` arrays)."""
    field = {"map": "ap", "minp": "inp", "ndcg_at_k": "ndcg", "mrr": "rr", "map_at_r": "ap_at_r"}.get(name, name)
    arrays = [getattr(res.per_query, field)]
    if name in ("map", "minp"):
        arrays.append(getattr(res, "ap" if name == "map" else "inp"))
    return arrays


def assert_same_bits(full, part, names) -> None:
    for name in names:
        assert _bits(getattr(part, name)) == _bits(getattr(full, name)), name
        for want, got in zip(_per_query_arrays(full, name), _per_query_arrays(part, name)):
            assert _bits(got) == _bits(want), f"per query {name}"
    assert np.array_equal(part.counted, full.counted)


def _problems(rng, small: bool):
    """Small problems with ties everywhere: float distances with labels and cameras, Hamming codes
    with multi-hot labels; ``small=False`` adds a 1,500-item gallery (C's prefix path)."""
    n = 24 if small else 1500
    dist = rng.choice([0.0, 0.25, 0.5, 1.0, 2.0], size=(5, n))
    yield dict(
        distances=dist,
        query_labels=rng.integers(0, 4, 5),
        db_labels=rng.integers(-1, 4, n),
        query_cams=rng.integers(0, 2, 5),
        db_cams=rng.integers(0, 2, n),
    )
    yield dict(
        query_codes=rng.choice([-1, 1], (4, 6)),
        db_codes=rng.choice([-1, 1], (30, 6)),
        query_labels=rng.integers(0, 2, (4, 3)),
        db_labels=rng.integers(0, 2, (30, 3)),
    )


def _subsets(rng, with_k: bool, with_radius: bool):
    usable = [m for m in METRIC_NAMES if (with_k or m not in NEEDS_K) and (with_radius or m not in NEEDS_RADIUS)]
    singles = [[m] for m in usable]
    drawn = [list(rng.choice(usable, size=int(rng.integers(2, len(usable))), replace=False)) for _ in range(3)]
    return singles + drawn


@pytest.mark.parametrize("ties", TIE_POLICIES)
@pytest.mark.parametrize("name", IMPLEMENTATIONS)
def test_every_metric_alone_and_random_subsets_give_the_bits_of_all(name, ties):
    require_implementation(name)
    rng = np.random.default_rng(29)
    for protocol, preset in PRESETS.items():
        for kwargs in _problems(rng, small=name == "reference"):
            if "same_id_cam" not in preset.junk:
                kwargs = {key: value for key, value in kwargs.items() if "cams" not in key}
            elif "query_cams" not in kwargs:
                kwargs = dict(
                    kwargs, junk=np.zeros((kwargs["query_labels"].shape[0], kwargs["db_codes"].shape[0]), bool)
                )
            ks = [None] if ties == "grouped" else ([100] if protocol == "gldv2" else [None, 3])
            for k in ks:
                options = dict(
                    protocol=protocol, k=k, ties=ties, radius=2, implementation=name, max_rank=7, empty="zero"
                )
                full = rc.evaluate(**kwargs, **options)
                assert full.computed is None
                for subset in _subsets(rng, k is not None, True):
                    part = rc.evaluate(**kwargs, **options, metrics=subset)
                    assert part.computed == frozenset(subset)
                    assert_same_bits(full, part, subset)


@settings(max_examples=60, deadline=None)
@given(
    problem=tie_heavy_problems(max_queries=4, max_gallery=12, graded=True),
    options=option_sets(ties=TIE_POLICIES),
    chosen=st.lists(st.sampled_from([m for m in METRIC_NAMES if m not in NEEDS_RADIUS]), min_size=1, max_size=5),
)
def test_any_subset_any_option_same_bits_in_c_and_numpy(problem, options, chosen):
    dist, rel, junk = problem
    options = dict(options, empty="zero")
    if options.get("k") is None:
        chosen = [m for m in chosen if m not in NEEDS_K] or ["map"]
    for name in ("c", "numpy"):
        require_implementation(name)
        try:
            full = rc.evaluate(distances=dist, relevance=rel, junk=junk, implementation=name, **options)
        except ValueError as exc:  # grouped with k inside a tie group: refused whatever is asked
            with pytest.raises(ValueError, match="falls inside a tie group"):
                rc.evaluate(distances=dist, relevance=rel, junk=junk, implementation=name, metrics=chosen, **options)
            assert "falls inside a tie group" in str(exc)
            continue
        part = rc.evaluate(distances=dist, relevance=rel, junk=junk, implementation=name, metrics=chosen, **options)
        assert_same_bits(full, part, resolve_metrics(chosen))


def test_dask_honours_metrics_whole_and_sharded():
    pytest.importorskip("distributed", reason="dask.distributed is not installed ([dask] extra)")
    from retrieval_conformance.implementations.dask.backend import DaskImplementation
    from retrieval_conformance.reference.contract import registry

    registry.register("dask-metrics-shards", lambda: DaskImplementation(gallery_shards=3))
    try:
        _dask_runs()
    finally:
        registry.unregister("dask-metrics-shards")


def _dask_runs():
    from retrieval_conformance.conformance.support.dask_support import LOCAL, local_cluster

    rng = np.random.default_rng(3)
    kwargs = dict(
        distances=rng.choice([0.0, 0.5, 1.0], (6, 40)),
        query_labels=rng.integers(0, 3, 6),
        db_labels=rng.integers(0, 3, 40),
        k=5,
        ties="expected",
    )
    full = rc.evaluate(**kwargs, implementation=LOCAL)
    with local_cluster():
        for name in ("dask", "dask-metrics-shards"):
            part = rc.evaluate(**kwargs, implementation=name, metrics=["map", "rank1", "ndcg"])
            assert part.computed == {"map", "cmc", "ndcg_at_k"}
            assert_same_bits(full, part, ["map", "cmc", "ndcg_at_k"])
            with pytest.raises(NotComputedError, match="minp"):
                _ = part.minp


# -- the vocabulary, the refusals ----------------------------------------------------------------------
def _small():
    return dict(distances=[[0.1, 0.4, 0.2, 0.9], [0.3, 0.2, 0.5, 0.1]], query_labels=[0, 1], db_labels=[0, 1, 1, 0])


def test_names_aliases_and_ranks_resolve_to_result_fields():
    assert resolve_metrics(["mAP", "Rank-1", "cmc5", "mINP", "nDCG@k", "MRR", "MAP@R", "P@k"]) == (
        "map",
        "precision_at_k",
        "minp",
        "ndcg_at_k",
        "mrr",
        "map_at_r",
        "cmc",
    )
    assert resolve_metrics("map, rank1") == ("map", "cmc")
    assert resolve_metrics(None) is None


@pytest.mark.parametrize("bad", [["mapp"], "map,bogus", [], [3], 7])
def test_an_unknown_name_is_refused_with_the_valid_ones(bad):
    with pytest.raises(ValueError, match="metrics: ") as exc:
        rc.evaluate(**_small(), metrics=bad)
    if bad not in ([3], 7):
        assert "map_at_r" in str(exc.value) and "rankN" in str(exc.value)


def test_a_metric_whose_option_is_not_set_is_refused_by_name():
    with pytest.raises(ValueError, match="'precision_at_k' needs a cut-off k="):
        rc.evaluate(**_small(), metrics=["map", "P@k"])
    with pytest.raises(ValueError, match="'recall_at_radius' needs radius="):
        rc.evaluate(**_small(), metrics=["recall_at_radius"])


def test_reading_a_metric_not_computed_raises_by_name():
    res = rc.evaluate(**_small(), k=2, metrics=["map"])
    assert res.map == rc.evaluate(**_small(), k=2).map
    for name in ("minp", "inp", "cmc", "ndcg_at_k", "mrr", "map_at_r", "r_precision", "precision_at_k"):
        with pytest.raises(NotComputedError, match=f"Result.{name}: not computed") as exc:
            getattr(res, name)
        assert "metrics=['map']" in str(exc.value)
        assert not hasattr(res, name)  # an AttributeError: hasattr() says it is not there
    assert res.per_query.inp is None and res.per_query.cmc is None
    summary = res.summary()
    assert "map" in summary and summary["metrics"] == ["map"]
    assert not {"minp", "cmc", "rank1", "ndcg_at_k", "mrr"} & set(summary)
    assert "minp" not in repr(res) and "map=" in repr(res)
    assert {"ap"} <= set(res.per_query_table()[0]) and "inp" not in res.per_query_table()[0]


def test_the_reference_keeps_exact_values_of_the_metrics_asked_for():
    res = rc.evaluate(**_small(), implementation="reference", metrics=["map"])
    assert res.exact.map is not None and res.exact.minp is None
    assert res.map == float(res.exact.map)


def test_the_accumulator_takes_metrics():
    acc = rc.Accumulator(db_labels=[0, 1, 1, 0], metrics=["mINP", "rank1"], implementation="numpy")
    acc.update(distances=[[0.1, 0.4, 0.2, 0.9]], query_labels=[0])
    acc.update(distances=[[0.3, 0.2, 0.5, 0.1]], query_labels=[1])
    res = acc.compute()
    full = rc.evaluate(**_small(), implementation="numpy")
    assert res.computed == {"minp", "cmc"}
    assert_same_bits(full, res, ["minp", "cmc"])
    with pytest.raises(NotComputedError, match="map"):
        _ = res.map
    with pytest.raises(ValueError, match="metrics: unknown metric 'x'"):
        rc.Accumulator(db_labels=[0, 1], metrics=["x"])


def test_the_command_line_prints_only_the_metrics_asked_for(tmp_path, capsys):
    from retrieval_conformance.cli import main

    arrays = _small()
    np.savez(
        tmp_path / "run.npz",
        distances=np.array(arrays["distances"]),
        query_labels=np.array(arrays["query_labels"]),
        db_labels=np.array(arrays["db_labels"]),
    )
    run = ["evaluate", "--npz", str(tmp_path / "run.npz")]
    assert main(run + ["--metrics", "map,rank1", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["map"] == rc.evaluate(**arrays).map and "rank1" in printed
    assert not {"minp", "ndcg_at_k", "mrr", "map_at_r", "r_precision"} & set(printed)
    assert main(run + ["--metrics", "minp"]) == 0
    text = capsys.readouterr().out
    assert "mINP" in text and "mAP" not in text and "CMC" not in text and "nDCG" not in text
    assert main(run + ["--metrics", "minp", "--quiet"]) == 2
    assert "--quiet" in capsys.readouterr().err
    assert main(run + ["--metrics", "nope"]) == 2
    assert "metrics: unknown metric 'nope'" in capsys.readouterr().err


# -- the work skipped -------------------------------------------------------------------------------
def _problem():
    from retrieval_conformance.reference.contract.evaluate import build_problem

    rng = np.random.default_rng(5)
    return build_problem(
        distances=rng.random((4, 2000)), query_labels=rng.integers(0, 5, 4), db_labels=rng.integers(0, 5, 2000)
    )


@pytest.mark.parametrize("name", ["c", "numpy"])
def test_values_nobody_asked_for_are_not_computed(name):
    """The implementations leave the values of unrequested metrics as they found them (0):
    their sums (AP@R, nDCG, AP) are skipped, not computed and dropped."""
    require_implementation(name)
    from retrieval_conformance.reference.contract import registry

    impl, problem = registry.get(name), _problem()
    full = impl.compute(problem, Options(k=10))
    part = impl.compute(problem, Options(k=10, metrics=("mrr",)))
    assert np.array_equal(part.rr, full.rr) and np.array_equal(part.hits_at_k, full.hits_at_k)
    for field in ("ap", "ap_at_r", "ndcg"):
        assert full.__dict__[field].any() and not part.__dict__[field].any(), field
    if name == "c":  # C also skips the CMC, INP and R-precision
        for field in ("inp", "r_precision", "cmc"):
            assert full.__dict__[field].any() and not part.__dict__[field].any(), field


def test_compare_offers_only_the_metrics_computed():
    from retrieval_conformance.comparison.metrics import metric_values, run_metrics

    res = rc.evaluate(**_small(), k=2, metrics=["mINP", "rank1"])
    assert list(run_metrics(res)) == ["minp"]
    name, values, counted = metric_values(res, "rank1", "a")
    assert name == "rank1" and np.array_equal(values, rc.evaluate(**_small(), k=2).per_query.cmc[:, 0])
    with pytest.raises(ValueError, match="unknown metric 'map'"):
        metric_values(res, "map", "a")


def test_c_reads_a_misaligned_array_through_an_aligned_copy():
    """dask's workers unpickle arrays from buffers at any byte offset; C reads doubles, so the C
    backend hands it an aligned copy (the sanitizer run reports a misaligned load otherwise)."""
    require_implementation("c")
    from retrieval_conformance.implementations.c.backend import _array

    raw = np.frombuffer(bytes(1 + 8 * 12), dtype=np.uint8)[1:]
    misaligned = raw.view(np.float64).reshape(3, 4)
    assert not misaligned.flags.aligned
    got = _array("distances", misaligned, np.float64, (3, 4))
    assert got.flags.aligned and got.flags.c_contiguous
    res = rc.evaluate(distances=misaligned, query_labels=[0, 1, 0], db_labels=[0, 1, 1, 0], implementation="c")
    assert (
        res.map
        == rc.evaluate(
            distances=np.zeros((3, 4)), query_labels=[0, 1, 0], db_labels=[0, 1, 1, 0], implementation="c"
        ).map
    )


def test_the_benchmark_returns_its_figures_at_smoke_scale():
    """``metrics_subset.measure`` (the page reads it through ``figures``) runs its checks (mAP-only
    has the bits of every metric; the loop's AP equals C's) and returns ratios; no time is asserted."""
    require_implementation("c")
    from retrieval_conformance.conformance.bench import metrics_subset
    from retrieval_conformance.reference.contract import registry

    out = metrics_subset.measure("smoke", rounds=1)
    assert metrics_subset.ONE_THREAD not in registry.names()  # registered for the run only
    for case, baseline in (("scores_map_at_k", "numpy_argpartition"), ("cifar10_map_all", "seed000_loop")):
        # (and C's mAP-only on the AVX2 path where the CPU has AVX-512 too)
        assert set(out[case]["seconds"]) - {"c_map_only_avx2"} == {baseline, "c_map_only", "c_all_metrics"}
        assert out[case]["map_only_vs_all_metrics"] > 0
    assert "loadavg_before" in out and "loadavg_after" in out
    with pytest.raises(ValueError, match="scale: expected 'smoke' or 'full'"):
        metrics_subset.measure("huge")


def test_the_page_figures_are_read_by_the_page(monkeypatch):
    """``figures`` turns the measured ratios into the page's figures, each accepted by its check."""
    from retrieval_conformance.conformance.bench import metrics_subset
    from retrieval_conformance.conformance.bench.features import figures as checked

    case = {
        "workload": "w",
        "loop_queries_timed": 5,
        "target_vs_numpy": 6.0,
        "target_vs_loop": 60.0,
        "map_only_vs_numpy_argpartition": 2.5,
        "all_metrics_vs_numpy_argpartition": 1.5,
        "map_only_vs_seed000_loop": 70.0,
        "all_metrics_vs_seed000_loop": 50.0,
        "seconds": {"numpy_argpartition": 0.09, "seed000_loop": 2.0, "c_map_only": 0.03, "c_all_metrics": 0.05},
    }
    fake = {"scores_map_at_k": case, "cifar10_map_all": case}
    monkeypatch.setattr(metrics_subset, "measure", lambda scale, rounds: fake)
    out = metrics_subset.figures("smoke", rounds=1)
    assert out["CIFAR-10 mAP@ALL, mAP only, against seed 000's loop"]["value"] == 70.0
    assert out["mAP@100 of float scores, mAP only, against argpartition"]["target"] == ">= 6x"
    assert checked.check_figures(out, "metrics_subset.figures") == out
    assert not any("AVX2" in name for name in out)
    # the AVX2 path, where it was timed, stands next to its own target
    fake["cifar10_map_all"] = dict(
        case, map_only_avx2_vs_seed000_loop=61.0, seconds=dict(case["seconds"], c_map_only_avx2=0.033)
    )
    out = metrics_subset.figures("smoke", rounds=1)
    avx2 = out["CIFAR-10 mAP@ALL, mAP only, AVX2 path, against seed 000's loop"]
    assert avx2["value"] == 61.0 and avx2["target"] == ">= 60x"
    assert checked.check_figures(out, "metrics_subset.figures") == out


def test_the_distributed_accumulator_honours_metrics():
    """Two gloo ranks, each with half of the queries and of the gallery: the metrics asked for have
    the bits one process gives with every metric; the others refuse to be read."""
    from retrieval_conformance.conformance.support.distributed_support import GLOO, run_ranks

    if not GLOO:
        pytest.skip("torch.distributed with gloo is not available ([torch] extra)")
    rng = np.random.default_rng(31)
    queries = {"query_embeddings": rng.integers(0, 3, (7, 3)).astype(np.float32), "query_labels": rng.integers(0, 3, 7)}
    gallery = {"db_embeddings": rng.integers(0, 3, (20, 3)).astype(np.float32), "db_labels": rng.integers(0, 3, 20)}
    chosen = [["map"], ["rank1", "nDCG"], ["mINP", "map_at_r", "precision_at_k"]]
    cases = [
        {
            "queries": queries,
            "gallery": gallery,
            "query_sizes": [3, 4],
            "gallery_sizes": [9, 11],
            "options": dict(k=4, ties=ties, metrics=metrics),
        }
        for ties in ("stable", "expected")
        for metrics in chosen
    ]
    replies = run_ranks(2, cases)
    for i, case in enumerate(cases):
        options = {key: value for key, value in case["options"].items() if key != "metrics"}
        want = rc.evaluate(**queries, **gallery, **options, implementation="numpy")
        names = resolve_metrics(case["options"]["metrics"])
        for per_rank in replies:
            status, got = per_rank[i][0], per_rank[i][1]
            assert status == "ok", per_rank[i]
            assert got.computed == frozenset(names)
            assert_same_bits(want, got, names)
            with pytest.raises(NotComputedError):
                _ = got.mrr


def test_several_cut_offs_show_the_metrics_asked_for():
    res = rc.evaluate(**_small(), k=(1, 3), metrics=["P@k"])
    assert res.table() == [{"k": k, "precision_at_k": r.precision_at_k} for k, r in res.items()]
    assert res[3].precision_at_k == rc.evaluate(**_small(), k=3).precision_at_k
