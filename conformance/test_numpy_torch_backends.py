"""The numpy and torch implementations against an independent brute-force oracle, the
reference, and each other (COMMON "Exact per-query semantics"; spec §4-§7).

* ``oracle_query`` below is a slow, literal reading of the per-query semantics: concrete
  policies rank the items and count; ``expected`` averages a concrete ranking over every
  arrangement of every tie group (brute force, tiny inputs only); ``grouped`` gives every
  item its group's end rank.  It shares no code with the implementations or the reference.
* Agreement rule (the issue's): bit for bit where the exact value is a float64, within
  1e-12 otherwise.
* torch is skipped when it is not installed, unless ``RC_REQUIRE_TORCH=1`` (or
  ``RC_REQUIRE=torch``), which turns the skip into a failure.

The numerics of the shared vectorised code (block sizes, float widths, large tie groups,
the sort key, the tables) are tested in ``test_vector_numerics``, with the helpers here.
"""
from __future__ import annotations

import itertools
import sys
from fractions import Fraction
from typing import Dict, List, Sequence

import numpy as np
import pytest
from retrieval_conformance.conformance.requirements import require_implementation
from retrieval_conformance.implementations.numpy_backend import NumpyImplementation
from retrieval_conformance.implementations.relevance_blocks import junk_block, relevance_block
from retrieval_conformance.implementations.torch_backend import TorchImplementation
from retrieval_conformance.reference.contract.conventions import CONCRETE_POLICIES, TIE_POLICIES
from retrieval_conformance.reference.contract.problem import (
    ARRAY_FIELDS,
    OPTIONAL_FIELDS,
    VALUE_FIELDS,
    Options,
    PerQuery,
    Problem,
)

TOL = 1e-12
TIES = TIE_POLICIES
FIELDS = VALUE_FIELDS
NUMPY = NumpyImplementation()


def torch_impl() -> TorchImplementation:
    require_implementation("torch")
    return TorchImplementation()


def available_impls() -> list:
    """numpy, and torch unless it is skipped (not installed and not required)."""
    impls = [NUMPY]
    try:
        impls.append(torch_impl())
    except pytest.skip.Exception:
        pass
    return impls


# -- the oracle ------------------------------------------------------------------------------
def _concrete(ranked: Sequence[bool], opts: Options) -> Dict[str, object]:
    """Metrics of one concrete ranking of the non-junk items (relevance in rank order)."""
    ranks = [r for r, rel in enumerate(ranked, 1) if rel]
    R = len(ranks)
    if R == 0:
        return _zeros(opts)

    def term(i, r):
        if opts.ap_rule == "precision_sum":
            return Fraction(i, r)
        return Fraction(1) if r == 1 else (Fraction(i, r) + Fraction(i - 1, r - 1)) / 2

    terms = [term(i, r) for i, r in enumerate(ranks, 1)]
    k = opts.k
    hits = lambda K: sum(1 for r in ranks if r <= K)  # noqa: E731
    if k is None:
        ap = sum(terms) / R
    elif opts.ap_at_k == "dcmh":
        L = min(k, R)
        ap = sum(terms[:L]) / L
    else:
        s = sum(t for t, r in zip(terms, ranks) if r <= k)
        den = {"hits": hits(k), "r": R, "min_k_r": min(k, R)}[opts.ap_at_k]
        ap = Fraction(s) / den if den else Fraction(0)
    hk = R if k is None else hits(k)
    return dict(ap=Fraction(ap), hits_at_k=Fraction(hk),
                precision_at_k=Fraction(hk, k if k is not None else len(ranked)),
                recall_at_k=Fraction(hk, R), inp=Fraction(R, ranks[-1]),
                r_precision=Fraction(hits(R), R),
                cmc=[Fraction(int(ranks[0] <= j + 1)) for j in range(opts.max_rank)])


def _zeros(opts: Options) -> Dict[str, object]:
    out = {f: Fraction(0) for f in FIELDS}
    out["cmc"] = [Fraction(0)] * opts.max_rank
    return out


