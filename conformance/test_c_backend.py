"""The C implementation (``implementations/_rc_core.c`` through ctypes) against two yardsticks.

1. A small, slow oracle written here from the per-query semantics (COMMON brief, CONVENTIONS
   §4-§7), independent of the reference code: concrete tie policies sort the kept items with an
   explicit key, ``expected`` averages over every arrangement of every tie group (brute force),
   ``grouped`` gives each item its group's end rank.  Exact ``Fraction`` arithmetic.
2. The reference implementation (exact ``Fraction`` values), on larger and tie-heavy inputs.

Agreement means: equal to the exact value rounded to float64 when that rounding is exact (bit
for bit), within 1e-12 otherwise.  Also checked: identical arrays for any thread count, for the
generic and the CPU-accelerated code paths and for any query block size; the grouped cut-off
error; validation before the C call; the "not built" reason; no (Q, N) allocation.

The tests are skipped when the library is not built, or fail with ``RC_REQUIRE=c``.
"""
from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tracemalloc
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from retrieval_conformance.conformance.crosscheck import compare_per_query
from retrieval_conformance.conformance.requirements import require_implementation
from retrieval_conformance.reference.problem import Options, Problem

TIES = ("stable", "reverse", "optimistic", "pessimistic", "expected", "grouped")
RULES = ("precision_sum", "trapezoid")
DENOMINATORS = ("hits", "r", "min_k_r", "dcmh")
TOL = 1e-12


@pytest.fixture(scope="module")
def c_backend():
    require_implementation("c")
    from retrieval_conformance.implementations import c_backend as module

    return module


@pytest.fixture(scope="module")
def cimpl(c_backend):
    return c_backend.CImplementation()


# ---------------------------------------------------------------------------------------------
# the slow oracle (independent of reference/)
# ---------------------------------------------------------------------------------------------
def _row_inputs(p: Problem, q: int):
    """Distances, relevance and junk of query q as plain Python lists."""
    n = p.n_gallery
    if p.distances is not None:
        dist = [float(v) for v in p.distances[q]]
    else:
        qb = p.query_bits[q].tolist()
        dist = [sum(int(a != b) for a, b in zip(qb, p.db_bits[j].tolist())) for j in range(n)]
    if p.relevance is not None:
        rel = [bool(v) for v in p.relevance[q]]
    elif p.query_labels.ndim == 2:  # multi-hot: share at least one label
        ql = p.query_labels[q].tolist()
        rel = [any(a and b for a, b in zip(ql, p.db_labels[j].tolist())) for j in range(n)]
    else:
        rel = [int(p.db_labels[j]) == int(p.query_labels[q]) for j in range(n)]
    junk = [bool(p.junk[q, j]) if p.junk is not None else False for j in range(n)]
    if p.query_cams is not None:  # same id and same camera
        for j in range(n):
            if int(p.db_labels[j]) == int(p.query_labels[q]) and int(p.db_cams[j]) == int(p.query_cams[q]):
                junk[j] = True
    for j in range(n):
        if p.junk_ids and int(p.db_labels[j]) in p.junk_ids:
            junk[j] = True
    return dist, rel, junk


def _term(i, r, rule):
    """AP term of the i-th relevant item at rank r."""
    if rule == "precision_sum":
        return Fraction(i) / r
    if r == 1:
        return Fraction(1)
    return (Fraction(i) / r + Fraction(i - 1) / (r - 1)) / 2


def _from_ranks(ranks, n_kept, o: Options):
    """Every per-query metric of a concrete ranking (1-based ranks of the relevant items)."""
    R = len(ranks)
    zero = Fraction(0)
    if R == 0:
        return dict(ap=zero, hits_at_k=zero, precision_at_k=zero, recall_at_k=zero,
                    cmc=[zero] * o.max_rank, inp=zero, r_precision=zero)
    terms = [_term(i, r, o.ap_rule) for i, r in enumerate(ranks, 1)]
    k = o.k
    hk = R if k is None else sum(r <= k for r in ranks)
    if k is None:
        ap = sum(terms) / R
    elif o.ap_at_k == "dcmh":
        L = min(k, R)
        ap = sum(terms[:L]) / L
    else:
        s = sum(terms[:hk], zero)
        den = {"hits": hk, "r": R, "min_k_r": min(k, R)}[o.ap_at_k]
        ap = s / den if den else zero
    return dict(
        ap=ap, hits_at_k=Fraction(hk), precision_at_k=Fraction(hk, k if k is not None else n_kept),
        recall_at_k=Fraction(hk, R), cmc=[Fraction(int(ranks[0] <= j + 1)) for j in range(o.max_rank)],
        inp=Fraction(R, ranks[-1]), r_precision=Fraction(sum(r <= R for r in ranks), R),
    )


