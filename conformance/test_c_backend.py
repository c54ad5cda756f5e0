"""The C implementation (``implementations/csrc/`` through ctypes) against two yardsticks.

1. A small, slow oracle written here from the per-query semantics (COMMON brief, CONVENTIONS
   §4-§7), independent of the reference code: concrete tie policies sort the kept items with an
   explicit key, ``expected`` averages over every arrangement of every tie group (brute force),
   ``grouped`` gives each item its group's end rank.  Exact ``Fraction`` arithmetic.
2. The reference implementation (exact ``Fraction`` values), on larger and tie-heavy inputs.

Agreement means: equal to the exact value rounded to float64 when that rounding is exact (bit
for bit), within 1e-12 otherwise.  The other tests of the C implementation:
``test_c_backend_numerics`` (large tie groups, closed forms), ``test_c_backend_threads``
(identical arrays for any thread count, CPU code path and query block size; fork) and
``test_c_backend_inputs`` (the grouped cut-off error, validation before the C call, the "not
built" reason, no (Q, N) allocation, the C source's warnings).

The tests are skipped when the library is not built, or fail with ``RC_REQUIRE=c``.
"""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from retrieval_conformance.conformance.c_test_support import (
    TIES,
    TOL,
    load_c_backend,
    random_options,
    random_problem,
    run_both,
)
from retrieval_conformance.conformance.crosscheck import compare_per_query
from retrieval_conformance.reference.contract.problem import Options, Problem


@pytest.fixture(scope="module")
def c_backend():
    return load_c_backend()


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


def test_seed000_golden_values_through_evaluate(c_backend):
    """spec §10 (seed 000): mAP@5 = 107/180, mAP = 1139/1890, P@5 = 0.6."""
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
