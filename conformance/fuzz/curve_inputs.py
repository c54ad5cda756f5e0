"""The fuzz campaign for ``rc.curves``: every curve kind, every implementation, odd options.

A case (:func:`draw_case`) is a small problem of the curves' tests (codes up to three words wide,
tie-heavy distances in float32 and float64, scores, relevance matrices, labels, multi-hot labels,
junk and camera junk, queries without a relevant item), a curve kind, a tie policy, ``empty``, and
the kind's points (recall levels, radii, list lengths, ``max_rank``). One case in four changes
something a correct front end must refuse by name: a NaN distance, a level outside [0, 1], a NaN
or boolean radius, a list length of 0 or past 2**62, an empty list, a point of another kind, an
implementation that does not exist, a junk mask of the wrong shape.

What a correct ``curves`` does (:func:`classify_case`):

* every implementation (``reference``, ``numpy`` and, where built, ``c``) returns a curve, or
  every one raises a ``ValueError``/``TypeError`` whose message starts with the argument it
  refuses (a change the case declares invalid must be refused: else ``accepted_invalid``);
* the fast implementations agree bit for bit (``x``, ``y``, ``recall``, ``n_counted``), and lie
  within 1e-12 of the reference's exact means (they average per-query values rounded first);
* the reference's exact means equal those of a plain count written here (:func:`_oracle`) from
  the inputs alone, and the fast means are the exact mean of that count's values each rounded
  to float64, itself correctly rounded, for ``precision_at_n`` and ``pr_radius`` and, under a concrete tie order,
  ``pr_interpolated``: ``P@N = H(min(N, N')) / N``, ``|W_r ∩ rel| / |W_r|`` and ``|W_r ∩ rel| / R``
  with ``W_r`` the non-junk items within distance r, and ``max {P@k : R@k >= r}``.

Run with ``python -m retrieval_conformance.conformance.fuzz --target curves --cases N``.
"""

from __future__ import annotations

import inspect
import math
import re
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Dict, List, Optional

import numpy as np
import retrieval_conformance as rc
from retrieval_conformance.conformance.problems.evaluate_inputs import curve_inputs
from retrieval_conformance.reference.contract.conventions import CONCRETE_POLICIES, TIE_POLICIES
from retrieval_conformance.reference.contract.curves import CURVE_KINDS, DEFAULT_NS

from .classify import Outcome

__all__ = ["CurveCase", "classify_case", "draw_case"]

_ARGUMENTS = tuple(inspect.signature(rc.curves).parameters) + ("protocol",)
_NAMED = re.compile(r"^(" + "|".join(map(re.escape, _ARGUMENTS)) + r")\b")
#: changes a correct front end refuses, each as (name, keyword, value); None: drawn below
_INVALID_POINTS = {
    "pr_interpolated": ("recall_levels", (1.5, -0.25, math.nan, "0.5", True)),
    "pr_radius": ("radii", (math.nan, math.inf, True, "1")),
    "precision_at_n": ("n", (0, -1, 2**63, 1.5, True)),
    "cmc": ("max_rank", (0, -1, 1.5)),
}
#: a point option of each kind, to be refused by another kind
_FOREIGN = {"recall_levels": [0.5], "radii": [1.0], "n": [1], "protocol": "reid"}


@dataclass
class CurveCase:
    inputs: Dict[str, Any]
    options: Dict[str, Any]
    change: str = ""
    invalid: bool = False
    notes: List[str] = field(default_factory=list)

    def describe(self) -> str:
        shapes = ", ".join(f"{k}{list(np.shape(v))}" for k, v in self.inputs.items())
        return f"{self.change}: {shapes}, {self.options}"


def _points(d, kind: str) -> Dict[str, Any]:
    """The kind's points, valid (or the default when none is drawn)."""
    if d.boolean():
        return {}
    if kind == "pr_interpolated":
        return {"recall_levels": sorted({Fraction(d.integer(0, 8), 8) for _ in range(d.integer(1, 4))})}
    if kind == "pr_radius":
        return {"radii": [d.integer(-4, 12) / 4 for _ in range(d.integer(1, 4))]}
    if kind == "precision_at_n":
        return {"n": [d.choice((1, 2, 3, 5, 9, 2**40)) for _ in range(d.integer(1, 4))]}
    return {"max_rank": d.integer(1, 9)}