def _groups(dist, rel, kept):
    """Tie groups of the kept items: lists of gallery indices (gallery order), closest first."""
    ordered = sorted(kept, key=lambda j: (dist[j], j))
    return [list(g) for _, g in itertools.groupby(ordered, key=lambda j: dist[j])]


def _grouped_values(groups, rel, n_kept, o: Options):
    """ties='grouped': each item takes its group's end rank c + n; a relevant item's precision
    is (h + m)/(c + n); trapezoid pairs it with h/(c + n - 1), the reference's convention."""
    R = sum(rel[j] for g in groups for j in g)
    zero = Fraction(0)
    if R == 0:
        return _from_ranks([], n_kept, o)
    items = []  # (end rank, AP term) per relevant item, in ranking order
    c = h = 0
    for g in groups:
        n, m = len(g), sum(rel[j] for j in g)
        e = c + n
        prec = Fraction(h + m, e)
        if o.ap_rule == "precision_sum":
            t = prec
        else:
            t = Fraction(1) if e == 1 else (prec + Fraction(h, e - 1)) / 2
        items += [(e, t)] * m
        c, h = e, h + m
    k = o.k
    hk = R if k is None else sum(e <= k for e, _ in items)
    if k is None:
        ap = sum(t for _, t in items) / R
    elif o.ap_at_k == "dcmh":
        L = min(k, R)
        ap = sum(t for _, t in items[:L]) / L
    else:
        s = sum((t for e, t in items if e <= k), zero)
        den = {"hits": hk, "r": R, "min_k_r": min(k, R)}[o.ap_at_k]
        ap = s / den if den else zero
    ends = [e for e, _ in items]
    return dict(
        ap=ap, hits_at_k=Fraction(hk), precision_at_k=Fraction(hk, k if k is not None else n_kept),
        recall_at_k=Fraction(hk, R), cmc=[Fraction(int(ends[0] <= j + 1)) for j in range(o.max_rank)],
        inp=Fraction(R, ends[-1]), r_precision=Fraction(sum(e <= R for e in ends), R),
    )


def _expected_values(groups, rel, n_kept, o: Options):
    """ties='expected' by brute force: every placement of each group's relevant items among
    its positions is equally likely; average every metric over all combinations."""
    placements = []
    for g in groups:
        n, m = len(g), sum(rel[j] for j in g)
        placements.append(list(itertools.combinations(range(n), m)))
    total = None
    count = 0
    for combo in itertools.product(*placements):
        ranks, c = [], 0
        for g, pos in zip(groups, combo):
            ranks += [c + p + 1 for p in pos]
            c += len(g)
        v = _from_ranks(ranks, n_kept, o)
        if total is None:
            total = v
        else:
            total = {key: ([a + b for a, b in zip(total[key], v[key])] if key == "cmc" else total[key] + v[key])
                     for key in v}
        count += 1
    return {key: ([x / count for x in val] if key == "cmc" else val / count) for key, val in total.items()}


def _concrete_key(ties, dist, rel):
    """Sort key of a concrete tie policy: distance, then the policy's order inside a group."""
    return {
        "stable": lambda j: (dist[j], j),
        "reverse": lambda j: (dist[j], -j),
        "optimistic": lambda j: (dist[j], not rel[j], j),
        "pessimistic": lambda j: (dist[j], rel[j], j),
    }[ties]


