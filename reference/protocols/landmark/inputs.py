"""Input checks and query pairing of the landmark protocols (spec §2 ground-truth sets).

Every landmark function checks its arguments here, so each kind of input gets one error
message wherever it is passed: lists of names (:func:`check_names`), revisitop positions
(:func:`check_positions`), cut-offs (:func:`check_k`, :func:`check_cutoffs`), and, for
:func:`~retrieval_conformance.reference.protocols.landmark.evaluate_landmark`, the pairing of ranked lists
with ground truth (:func:`pair_inputs`) and each protocol's ground-truth entry
(:func:`oxford_gt`, :func:`roxford_gt`, :func:`gldv2_solution`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Hashable, Iterable, List, Sequence, Tuple, Union

import numpy as np

__all__ = [
    "check_cutoffs",
    "check_k",
    "check_names",
    "check_positions",
    "gldv2_solution",
    "is_int",
    "oxford_gt",
    "pair_inputs",
    "roxford_gt",
]


def is_int(value: Any) -> bool:
    """An int or numpy integer, not a bool (``True`` is no cut-off or position)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_names(value: Any, what: str, *, sequence: bool) -> List[Hashable]:
    """Validate a list of names (str, bytes, ints ...); a bare str is refused.

    Parameters
    ----------
    value : iterable of hashable
        The names; a 1-D array is read with ``tolist()``.
    what : str
        How error messages call the argument.
    sequence : bool
        Require a sequence (a ranked list has an order); ground-truth lists may be any
        iterable.

    Returns
    -------
    list
        The names, numpy scalars turned into Python values.
    """
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of names, not a single {type(value).__name__}")
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise ValueError(f"{what} must be 1-D, got an array of shape {value.shape}")
        return value.tolist()
    if sequence and not isinstance(value, Sequence):
        raise TypeError(f"{what} must be a sequence (list, tuple, 1-D array) of names, got {type(value).__name__}")
    try:
        out = list(value)
    except TypeError:
        raise TypeError(f"{what} must be an iterable of names, got {type(value).__name__}") from None
    for item in out:
        try:
            hash(item)
        except TypeError:
            raise TypeError(
                f"{what} holds an unhashable item of type {type(item).__name__}; names must be str, bytes or ints"
            ) from None
    return [x.item() if isinstance(x, np.generic) else x for x in out]


def check_positions(positions: Sequence[int]) -> List[int]:
    """0-based positions as Python ints; bools, non-ints and negative values are errors."""
    out = []
    for p in positions:
        if not is_int(p):
            raise TypeError(f"positions must be ints, got {type(p).__name__}")
        if p < 0:
            raise ValueError(f"positions must be >= 0 (0-based), got {p}")
        out.append(int(p))
    return out


