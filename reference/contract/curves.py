"""Curves over a whole dataset, with any implementation: one front end, shared validation and means.

``curves(kind=...)`` takes the inputs of :func:`~.evaluate.evaluate` (validated by the same
``build_problem``), asks an implementation for the per-query values of one curve, and averages
them over the counted queries here, so implementations differ only in how they compute:

* ``pr_interpolated``: interpolated precision at recall levels, ``p_q(r) = max {P@k : R@k >= r}``
  (spec §7 interpolated PR curve);
* ``pr_radius``: precision and recall of the items within distance (Hamming) radius r (spec §7 radius);
* ``precision_at_n``: P@N for a list of N, the hashing papers' precision curve (spec §7 precision curve);
* ``cmc``: the CMC of ``evaluate``, as a curve of the same shape.

The per-query curves are looked up by name (``CURVE_KERNELS``), never imported, so the contract
stays below the reference and the implementations.
"""

from __future__ import annotations

import importlib
import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, cast

import numpy as np
from retrieval_conformance.reference.contract import validation as v
from retrieval_conformance.reference.contract.aggregation import float_mean
from retrieval_conformance.reference.contract.conventions import TIE_POLICIES
from retrieval_conformance.reference.contract.problem import Problem

#: the curves :func:`curves` draws
CURVE_KINDS = ("pr_interpolated", "pr_radius", "precision_at_n", "cmc")
#: which queries a curve's mean counts: those with a relevant non-junk item, or every query
CURVE_EMPTY_POLICIES = ("skip", "zero")
#: implementation name -> "module:function" computing per-query curves (``CurveValues``); a
#: module may say why it cannot run here with ``unavailable_reason(problem)``
CURVE_KERNELS = {
    "reference": "retrieval_conformance.reference.curve_values:per_query_curves",
    "numpy": "retrieval_conformance.implementations.vector.curves:per_query_curves",
    "c": "retrieval_conformance.implementations.c.curves:per_query_curves",
}
#: the fastest first: ``implementation="auto"`` picks the first whose module's
#: ``unavailable_reason(problem)`` (where it has one) is None
CURVE_AUTO_ORDER = ("c", "numpy", "reference")
#: the 11 recall levels of the interpolated PR curve (PASCAL VOC, TREC)
ELEVEN_POINTS = tuple(Fraction(i, 10) for i in range(11))
#: N of the precision curve when none is given
DEFAULT_NS = (1, 5, 10, 20, 50, 100, 200, 500, 1000)


@dataclass(frozen=True)
class CurveRequest:
    """What an implementation computes per query: the curve, the tie policy and the points.

    ``levels``: recall levels as Fractions (``pr_interpolated``); ``radii``: distances
    (``pr_radius``); ``ns``: list lengths N (``precision_at_n``).
    """

    kind: str
    ties: str = "stable"
    levels: Tuple[Fraction, ...] = ELEVEN_POINTS
    radii: Tuple[float, ...] = ()
    ns: Tuple[int, ...] = DEFAULT_NS


@dataclass
class CurveValues:
    """Per-query curves of one problem, the output of a curve kernel.

    ``n_relevant``: (Q,) int64, relevant non-junk items; ``precision``: (Q, m) float64, each
    value correctly rounded from its exact rational (0 for a query with no relevant item);
    ``recall``: (Q, m) for ``pr_radius``, else None; ``exact``: the reference's Fractions,
    ``{"precision": rows, "recall": rows}``.
    """

    n_relevant: np.ndarray
    precision: np.ndarray
    recall: Optional[np.ndarray] = None
    exact: Optional[Dict[str, List[List[Fraction]]]] = None