def draw_case(d) -> CurveCase:
    kind = d.choice(CURVE_KINDS)
    nq, n = d.integer(1, 4), d.integer(1, 8)
    inputs = curve_inputs(d, nq, n, codes=d.chance(0.25))
    options: Dict[str, Any] = {"ties": d.choice(TIE_POLICIES), "empty": d.choice(("skip", "zero"))}
    options.update(_points(d, kind))
    if kind == "pr_radius" and "query_codes" not in inputs and "radii" not in options:
        options["radii"] = [d.integer(-4, 12) / 4 for _ in range(d.integer(1, 3))]  # only codes have a default
    change, invalid = "plain", False
    if d.chance(0.25):
        change, invalid = _break(d, kind, inputs, options, (nq, n)), True
    options["kind"] = kind
    return CurveCase(inputs, options, f"{kind}-{change}", invalid)


def _break(d, kind: str, inputs: Dict[str, Any], options: Dict[str, Any], shape) -> str:
    """Change the case into one a correct front end refuses; returns the change's name."""
    how = d.choice(("point", "empty-list", "foreign", "nan", "implementation", "junk-shape"))
    if how == "point" or (how == "nan" and not any(k in inputs for k in ("distances", "scores"))):
        keyword, values = _INVALID_POINTS[kind]
        options[keyword] = d.choice(values) if keyword == "max_rank" else [d.choice(values)]
        return "bad-point"
    if how == "empty-list" and kind != "cmc":
        options[_INVALID_POINTS[kind][0]] = []
        return "empty-list"
    if how in ("foreign", "empty-list"):
        keyword = d.choice([k for k in _FOREIGN if k != _INVALID_POINTS[kind][0] and (k, kind) != ("protocol", "cmc")])
        options[keyword] = _FOREIGN[keyword]
        return "foreign-option"
    if how == "nan":
        key = "distances" if "distances" in inputs else "scores"
        inputs[key] = inputs[key].copy()
        inputs[key][d.integer(0, inputs[key].shape[0] - 1), 0] = np.nan
        return "nan"
    if how == "implementation":
        options["implementation"] = d.choice(("cuda", "", "C", "torch-gpu"))
        return "bad-implementation"
    inputs.pop("query_cams", None), inputs.pop("db_cams", None)
    inputs["junk"] = np.zeros((shape[0], shape[1] + 1), dtype=bool)
    return "junk-shape"


def _implementations() -> List[str]:
    names = ["reference", "numpy"]
    if "c" in rc.available_implementations():
        names.append("c")
    return names


def _call(case: CurveCase, implementation: str):
    options = dict(case.options)
    options.setdefault("implementation", implementation)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # float16 and tie warnings are by design; not checked here
            return rc.curves(**case.inputs, **options)
    except (ValueError, TypeError) as exc:
        return exc


def _bits(curve) -> tuple:
    recall = None if curve.recall is None else curve.recall.tobytes()
    return (curve.x.tobytes(), curve.y.tobytes(), recall, curve.n_counted)


def classify_case(case: CurveCase) -> Outcome:
    try:
        results = {name: _call(case, name) for name in _implementations()}
    except Exception as exc:  # noqa: BLE001 (every other exception is a finding)
        return Outcome("unnamed_error", f"{case.describe()}: {type(exc).__name__}: {str(exc)[:300]}")
    errors = {name: r for name, r in results.items() if isinstance(r, Exception)}
    for name, exc in errors.items():
        if not _NAMED.match(str(exc)):
            return Outcome("unnamed_error", f"{case.describe()}: {name}: {str(exc)[:300]}", name)
    if errors and len(errors) != len(results):
        said = {name: (str(r)[:120] if isinstance(r, Exception) else "a curve") for name, r in results.items()}
        return Outcome("inconsistent", f"{case.describe()}: {said}")
    if errors:
        return Outcome("named_error")
    if case.invalid:
        return Outcome("accepted_invalid", f"{case.describe()}: returned {results['reference'].y.tolist()}")
    fast = [name for name in results if name != "reference"]
    reference = results["reference"]
    for name in fast[1:]:
        if _bits(results[name]) != _bits(results[fast[0]]):
            return Outcome(
                "wrong_number",
                f"{case.describe()}: {name} y={results[name].y.tolist()}, {fast[0]} y={results[fast[0]].y.tolist()}",
                name,
            )
    got = results[fast[0]]
    if _bits(got)[0] != _bits(reference)[0] or got.n_counted != reference.n_counted or not _near(got, reference):
        return Outcome(
            "wrong_number", f"{case.describe()}: {fast[0]} y={got.y.tolist()}, reference {reference.y.tolist()}"
        )
    rows = _oracle(case)
    if rows is None or reference.exact is None:
        return Outcome("value")
    for key, values in rows.items():
        exact = [sum(column, Fraction(0)) / len(values) for column in zip(*values)]
        # the fast means: correctly rounded from the exact sum of the per-query values, each rounded
        rounded = [
            float(sum((Fraction(float(x)) for x in column), Fraction(0)) / len(values)) for column in zip(*values)
        ]
        fast_values = (got.y if key == "y" else got.recall).tolist()
        if list(reference.exact[key]) != exact or fast_values != rounded:
            return Outcome(
                "wrong_number",
                f"{case.describe()}: {key}: reference {list(reference.exact[key])}, {fast[0]} {fast_values}; "
                f"a count gives {exact} ({rounded} from rounded values)",
            )
    return Outcome("value")


