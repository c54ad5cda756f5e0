"""Errors and validation of the C implementation: the grouped cut-off error (the reference's
text), non-finite distances, every input checked before the C call, non-contiguous inputs
copied, the "not built" reason, no (Q, N) allocation in Python, and the C source compiling
without warnings.  Skipped when the library is not built, or fails with ``RC_REQUIRE=c``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tracemalloc

import numpy as np
import pytest
from retrieval_conformance.conformance.crosscheck import compare_per_query, run_both, same_bits
from retrieval_conformance.conformance.support.c_test_support import DENOMINATORS, RULES
from retrieval_conformance.reference.contract.discounts import discount_table
from retrieval_conformance.reference.contract.problem import Options, Problem


# ---------------------------------------------------------------------------------------------
# errors and validation
# ---------------------------------------------------------------------------------------------
def test_grouped_cutoff_inside_a_group_raises_like_the_reference(cimpl):
    """spec §4: under 'grouped' a k strictly inside a tie group of any query (query 1
    here, in a group without relevant items) raises the reference's ValueError."""
    from retrieval_conformance.reference.backend import ReferenceImplementation

    for dtype in (np.float32, np.float64):
        d = np.array([[0, 1, 2, 3, 4], [0, 1, 1, 1, 2]], dtype=dtype)
        rel = np.array([[1, 0, 1, 0, 0], [1, 0, 0, 0, 1]], dtype=bool)
        p = Problem(n_queries=2, n_gallery=5, distances=d, relevance=rel)
        o = Options(ties="grouped", k=2)
        with pytest.raises(ValueError) as ref_err:
            ReferenceImplementation().compute(p, o)
        with pytest.raises(ValueError) as c_err:
            cimpl.compute(p, o)
        assert str(c_err.value) == str(ref_err.value)
        assert "k=2" in str(c_err.value) and "query 1" in str(c_err.value)
        cimpl.compute(p, Options(ties="grouped", k=4))  # a group boundary is fine
    codes = Problem(
        n_queries=1,
        n_gallery=3,
        query_bits=np.zeros((1, 2), np.uint8),
        db_bits=np.array([[0, 0], [1, 0], [0, 1]], np.uint8),
        relevance=np.ones((1, 3), bool),
    )
    with pytest.raises(ValueError, match=r"ranks 2\.\.3"):
        cimpl.compute(codes, Options(ties="grouped", k=2))


def test_grouped_cutoff_check_on_a_large_gallery(cimpl):
    """A small k in a large gallery takes the heap path (the k+1 smallest distances), a large
    k the selection path: both decide 'inside a group' like the reference and report the same
    group."""
    from retrieval_conformance.reference.backend import ReferenceImplementation

    rng = np.random.default_rng(12)
    ref_impl = ReferenceImplementation()
    outcomes = set()
    for case in range(24):
        Q, N = 3, 500
        d = np.round(rng.random((Q, N)) * rng.choice([40, 400, 4000])) / 8
        rel = rng.random((Q, N)) < 0.1
        junk = rng.random((Q, N)) < 0.1
        p = Problem(
            n_queries=Q, n_gallery=N, distances=d.astype(rng.choice([np.float32, np.float64])), relevance=rel, junk=junk
        )
        k = int(rng.choice([1, 2, 5, 9, 20, 300, 449]))
        o = Options(ties="grouped", k=k, ap_rule=str(rng.choice(RULES)), ap_at_k=str(rng.choice(DENOMINATORS)))
        ref, res = run_both(ref_impl.compute, cimpl.compute, p, o)
        if ref is None:
            assert res[0] == res[1]
            outcomes.add("error")
        else:
            assert compare_per_query(ref, res, label=f"case {case} k={k}: ") == []
            outcomes.add("values")
    assert outcomes == {"error", "values"}


def test_nonfinite_distances_rejected(cimpl):
    for bad in (np.nan, np.inf):
        d = np.zeros((2, 4), dtype=np.float32)
        d[1, 2] = bad
        p = Problem(n_queries=2, n_gallery=4, distances=d, relevance=np.ones((2, 4), bool))
        with pytest.raises(ValueError, match=r"distances: expected finite values.*\[1, 2\]"):
            cimpl.compute(p, Options())