@dataclass(frozen=True)
class Curve:
    """A mean curve over the counted queries.

    Attributes
    ----------
    kind : one of ``CURVE_KINDS``
    x : recall levels, radii, N, or ranks 1 .. max_rank (float64 or int64)
    y : the mean precision at each x (the mean CMC for ``cmc``)
    recall : the mean recall within each radius (``pr_radius``), else None
    n_counted : the queries averaged over
    implementation : who computed the per-query values
    exact : the exact means as Fractions (``implementation="reference"``), ``{"y": ..., "recall": ...}``
    """

    kind: str
    x: np.ndarray
    y: np.ndarray
    recall: Optional[np.ndarray]
    n_counted: int
    implementation: str
    exact: Optional[Mapping[str, Sequence[Optional[Fraction]]]] = None  # a CMC of no counted query holds None

    def points(self) -> List[Tuple[float, float]]:
        """(x, y) pairs; for ``pr_radius`` (recall, precision), ready for ``plot_pr_curves``."""
        if self.recall is not None:
            return list(zip(self.recall.tolist(), self.y.tolist()))
        return list(zip(self.x.tolist(), self.y.tolist()))


def check_recall_levels(levels) -> Tuple[Fraction, ...]:
    """Recall levels as exact Fractions in [0, 1] (a float is taken at its exact value)."""
    out = []
    for level in _sequence("recall_levels", levels):
        if isinstance(level, bool) or not isinstance(level, (int, float, Fraction, np.integer, np.floating)):
            raise TypeError(f"recall_levels: expected numbers in [0, 1], got {level!r}")
        number = level.item() if isinstance(level, np.generic) else level
        if isinstance(number, float) and not math.isfinite(number):  # Fraction() cannot take it
            raise ValueError(f"recall_levels: expected numbers in [0, 1], got {level!r}")
        value = Fraction(number)
        if not 0 <= value <= 1:
            raise ValueError(f"recall_levels: expected numbers in [0, 1], got {level!r}")
        out.append(value)
    return tuple(out)


#: the largest N of the precision curve (N travels as int64)
MAX_N = 2**62


def list_lengths(ns) -> Tuple[int, ...]:
    """N of the precision curve: positive integers up to ``MAX_N``."""
    out = tuple(int(cast(int, v.positive_int("n", n))) for n in _sequence("n", ns))  # never None: not allowed
    for n in out:
        if n > MAX_N:
            raise ValueError(f"n: expected list lengths up to 2**62, got {n}")
    return out


def radii_values(radii, problem: Problem) -> Tuple[float, ...]:
    """Radii: finite numbers (a distance may be negative: scores rank as the distance
    ``-score``); for codes by default every Hamming distance 0 .. bits."""
    if radii is None:
        if problem.query_bits is None:
            raise ValueError(
                "radii: expected a list of distances for pr_radius with distances, scores or "
                "embeddings (only codes have a default, 0 .. bits)"
            )
        return tuple(float(r) for r in range(problem.query_bits.shape[1] + 1))
    out = []
    for r in _sequence("radii", radii):
        if isinstance(r, (bool, np.bool_)) or not isinstance(r, numbers.Real):
            raise TypeError(f"radii: expected finite numbers, got {r!r} ({type(r).__name__})")
        if not math.isfinite(r):
            raise ValueError(f"radii: expected finite numbers, got {r}")
        out.append(float(r))
    return tuple(out)


def _sequence(name: str, values) -> list:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name}: expected a list of numbers, got {values!r}")
    values = list(values)
    if not values:
        raise ValueError(f"{name}: expected at least one value, got an empty list")
    return values


def curve_kernel(implementation: str, problem: Optional[Problem] = None):
    """(name, per-query function) of an implementation that draws curves (``auto``: the
    fastest that can draw ``problem``'s)."""
    if implementation != "auto" and implementation not in CURVE_KERNELS:
        raise ValueError(
            f"implementation: curves are computed by one of {['auto', *CURVE_KERNELS]}, got {implementation!r}"
        )
    for name in CURVE_AUTO_ORDER if implementation == "auto" else (implementation,):
        module_name, function = CURVE_KERNELS[name].split(":")
        module = importlib.import_module(module_name)
        reason = getattr(module, "unavailable_reason", None)
        if implementation == "auto" and reason is not None and reason(problem) is not None:
            continue
        return name, getattr(module, function)
    raise ValueError("implementation: no implementation can draw these curves")  # pragma: no cover


