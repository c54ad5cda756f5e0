"""The hostile and edge changes the fuzz campaign applies to a valid problem (at most one each).

Each :class:`Change` declares what a correct library does with it (``"value"``, ``"error"`` or
``"either"``, see :mod:`.cases`) and may name a twin: the plain input whose result must be the
same.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
from retrieval_conformance.conformance.problems.evaluate_inputs import (
    ARRAYS,
    CAMS,
    CODES,
    EMBEDDINGS,
    LABELS,
    MATRICES,
    PLAIN_PROTOCOLS,
    graded_relevance,
)
from retrieval_conformance.reference.contract.conventions import TIE_POLICIES

from .array_changes import (
    as_fractions,
    drop_column,
    drop_row,
    fixed,
    generator,
    huge_ids,
    negative_stride,
    ragged,
    read_only,
    tensor,
    transpose,
    with_nonfinite,
)
from .case import Case, short_repr


@dataclass(frozen=True)
class Change:
    """A hostile or edge transformation of a valid problem (see the module docstring)."""

    name: str
    expect: str
    apply: Callable[[Any, Dict[str, Any]], Optional[Case]]  # None: not applicable to this problem
    weight: int = 1


def _present(kw: Dict[str, Any], names) -> List[str]:
    return [n for n in names if kw.get(n) is not None]


def _pick_array(d, kw, names=ARRAYS) -> Optional[str]:
    present = _present(kw, names)
    return d.choice(present) if present else None


def _replace(
    d, kw, names, make: Callable[[Any], Any], expect: str, change: str, twin: bool = False, relation: str = "same"
) -> Optional[Case]:
    """A case with one array argument (drawn from ``names``) replaced by ``make(array)``."""
    name = _pick_array(d, kw, names)
    if name is None:
        return None
    value = make(np.asarray(kw[name]))
    if value is None:
        return None
    out = dict(kw)
    out[name] = value
    return Case(out, f"{change}:{name}", expect, twin=dict(kw) if twin else None, relation=relation)


def _option(name: str, values: Tuple[Any, ...], expect: str):
    def apply(d, kw):
        out = dict(kw)
        value = d.choice(values)
        out[name] = value() if callable(value) else value
        return Case(out, f"{name}={short_repr(out[name])}", expect)

    return apply


def _huge_k(d, kw):
    """A cut-off far beyond the gallery: the clipped result, with P@k = R/k (spec §6)."""
    k = d.choice((2**63, 2**63 - 1, np.uint64(2**64 - 1), 10**30, 2**62, np.int64(2**62)))
    out = dict(kw, k=k)
    twin = dict(kw, k=10**6)  # also beyond any gallery here, and small enough for every backend
    return Case(out, f"k={short_repr(k)}", "value", twin=twin, relation="same_uncut")


def _permute_queries(d, kw):
    """The mean over queries must not depend on their order (bit for bit)."""
    nq = None
    for name in ("distances", "scores", "query_codes", "query_embeddings"):
        if kw.get(name) is not None:
            nq = np.asarray(kw[name]).shape[0]
    if not nq or nq < 2:
        return None
    order = np.random.default_rng(d.integer(0, 2**32 - 1)).permutation(nq)
    out = dict(kw)
    for name in (
        "distances",
        "scores",
        "query_codes",
        "query_embeddings",
        "relevance",
        "junk",
        "query_labels",
        "query_cams",
    ):
        if out.get(name) is not None:
            out[name] = np.asarray(out[name])[order]
    return Case(out, "permute_queries", "value", twin=dict(kw), relation="same_means")


def _block_sizes(d, kw):
    out = dict(kw, block_size=d.choice((1, 2, 3, 10**30, np.int64(1))))
    twin = dict(kw)
    twin.pop("block_size", None)
    return Case(out, f"block_size={short_repr(out['block_size'])}", "value", twin=twin, relation="same")


def _embedding_block_sizes(d, kw):
    """Near-tied embeddings (few distinct float values, none exact in binary): with BLAS
    products, a block of one query rounded its distances otherwise, and near-tied items
    swapped; the same problem in blocks of 1, 2, 3 or 7 queries must give the same bits."""
    shapes = _ranking_shape(kw)
    if shapes is None:
        return None
    (nq, n), rng = shapes, np.random.default_rng(d.integer(0, 2**32 - 1))
    dim, dtype = d.integer(2, 40), d.choice((np.float32, np.float32, np.float64))
    levels = np.array([-0.3, -0.1, 0.1, 0.3, 0.7], dtype=dtype)  # never zero: cosine is defined
    plain = {
        key: value for key, value in kw.items() if key not in ("distances", "scores", "block_size") + CODES + EMBEDDINGS
    }
    plain.update(
        query_embeddings=levels[rng.integers(0, 5, (nq, dim))],
        db_embeddings=levels[rng.integers(0, 5, (n, dim))],
        metric=d.choice(("euclidean", "cosine")),
    )
    out = dict(plain, block_size=d.choice((1, 2, 3, 7)))
    return Case(out, f"embedding_block_size={out['block_size']}", "value", twin=plain, relation="same")


def _ranking_shape(kw) -> Optional[Tuple[int, int]]:
    """(queries, gallery items) of the problem's ranking input."""
    for name in ("distances", "scores"):
        if kw.get(name) is not None:
            return np.asarray(kw[name]).shape
    for query, db in (CODES, EMBEDDINGS):
        if kw.get(query) is not None and kw.get(db) is not None:
            return np.asarray(kw[query]).shape[0], np.asarray(kw[db]).shape[0]
    return None