def _near(a, b) -> bool:
    """The fast means within 1e-12 of the reference's exact ones (each rounds the per-query values first)."""
    pairs = [(a.y, b.y)] + ([(a.recall, b.recall)] if a.recall is not None or b.recall is not None else [])
    return all(
        x is not None and y is not None and np.allclose(x, y, rtol=0, atol=1e-12, equal_nan=True) for x, y in pairs
    )


def _distances(inputs: Dict[str, Any]) -> np.ndarray:
    """Each query's distances as Python-exact float64 (Hamming counts for codes, -score for scores)."""
    if "query_codes" in inputs:
        q, g = inputs["query_codes"], inputs["db_codes"]
        return (q[:, None, :] != g[None, :, :]).sum(axis=2).astype(np.float64)
    if "scores" in inputs:
        return -np.asarray(inputs["scores"], dtype=np.float64)
    return np.asarray(inputs["distances"], dtype=np.float64)


def _relevance(inputs: Dict[str, Any], shape) -> tuple:
    """(relevant, junk) boolean matrices from relevance, labels or multi-hot labels, junk or cameras."""
    junk = np.zeros(shape, dtype=bool) if inputs.get("junk") is None else np.asarray(inputs["junk"], dtype=bool)
    if "relevance" in inputs:
        return np.asarray(inputs["relevance"], dtype=bool), junk
    ql, gl = inputs["query_labels"], inputs["db_labels"]
    if ql.ndim == 2:
        return (ql[:, None, :] & gl[None, :, :]).any(axis=2), junk
    same = ql[:, None] == gl[None, :]
    if "query_cams" in inputs:
        junk = same & (inputs["query_cams"][:, None] == inputs["db_cams"][None, :])
    return same, junk


def _ranked(d: List[float], rel: List[bool], ties: str) -> List[bool]:
    """Relevance in rank order under a concrete tie policy."""
    tie = {"stable": lambda i: i, "reverse": lambda i: -i, "optimistic": lambda i: not rel[i]}
    tie["pessimistic"] = lambda i: rel[i]
    order = sorted(range(len(d)), key=lambda i: (d[i], tie[ties](i)))
    return [rel[i] for i in order]


def _oracle(case: CurveCase) -> Optional[Dict[str, List[List[Fraction]]]]:
    """The counted queries' exact curves from a plain count (``y`` and, for ``pr_radius``,
    ``recall``), or None where this count does not apply."""
    kind, ties, opts = case.options["kind"], case.options["ties"], case.options
    if kind == "cmc" or (kind != "pr_radius" and ties not in CONCRETE_POLICIES):
        return None
    dist = _distances(case.inputs)
    relevant, junk = _relevance(case.inputs, dist.shape)
    rows: Dict[str, List[List[Fraction]]] = {"y": [], "recall": []}
    for q in range(dist.shape[0]):
        keep = ~junk[q]
        d, rel = dist[q][keep].tolist(), relevant[q][keep].tolist()
        R = sum(rel)
        if R == 0 and opts["empty"] == "skip":
            continue
        if kind == "pr_radius":
            radii = opts.get("radii") or list(range(case.inputs["query_codes"].shape[1] + 1))
            within = [[i for i, x in enumerate(d) if x <= r] for r in radii]
            rows["y"].append([Fraction(sum(rel[i] for i in w), len(w)) if w else Fraction(0) for w in within])
            rows["recall"].append([Fraction(sum(rel[i] for i in w), R) if R else Fraction(0) for w in within])
            continue
        ranked = _ranked(d, rel, ties)
        if kind == "precision_at_n":
            ns = opts.get("n") or DEFAULT_NS
            rows["y"].append([Fraction(sum(ranked[: min(N, len(ranked))]), N) for N in ns])
            continue
        levels = [Fraction(x) for x in opts.get("recall_levels") or [Fraction(i, 10) for i in range(11)]]
        hits = [sum(ranked[:k]) for k in range(1, len(ranked) + 1)]
        rows["y"].append(
            [
                max([Fraction(h, k) for k, h in enumerate(hits, 1) if R and Fraction(h, R) >= r], default=Fraction(0))
                for r in levels
            ]
        )
    if not rows["y"]:
        return None  # no counted query: the front end refuses, checked above
    return {key: values for key, values in rows.items() if values}