def test_inputs_checked_before_the_c_call(cimpl):
    rel = np.ones((2, 3), dtype=bool)
    good = np.zeros((2, 3))
    cases = [
        (dict(distances=good.astype(np.int64), relevance=rel), TypeError, "distances"),
        (dict(distances=np.zeros((2, 4)), relevance=rel), ValueError, "distances: expected shape"),
        (dict(distances=good, relevance=rel.astype(np.uint8)), TypeError, "relevance"),
        (dict(distances=good, relevance=rel, junk=np.zeros((3, 2), bool)), ValueError, "junk"),
        (
            dict(distances=good, query_labels=np.zeros(2, np.int32), db_labels=np.zeros(3, np.int64)),
            TypeError,
            "query_labels",
        ),
        (
            dict(
                distances=good,
                query_labels=np.zeros((2, 2), np.uint8),
                db_labels=np.zeros((3, 2), np.uint8),
                query_cams=np.zeros(2, np.int64),
                db_cams=np.zeros(3, np.int64),
            ),
            ValueError,
            "query_cams",
        ),
        (
            dict(query_bits=np.zeros((2, 4), np.uint8), db_bits=np.zeros((3, 5), np.uint8), relevance=rel),
            ValueError,
            "db_bits",
        ),
        (dict(relevance=rel), ValueError, "problem"),
    ]
    for kw, exc, text in cases:
        with pytest.raises(exc, match=text):
            cimpl.compute(Problem(n_queries=2, n_gallery=3, **kw), Options())
    p = Problem(n_queries=2, n_gallery=3, distances=good, relevance=rel)
    for o, text in [
        (Options(ties="random"), "ties"),
        (Options(k=0), "k"),
        (Options(max_rank=-1), "max_rank"),
        (Options(radius=float("nan")), "radius"),
        (Options(ap_at_k="k"), "ap_at_k"),
    ]:
        with pytest.raises(ValueError, match=text):
            cimpl.compute(p, o)


def test_non_contiguous_inputs_are_copied_not_misread(cimpl):
    rng = np.random.default_rng(5)
    d = rng.random((6, 9))
    rel = rng.random((6, 9)) < 0.4
    contiguous = cimpl.compute(Problem(n_queries=6, n_gallery=9, distances=d, relevance=rel), Options())
    strided = cimpl.compute(
        Problem(n_queries=6, n_gallery=9, distances=np.asfortranarray(d), relevance=np.asfortranarray(rel)), Options()
    )
    assert same_bits(contiguous, strided, "Fortran-ordered inputs") == []
    wide = np.zeros((6, 18))
    wide[:, ::2] = d
    view = wide[:, ::2]  # same values, every other column of a wider array
    assert not view.flags.c_contiguous
    sliced = cimpl.compute(Problem(n_queries=6, n_gallery=9, distances=view, relevance=rel), Options())
    assert same_bits(contiguous, sliced, "strided view") == []


def test_not_built_reason(c_backend, monkeypatch):
    """Without the shared object the implementation says why and how to build it."""
    monkeypatch.delenv("RC_C_LIBRARY", raising=False)  # (the sanitizer run points it at its own build)
    from retrieval_conformance.implementations.c import library as c_library  # where the load state lives

    monkeypatch.setattr(c_library, "_LIB", None)
    monkeypatch.setattr(c_library, "_LOAD_ERROR", None)
    monkeypatch.setattr(c_library.importlib.util, "find_spec", lambda name: None)
    reason = c_backend.CImplementation().unavailable_reason()
    assert reason.startswith("C library not built (no compiler at install, or RC_BUILD_C=0)")
    assert "RC_BUILD_C=1 pip install" in reason
    with pytest.raises(RuntimeError, match="unavailable"):
        c_backend.CImplementation().compute(
            Problem(n_queries=1, n_gallery=1, distances=np.zeros((1, 1)), relevance=np.ones((1, 1), bool)), Options()
        )


def test_no_queries_by_gallery_allocation(cimpl):
    """Labels and cameras go to C as they are: nothing of size Q x N is allocated in Python."""
    rng = np.random.default_rng(2)
    Q, N = 200, 20000
    p = Problem(
        n_queries=Q,
        n_gallery=N,
        distances=rng.random((Q, N)).astype(np.float32),
        query_labels=rng.integers(0, 500, Q),
        db_labels=rng.integers(-1, 500, N),
        query_cams=rng.integers(0, 6, Q),
        db_cams=rng.integers(0, 6, N),
        junk_ids=(-1,),
    )
    discount_table(N)  # the process-wide discount cache (of size N, not Q x N) is built once, before
    tracemalloc.start()
    try:
        cimpl.compute(p, Options(ties="expected", max_rank=10))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < Q * N // 8, f"peak Python allocation {peak} bytes for Q x N = {Q * N}"


def test_c_source_compiles_without_warnings(c_backend, tmp_path):
    """The build flags of setup.py (every unit of csrc/, its header on the include path) plus
    -Wall -Wextra -Werror, with and without OpenMP (setup.py falls back to building without)."""
    import glob
    import sysconfig

    configured = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    cc = shutil.which(configured) or shutil.which("cc") or shutil.which("gcc")
    csrc = os.path.join(os.path.dirname(os.path.dirname(c_backend.__file__)), "csrc")
    sources = sorted(glob.glob(os.path.join(csrc, "*.c")))
    if cc is None or not sources:
        pytest.skip("no C compiler or no C source here")
    for openmp in (["-fopenmp"], []):
        cmd = [
            cc,
            "-O3",
            "-std=c99",
            *openmp,
            "-fPIC",
            "-shared",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{csrc}",
            *sources,
            "-o",
            str(tmp_path / "rc.so"),
        ]
        res = subprocess.run(cmd, capture_output=True, text=True)
        assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
