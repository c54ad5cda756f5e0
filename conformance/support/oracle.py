"""The slow oracle: exact per-query values (``Fraction``) of a :class:`Problem` under
:class:`Options`, for every tie policy, read plainly from the definitions (spec §4-§7).

It shares no code with ``reference/per_query.py`` or the implementations: relevance, junk and
distances are recomputed here from the problem's arrays, item by item.

* concrete policies (``stable``, ``reverse``, ``optimistic``, ``pessimistic``): the kept items
  sorted by an explicit key per policy, then counted;
* ``expected``: brute force, the average over every arrangement of every tie group (each
  placement of a group's m relevant items among its n positions stands for m!(n-m)! item
  orders, so all placements weigh the same); tiny inputs only, there is no closed form here
  (the closed forms on large groups are checked in ``test_c_backend_numerics``);
* ``grouped``: every item of a tie group takes the group's end rank; a relevant item's
  precision is (h + m)/e, its trapezoid term averages that with h/(e - 1) (1 at e = 1).

Also ``sklearn_style_ap`` (scikit-learn's threshold sum, a second reading of grouped AP).

    python -m retrieval_conformance.conformance.support.oracle
prints the seed-000 values under ties="expected" (``brute_force`` does the same).
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.support import rank_oracle
from retrieval_conformance.reference.contract.problem import Options, Problem

#: the scalar per-query values, in ``PerQuery`` order (``cmc`` is a list per query)
SCALARS = ("ap", "hits_at_k", "precision_at_k", "recall_at_k", "inp", "r_precision", "ndcg", "rr", "ap_at_r")
Groups = List[List[bool]]


# -- one query's inputs --------------------------------------------------------------------------
def query_inputs(p: Problem, q: int) -> Tuple[List[float], List[bool], List[bool]]:
    """Distances, relevance and junk of query q as plain Python lists."""
    n = p.n_gallery
    if p.distances is not None:
        dist = [float(v) for v in p.distances[q]]
    else:  # Hamming distance of the bit codes
        qb = p.query_bits[q].tolist()
        dist = [float(sum(int(a != b) for a, b in zip(qb, p.db_bits[j].tolist()))) for j in range(n)]
    if p.relevance is not None:
        rel = [bool(v) for v in p.relevance[q]]
    elif p.query_labels.ndim == 2:  # multi-hot: share at least one label
        ql = p.query_labels[q].tolist()
        rel = [any(a and b for a, b in zip(ql, p.db_labels[j].tolist())) for j in range(n)]
    else:
        rel = [int(p.db_labels[j]) == int(p.query_labels[q]) for j in range(n)]
    junk = [bool(p.junk[q, j]) if p.junk is not None else False for j in range(n)]
    for j in range(n):
        same_id = (
            p.query_labels is not None and p.query_labels.ndim == 1 and int(p.db_labels[j]) == int(p.query_labels[q])
        )
        if p.query_cams is not None and same_id and int(p.db_cams[j]) == int(p.query_cams[q]):
            junk[j] = True  # same id and same camera (ReID)
        if p.junk_ids and int(p.db_labels[j]) in p.junk_ids:
            junk[j] = True
    return dist, rel, junk


def tie_groups(dist: Sequence[float], rel: Sequence[bool]) -> Groups:
    """Relevance of the items, grouped by equal distance (closest first, gallery order inside)."""
    order = sorted(range(len(dist)), key=lambda j: (dist[j], j))
    return [[bool(rel[j]) for j in g] for _, g in itertools.groupby(order, key=lambda j: dist[j])]


def concrete_order(dist: Sequence[float], rel: Sequence[bool], ties: str) -> List[bool]:
    """Ranked relevance under a concrete tie policy, by an explicit sort key."""
    keys = {
        "stable": lambda j: (dist[j], j),
        "reverse": lambda j: (dist[j], -j),
        "optimistic": lambda j: (dist[j], not rel[j], j),
        "pessimistic": lambda j: (dist[j], bool(rel[j]), j),
    }
    return [bool(rel[j]) for j in sorted(range(len(dist)), key=keys[ties])]


# -- the metrics ---------------------------------------------------------------------------------
def ranked_metrics(groups: Groups, opts: Options) -> Dict[str, object]:
    """Every per-query metric of a ranking given as consecutive groups of relevance flags whose
    items all sit at the group's end rank e.  A concrete ranking is groups of one item (then
    e is the item's rank and the terms are the textbook i/r and (i/r + (i-1)/(r-1))/2)."""
    R = sum(map(sum, groups))
    if R == 0:
        return dict({f: Fraction(0) for f in SCALARS}, cmc=[Fraction(0)] * opts.max_rank)
    items = []  # (rank, AP term) of every relevant item, in rank order
    e = h = 0
    for g in groups:
        m = sum(g)
        e += len(g)
        precision = Fraction(h + m, e)
        if opts.ap_rule == "precision_sum":
            term = precision
        else:  # trapezoid: with the precision one rank higher (1 above rank 1)
            term = Fraction(1) if e == 1 else (precision + Fraction(h, e - 1)) / 2
        items += [(e, term)] * m
        h += m
    ranks = [r for r, _ in items]
    k = opts.k

    def hits(cut):
        return sum(1 for r in ranks if r <= cut)

    hk = R if k is None else hits(k)
    if k is None:
        ap = sum(t for _, t in items) / R
    elif opts.ap_at_k == "dcmh":  # the first min(k, R) relevant items, wherever they sit
        L = min(k, R)
        ap = sum(t for _, t in items[:L]) / L
    else:
        den = {"hits": hk, "r": R, "min_k_r": min(k, R)}[opts.ap_at_k]
        ap = sum((t for r, t in items if r <= k), Fraction(0)) / den if den else Fraction(0)
    return dict(
        ap=Fraction(ap),
        hits_at_k=Fraction(hk),
        precision_at_k=Fraction(hk, k or e),
        recall_at_k=Fraction(hk, R),
        inp=Fraction(R, ranks[-1]),
        r_precision=Fraction(hits(R), R),
        cmc=[Fraction(int(ranks[0] <= j + 1)) for j in range(opts.max_rank)],
    )


