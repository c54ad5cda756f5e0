"""The names of the metrics a :class:`~.problem.Result` reports, and the ``metrics=`` option.

One vocabulary for every entry point: ``rc.evaluate(metrics=...)``, ``rc.Accumulator``,
``evaluate --metrics`` and ``rc.compare`` read metric names here.

* The canonical names are the fields of ``Result`` that hold a metric: its means (``map``,
  ``precision_at_k``, ``recall_at_k``, ``minp``, ``r_precision``, ``ndcg_at_k``, ``mrr``,
  ``map_at_r``, ``precision_at_radius``, ``recall_at_radius``, from ``PerQuery``'s field
  metadata) and the curve ``cmc``.
* Aliases people type: ``mAP``, ``mINP``, ``nDCG``, ``MRR``, ``P@k``, ``MAP@R``, ... (case and
  ``-``/``_`` do not matter) and ``rank1``, ``rank5``, ``cmc10``: a rank of the CMC.
* trec_eval's and ir_measures' names (``P_10``, ``ndcg_cut_10``, ``recip_rank``, ``P@10``,
  ``nDCG@10``, ``AP``, ``RR``, ``Success@10``), read by the sibling module
  :mod:`.measure_names`: a name with a cut-off is refused unless the evaluation has that
  cut-off, and a name that needs the qrels (``bpref``, ``Judged@10``, ``P(rel=2)@10``) is
  refused by arrays, saying why.

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

from retrieval_conformance.reference.contract.arrays import shown
from retrieval_conformance.reference.contract.measure_names import (
    FAMILIES,
    JUDGED_ONLY,
    Measure,
    parse_measure,
    trec_name,
)
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
#: the CMC at a rank: rank1, rank_5, cmc10, ... (canonical: rank1, rank5, rank10); ranks count from 1
#: (``rank0`` names no rank), with at most 18 digits (beyond any gallery, and ``int`` stays cheap)
RANK_NAME = re.compile(r"^(?:rank|cmc)_?0*([1-9]\d{0,17})$")
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


def resolve_metrics(
    metrics: Optional[Iterable[str]], cutoffs: Optional[Tuple[Optional[int], ...]] = None
) -> Optional[Tuple[str, ...]]:
    """``metrics=`` as the canonical ``Result`` fields it asks for, in ``METRIC_NAMES`` order.

    None stays None (every metric).  A string is one name or several separated by commas
    (``"map,rank1"``, as on the command line).  ``rankN`` asks for the CMC.  ``cutoffs``: the
    evaluation's cut-offs (None in it: no cut-off), which a name with a cut-off (``P_10``,
    ``nDCG@10``) must be among; None: not checked here (the caller checks them).

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
        measure = parse_measure(name)
        if measure is not None:  # trec_eval's or ir_measures' name
            if not RANK_NAME.match(measure.metric):
                _check_measure(name, measure, cutoffs)
            key = measure.metric
        else:
            key = canonical_metric(name)
        field = "cmc" if RANK_NAME.match(key) else key
        if field not in METRIC_NAMES:
            hint = " (ranks count from 1: rank1 is the top item)" if re.match(r"^(?:rank|cmc)_?0+$", key) else ""
            raise ValueError(
                f"metrics: unknown metric {shown(name.strip())}{hint}; valid: {valid_names()} "
                "(or None for every metric)"
            )
        chosen.add(field)
    if not chosen:
        raise ValueError(
            f"metrics: expected at least one metric name, got {metrics!r}; valid: {valid_names()} "
            "(or None for every metric)"
        )
    return tuple(name for name in METRIC_NAMES if name in chosen)


def _check_measure(name: str, measure: Measure, cutoffs: Optional[Tuple[Optional[int], ...]]) -> None:
    """Refuse, saying why, a trec_eval or ir_measures name that arrays cannot give as named."""
    if measure.metric in JUDGED_ONLY:
        raise ValueError(
            f"metrics: {name.strip()!r} is computed from the judgments themselves (the qrels), which arrays "
            "do not hold; evaluate a TREC run and its qrels (evaluate_run, or the command's --run and --qrels)"
        )
    if measure.level is not None:
        raise ValueError(
            f"metrics: {name.strip()!r} counts grades >= {measure.level} as relevant, which needs graded "
            "judgments (a TREC run's qrels, with relevance_level); arrays' relevance is 0 or 1"
        )
    if measure.cutoff is not None and cutoffs is not None and measure.cutoff not in cutoffs:
        shown = ", ".join("none" if c is None else str(c) for c in cutoffs)
        raise ValueError(
            f"metrics: {name.strip()!r} is {measure.metric} at {measure.cutoff}, but the cut-off is {shown}; "
            f"set the cut-off k to {measure.cutoff}, or name the metric without one ({measure.metric})"
        )


def valid_names() -> str:
    """The valid values of ``metrics=``, for error messages and help."""
    return (
        ", ".join(METRIC_NAMES)
        + ", rankN (the CMC at rank N), the aliases "
        + ", ".join(sorted(ALIASES))
        + ", and trec_eval's and ir_measures' names (P_10, ndcg_cut_10, recip_rank, P@10, nDCG@10, AP, RR)"
    )


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


#: the names a TREC run's measures go by, for the errors that list them
TREC_VOCABULARY = (
    "trec_eval's names (map, P_10, recall_100, ndcg, ndcg_cut_10, recip_rank, Rprec, bpref, success_10, "
    "map_cut_10, R_cap_10, Judged_10) or ir_measures' (AP, AP@10, P@10, R@100, nDCG@10, RR, Rprec, "
    "Success@10, Bpref, Judged@10, P(rel=2)@10)"
)


def trec_measure(
    name: str, option: str = "metrics", relevance_level: int = 1, level_option: str = "relevance_level"
) -> str:
    """trec_eval's name (what ``evaluate_run`` reports) of a measure named in either vocabulary, or
    by one of ``Result``'s names a TREC run has (``mrr``, ``rank5``); counts (``num_rel``) stay.

    Raises
    ------
    ValueError
        Naming ``option``: a name no TREC run measures, a measure trec_eval has no name for
        (``RR@10``, ``P`` without a cut-off), or a relevance level (``P(rel=2)@10``) other than
        ``relevance_level`` (set by ``level_option``).
    """
    key = name.strip()
    if key.startswith("num_"):
        return key
    measure = parse_measure(key)
    if measure is None:
        canonical = canonical_metric(key)
        if canonical in FAMILIES or RANK_NAME.match(canonical):
            measure = Measure(canonical)
    if measure is None:
        raise ValueError(f"{option}: {key!r} is not a measure of a TREC run; give {TREC_VOCABULARY}")
    if measure.level is not None and measure.level != relevance_level:
        raise ValueError(
            f"{option}: {key!r} counts grades >= {measure.level} as relevant, but the least relevant grade "
            f"is {relevance_level}; set {level_option} to {measure.level}, or drop (rel={measure.level})"
        )
    trec = trec_name(measure)
    if trec is None:
        _, stem, ir = FAMILIES[measure.metric]
        examples = [f"{ir}@10"] if ir else []
        why = (
            "trec_eval's recip_rank has no cut-off; give RR or recip_rank"
            if measure.cutoff is not None
            else f"it needs a cut-off, e.g. {' or '.join(examples + [f'{stem}_10'])}"
        )
        raise ValueError(f"{option}: {key!r} has no trec_eval measure: {why}")
    return trec


def trec_spelling(name: str) -> str:
    """trec_eval's name of ``name`` where it has one, else ``name`` itself (for lookups that list what exists)."""
    try:
        return trec_measure(name)
    except ValueError:
        return name