def mean_curve(values: CurveValues, request: CurveRequest, empty: str, implementation: str) -> Curve:
    """Average per-query curves over the counted queries (exactly: correctly rounded means)."""
    counted = values.n_relevant > 0 if empty == "skip" else np.ones(values.n_relevant.shape[0], dtype=bool)
    n = int(counted.sum())
    if n == 0:
        raise ValueError(
            "relevance: no query has a relevant non-junk item; the mean curve is undefined "
            "(empty='zero' counts every query)"
        )
    x = {
        "pr_interpolated": np.array([float(r) for r in request.levels]),
        "pr_radius": np.array(request.radii, dtype=np.float64),
        "precision_at_n": np.array(request.ns, dtype=np.int64),
    }[request.kind]
    exact = None
    if values.exact is not None:  # the reference: exact means of exact values
        exact = {"y" if key == "precision" else key: _exact_means(rows, counted) for key, rows in values.exact.items()}
        y = np.array([float(m) for m in exact["y"]])
        recall = None if "recall" not in exact else np.array([float(m) for m in exact["recall"]])
    else:
        y = _float_means(values.precision[counted])
        recall = None if values.recall is None else _float_means(values.recall[counted])
    return Curve(request.kind, x, y, recall, n, implementation, exact)


def _exact_means(rows: List[List[Fraction]], counted: np.ndarray) -> List[Fraction]:
    chosen = [row for row, keep in zip(rows, counted) if keep]
    return [sum(column, Fraction(0)) / len(chosen) for column in zip(*chosen)]


def _float_means(matrix: np.ndarray) -> np.ndarray:
    """The correctly rounded mean of each column (exact sums, so no order matters)."""
    return np.array([float_mean(np.ascontiguousarray(matrix[:, j])) for j in range(matrix.shape[1])])