def oracle_query(dist: Sequence, rel: Sequence[bool], junk: Sequence[bool], opts: Options, q: int = 0):
    """Exact metrics of one query (Fractions), straight from the definitions."""
    kept = [i for i in range(len(dist)) if not junk[i]]
    levels = sorted({dist[i] for i in kept})
    groups = [[bool(rel[i]) for i in kept if dist[i] == v] for v in levels]  # gallery order
    R = sum(map(sum, groups))
    if opts.ties == "grouped" and opts.k is not None:
        before = 0
        for g in groups:
            if before < opts.k < before + len(g):
                raise ValueError(f"grouped cut-off inside a group of query {q}")
            before += len(g)
    out = _grouped(groups, opts) if opts.ties == "grouped" else None
    if R == 0:
        out = _zeros(opts)
    elif opts.ties == "stable":
        out = _concrete([x for g in groups for x in g], opts)
    elif opts.ties == "reverse":
        out = _concrete([x for g in groups for x in g[::-1]], opts)
    elif opts.ties in CONCRETE_POLICIES:  # optimistic, pessimistic
        first = opts.ties == "optimistic"
        out = _concrete([x for g in groups for x in sorted(g, reverse=first)], opts)
    elif opts.ties == "expected":
        out = _brute_force_expectation(groups, opts)
    if opts.radius is not None:
        within = [i for i in kept if dist[i] <= opts.radius]
        hit = sum(1 for i in within if rel[i])
        out["precision_at_radius"] = Fraction(hit, len(within)) if within and R else Fraction(0)
        out["recall_at_radius"] = Fraction(hit, R) if R else Fraction(0)
    return out


def _brute_force_expectation(groups: List[List[bool]], opts: Options):
    """Average of the concrete metrics over every arrangement of every tie group (uniform:
    each arrangement of m relevant among n positions stands for m!(n-m)! orders)."""
    per_group = []
    for g in groups:
        n, m = len(g), sum(g)
        per_group.append([[p in pos for p in range(n)] for pos in itertools.combinations(range(n), m)])
    total, count = None, 0
    for combo in itertools.product(*per_group):
        values = _concrete([x for part in combo for x in part], opts)
        if total is None:
            total = values
        else:
            total = {f: ([a + b for a, b in zip(total[f], values[f])] if f == "cmc" else total[f] + values[f])
                     for f in total}
        count += 1
    return {f: ([v / count for v in total[f]] if f == "cmc" else total[f] / count) for f in total}


def _grouped(groups: List[List[bool]], opts: Options):
    """Every item of a group takes the group's end rank; the trapezoid term of a group's items
    averages (h+m)/e and h/(e-1) (1 at e = 1), as the reference does."""
    R = sum(map(sum, groups))
    if R == 0:
        return _zeros(opts)
    items = []  # (end rank, term) per relevant item, in rank order
    before = h = 0
    for g in groups:
        m, e = sum(g), before + len(g)
        prec = Fraction(h + m, e)
        t = prec if opts.ap_rule == "precision_sum" else (
            Fraction(1) if e == 1 else (prec + Fraction(h, e - 1)) / 2)
        items += [(e, t)] * m
        before, h = e, h + m
    k = opts.k
    hits = lambda K: sum(1 for e, _ in items if e <= K)  # noqa: E731
    if k is None:
        ap = sum(t for _, t in items) / R
    elif opts.ap_at_k == "dcmh":
        L = min(k, R)
        ap = sum(t for _, t in items[:L]) / L
    else:
        s = sum(t for e, t in items if e <= k)
        den = {"hits": hits(k), "r": R, "min_k_r": min(k, R)}[opts.ap_at_k]
        ap = Fraction(s) / den if den else Fraction(0)
    hk = R if k is None else hits(k)
    n_kept = sum(map(len, groups))
    return dict(ap=Fraction(ap), hits_at_k=Fraction(hk), precision_at_k=Fraction(hk, k or n_kept),
                recall_at_k=Fraction(hk, R), inp=Fraction(R, items[-1][0]),
                r_precision=Fraction(hits(R), R),
                cmc=[Fraction(int(items[0][0] <= j + 1)) for j in range(opts.max_rank)])


def oracle(problem: Problem, opts: Options) -> Dict[str, list]:
    """Exact per-query metrics of a problem, as lists of Fractions per field."""
    dist = _distances(problem)
    rel = relevance_block(problem, 0, problem.n_queries)
    junk = junk_block(problem, 0, problem.n_queries)
    rows = [oracle_query([float(x) for x in dist[q]], rel[q], junk[q], opts, q)
            for q in range(problem.n_queries)]
    out = {f: [r[f] for r in rows] for f in rows[0]}
    out["n_relevant"] = [int((rel[q] & ~junk[q]).sum()) for q in range(problem.n_queries)]
    return out


def _distances(problem: Problem) -> np.ndarray:
    if problem.distances is not None:
        return problem.distances
    q, d = problem.query_bits.astype(int), problem.db_bits.astype(int)
    return (q[:, None, :] != d[None, :, :]).sum(-1)