def check_k(k: Any, what: str) -> int:
    """A cut-off: a positive int (numpy integers accepted, bools refused)."""
    if not is_int(k):
        raise TypeError(f"{what} must be a positive int, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"{what} must be >= 1, got {k}")
    return int(k)


def check_cutoffs(k: Union[int, Iterable[int], None], default: Tuple[int, ...]) -> Tuple[int, ...]:
    """The mP@k cut-offs of roxford: ``default`` for None, one int, or a non-empty sequence."""
    if k is None:
        return default
    if is_int(k):
        return (check_k(k, "k"),)
    if isinstance(k, (str, bytes)) or not isinstance(k, Iterable):
        raise TypeError(f"k must be an int or a sequence of ints, got {type(k).__name__}")
    kappas = tuple(check_k(v, "k") for v in k)
    if not kappas:
        raise ValueError("k: give at least one cut-off for mP@k")
    return kappas


def _first_five(items: List[Any]) -> str:
    return f"{items[:5]!r}" + (" ..." if len(items) > 5 else "")


def pair_inputs(ranked_lists: Any, ground_truth: Any, protocol: str) -> Tuple[List[Any], List[Any], List[Any]]:
    """(query keys, ranked lists or None, gt) aligned, with clear errors.

    Parameters
    ----------
    ranked_lists, ground_truth
        Both mappings keyed by query, or both sequences with one entry per query (a 2-D
        array of ranked lists is read row by row).
    protocol : str
        ``gldv2`` lets a query of a mapping ground truth have no ranked list (it then
        scores 0); the other protocols need one for every query.

    Returns
    -------
    keys, lists, gts : lists of the same length
        Query keys (indices for sequence input); ``lists`` holds None where gldv2 has no
        ranked list.
    """
    if isinstance(ground_truth, Mapping):
        if not isinstance(ranked_lists, Mapping):
            raise TypeError(
                "ground_truth is a mapping (query -> gt), so ranked_lists must be "
                "a mapping too (query -> ranked list), got "
                f"{type(ranked_lists).__name__}"
            )
        keys = list(ground_truth)
        extra = [q for q in ranked_lists if q not in ground_truth]
        if extra:
            raise ValueError(f"ranked_lists has queries not in ground_truth: {_first_five(extra)}")
        missing = [q for q in keys if q not in ranked_lists]
        if missing and protocol != "gldv2":
            raise ValueError(f"ranked_lists lacks queries of ground_truth: {_first_five(missing)}")
        return keys, [ranked_lists.get(q) for q in keys], [ground_truth[q] for q in keys]
    if isinstance(ground_truth, (str, bytes)) or not isinstance(ground_truth, Sequence):
        raise TypeError(
            "ground_truth must be a mapping (query -> gt) or a sequence with one "
            f"entry per query, got {type(ground_truth).__name__}"
        )
    if isinstance(ranked_lists, Mapping):
        raise TypeError(
            "ranked_lists is a mapping but ground_truth is a sequence: "
            "pass both as mappings keyed by query, or both as sequences"
        )
    if isinstance(ranked_lists, np.ndarray):
        if ranked_lists.ndim != 2:
            raise ValueError(
                f"ranked_lists as an array must be 2-D (queries x ranked items), got shape {ranked_lists.shape}"
            )
        ranked_lists = list(ranked_lists)
    if isinstance(ranked_lists, (str, bytes)) or not isinstance(ranked_lists, Sequence):
        raise TypeError(
            f"ranked_lists must be a mapping or a sequence of ranked lists, got {type(ranked_lists).__name__}"
        )
    if len(ranked_lists) != len(ground_truth):
        raise ValueError(
            f"ranked_lists has {len(ranked_lists)} lists but ground_truth has "
            f"{len(ground_truth)} queries (one ranked list per query, rows = queries; "
            "revisitop's `ranks` array is (n_db, n_queries): pass ranks.T)"
        )
    n = len(ground_truth)
    return list(range(n)), list(ranked_lists), list(ground_truth)


def oxford_gt(gt: Any, q: Any) -> Tuple[list, list, list]:
    """(good, ok, junk) of one oxford query: a mapping or a ``readers.GroundTruthQuery``."""
    if hasattr(gt, "as_dict") and not isinstance(gt, Mapping):
        gt = gt.as_dict()
    if not isinstance(gt, Mapping):
        raise TypeError(
            f"ground_truth[{q!r}] must be a mapping with 'good', 'ok', 'junk' "
            f"(or a readers.GroundTruthQuery), got {type(gt).__name__}"
        )
    if "good" not in gt and "ok" not in gt:
        hint = (
            " (it looks like revisitop ground truth: use protocol='roxford-easy', 'roxford-medium' or 'roxford-hard')"
            if "easy" in gt
            else ""
        )
        raise ValueError(f"ground_truth[{q!r}] needs 'good' and/or 'ok' lists{hint}")
    return (gt.get("good", []), gt.get("ok", []), gt.get("junk", []))


def roxford_gt(gt: Any, q: Any) -> Mapping:
    """One revisitop ``gnd`` entry, which must be a mapping (its keys are checked later)."""
    if not isinstance(gt, Mapping):
        raise TypeError(
            f"ground_truth[{q!r}] must be a mapping with 'easy', 'hard' and "
            f"'junk' (revisitop's gnd entry), got {type(gt).__name__}"
        )
    return gt


def gldv2_solution(gt: Any, q: Any) -> List[Hashable]:
    """The solution list (relevant index images) of one gldv2 query."""
    if isinstance(gt, Mapping):
        raise TypeError(f"ground_truth[{q!r}] for gldv2 must be the list of relevant index images, got a mapping")
    return check_names(gt, f"ground_truth[{q!r}]", sequence=False)