def curves(
    kind: str,
    distances=None,
    scores=None,
    query_codes=None,
    db_codes=None,
    query_embeddings=None,
    db_embeddings=None,
    metric: str = "euclidean",
    relevance=None,
    query_labels=None,
    db_labels=None,
    query_cams=None,
    db_cams=None,
    junk=None,
    ties: str = "stable",
    empty: str = "skip",
    recall_levels=None,
    radii=None,
    n=None,
    max_rank: int = 50,
    implementation: str = "auto",
    **evaluate_options: Any,
) -> Curve:
    """A mean retrieval curve over queries, exact, with a fast implementation.

    The curve of each query is averaged over the counted queries; ``pr_curve``'s points and the
    interpolation are those of :func:`rc.mean_pr_curve`, computed per query from integer counts.

    Parameters
    ----------
    kind : {"pr_interpolated", "pr_radius", "precision_at_n", "cmc"}
        ``pr_interpolated``: ``p_q(r) = max {P@k : R@k >= r}`` at each recall level r (0 when
        no depth reaches r).  ``pr_radius``: with ``W_r = {x : d(q, x) <= r}``, precision
        ``|W_r ∩ rel| / |W_r|`` (0 when W_r is empty) and recall ``|W_r ∩ rel| / R`` (spec §7
        radius).  ``precision_at_n``: ``P@N = H(min(N, N')) / N`` (N' non-junk items; E[H]
        under ``ties="expected"``).  ``cmc``: ``rc.evaluate(...).cmc`` (same inputs).
    distances, scores, query_codes + db_codes, query_embeddings + db_embeddings, metric,
    relevance, query_labels + db_labels, query_cams + db_cams, junk
        As in :func:`evaluate` (cameras: a gallery item with the query's id and camera is junk).
    ties : a tie policy of spec §4 (``pr_radius`` does not depend on it)
    empty : {"skip", "zero"}
        ``skip``: the mean is over queries with a relevant non-junk item (a PR curve needs
        one); ``zero``: every query counts, one without a relevant item with 0.
    recall_levels : recall levels in [0, 1] (default the 11 levels 0, 0.1, ..., 1; floats
        are taken at their exact binary value)
    radii : distances for ``pr_radius`` (default for codes 0, 1, ..., bits); with ``scores`` the
        distance is ``-score``, so radius r holds the items scoring at least ``-r``
    n : list lengths for ``precision_at_n`` (default ``DEFAULT_NS``); an N beyond the gallery
        gives ``R / N``
    max_rank : CMC length (``cmc``)
    implementation : {"auto", "c", "numpy", "reference"}
        ``auto``: C when the C library is built, else numpy.  ``reference`` returns the exact
        means (``Curve.exact``).  ``cmc`` takes every name of :func:`evaluate`.
    evaluate_options : for ``cmc`` only, more options of :func:`evaluate` (``protocol``...)

    Returns
    -------
    Curve
    """
    kind = v.choice("kind", kind, CURVE_KINDS)
    empty = v.choice("empty", empty, CURVE_EMPTY_POLICIES)
    ties = v.choice("ties", ties, TIE_POLICIES)
    inputs = dict(
        distances=distances,
        scores=scores,
        query_codes=query_codes,
        db_codes=db_codes,
        query_embeddings=query_embeddings,
        db_embeddings=db_embeddings,
        relevance=relevance,
        query_labels=query_labels,
        db_labels=db_labels,
        query_cams=query_cams,
        db_cams=db_cams,
        junk=junk,
    )
    unused = {
        "recall_levels": recall_levels is not None and kind != "pr_interpolated",
        "radii": radii is not None and kind != "pr_radius",
        "n": n is not None and kind != "precision_at_n",
    }
    if kind != "cmc":  # evaluate's options name themselves
        unused.update({name: True for name in evaluate_options})
    for name, given in unused.items():
        if given:
            raise ValueError(f"{name}: not an option of kind={kind!r}; leave it out")
    if kind == "cmc":
        return _cmc_curve(inputs, metric, ties, empty, max_rank, implementation, evaluate_options)
    from retrieval_conformance.reference.contract.evaluate import build_problem

    if implementation != "auto" and implementation not in CURVE_KERNELS:
        curve_kernel(implementation)  # named before any array is read
    problem = build_problem(**inputs, metric=metric)
    name, kernel = curve_kernel(implementation, problem)
    request = CurveRequest(
        kind,
        ties,
        levels=check_recall_levels(ELEVEN_POINTS if recall_levels is None else recall_levels),
        radii=radii_values(radii, problem) if kind == "pr_radius" else (),
        ns=list_lengths(DEFAULT_NS if n is None else n),
    )
    return mean_curve(kernel(problem, request), request, empty, name)


def _cmc_curve(inputs, metric, ties, empty, max_rank, implementation, options) -> Curve:
    """The CMC of ``evaluate`` as a :class:`Curve` (every implementation computes it)."""
    from retrieval_conformance.reference.contract.evaluate import evaluate

    protocol = options.pop("protocol", "reid" if inputs["query_cams"] is not None else "hashing")
    result = evaluate(
        **inputs,
        metric=metric,
        ties=ties,
        empty=empty,
        max_rank=max_rank,
        implementation=implementation,
        protocol=protocol,
        **options,
    )
    n_relevant = result.per_query.n_relevant
    counted = int(np.count_nonzero(n_relevant > 0)) if empty == "skip" else n_relevant.shape[0]
    exact = None if result.exact is None else {"y": list(result.exact.cmc)}
    return Curve(
        "cmc",
        np.arange(1, max_rank + 1),
        np.asarray(result.cmc, dtype=np.float64),
        None,
        counted,
        result.implementation,
        exact,
    )