# -- comparison ------------------------------------------------------------------------------
def mismatches(got: PerQuery, exact: Dict[str, list], label: str = "") -> List[str]:
    """Where ``got`` breaks the rule: bit-exact where the exact value is a float64, else 1e-12."""
    bad = []
    if "n_relevant" in exact and list(got.n_relevant) != list(exact["n_relevant"]):
        bad.append(f"{label} n_relevant {got.n_relevant.tolist()} != {exact['n_relevant']}")
    fields = list(FIELDS) + ["cmc"] + [f for f in OPTIONAL_FIELDS if f in exact]
    for f in fields:
        values = np.asarray(getattr(got, f), dtype=np.float64)
        want = exact[f]
        for idx in np.ndindex(values.shape):
            w = want[idx[0]] if len(idx) == 1 else want[idx[0]][idx[1]]
            fw = float(w)
            v = float(values[idx])
            ok = v == fw if Fraction(fw) == w else abs(v - fw) <= TOL
            if not ok:
                bad.append(f"{label} {f}{list(idx)}: got {v!r}, exact {w} = {fw!r}")
    return bad


def same_bits(a: PerQuery, b: PerQuery, label: str = "") -> List[str]:
    bad = []
    for f in ARRAY_FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        if x is None and y is None:
            continue
        if not np.array_equal(np.asarray(x), np.asarray(y)):
            bad.append(f"{label} {f}: {np.asarray(x).tolist()} != {np.asarray(y).tolist()}")
    return bad


# -- generated problems ----------------------------------------------------------------------------
def tie_heavy_problem(rng: np.random.Generator, max_q: int = 6, max_n: int = 9) -> Problem:
    """Few distinct distances (float32/float64 with -0.0 and 0.0, or ±1 codes of 2-8 bits),
    every relevance input, every kind of junk, queries without relevant items."""
    Q, N = int(rng.integers(1, max_q + 1)), int(rng.integers(1, max_n + 1))
    kw: Dict[str, object] = {}
    kind = rng.integers(0, 3)
    if kind == 2:
        bits = int(rng.integers(2, 9))
        kw["query_bits"] = rng.integers(0, 2, (Q, bits)).astype(np.uint8)
        kw["db_bits"] = rng.integers(0, 2, (N, bits)).astype(np.uint8)
    else:
        levels = np.array([-0.0, 0.0, 0.5, -1.5, 2.0, 0.1])[: int(rng.integers(1, 7))]
        d = rng.choice(levels, size=(Q, N))
        kw["distances"] = np.ascontiguousarray(d.astype(np.float32 if kind == 0 else np.float64))
    which = rng.integers(0, 3)
    if which == 0:
        kw["relevance"] = rng.random((Q, N)) < rng.random()
    elif which == 1:
        kw["query_labels"] = rng.integers(0, 3, Q).astype(np.int64)
        kw["db_labels"] = rng.integers(-1, 3, N).astype(np.int64)
        if rng.random() < 0.5:
            kw["query_cams"] = rng.integers(0, 2, Q).astype(np.int64)
            kw["db_cams"] = rng.integers(0, 2, N).astype(np.int64)
        if rng.random() < 0.3:
            kw["junk_ids"] = (-1,)
    else:
        kw["query_labels"] = rng.integers(0, 2, (Q, 3)).astype(np.uint8)
        kw["db_labels"] = rng.integers(0, 2, (N, 3)).astype(np.uint8)
    if rng.random() < 0.3:
        kw["junk"] = rng.random((Q, N)) < 0.25
    return Problem(n_queries=Q, n_gallery=N, **kw)


def option_grid(ties: str, ks=(None, 1, 2, 3, 5, 12), max_rank: int = 6):
    """Every ap_rule x k x ap_at_k for one tie policy (radius on half of them)."""
    out = []
    for n, (rule, k) in enumerate(itertools.product(("precision_sum", "trapezoid"), ks)):
        for den in ("hits",) if k is None else ("hits", "r", "min_k_r", "dcmh"):
            out.append(Options(ties=ties, ap_rule=rule, k=k, ap_at_k=den, max_rank=max_rank,
                               radius=(None, 0.0, 0.5, 3.0)[n % 4]))
    return out


def _expect_same_outcome(impl, problem, opts, want):
    """impl.compute(...) when ``want`` is a result; a ValueError when ``want`` is one."""
    if isinstance(want, ValueError):
        with pytest.raises(ValueError, match="k=.*tie group"):
            impl.compute(problem, opts)
        return None
    return impl.compute(problem, opts)


def _oracle_or_error(problem, opts):
    try:
        return oracle(problem, opts)
    except ValueError as exc:
        return exc


# -- tests -------------------------------------------------------------------------------------
@pytest.mark.parametrize("ties", TIES)
def test_numpy_matches_brute_force_oracle(ties):
    """numpy == the oracle, bit for bit where exact, for tie-heavy inputs and every option."""
    rng = np.random.default_rng(100 + TIES.index(ties))
    bad = []
    for n in range(14):
        problem = tie_heavy_problem(rng)
        for opts in option_grid(ties):
            want = _oracle_or_error(problem, opts)
            got = _expect_same_outcome(NUMPY, problem, opts, want)
            if got is not None:
                bad += mismatches(got, want, f"problem {n} {opts}")
    assert bad == [], "\n".join(bad[:20])