def _unknown_keyword(d, kw):
    return Case(dict(kw, **{d.choice(("ks", "tie", "implementaton", "labels")): 1}), "unknown_keyword", "error")


def _two_ranking_inputs(d, kw):
    present = _present(kw, ("distances", "scores"))
    if not present:
        return None
    other = "scores" if present[0] == "distances" else "distances"
    return Case(dict(kw, **{other: kw[present[0]]}), "two_ranking_inputs", "error")


def _cams_without_reid(d, kw):
    if kw.get("query_cams") is None:
        return None
    return Case(dict(kw, protocol=d.choice(PLAIN_PROTOCOLS)), "cams_with_plain_protocol", "error")


def _zero_in_pm1_codes(d, kw):
    if kw.get("query_codes") is None or not (np.asarray(kw["query_codes"]) == -1).any():
        return None
    out = dict(kw)
    q = np.array(kw["query_codes"])
    q.flat[d.integer(0, q.size - 1)] = 0
    out["query_codes"] = q
    if not ((q == -1).any() or (np.asarray(kw["db_codes"]) == -1).any()):
        return None  # the only -1 became 0: what is left are valid {0, 1} codes
    return Case(out, "zero_in_pm1_codes", "error")


def _overflowing_embeddings(d, kw):
    if kw.get("query_embeddings") is None:
        return None
    out = dict(kw)
    scale = d.choice((1e155, 1e200, 1e300, np.float32(1e30)))
    out["query_embeddings"] = np.asarray(kw["query_embeddings"]) * scale + scale
    return Case(out, "overflowing_embeddings", "either")  # a named error, or finite distances


def _huge_tie_group(d, kw):
    """One tie group of 10^3..3·10^3 items under ``ties="expected"`` (finite CMC, exact AP).

    Larger groups (10^4, 10^5) have their own tests (``test_hardening.py``): the exact
    reference needs seconds for them, too long for a campaign of a million cases.
    """
    n = d.integer(1000, 3000)
    rng = np.random.default_rng(d.integer(0, 2**32 - 1))
    out = {key: value for key, value in kw.items() if key not in ARRAYS + ("metric",)}
    relevance = rng.random((1, n)) < d.choice((0.001, 0.01, 0.5))
    if d.chance(0.3):  # graded: the tie group's mean gain on each position (nDCG)
        relevance = np.where(relevance, graded_relevance(d, rng, (1, n)), 0)
    out.update(
        distances=np.zeros((1, n)),
        relevance=relevance,
        ties="expected",
        protocol=d.choice(PLAIN_PROTOCOLS),
        max_rank=d.integer(1, 50),
    )
    # a cut-off deep inside the group (hypergeometric sums over many terms); not under "dcmh"
    # or with hundreds of relevant items, where the exact reference needs minutes a case
    if d.chance(0.3) and out.get("ap_at_k") != "dcmh" and np.count_nonzero(relevance) <= 50:
        out["k"] = d.integer(1, n)
    out.pop("block_size", None)
    return Case(out, f"huge_tie_group:{n}", "value")