def oracle(p: Problem, o: Options):
    """Exact per-query values of every query, or ValueError for a grouped cut-off inside a group."""
    out = []
    for q in range(p.n_queries):
        dist, rel, junk = _row_inputs(p, q)
        kept = [j for j in range(p.n_gallery) if not junk[j]]
        groups = _groups(dist, rel, kept)
        if o.ties == "grouped" and o.k is not None:
            c = 0
            for g in groups:
                if c < o.k < c + len(g):
                    raise ValueError(f"k inside a tie group of query {q}")
                c += len(g)
        if o.ties == "expected":
            v = _expected_values(groups, rel, len(kept), o)
        elif o.ties == "grouped":
            v = _grouped_values(groups, rel, len(kept), o)
        else:
            order = sorted(kept, key=_concrete_key(o.ties, dist, rel))
            v = _from_ranks([i + 1 for i, j in enumerate(order) if rel[j]], len(kept), o)
        v["n_relevant"] = sum(rel[j] for j in kept)
        if o.radius is not None:
            within = [j for j in kept if dist[j] <= o.radius]
            rw = sum(rel[j] for j in within)
            v["precision_at_radius"] = Fraction(rw, len(within)) if within else Fraction(0)
            v["recall_at_radius"] = Fraction(rw, v["n_relevant"]) if v["n_relevant"] else Fraction(0)
        out.append(v)
    return out


def assert_matches_oracle(pq, values, o: Options, label=""):
    def check(name, want, got):
        f = float(want)
        if Fraction(f) == want:
            assert got == f, f"{label} {name}: got {got!r}, exact {want} = {f!r}"
        else:
            assert abs(got - f) <= TOL, f"{label} {name}: got {got!r}, exact {want}"

    for q, v in enumerate(values):
        assert int(pq.n_relevant[q]) == v["n_relevant"], f"{label} n_relevant[{q}]"
        for name in ("ap", "hits_at_k", "precision_at_k", "recall_at_k", "inp", "r_precision"):
            check(f"{name}[{q}]", v[name], float(getattr(pq, name)[q]))
        for j, want in enumerate(v["cmc"]):
            check(f"cmc[{q},{j}]", want, float(pq.cmc[q, j]))
        if o.radius is not None:
            check(f"precision_at_radius[{q}]", v["precision_at_radius"], float(pq.precision_at_radius[q]))
            check(f"recall_at_radius[{q}]", v["recall_at_radius"], float(pq.recall_at_radius[q]))


# ---------------------------------------------------------------------------------------------
# random problems, built directly as validated Problem objects
# ---------------------------------------------------------------------------------------------
def random_problem(rng, max_gallery=10, max_queries=4, wide=False) -> Problem:
    """Tie-heavy or continuous distances (float32/64) or codes; every relevance and junk input.

    ``wide``: codes of 65-140 bits and multi-hot rows of 70 labels (several uint64 words).
    """
    Q, N = int(rng.integers(1, max_queries + 1)), int(rng.integers(1, max_gallery + 1))
    kw = {}
    kind = rng.choice(["levels", "continuous", "codes"])
    if kind == "levels":
        d = rng.integers(0, int(rng.integers(1, 5)), size=(Q, N)) * 0.25
        kw["distances"] = d.astype(rng.choice([np.float32, np.float64]))
    elif kind == "continuous":
        kw["distances"] = rng.standard_normal((Q, N)).astype(rng.choice([np.float32, np.float64]))
    else:
        B = int(rng.integers(65, 141)) if wide else int(rng.integers(1, 9))
        kw["query_bits"] = rng.integers(0, 2, (Q, B)).astype(np.uint8)
        kw["db_bits"] = rng.integers(0, 2, (N, B)).astype(np.uint8)
    rel_kind = rng.choice(["matrix", "ids", "multi"])
    if rel_kind == "matrix":
        kw["relevance"] = rng.random((Q, N)) < rng.random()
    elif rel_kind == "ids":
        kw["query_labels"] = rng.integers(-1, 3, Q).astype(np.int64)
        kw["db_labels"] = rng.integers(-1, 3, N).astype(np.int64)
        if rng.random() < 0.5:
            kw["query_cams"] = rng.integers(0, 2, Q).astype(np.int64)
            kw["db_cams"] = rng.integers(0, 2, N).astype(np.int64)
        if rng.random() < 0.4:
            kw["junk_ids"] = (-1,)
    else:
        L = 70 if wide else int(rng.integers(1, 5))
        kw["query_labels"] = (rng.random((Q, L)) < 0.3).astype(np.uint8)
        kw["db_labels"] = (rng.random((N, L)) < 0.3).astype(np.uint8)
    if rng.random() < 0.3:
        kw["junk"] = rng.random((Q, N)) < 0.25
    return Problem(n_queries=Q, n_gallery=N, **kw)