@pytest.mark.parametrize("ties", TIES)
def test_torch_equals_numpy_and_oracle(ties):
    """torch == numpy bit for bit and == the oracle; errors alike."""
    impl = torch_impl()
    rng = np.random.default_rng(200 + TIES.index(ties))
    bad = []
    for n in range(5):
        problem = tie_heavy_problem(rng, max_q=8)
        for opts in option_grid(ties, ks=(None, 2, 5)):
            want = _oracle_or_error(problem, opts)
            got = _expect_same_outcome(impl, problem, opts, want)
            if got is not None:
                bad += mismatches(got, want, f"problem {n} {opts}")
                bad += same_bits(got, NUMPY.compute(problem, opts), f"torch vs numpy, problem {n} {opts}")
    assert bad == [], "\n".join(bad[:20])


def reference_impl():
    backend = pytest.importorskip("retrieval_conformance.reference.backend")
    return backend.ReferenceImplementation()


@pytest.mark.parametrize("ties", TIES)
def test_numpy_and_torch_match_reference(ties):
    """Both equal the reference's exact Fractions (and raise its errors, same text)."""
    ref = reference_impl()
    impls = available_impls()
    rng = np.random.default_rng(300 + TIES.index(ties))
    bad = []
    for n in range(6):
        problem = tie_heavy_problem(rng, max_q=10, max_n=14)
        for opts in option_grid(ties, ks=(None, 1, 4, 9)):
            try:
                want = ref.compute(problem, opts)
            except ValueError as exc:
                for impl in impls:
                    with pytest.raises(ValueError) as info:
                        impl.compute(problem, opts)
                    assert str(info.value) == str(exc)
                continue
            exact = dict(want.exact, n_relevant=list(want.n_relevant))
            for impl in impls:
                bad += mismatches(impl.compute(problem, opts), exact, f"{impl.name} problem {n} {opts}")
    assert bad == [], "\n".join(bad[:20])


def test_oracle_agrees_with_reference_on_expected():
    """The brute-force oracle and the reference's closed forms agree (keeps the oracle honest)."""
    ref = reference_impl()
    rng = np.random.default_rng(5)
    for _ in range(4):
        problem = tie_heavy_problem(rng)
        for opts in option_grid("expected", ks=(None, 2, 5)):
            want = ref.compute(problem, opts).exact
            got = oracle(problem, opts)
            for f in FIELDS + ("cmc",):
                assert got[f] == want[f], (f, opts)


def test_grouped_cutoff_error_names_first_query_like_reference():
    """ties='grouped' with k inside a tie group: the reference's ValueError, first query."""
    dist = np.array([[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 1.0, 3.0], [1.0, 1.0, 1.0, 1.0]])
    rel = np.array([[True, False, True, False]] * 3)
    problem = Problem(n_queries=3, n_gallery=4, distances=dist, relevance=rel)
    opts = Options(ties="grouped", k=2)
    impls = available_impls() + [NumpyImplementation(block_bytes=1)]
    for impl in impls:
        with pytest.raises(ValueError, match=r"k=2 falls inside a tie group \(ranks 2\.\.3\) of query 1;"):
            impl.compute(problem, opts)
    for k in (1, 3):  # boundaries for queries 0 and 1, inside query 2's single group
        with pytest.raises(ValueError, match=rf"k={k} falls inside a tie group \(ranks 1\.\.4\) of query 2;"):
            NUMPY.compute(problem, Options(ties="grouped", k=k))
    for k in (4, 10):  # the end of every group, or beyond the gallery
        NUMPY.compute(problem, Options(ties="grouped", k=k))
    junk = np.zeros((3, 4), dtype=bool)
    junk[1, 2] = junk[2, 1:] = True  # query 1: groups {0}, {1}, {3}; query 2: one item left
    problem = Problem(n_queries=3, n_gallery=4, distances=dist, relevance=rel, junk=junk)
    got = NUMPY.compute(problem, opts)
    want = reference_impl().compute(problem, opts)
    assert mismatches(got, dict(want.exact, n_relevant=list(want.n_relevant))) == []


def test_torch_unavailable_reason(monkeypatch):
    """Without torch the implementation says why and how to install it."""
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    assert TorchImplementation().unavailable_reason() == (
        "torch is not installed; pip install 'retrieval-conformance[torch]' (torch==2.13.0)"
    )
    monkeypatch.undo()
    if TorchImplementation().unavailable_reason() is None:
        assert TorchImplementation.speed_rank == 20 and NumpyImplementation.speed_rank == 10