def arrangements(groups: Groups) -> Iterator[List[bool]]:
    """Every distinct ranked relevance list obtainable by reordering items inside tie groups
    (all equally likely under uniformly random tie orders)."""
    per_group = [
        [[p in pos for p in range(len(g))] for pos in itertools.combinations(range(len(g)), sum(g))] for g in groups
    ]
    for combo in itertools.product(*per_group):
        yield [x for part in combo for x in part]


def expected_metrics(groups: Groups, opts: Options) -> Dict[str, object]:
    """Every metric's exact expectation over all tie orders (brute force)."""
    total, count = None, 0
    for ranked in arrangements(groups):
        v = ranked_metrics([[x] for x in ranked], opts)
        total = (
            v
            if total is None
            else {f: [a + b for a, b in zip(total[f], v[f])] if f == "cmc" else total[f] + v[f] for f in v}
        )
        count += 1
    return {f: [x / count for x in v] if f == "cmc" else v / count for f, v in total.items()}


def query_metrics(
    dist: Sequence[float],
    rel: Sequence[bool],
    junk: Sequence[bool],
    opts: Options,
    q: int = 0,
    grades: Optional[Sequence[int]] = None,
) -> Dict[str, object]:
    """Exact metrics of one query; ValueError for a grouped cut-off inside a tie group.
    nDCG, RR, AP@R and the hit rate come from ``rank_oracle`` (``grades``: graded relevance)."""
    kept = [j for j in range(len(dist)) if not junk[j]]
    d, r = [dist[j] for j in kept], [bool(rel[j]) for j in kept]
    groups = tie_groups(d, r)
    if opts.ties == "grouped" and opts.k is not None:
        ends = list(itertools.accumulate(map(len, groups)))
        if any(end - len(g) < opts.k < end for g, end in zip(groups, ends)):
            raise ValueError(f"k={opts.k} inside a tie group of query {q}")
    if opts.ties == "expected":
        out = expected_metrics(groups, opts)
    elif opts.ties == "grouped":
        out = ranked_metrics(groups, opts)
    else:
        out = ranked_metrics([[x] for x in concrete_order(d, r, opts.ties)], opts)
    out["n_relevant"] = sum(r)
    graded = [int(g) for g in grades] if grades is not None else [int(bool(x)) for x in rel]
    more = rank_oracle.query_metrics(list(dist), graded, list(junk), opts.ties, opts.k, opts.gain, opts.discount)
    out.update(ndcg=more["ndcg"], rr=more["rr"], ap_at_r=more["ap_at_r"])
    if opts.recall == "hit":
        out["recall_at_k"] = more["hit"]
    if opts.radius is not None:
        within = [x for x, y in zip(r, d) if y <= opts.radius]
        out["precision_at_radius"] = Fraction(sum(within), len(within)) if within else Fraction(0)
        out["recall_at_radius"] = Fraction(sum(within), sum(r)) if sum(r) else Fraction(0)
    return out


def per_query(problem: Problem, opts: Options) -> Dict[str, list]:
    """Exact per-query values of every query, as ``PerQuery.exact`` holds them (a list per
    field, ``cmc`` a list per query) plus ``n_relevant``; ValueError for a grouped cut-off
    inside a tie group (the first such query)."""
    rows = [
        query_metrics(
            *query_inputs(problem, q), opts, q, None if problem.grades is None else problem.grades[q].tolist()
        )
        for q in range(problem.n_queries)
    ]
    return {f: [row[f] for row in rows] for f in rows[0]}


def sklearn_style_ap(distances, relevant) -> Fraction:
    """scikit-learn's AP: Σ over distinct thresholds of (ΔR / R) · precision at the threshold."""
    R = sum(relevant)
    total = Fraction(0)
    for d in sorted(set(distances)):
        retrieved = [i for i in range(len(distances)) if distances[i] <= d]
        hits = sum(relevant[i] for i in retrieved)
        new = sum(relevant[i] for i in range(len(distances)) if distances[i] == d)
        total += Fraction(new, R) * Fraction(hits, len(retrieved))
    return total


# -- seed 000 (spec §10) ---------------------------------------------------------------------------
def seed000_problem() -> Problem:
    """Seed 000's worked example: ±1 codes as bits (+1 -> 1), multi-hot labels."""
    import numpy as np
    from retrieval_conformance.conformance.harness.inputs.golden import SEED000

    qb, db = (np.array(SEED000[key]) > 0 for key in ("query_codes", "db_codes"))
    ql, dl = (np.array(SEED000[key], dtype=np.uint8) for key in ("query_labels", "db_labels"))
    return Problem(
        n_queries=len(qb),
        n_gallery=len(db),
        query_bits=qb.astype(np.uint8),
        db_bits=db.astype(np.uint8),
        query_labels=ql,
        db_labels=dl,
    )


def seed000_expected_ap(k) -> List[Fraction]:
    """Seed 000's per-query AP@k (hits) under ties="expected", by enumeration."""
    return per_query(seed000_problem(), Options(ties="expected", k=k))["ap"]


def print_seed000() -> None:
    for k in (5, None):
        aps = seed000_expected_ap(k)
        print(f"k={k}: per-query {[str(a) for a in aps]}, mean {sum(aps) / len(aps)}")


if __name__ == "__main__":
    print_seed000()