def random_options(rng, ties, n_gallery) -> Options:
    return Options(
        ties=ties, ap_rule=str(rng.choice(RULES)),
        k=None if rng.random() < 0.3 else int(rng.integers(1, n_gallery + 3)),
        ap_at_k=str(rng.choice(DENOMINATORS)), max_rank=int(rng.integers(1, 12)),
        radius=None if rng.random() < 0.5 else float(rng.integers(0, 6)) * 0.5,
    )


def run_both(fn_ref, fn_c, p, o):
    """(ref, c) results of ``fn(p, o)``, or (None, both ValueError messages) when the
    reference raises (then the C implementation must raise too)."""
    try:
        ref = fn_ref(p, o)
    except ValueError as exc:
        with pytest.raises(ValueError) as info:
            fn_c(p, o)
        return None, (str(exc), str(info.value))
    return ref, fn_c(p, o)


# ---------------------------------------------------------------------------------------------
# agreement
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ties", TIES)
def test_matches_slow_oracle(cimpl, ties):
    """Per-query semantics (COMMON brief): C equals the independent brute-force oracle."""
    rng = np.random.default_rng(100 + TIES.index(ties))
    for case in range(60):
        p = random_problem(rng, max_gallery=7 if ties == "expected" else 12)
        for _ in range(3):
            o = random_options(rng, ties, p.n_gallery)
            ref, res = run_both(oracle, cimpl.compute, p, o)
            if ref is None:
                continue
            assert_matches_oracle(res, ref, o, label=f"case {case} {o}")


@pytest.mark.parametrize("ties", TIES)
def test_matches_reference(cimpl, ties):
    """Every option and input kind, against the reference (same error text when it raises)."""
    from retrieval_conformance.reference.backend import ReferenceImplementation

    ref_impl = ReferenceImplementation()
    rng = np.random.default_rng(200 + TIES.index(ties))
    for case in range(40):
        p = random_problem(rng, max_gallery=25, max_queries=5, wide=case % 4 == 0)
        for _ in range(3):
            o = random_options(rng, ties, p.n_gallery)
            ref, res = run_both(ref_impl.compute, cimpl.compute, p, o)
            if ref is None:
                assert res[0] == res[1]
                continue
            assert compare_per_query(ref, res, label=f"case {case} {o}: ") == []


def _one_big_group_problem(rng, before, n, m, rel_before):
    """One query: ``before`` items at distance 0 (``rel_before`` relevant), then one tie group
    of ``n`` items at distance 1 with ``m`` relevant, in random gallery positions."""
    N = before + n
    d = np.zeros((1, N))
    d[0, before:] = 1.0
    rel = np.zeros((1, N), dtype=bool)
    rel[0, rng.choice(before, rel_before, replace=False)] = True
    rel[0, before + rng.choice(n, m, replace=False)] = True
    perm = rng.permutation(N)
    return Problem(n_queries=1, n_gallery=N, distances=np.ascontiguousarray(d[:, perm]),
                   relevance=np.ascontiguousarray(rel[:, perm]))


@pytest.mark.parametrize("rule", RULES)
def test_expected_on_large_groups_matches_reference(cimpl, rule):
    """CONVENTIONS §4 closed forms in double-double: hypergeometric cut-offs (hits), the j-th
    relevant item's position (dcmh, INP) and CMC on groups of a few hundred items."""
    from retrieval_conformance.reference.backend import ReferenceImplementation

    ref_impl = ReferenceImplementation()
    rng = np.random.default_rng(7)
    for before, n, m, rel_before, k in [(3, 240, 90, 1, 100), (0, 300, 7, 0, 150), (40, 200, 150, 5, 120),
                                        (10, 260, 30, 0, 5)]:
        p = _one_big_group_problem(rng, before, n, m, rel_before)
        for apk in DENOMINATORS:
            o = Options(ties="expected", ap_rule=rule, k=k, ap_at_k=apk, max_rank=before + n)
            assert compare_per_query(ref_impl.compute(p, o), cimpl.compute(p, o), label=f"{apk} {k}: ") == []


