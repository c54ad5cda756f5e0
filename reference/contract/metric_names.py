"""The names of the metrics a :class:`~.problem.Result` reports, and the ``metrics=`` option.

One vocabulary for every entry point: ``rc.evaluate(metrics=...)``, ``rc.Accumulator``,
``evaluate --metrics`` and ``rc.compare`` read metric names here.

* The canonical names are the fields of ``Result`` that hold a metric: its means (``map``,
  ``precision_at_k``, ``recall_at_k``, ``minp``, ``r_precision``, ``ndcg_at_k``, ``mrr``,
  ``map_at_r``, ``precision_at_radius``, ``recall_at_radius``, from ``PerQuery``'s field
  metadata) and the curve ``cmc``.
* Aliases people type: ``mAP``, ``mINP``, ``nDCG``, ``MRR``, ``P@k``, ``MAP@R``, ... (case and
  ``-``/``_`` do not matter) and ``rank1``, ``rank5``, ``cmc10``: a rank of the CMC.

``metrics=None`` (the default) computes everything the protocol reports.  A list computes the
per-query values of the named metrics and what they depend on (:func:`per_query_fields`);
every other field of the ``Result`` refuses to be read, by name.

>>> resolve_metrics(["mAP", "rank1"])
('map', 'cmc')
>>> sorted(per_query_fields(("map",)))
['ap', 'hits_at_k', 'n_relevant']
"""

from __future__ import annotations

import re
from typing import FrozenSet, Iterable, Optional, Tuple

from retrieval_conformance.reference.contract.problem import MEANS

#: other spellings of the names of ``Result``'s means (lower case, "-" read as "_")
ALIASES = {
    "inp": "minp",
    "p@k": "precision_at_k",
    "r@k": "recall_at_k",
    "map@k": "map",
    "ap": "map",
    "rprec": "r_precision",
    "r_prec": "r_precision",
    "ndcg": "ndcg_at_k",
    "ndcg@k": "ndcg_at_k",
    "mrr@k": "mrr",
    "rr": "mrr",
    "map@r": "map_at_r",
}
#: the CMC at a rank: rank1, rank_5, cmc10, ... (canonical: rank1, rank5, rank10)
RANK_NAME = re.compile(r"^(?:rank|cmc)_?(\d+)$")
#: the metric fields of ``Result``: its means, then the CMC curve
METRIC_NAMES: Tuple[str, ...] = tuple(MEANS) + ("cmc",)
#: metric field of ``Result`` -> the per-query field of ``PerQuery`` it is computed from
PER_QUERY_FIELD = {**{mean: field for mean, (field, _) in MEANS.items()}, "cmc": "cmc"}
#: per-query fields computed whatever is asked: the empty-query policy reads them (R and H_k),
#: and they cost no more than finding the relevant items
ALWAYS_COMPUTED: FrozenSet[str] = frozenset({"n_relevant", "hits_at_k"})
#: the per-query arrays of ``Result`` itself -> the metric they belong to
RESULT_ARRAYS = {"ap": "map", "inp": "minp"}


def canonical_metric(name: str) -> str:
    """The canonical spelling of a metric's name: ``"mAP"`` -> ``"map"``, ``"CMC-5"`` -> ``"rank5"``.

    A name that is no alias and no rank comes back lower-cased, ``-`` read as ``_``.
    """
    key = name.strip().lower().replace("-", "_")
    key = ALIASES.get(key, key)
    match = RANK_NAME.match(key)
    return f"rank{int(match.group(1))}" if match else key


def resolve_metrics(metrics: Optional[Iterable[str]]) -> Optional[Tuple[str, ...]]:
    """``metrics=`` as the canonical ``Result`` fields it asks for, in ``METRIC_NAMES`` order.

    None stays None (every metric).  A string is one name or several separated by commas
    (``"map,rank1"``, as on the command line).  ``rankN`` asks for the CMC.

    Raises
    ------
    ValueError
        An unknown name (the message lists the valid ones), an empty list, or not a list of strings.
    """
    if metrics is None:
        return None
    names = metrics.split(",") if isinstance(metrics, str) else metrics
    try:
        names = list(names)
    except TypeError:
        raise ValueError(
            f"metrics: expected a list of metric names such as ['map', 'rank1'], or None for "
            f"every metric; got {type(metrics).__name__}"
        ) from None
    chosen = set()
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"metrics: expected metric names (strings), got {name!r}; valid: {valid_names()}")
        key = canonical_metric(name)
        field = "cmc" if RANK_NAME.match(key) else key
        if field not in METRIC_NAMES:
            raise ValueError(
                f"metrics: unknown metric {name.strip()!r}; valid: {valid_names()} (or None for every metric)"
            )
        chosen.add(field)
    if not chosen:
        raise ValueError(
            f"metrics: expected at least one metric name, got {metrics!r}; valid: {valid_names()} "
            "(or None for every metric)"
        )
    return tuple(name for name in METRIC_NAMES if name in chosen)


def valid_names() -> str:
    """The valid values of ``metrics=``, for error messages and help."""
    return ", ".join(METRIC_NAMES) + ", rankN (the CMC at rank N), and the aliases " + ", ".join(sorted(ALIASES))


def per_query_fields(metrics: Optional[Tuple[str, ...]]) -> Optional[FrozenSet[str]]:
    """The ``PerQuery`` fields the canonical ``metrics`` need (None: every field)."""
    if metrics is None:
        return None
    return ALWAYS_COMPUTED | frozenset(PER_QUERY_FIELD[name] for name in metrics)


def check_requested(metrics: Optional[Tuple[str, ...]], options_set: Iterable[str]) -> None:
    """Refuse, by name, a requested metric whose option is not set (P@k without k, P@radius
    without radius); ``options_set``: the names of the options that are set."""
    for name in metrics or ():
        needs = MEANS.get(name, (None, None))[1]
        if needs is not None and needs not in options_set:
            what = "a cut-off k=" if needs == "k" else "radius="
            raise ValueError(f"metrics: {name!r} needs {what}, which is not set; give {needs}=... or drop {name!r}")


def computes(metrics: Optional[Tuple[str, ...]], field: str) -> bool:
    """Whether the per-query field ``field`` (of ``PerQuery``) is needed for ``Options.metrics``:
    what an implementation asks before it spends work on a field."""
    needed = per_query_fields(metrics)
    return needed is None or field in needed