def _large_gallery(d, kw):
    """A gallery of hundreds to thousands of items, its distances on a grid of a few to many
    levels (some far apart, some a few ulps apart), with many relevant items: the C float
    path's bucket table with many buckets, buckets holding several relevant distances, and
    long tie runs, under any tie policy; with a cut-off, from 1024 items on, its prefix path
    (only the items up to the L-th smallest distance placed)."""
    n = d.integer(200, 2000)
    nq = d.integer(1, 2)
    rng = np.random.default_rng(d.integer(0, 2**32 - 1))
    levels = d.choice(
        (
            np.round(rng.random(d.integer(2, 3000)), 3),  # rounded scores: many ties
            rng.standard_normal(d.integer(2, 400)) * 10.0 ** d.integer(-300, 300),
            1.0 + np.arange(d.integer(2, 40)) * 2.0**-52,  # neighbours a few ulps apart
            np.array([-1e308, -1.0, 0.0, -0.0, 1e-310, 1.0, 1e308]),  # a range that overflows
        )
    )
    out = {key: value for key, value in kw.items() if key not in ARRAYS + ("metric", "radius")}
    values = rng.choice(levels, size=(nq, n))
    if d.chance(0.5):  # float32: levels kept inside its range (an overflow to inf is another change's)
        big = float(np.finfo(np.float32).max)
        values = np.clip(values, -big, big).astype(np.float32)
    out[d.choice(("distances", "scores"))] = values
    share = d.choice((0.005, 0.05, 0.3, 0.9))
    if d.chance(0.3):
        out["relevance"] = graded_relevance(d, rng, (nq, n)) * (rng.random((nq, n)) < share)
    else:
        out["relevance"] = rng.random((nq, n)) < share
    if d.chance(0.3):
        out["junk"] = rng.random((nq, n)) < 0.1
    out["protocol"] = d.choice(PLAIN_PROTOCOLS)
    out["ties"] = d.choice(TIE_POLICIES)
    if out["ties"] == "expected" and share >= 0.3:
        out["ties"] = "stable"  # the exact reference on hundreds of relevant items per group: too slow here
    if d.chance(0.5):
        out["k"] = d.integer(1, 120)
    out.pop("block_size", None)
    return Case(out, f"large_gallery:{n}", "value")


def _bad_grade(d, kw):
    """A relevance grade outside 0 .. 52, or not an integer: a named error (spec §2)."""
    if kw.get("relevance") is None:
        return None
    out = dict(kw)
    grades = np.array(kw["relevance"], dtype=np.float64)
    bad = d.choice((53, -1, 255, 2.5, np.nan, 1e300, -0.5))
    grades.flat[d.integer(0, grades.size - 1)] = bad
    # whole bad grades also as integers (a float bad grade stays float: its cast would be valid)
    out["relevance"] = grades.astype(np.int64) if bad in (53, -1, 255) and d.chance(0.5) else grades
    return Case(out, "bad_grade", "error")


def _id_pair(d, kw) -> Optional[Tuple[str, str]]:
    pairs = [
        (q, g)
        for q, g in (LABELS, CAMS)
        if kw.get(q) is not None and kw.get(g) is not None and np.asarray(kw[q]).ndim == 1
    ]
    return d.choice(pairs) if pairs else None


def _string_ids(d, kw):
    """Ids written as strings (``"id-3"``) on both sides: the same equalities, the same result."""
    pair = _id_pair(d, kw)
    if pair is None:
        return None
    out = dict(kw)
    for name in pair:
        out[name] = np.array([f"id-{x}" for x in np.asarray(kw[name]).tolist()])
        if d.chance(0.3):
            out[name] = out[name].astype(object)  # as a pandas column holds them
    # reid-matlab reads the integer id -1 as junk; a string id is never that integer (documented)
    minus_one = kw.get("protocol") == "reid-matlab" and pair == LABELS and (np.asarray(kw[pair[1]]) == -1).any()
    return Case(out, f"string_ids:{pair[0]}", "value", twin=None if minus_one else dict(kw))


def _string_ids_on_one_side(d, kw):
    pair = _id_pair(d, kw)
    if pair is None:
        return None
    name = d.choice(pair)
    return Case(dict(kw, **{name: np.asarray(kw[name]).astype(str)}), f"strings_on_one_side:{name}", "error")


def _on_array(name: str, expect: str, make, names: Tuple[str, ...] = ARRAYS, twin: bool = False) -> Change:
    """A change that replaces one array argument (drawn from ``names``) by ``make(d)(array)``."""
    return Change(name, expect, lambda d, kw: _replace(d, kw, names, make(d), expect, name, twin))


RANKING = MATRICES[:2] + EMBEDDINGS  # float inputs that are ranked
SCALARS = (np.float64(1.0), 3, 2.5, "abc", b"x", True)