def _dcmh_one_group_exact(n, m, jp, rule):
    """E[sum of the AP terms of the first jp relevant items] / jp for one tie group holding the
    whole gallery (n items, m relevant), to 60 digits.  Position p is relevant with
    probability m/n; the number Y of relevant items before it is then Hypergeometric(n-1, m-1,
    p-1) (exact big integers), and the item counts iff Y < jp."""
    from decimal import Decimal, localcontext

    N, K = n - 1, m - 1
    ck = [comb(K, y) for y in range(jp)]
    cnk = [comb(N - K, t) for t in range(N - K + 1)]
    with localcontext() as ctx:
        ctx.prec = 60
        total = Decimal(0)
        for p in range(1, n + 1):
            d = p - 1
            ys = range(max(0, d - (N - K)), min(jp - 1, d) + 1)
            w0 = sum(ck[y] * cnk[d - y] for y in ys)          # weight of Y <= jp - 1
            w1 = sum(y * ck[y] * cnk[d - y] for y in ys)      # E[Y 1{Y <= jp-1}] * C(N, d)
            scale = Decimal(m) / n / Decimal(comb(N, d))
            ps = (w0 + w1) * scale / p                          # (h + 1 + Y)/(c + p), h = c = 0
            if rule == "precision_sum":
                total += ps
            else:                                               # previous rank; rank 1 counts 1
                prev = w0 * scale if p == 1 else w1 * scale / (p - 1)
                total += (ps + prev) / 2
        return total / jp


@pytest.mark.parametrize("rule", RULES)
def test_expected_dcmh_with_underflowing_probabilities(cimpl, rule):
    """dcmh cut 345 relevant items deep into a group of 1,500 with 350 relevant: P(Y = a) for
    the first draws is about 1e-346 (below the double range) and is carried scaled; the
    result matches a 60-digit evaluation of the definition."""
    n, m, jp = 1500, 350, 345
    rel = np.zeros((1, n), dtype=bool)
    rel[0, np.random.default_rng(4).choice(n, m, replace=False)] = True
    p = Problem(n_queries=1, n_gallery=n, distances=np.ones((1, n)), relevance=rel)
    pq = cimpl.compute(p, Options(ties="expected", ap_rule=rule, k=jp, ap_at_k="dcmh", max_rank=1))
    assert abs(pq.ap[0] - float(_dcmh_one_group_exact(n, m, jp, rule))) <= TOL


def test_seed000_golden_values_through_evaluate(c_backend):
    """CONVENTIONS §10 (seed 000): mAP@5 = 107/180, mAP = 1139/1890, P@5 = 0.6."""
    import retrieval_conformance as rc

    kw = dict(
        query_codes=[[1, -1, 1, 1], [-1, 1, -1, -1], [1, -1, -1, -1]],
        db_codes=[[1, -1, -1, -1], [-1, 1, 1, -1], [1, 1, 1, -1], [-1, -1, 1, 1], [1, 1, -1, -1],
                  [1, 1, 1, -1], [-1, 1, -1, -1]],
        query_labels=[[1, 0, 0], [1, 1, 0], [0, 0, 1]],
        db_labels=[[0, 1, 0], [1, 1, 0], [1, 0, 1], [0, 0, 1], [0, 1, 0], [0, 0, 1], [1, 1, 0]],
        protocol="hashing", implementation="c",
    )
    at5 = rc.evaluate(k=5, **kw)
    np.testing.assert_array_equal(at5.per_query.ap, [11 / 30, 1.0, 5 / 12])
    assert abs(at5.map - 107 / 180) <= 1e-15
    assert at5.precision_at_k == pytest.approx(0.6, abs=1e-15)
    full = rc.evaluate(k=None, **kw)
    assert full.per_query.ap[0] == float(Fraction(122, 315))
    assert abs(full.map - 1139 / 1890) <= 1e-15


