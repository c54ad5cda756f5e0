"""The fuzz campaign's inputs: a valid retrieval problem, then at most one hostile change.

A case is rebuilt from its drawer every time it is needed (:func:`draw_case`), so every
implementation gets fresh objects: a generator is consumed by the first call that reads it,
and an input modified by one implementation must not reach the next.

Each change in :data:`CHANGES` declares what a correct library does with it:

* ``"value"``: the input is valid (an edge of the contract: a tensor, a list, a negative
  stride, a huge ``k``); every implementation must return the reference's numbers;
* ``"error"``: the input is invalid; every implementation must raise the same
  ``ValueError``/``TypeError``, whose message names the argument, before computing;
* ``"either"``: the library may accept or reject (both are documented outcomes), but must do
  one of the two cleanly.

A change may also name a *twin*: the same problem written the plain way, whose result must be
identical bit for bit (``"same"``) or equal in the fields a huge cut-off leaves unchanged
(``"same_uncut"``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

__all__ = ["CHANGES", "Case", "Change", "draw_case", "torch_or_none"]

TIE_POLICIES = ("stable", "reverse", "optimistic", "pessimistic", "expected", "grouped")
PLAIN_PROTOCOLS = ("hashing", "hashnet", "dcmh", "gldv2")
REID_PROTOCOLS = ("reid", "reid-matlab")
#: query-side (Q rows) and gallery-side (N rows) array arguments of ``evaluate``
MATRICES = ("distances", "scores", "relevance", "junk")
CODES = ("query_codes", "db_codes")
EMBEDDINGS = ("query_embeddings", "db_embeddings")
LABELS = ("query_labels", "db_labels")
CAMS = ("query_cams", "db_cams")
ARRAYS = MATRICES + CODES + EMBEDDINGS + LABELS + CAMS


@dataclass
class Case:
    """One input of the campaign: ``kwargs`` for ``rc.evaluate`` (without ``implementation``)."""

    kwargs: Dict[str, Any]
    change: str = "none"
    expect: str = "value"  # "value", "error" or "either"
    twin: Optional[Dict[str, Any]] = None
    relation: str = "same"  # how the result relates to the twin's
    notes: List[str] = field(default_factory=list)

    def describe(self) -> str:
        """A short, bounded description (never the repr of a possibly huge or hostile value)."""
        parts = []
        for key, value in self.kwargs.items():
            parts.append(f"{key}={_short(value)}")
        return f"[{self.change}] " + ", ".join(parts)


def _short(value: Any) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, (int, float)):
        return f"<{type(value).__name__} {getattr(value, 'dtype', '')} {tuple(shape)}>"
    if isinstance(value, (list, tuple)):
        return f"<{type(value).__name__} of {len(value)}>"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_TORCH: Any = None


def torch_or_none():
    """torch if installed (imported once, only when a change needs it), else None."""
    global _TORCH
    if _TORCH is None:
        try:
            import torch
        except ImportError:
            torch = False
        _TORCH = torch
    return _TORCH or None


# --------------------------------------------------------------------------- the valid problem
def base_problem(d) -> Dict[str, Any]:
    """A valid, tie-heavy problem with every kind of ranking and relevance input, and options."""
    rng = np.random.default_rng(d.integer(0, 2**32 - 1))
    big = d.chance(0.002)  # a rare large tie group (hypergeometric terms of ~10^3 items)
    nq = d.integer(1, 2 if big else 4)
    n = d.integer(500, 2500) if big else d.integer(1, 12)
    kw: Dict[str, Any] = {}
    ranking = d.choice(("distances", "distances", "scores", "codes", "codes01", "embeddings"))
    if ranking in ("distances", "scores"):
        count = 1 if big else d.integer(1, 5)
        levels = rng.choice([0.0, 0.25, 0.5, 1.0, 3.0, -2.0], size=count, replace=False)
        values = rng.choice(levels, size=(nq, n))
        dtype = d.choice((np.float64, np.float64, np.float32, np.int64, np.float16))
        kw[ranking] = values.astype(dtype) if dtype is not np.int64 else (values * 4).astype(np.int64)
    elif ranking.startswith("codes"):
        bits = d.integer(1, 8)
        alphabet = [-1, 1] if ranking == "codes" else [0, 1]
        kw["query_codes"] = rng.choice(alphabet, size=(nq, bits))
        kw["db_codes"] = rng.choice(alphabet, size=(n, bits))
    else:
        dim = d.integer(1, 4)
        kw["query_embeddings"] = rng.integers(-2, 3, size=(nq, dim)).astype(np.float64)
        kw["db_embeddings"] = rng.integers(-2, 3, size=(n, dim)).astype(np.float64)
        kw["metric"] = d.choice(("euclidean", "cosine"))
        if kw["metric"] == "cosine":  # no zero vectors: their cosine is undefined
            for side in EMBEDDINGS:
                first = kw[side][:, 0]
                first[first == 0] = 1.0
    relevance = d.choice(("ids", "ids", "multi", "matrix"))
    protocol = d.choice(PLAIN_PROTOCOLS)
    if relevance == "ids":
        kw["query_labels"] = rng.integers(0, 3, size=nq)
        kw["db_labels"] = rng.integers(-1, 3, size=n)
        if d.chance(0.4):
            protocol = d.choice(REID_PROTOCOLS)
            kw["query_cams"] = rng.integers(0, 2, size=nq)
            kw["db_cams"] = rng.integers(0, 2, size=n)
    elif relevance == "multi":
        width = d.integer(1, 3)
        kw["query_labels"] = rng.integers(0, 2, size=(nq, width))
        kw["db_labels"] = rng.integers(0, 2, size=(n, width))
    else:
        kw["relevance"] = rng.random((nq, n)) < 0.4
    if d.chance(0.25):
        kw["junk"] = rng.random((nq, n)) < 0.2
    kw["protocol"] = protocol
    kw.update(base_options(d, big))
    return kw


def base_options(d, big: bool = False) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "ties": "expected" if big else d.choice(TIE_POLICIES),
        "ap_rule": d.choice(("precision_sum", "trapezoid")),
        "ap_at_k": d.choice(("hits", "r", "min_k_r", "dcmh")),
        "empty": d.choice(("zero", "skip", "skip_no_hit", "nan")),
        "max_rank": d.integer(1, 8),
    }
    if d.chance(0.8):
        out["k"] = None if d.chance(0.3) else d.integer(1, 15)
    if d.chance(0.2):
        out["radius"] = d.choice((0, 0.5, 1, 2, 3.5))
    if d.chance(0.2):
        out["block_size"] = d.integer(1, 3)
    return out


# --------------------------------------------------------------------------- changes
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


def _replace(d, kw, names, make: Callable[[Any], Any], expect: str, change: str,
             twin: bool = False, relation: str = "same") -> Optional[Case]:
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
        return Case(out, f"{name}={_short(out[name])}", expect)
    return apply


def _ragged(arr):
    rows = arr.tolist()
    if arr.ndim != 2 or len(rows) < 2 or arr.shape[1] < 2:
        return None
    rows[-1] = rows[-1][:-1]
    return rows


def _negative_stride(arr):
    # the same values, seen through a view that walks memory backwards
    return np.flip(np.ascontiguousarray(np.flip(arr, 0)), 0)


def _read_only(arr):
    arr = arr.copy()
    arr.setflags(write=False)
    return arr


def _with_nonfinite(d):
    def make(arr):
        if arr.size == 0:
            return None
        arr = arr.astype(np.float64)
        arr.flat[d.integer(0, arr.size - 1)] = d.choice((np.nan, np.inf, -np.inf))
        return arr
    return make


def _tensor(d, dtype_name: Optional[str] = None, layout: str = "strided"):
    def make(arr):
        torch = torch_or_none()
        if torch is None:
            return None
        t = torch.from_numpy(np.ascontiguousarray(arr))
        if dtype_name is not None:
            t = t.to(getattr(torch, dtype_name))
        if layout == "sparse":
            return t.to_sparse() if t.ndim >= 1 else None
        if layout == "meta":
            return t.to("meta")
        if layout == "grad":
            return t.double().requires_grad_(True) if t.dtype.is_floating_point else None
        if layout == "noncontiguous":
            return t.t().contiguous().t() if t.ndim == 2 else None
        return t
    return make


def _transpose(arr):
    return arr.T if arr.ndim == 2 and arr.shape[0] != arr.shape[1] else None


def _drop_row(arr):
    return arr[:-1] if arr.ndim >= 1 and arr.shape[0] >= 1 else None


def _drop_column(arr):
    return arr[:, :-1] if arr.ndim == 2 and arr.shape[1] >= 1 else None


def _huge_ids(d):
    def make(arr):
        if arr.ndim != 1:
            return None
        return d.choice((
            arr.astype(np.float64) * 1e20 + 1e20,                 # floats >= 2**63: would merge in int64
            np.where(arr >= 0, arr, 0).astype(np.uint64) + np.uint64(2**64 - 4),  # beyond int64
            arr.astype(np.float64) + 0.5,                         # not integers
            arr.astype(np.float64) * float(2**53) + 2.0**53,      # beyond float64's exact integers
        ))
    return make


def _huge_k(d, kw):
    """A cut-off far beyond the gallery: the clipped result, with P@k = R/k (spec §6)."""
    k = d.choice((2**63, 2**63 - 1, np.uint64(2**64 - 1), 10**30, 2**62, np.int64(2**62)))
    out = dict(kw, k=k)
    twin = dict(kw, k=10**6)  # also beyond any gallery here, and small enough for every backend
    return Case(out, f"k={_short(k)}", "value", twin=twin, relation="same_uncut")


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
    for name in ("distances", "scores", "query_codes", "query_embeddings", "relevance", "junk",
                 "query_labels", "query_cams"):
        if out.get(name) is not None:
            out[name] = np.asarray(out[name])[order]
    return Case(out, "permute_queries", "value", twin=dict(kw), relation="same_means")


def _block_sizes(d, kw):
    out = dict(kw, block_size=d.choice((1, 2, 3, 10**30, np.int64(1))))
    twin = dict(kw)
    twin.pop("block_size", None)
    return Case(out, f"block_size={_short(out['block_size'])}", "value", twin=twin, relation="same")


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
    out.update(distances=np.zeros((1, n)), relevance=rng.random((1, n)) < d.choice((0.001, 0.01, 0.5)),
               ties="expected", protocol=d.choice(PLAIN_PROTOCOLS), max_rank=d.integer(1, 50))
    out.pop("block_size", None)
    return Case(out, f"huge_tie_group:{n}", "value")


def _generator(arr):
    return (row for row in arr.tolist())


def _on_array(name: str, expect: str, make, names: Tuple[str, ...] = ARRAYS, twin: bool = False) -> Change:
    """A change that replaces one array argument (drawn from ``names``) by ``make(d)(array)``."""
    return Change(name, expect, lambda d, kw: _replace(d, kw, names, make(d), expect, name, twin))


def _fixed(make):
    """``make`` needs no drawer."""
    return lambda d: make


def _as_fractions(arr):
    return np.array([Fraction(int(x)) for x in arr.flat], dtype=object).reshape(arr.shape)


RANKING = MATRICES[:2] + EMBEDDINGS  # float inputs that are ranked
SCALARS = (np.float64(1.0), 3, 2.5, "abc", b"x", True)

CHANGES: Tuple[Change, ...] = (
    # valid edges: the reference's numbers, and the twin's bits where one is named
    _on_array("as_list", "value", _fixed(lambda a: a.tolist()), twin=True),
    _on_array("fortran_order", "value", _fixed(np.asfortranarray), twin=True),
    _on_array("negative_stride", "value", _fixed(_negative_stride), twin=True),
    _on_array("read_only", "value", _fixed(_read_only), twin=True),
    _on_array("torch_tensor", "value", lambda d: _tensor(d), twin=True),
    _on_array("torch_noncontiguous", "value", lambda d: _tensor(d, layout="noncontiguous"), twin=True),
    _on_array("torch_requires_grad", "value", lambda d: _tensor(d, layout="grad"), RANKING),
    Change("huge_k", "value", _huge_k, weight=2),
    Change("permute_queries", "value", _permute_queries, weight=2),
    Change("block_size", "value", _block_sizes, weight=2),
    Change("huge_tie_group", "value", _huge_tie_group),
    Change("numpy_integer_options", "value", _option("max_rank", (np.int8(3), np.uint64(7), np.int64(1)), "value")),
    # invalid inputs: a named error, the same from every implementation
    _on_array("object_dtype", "error", _fixed(lambda a: a.astype(object))),
    _on_array("fraction_objects", "error", _fixed(_as_fractions)),
    _on_array("complex_dtype", "error", _fixed(lambda a: a.astype(complex))),
    _on_array("string_dtype", "error", _fixed(lambda a: a.astype(str))),
    _on_array("datetime_dtype", "error", _fixed(lambda a: np.zeros(a.shape, "datetime64[s]"))),
    _on_array("structured_dtype", "error", _fixed(lambda a: np.zeros(a.shape, [("a", "f8")]))),
    _on_array("scalar", "error", lambda d: (lambda a: d.choice(SCALARS))),
    _on_array("generator", "error", _fixed(_generator)),
    _on_array("ragged", "error", _fixed(_ragged)),
    _on_array("set_or_dict", "error", lambda d: (lambda a: d.choice(({1, 2}, {"a": 1}, frozenset())))),
    _on_array("extra_dimension", "error", _fixed(lambda a: a[None])),
    _on_array("flattened", "error", _fixed(lambda a: a.reshape(-1) if a.ndim == 2 else None),
              MATRICES + CODES + EMBEDDINGS),
    _on_array("transposed", "error", _fixed(_transpose), MATRICES),
    _on_array("missing_row", "error", _fixed(_drop_row)),
    _on_array("missing_column", "error", _fixed(_drop_column), MATRICES + CODES + EMBEDDINGS + LABELS),
    _on_array("non_finite", "error", _with_nonfinite, RANKING),
    _on_array("huge_or_fractional_ids", "error", _huge_ids, LABELS + CAMS),
    _on_array("torch_bfloat16", "value", lambda d: _tensor(d, "bfloat16"), RANKING),
    _on_array("torch_sparse", "error", lambda d: _tensor(d, layout="sparse")),
    _on_array("torch_meta", "error", lambda d: _tensor(d, layout="meta")),
    _on_array("torch_complex", "error", lambda d: _tensor(d, "complex64")),
    Change("bad_k", "error", _option("k", (0, -1, 1.5, 2.0, "5", "all", [5], True, np.float64(3), Fraction(3),
                                           lambda: (i for i in [5]), np.array([5, 10]), complex(3, 0)), "error")),
    Change("bad_max_rank", "error",
           _option("max_rank", (0, -5, 10**12, 2**63, 2**64 - 1, "x", 5.0, None, [5], np.nan), "error")),
    Change("bad_protocol", "error", _option("protocol", ("nope", ["reid"], None, 5, "REID ", b"reid"), "error")),
    Change("bad_tie_policy", "error", _option("ties", ("nope", ["stable"], 5, b"stable", {"a": 1}), "error")),
    Change("bad_choice", "error", lambda d, kw: _option(
        d.choice(("ap_rule", "ap_at_k", "empty", "metric")), ("nope", ["x"], 5, {1}), "error")(d, kw)),
    Change("bad_radius", "error", _option("radius", (-1, np.nan, "1", np.inf, [1], complex(1, 1)), "error")),
    Change("bad_block_size", "error", _option("block_size", (0, -1, 2.5, "3", [2], np.float64(2)), "error")),
    Change("unknown_keyword", "error", _unknown_keyword),
    Change("two_ranking_inputs", "error", _two_ranking_inputs),
    Change("cams_with_plain_protocol", "error", _cams_without_reid),
    Change("zero_in_pm1_codes", "error", _zero_in_pm1_codes),
    Change("overflowing_embeddings", "either", _overflowing_embeddings),
)


def draw_case(d) -> Case:
    """A case: a valid problem (about a third of the time as it is), or one change applied."""
    kw = base_problem(d)
    if d.chance(0.3):
        return _grouped_cutoff(Case(kw))
    weights = [c.weight for c in CHANGES]
    pick = d.integer(0, sum(weights) - 1)
    for change in CHANGES:
        pick -= change.weight
        if pick < 0:
            break
    case = change.apply(d, kw)
    if case is None:  # not applicable here (no such argument, torch absent, ...): the plain problem
        case = Case(kw, notes=[f"{change.name} not applicable"])
    return _grouped_cutoff(case)


def _grouped_cutoff(case: Case) -> Case:
    """Under ``ties="grouped"`` a cut-off inside a tie group is a documented error (spec §6)."""
    kw = case.kwargs
    if case.expect == "value" and kw.get("ties") == "grouped" and kw.get("k", None) is not None:
        case.expect = "either"
    if case.expect == "value" and kw.get("ties") == "grouped" and kw.get("protocol") == "gldv2" and "k" not in kw:
        case.expect = "either"  # gldv2's own k=100
    return case