CHANGES: Tuple[Change, ...] = (
    # valid edges: the reference's numbers, and the twin's bits where one is named
    _on_array("as_list", "value", fixed(lambda a: a.tolist()), twin=True),
    _on_array("fortran_order", "value", fixed(np.asfortranarray), twin=True),
    _on_array("negative_stride", "value", fixed(negative_stride), twin=True),
    _on_array("read_only", "value", fixed(read_only), twin=True),
    _on_array("torch_tensor", "value", lambda d: tensor(d), twin=True),
    _on_array("torch_noncontiguous", "value", lambda d: tensor(d, layout="noncontiguous"), twin=True),
    _on_array("torch_requires_grad", "value", lambda d: tensor(d, layout="grad"), RANKING),
    Change("huge_k", "value", _huge_k, weight=2),
    Change("permute_queries", "value", _permute_queries, weight=2),
    Change("block_size", "value", _block_sizes, weight=2),
    Change("embedding_block_size", "value", _embedding_block_sizes, weight=2),
    Change("huge_tie_group", "value", _huge_tie_group),
    Change("large_gallery", "value", _large_gallery),
    Change("numpy_integer_options", "value", _option("max_rank", (np.int8(3), np.uint64(7), np.int64(1)), "value")),
    # invalid inputs: a named error, the same from every implementation
    _on_array("object_dtype", "error", fixed(lambda a: a.astype(object))),
    _on_array("fraction_objects", "error", fixed(as_fractions)),
    _on_array("complex_dtype", "error", fixed(lambda a: a.astype(complex))),
    _on_array("string_dtype", "error", fixed(lambda a: a.astype(str)), MATRICES + CODES + EMBEDDINGS),
    Change("string_ids", "value", _string_ids),
    Change("strings_on_one_side", "error", _string_ids_on_one_side),
    _on_array("datetime_dtype", "error", fixed(lambda a: np.zeros(a.shape, "datetime64[s]"))),
    _on_array("structured_dtype", "error", fixed(lambda a: np.zeros(a.shape, [("a", "f8")]))),
    _on_array("scalar", "error", lambda d: lambda a: d.choice(SCALARS)),
    _on_array("generator", "error", fixed(generator)),
    _on_array("ragged", "error", fixed(ragged)),
    _on_array("set_or_dict", "error", lambda d: lambda a: d.choice(({1, 2}, {"a": 1}, frozenset()))),
    _on_array("extra_dimension", "error", fixed(lambda a: a[None])),
    _on_array(
        "flattened", "error", fixed(lambda a: a.reshape(-1) if a.ndim == 2 else None), MATRICES + CODES + EMBEDDINGS
    ),
    _on_array("transposed", "error", fixed(transpose), MATRICES),
    _on_array("missing_row", "error", fixed(drop_row)),
    _on_array("missing_column", "error", fixed(drop_column), MATRICES + CODES + EMBEDDINGS + LABELS),
    _on_array("non_finite", "error", with_nonfinite, RANKING),
    _on_array("huge_or_fractional_ids", "error", huge_ids, LABELS + CAMS),
    _on_array("torch_bfloat16", "value", lambda d: tensor(d, "bfloat16"), RANKING),
    _on_array("torch_sparse", "error", lambda d: tensor(d, layout="sparse")),
    _on_array("torch_meta", "error", lambda d: tensor(d, layout="meta")),
    _on_array("torch_complex", "error", lambda d: tensor(d, "complex64")),
    Change(
        "bad_k",
        "error",
        _option(
            "k",
            (
                0,
                -1,
                1.5,
                2.0,
                "5",
                "all",
                [0],
                True,
                np.float64(3),
                Fraction(3),
                lambda: (i for i in [5]),
                np.array([5, 10]),
                complex(3, 0),
            ),
            "error",
        ),
    ),
    Change(
        "bad_max_rank",
        "error",
        _option("max_rank", (0, -5, 10**12, 2**63, 2**64 - 1, "x", 5.0, None, [5], np.nan), "error"),
    ),
    Change("bad_protocol", "error", _option("protocol", ("nope", ["reid"], None, 5, "REID ", b"reid"), "error")),
    Change("bad_tie_policy", "error", _option("ties", ("nope", ["stable"], 5, b"stable", {"a": 1}), "error")),
    Change(
        "bad_choice",
        "error",
        lambda d, kw: _option(
            d.choice(("ap_rule", "ap_at_k", "empty", "metric", "gain", "discount", "recall")),
            ("nope", ["x"], 5, {1}),
            "error",
        )(d, kw),
    ),
    Change("bad_grade", "error", _bad_grade),
    Change("bad_radius", "error", _option("radius", (-1, np.nan, "1", np.inf, [1], complex(1, 1)), "error")),
    Change("bad_block_size", "error", _option("block_size", (0, -1, 2.5, "3", [2], np.float64(2)), "error")),
    Change("unknown_keyword", "error", _unknown_keyword),
    Change("two_ranking_inputs", "error", _two_ranking_inputs),
    Change("cams_with_plain_protocol", "error", _cams_without_reid),
    Change("zero_in_pm1_codes", "error", _zero_in_pm1_codes),
    Change("overflowing_embeddings", "either", _overflowing_embeddings),
)