# ---------------------------------------------------------------------------------------------
# determinism: threads, CPU features, query blocks
# ---------------------------------------------------------------------------------------------
def _arrays(pq):
    out = {name: getattr(pq, name) for name in ("ap", "n_relevant", "hits_at_k", "precision_at_k",
                                                 "recall_at_k", "cmc", "inp", "r_precision")}
    if pq.precision_at_radius is not None:
        out["precision_at_radius"] = pq.precision_at_radius
        out["recall_at_radius"] = pq.recall_at_radius
    return out


def _assert_identical(a, b, label):
    for name, arr in _arrays(a).items():
        other = _arrays(b)[name]
        assert arr.dtype == other.dtype and np.array_equal(arr, other), f"{label}: {name} differs"


def _medium_problems():
    rng = np.random.default_rng(11)
    Q, N, B = 40, 3000, 24
    codes = Problem(n_queries=Q, n_gallery=N, query_bits=rng.integers(0, 2, (Q, B)).astype(np.uint8),
                    db_bits=rng.integers(0, 2, (N, B)).astype(np.uint8),
                    query_labels=(rng.random((Q, 5)) < 0.3).astype(np.uint8),
                    db_labels=(rng.random((N, 5)) < 0.3).astype(np.uint8))
    ids_q, ids_g = rng.integers(0, 60, Q), rng.integers(-1, 60, N)
    floats = Problem(n_queries=Q, n_gallery=N,
                     distances=np.round(rng.random((Q, N)) * 50).astype(np.float32) / 50,
                     query_labels=ids_q, db_labels=ids_g, query_cams=rng.integers(0, 3, Q),
                     db_cams=rng.integers(0, 3, N), junk_ids=(-1,))
    return {"codes": codes, "floats": floats}


@pytest.mark.parametrize("ties", TIES)
def test_thread_count_does_not_change_results(c_backend, ties):
    """OpenMP over queries, no reduction across queries: 1 and 2 threads give equal arrays."""
    for name, p in _medium_problems().items():
        for k, apk in ((None, "hits"), (37, "hits"), (37, "dcmh"), (500, "min_k_r")):
            o = Options(ties=ties, k=k, ap_at_k=apk, radius=3.0 if name == "codes" else 0.3)
            try:
                one = c_backend.CImplementation(num_threads=1).compute(p, o)
            except ValueError:  # grouped with k inside a tie group
                assert ties == "grouped"
                with pytest.raises(ValueError):
                    c_backend.CImplementation(num_threads=2).compute(p, o)
                continue
            two = c_backend.CImplementation(num_threads=2).compute(p, o)
            _assert_identical(one, two, f"{name} {o}")


def test_rc_num_threads_environment(c_backend, monkeypatch):
    p = _medium_problems()["codes"]
    base = c_backend.CImplementation(num_threads=1).compute(p, Options())
    monkeypatch.setenv("RC_NUM_THREADS", "2")
    assert c_backend.thread_count() == 2
    _assert_identical(base, c_backend.CImplementation().compute(p, Options()), "RC_NUM_THREADS=2")
    monkeypatch.setenv("RC_NUM_THREADS", "two")
    with pytest.raises(ValueError, match="RC_NUM_THREADS"):
        c_backend.CImplementation().compute(p, Options())
    with pytest.raises(ValueError, match="num_threads"):
        c_backend.CImplementation(num_threads=0).compute(p, Options())


@pytest.mark.parametrize("ties", ["stable", "reverse", "expected"])
def test_generic_and_accelerated_paths_agree(c_backend, ties):
    """popcnt/FMA code paths (chosen at run time) give the same arrays as the portable ones."""
    have = c_backend.cpu_features()
    if have == 0:
        pytest.skip("this CPU has neither popcnt nor fma: only the generic path exists")
    impl = c_backend.CImplementation()
    try:
        for p in _medium_problems().values():
            for rule in RULES:
                o = Options(ties=ties, ap_rule=rule)
                c_backend.cpu_features(3)
                fast = impl.compute(p, o)
                c_backend.cpu_features(0)
                generic = impl.compute(p, o)
                _assert_identical(fast, generic, f"{o}")
    finally:
        c_backend.cpu_features(3)


def test_query_blocks_do_not_change_results(c_backend, monkeypatch):
    """Queries go to C in blocks (row offsets into every per-query input)."""
    for p in _medium_problems().values():
        for ties in ("stable", "expected"):
            o = Options(ties=ties, k=50)
            whole = c_backend.CImplementation().compute(p, o)
            monkeypatch.setattr(c_backend, "BLOCK_QUERIES", 7)
            seen = []
            blocked = c_backend.CImplementation().compute(
                p, o, progress=lambda done, total, acc=seen: acc.append(done))
            monkeypatch.undo()
            _assert_identical(whole, blocked, f"blocks {o}")
            assert seen[-1] == p.n_queries and seen == sorted(seen) and len(seen) == -(-p.n_queries // 7)


def _ap_in_child(problem):
    from retrieval_conformance.implementations.c_backend import CImplementation

    return CImplementation(num_threads=2).compute(problem, Options()).ap


def test_forked_child_runs_after_parallel_use_in_the_parent(c_backend):
    """GNU OpenMP's threads do not survive fork(): without the pid check a child forked after a
    parallel call would wait for them forever.  The child runs on one thread instead."""
    import multiprocessing as mp

    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork() here")
    p = _medium_problems()["codes"]
    parent = c_backend.CImplementation(num_threads=2).compute(p, Options())
    with mp.get_context("fork").Pool(1) as pool:
        child = pool.apply_async(_ap_in_child, (p,)).get(timeout=120)
    np.testing.assert_array_equal(child, parent.ap)


# ---------------------------------------------------------------------------------------------
# errors and validation
# ---------------------------------------------------------------------------------------------
def test_grouped_cutoff_inside_a_group_raises_like_the_reference(cimpl):
    """CONVENTIONS §4: under 'grouped' a k strictly inside a tie group of any query (query 1
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
    codes = Problem(n_queries=1, n_gallery=3, query_bits=np.zeros((1, 2), np.uint8),
                    db_bits=np.array([[0, 0], [1, 0], [0, 1]], np.uint8), relevance=np.ones((1, 3), bool))
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
        p = Problem(n_queries=Q, n_gallery=N, distances=d.astype(rng.choice([np.float32, np.float64])),
                    relevance=rel, junk=junk)
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
        (dict(distances=good, query_labels=np.zeros(2, np.int32), db_labels=np.zeros(3, np.int64)),
         TypeError, "query_labels"),
        (dict(distances=good, query_labels=np.zeros((2, 2), np.uint8), db_labels=np.zeros((3, 2), np.uint8),
              query_cams=np.zeros(2, np.int64), db_cams=np.zeros(3, np.int64)), ValueError, "query_cams"),
        (dict(query_bits=np.zeros((2, 4), np.uint8), db_bits=np.zeros((3, 5), np.uint8), relevance=rel),
         ValueError, "db_bits"),
        (dict(relevance=rel), ValueError, "problem"),
    ]
    for kw, exc, text in cases:
        with pytest.raises(exc, match=text):
            cimpl.compute(Problem(n_queries=2, n_gallery=3, **kw), Options())
    p = Problem(n_queries=2, n_gallery=3, distances=good, relevance=rel)
    for o, text in [(Options(ties="random"), "ties"), (Options(k=0), "k"), (Options(max_rank=-1), "max_rank"),
                    (Options(radius=float("nan")), "radius"), (Options(ap_at_k="k"), "ap_at_k")]:
        with pytest.raises(ValueError, match=text):
            cimpl.compute(p, o)


def test_non_contiguous_inputs_are_copied_not_misread(cimpl):
    rng = np.random.default_rng(5)
    d = rng.random((6, 9))
    rel = rng.random((6, 9)) < 0.4
    contiguous = cimpl.compute(Problem(n_queries=6, n_gallery=9, distances=d, relevance=rel), Options())
    strided = cimpl.compute(
        Problem(n_queries=6, n_gallery=9, distances=np.asfortranarray(d), relevance=np.asfortranarray(rel)),
        Options())
    _assert_identical(contiguous, strided, "Fortran-ordered inputs")
    wide = np.zeros((6, 18))
    wide[:, ::2] = d
    view = wide[:, ::2]  # same values, every other column of a wider array
    assert not view.flags.c_contiguous
    sliced = cimpl.compute(Problem(n_queries=6, n_gallery=9, distances=view, relevance=rel), Options())
    _assert_identical(contiguous, sliced, "strided view")


def test_not_built_reason(c_backend, monkeypatch):
    """Without the shared object the implementation says why and how to build it."""
    monkeypatch.delenv("RC_C_LIBRARY", raising=False)  # (the sanitizer run points it at its own build)
    monkeypatch.setattr(c_backend, "_LIB", None)
    monkeypatch.setattr(c_backend, "_LOAD_ERROR", None)
    monkeypatch.setattr(c_backend.importlib.util, "find_spec", lambda name: None)
    reason = c_backend.CImplementation().unavailable_reason()
    assert reason.startswith("C library not built (no compiler at install, or RC_BUILD_C=0)")
    assert "RC_BUILD_C=1 pip install" in reason
    with pytest.raises(RuntimeError, match="unavailable"):
        c_backend.CImplementation().compute(Problem(n_queries=1, n_gallery=1, distances=np.zeros((1, 1)),
                                                    relevance=np.ones((1, 1), bool)), Options())


def test_no_queries_by_gallery_allocation(cimpl):
    """Labels and cameras go to C as they are: nothing of size Q x N is allocated in Python."""
    rng = np.random.default_rng(2)
    Q, N = 200, 20000
    p = Problem(n_queries=Q, n_gallery=N, distances=rng.random((Q, N)).astype(np.float32),
                query_labels=rng.integers(0, 500, Q), db_labels=rng.integers(-1, 500, N),
                query_cams=rng.integers(0, 6, Q), db_cams=rng.integers(0, 6, N), junk_ids=(-1,))
    tracemalloc.start()
    try:
        cimpl.compute(p, Options(ties="expected", max_rank=10))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < Q * N // 8, f"peak Python allocation {peak} bytes for Q x N = {Q * N}"


def test_c_source_compiles_without_warnings(c_backend, tmp_path):
    """The build flags of setup.py plus -Wall -Wextra -Werror."""
    import sysconfig

    configured = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    cc = shutil.which(configured) or shutil.which("cc") or shutil.which("gcc")
    source = os.path.join(os.path.dirname(c_backend.__file__), "_rc_core.c")
    if cc is None or not os.path.exists(source):
        pytest.skip("no C compiler or no C source here")
    cmd = [cc, "-O3", "-std=c99", "-fopenmp", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror",
           source, "-o", str(tmp_path / "rc.so")]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_closed_forms_on_a_huge_group(cimpl):
    """Numerics at scale (one group of 20,000 items, 5,000 relevant) against values computed
    here: CMC@K = 1 - C(n-m, K)/C(n, K) and E[P@k] = km/n exactly; full AP =
    (1/n) sum_p (1 + (p-1)(m-1)/(n-1))/p and INP = sum_p P(P_m = p) m/p with 50 digits."""
    from decimal import Decimal, localcontext

    n, m = 20000, 5000
    rng = np.random.default_rng(9)
    rel = np.zeros((1, n), dtype=bool)
    rel[0, rng.choice(n, m, replace=False)] = True
    p = Problem(n_queries=1, n_gallery=n, distances=np.zeros((1, n), np.float32), relevance=rel)
    pq = cimpl.compute(p, Options(ties="expected", k=3000, ap_at_k="r", max_rank=4))
    for K in range(1, 5):
        want = 1 - Fraction(comb(n - m, K), comb(n, K))
        assert abs(pq.cmc[0, K - 1] - float(want)) <= TOL
    assert pq.precision_at_k[0] == float(Fraction(m, n))
    full = cimpl.compute(p, Options(ties="expected"))
    with localcontext() as ctx:
        ctx.prec = 50
        ap = sum(Decimal(1) / q + Decimal((q - 1) * (m - 1)) / ((n - 1) * q) for q in range(1, n + 1)) / n
        # P(P_m = q) = C(q-1, m-1)/C(n, m): m/n at q = n, ratio (q-m)/(q-1) going down
        prob, inp = Decimal(m) / n, Decimal(0)
        for q in range(n, m - 1, -1):
            inp += prob * m / q
            prob = prob * (q - m) / (q - 1) if q > m else prob
    assert abs(full.ap[0] - float(ap)) <= TOL
    assert abs(full.inp[0] - float(inp)) <= TOL
