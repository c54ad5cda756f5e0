"""trec_eval's measures by name: ``-m`` selections, its default set, and its ``-q`` output.

A selection is a list of trec_eval ``-m`` words: a family (``map``, ``P``), a family with
parameters (``P.5,10``, ``ndcg_cut.10,20``, ``iprec_at_recall.0.1,0.5``, ``ndcg.1=3,2=9``,
``set_F.0.5``, ``utility.1,-1,0,0``), or a set (``official``, trec_eval's default; ``all_trec``).
:func:`evaluate_measures` computes them per query as trec_eval's doubles (:mod:`.families`), and
each mean as trec_eval forms it: the running sum over queries in its order of query ids, divided by
their number (``exp`` of the mean log for ``gm_map`` and ``gm_bpref``; counts are summed).
:func:`trec_eval_text` writes trec_eval's lines (``-q``: each query's, then ``all``).

Every family of trec_eval's ``all_trec`` is computed; ``-m`` of a family trec_eval has and this
module does not (:data:`NOT_COMPUTED`), or one the version lacks, is refused by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from retrieval_conformance.reference.protocols.trec import families as f
from retrieval_conformance.reference.protocols.trec import gain_walks as g
from retrieval_conformance.reference.protocols.trec.queries import Query

__all__ = ["FAMILIES", "SETS", "MeasureTable", "evaluate_measures", "parse_selection", "shown", "trec_eval_text"]

VERSIONS = ("9.0.8", "10.0")
_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALLS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass(frozen=True)
class Family:
    """One ``-m`` family: how it computes, its default parameters, what its parameters are
    (``"cutoffs"``, ``"numbers"``, ``"gains"`` or ``None``) and how queries are combined
    (``"mean"``, ``"gm"``: exp of the mean log, ``"sum"``; ``per_query``: printed with ``-q``)."""

    compute: Callable
    defaults: Union[Tuple, Dict, None] = None
    params: Optional[str] = None
    combine: str = "mean"
    per_query: bool = True
    #: one value whose name carries the parameters given (``utility_2,-1,0,0``, ``G_1=3,2=9``)
    suffixed: bool = False


#: trec_eval's families in its order (the order it prints them)
FAMILIES: Dict[str, Family] = {
    "num_ret": Family(f.num_ret, combine="sum"),
    "num_rel": Family(f.num_rel, combine="sum"),
    "num_rel_ret": Family(f.num_rel_ret, combine="sum"),
    "map": Family(f.map_),
    "gm_map": Family(f.gm_map, combine="gm", per_query=False),
    "Rprec": Family(f.rprec),
    "bpref": Family(f.bpref),
    "recip_rank": Family(f.recip_rank),
    "iprec_at_recall": Family(f.iprec_at_recall, _RECALLS, "numbers"),
    "P": Family(f.precision, _CUTS, "cutoffs"),
    "relstring": Family(f.relstring, (10.0,), "numbers", combine="none", suffixed=True),
    "recall": Family(f.recall, _CUTS, "cutoffs"),
    "infAP": Family(f.inf_ap),
    "gm_bpref": Family(f.gm_bpref, combine="gm", per_query=False),
    "Rprec_mult": Family(f.rprec_mult, (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0), "numbers"),
    "utility": Family(f.utility, (1.0, -1.0, 0.0, 0.0), "numbers", suffixed=True),
    "11pt_avg": Family(f.eleven_point_average, _RECALLS, "numbers", suffixed=True),
    "binG": Family(f.bin_g),
    "G": Family(g.g_measure, {}, "gains", suffixed=True),
    "dcg": Family(f.dcg, {}, "gains", suffixed=True),
    "ideal_dcg": Family(f.ideal_dcg, {}, "gains", suffixed=True),
    "ndcg": Family(f.ndcg, {}, "gains", suffixed=True),
    "ndcg_rel": Family(g.ndcg_rel, {}, "gains", suffixed=True),
    "Rndcg": Family(g.rndcg, {}, "gains", suffixed=True),
    "ndcg_cut": Family(f.ndcg_cut, _CUTS, "cutoffs"),
    "map_cut": Family(f.map_cut, _CUTS, "cutoffs"),
    "relative_P": Family(f.relative_P, _CUTS, "cutoffs"),
    "success": Family(f.success, (1, 5, 10), "cutoffs"),
    "set_P": Family(f.set_P),
    "set_relative_P": Family(f.set_relative_P),
    "set_recall": Family(f.set_recall),
    "set_map": Family(f.set_map),
    "set_F": Family(f.set_F, (1.0,), "numbers", suffixed=True),
    "num_nonrel_judged_ret": Family(f.num_nonrel_judged_ret, combine="sum"),
    "rbp": Family(g.rbp, {}, "gains", suffixed=True),
    "rbp_resid": Family(f.rbp_resid, {}, "gains", suffixed=True),
    "unj": Family(f.unjudged, (5, 10, 20), "cutoffs"),
}
#: families that trec_eval 9.0.8 does not have
SINCE_10 = ("dcg", "ideal_dcg", "rbp", "rbp_resid", "unj")
#: trec_eval families this project does not compute, and why: asked for by name, they are refused
NOT_COMPUTED = {
    name: "it reads trec_eval's preference judgments (-R prefs), which this project does not read"
    for name in (
        "prefs_num_prefs_poss prefs_num_prefs_ful prefs_num_prefs_ful_ret prefs_simp prefs_pair prefs_avgjg "
        "prefs_avgjg_Rnonrel prefs_simp_ret prefs_pair_ret prefs_avgjg_ret prefs_avgjg_Rnonrel_ret "
        "prefs_simp_imp prefs_pair_imp prefs_avgjg_imp"
    ).split()
}
NOT_COMPUTED.update(
    (name, "it reads trec_eval's multi-judge qrels (-R qrels_jg), which this project does not read")
    for name in ("map_avgjg", "P_avgjg", "Rprec_mult_avgjg", "yaap")
)
#: trec_eval's sets (``-m official`` is what it prints without ``-m``), less the families a version
#: lacks
SETS = {
    "official": ("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank")
    + ("iprec_at_recall", "P"),
    "set": ("num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall", "set_relative_P")
    + ("set_map", "set_F"),
    "all_trec": tuple(name for name in FAMILIES if name not in ("dcg", "ideal_dcg")),
}

#: what trec_eval 10.0 sets back to zero after evaluating its stand-in ranking of a query without
#: results (``trec_eval.c``), by printed name: ``utility_1,-1,0,0`` is not reset, ``unj_5`` is
_RESET_WITHOUT_RESULTS = ("num_ret", "utility", "relstring", "rbp_resid")


class Chosen(NamedTuple):
    """A family's parameters, and the text they were given as (None: trec_eval's defaults)."""

    params: object
    given: Optional[str] = None


Selection = Dict[str, Chosen]  # family -> its parameters, in trec_eval's order


def _numbers(family: str, text: str, integers: bool) -> Tuple:
    values = []
    for part in text.split(","):
        try:
            values.append(int(part) if integers else float(part))
        except ValueError:
            kind = "positive integer cut-offs" if integers else "numbers"
            raise ValueError(f"-m {family}.{text}: expected {kind} separated by commas, got {part!r}") from None
    if integers and (min(values) <= 0 or len(set(values)) != len(values)):
        raise ValueError(f"-m {family}.{text}: cut-offs must be positive and distinct")
    return tuple(sorted(values)) if family != "utility" else tuple(values)


def parse_selection(words: Sequence[str], version: str = "10.0") -> Selection:
    """trec_eval ``-m`` words -> ``{family: parameters}`` in trec_eval's print order.

    ``ValueError`` names the word: an unknown family, one not computed here, one ``version``
    lacks, or bad parameters."""
    chosen: Dict[str, object] = {}
    for word in words:
        name, _, text = word.partition(".")
        if name in SETS and not text:
            for family in SETS[name]:
                if not (version.startswith("9") and family in SINCE_10):
                    chosen.setdefault(family, Chosen(FAMILIES[family].defaults))
            continue
        if version.startswith("9") and name in SINCE_10:
            raise ValueError(f"-m {word}: trec_eval {version} has no {name} (it came with 10.0)")
        if name in NOT_COMPUTED:
            raise ValueError(f"-m {word}: trec_eval's {name} is not computed here: {NOT_COMPUTED[name]}")
        if name not in FAMILIES:
            raise ValueError(
                f"-m {word}: not a trec_eval measure; expected one of {', '.join(FAMILIES)}, or a set: "
                f"{', '.join(SETS)} (parameters after a dot: P.5,10)"
            )
        family = FAMILIES[name]
        if not text:
            chosen[name] = Chosen(family.defaults)
        elif family.params == "cutoffs":
            chosen[name] = Chosen(_numbers(name, text, integers=True), text)
        elif family.params == "numbers":
            numbers = _numbers(name, text, integers=False)
            if name == "utility" and len(numbers) != 4:
                raise ValueError(f"-m {word}: utility takes 4 coefficients, got {text!r}")
            chosen[name] = Chosen(numbers, text)
        elif family.params == "gains":
            chosen[name] = Chosen(_gains(word, text), text)
        else:
            raise ValueError(f"-m {word}: {name} takes no parameters; give -m {name}")
    return {name: chosen[name] for name in FAMILIES if name in chosen}


def _gains(word: str, text: str) -> Dict[object, float]:
    gains: Dict[object, float] = {}
    for pair in text.split(","):
        grade, sep, value = pair.partition("=")
        try:
            if not sep:
                raise ValueError
            # a grade, or a named parameter (rbp.p=0.8)
            gains[int(grade) if grade.lstrip("-").isdigit() else grade] = float(value)
        except ValueError:
            raise ValueError(f"-m {word}: expected GRADE=GAIN pairs like ndcg.1=3,2=9, got {pair!r}") from None
    return gains


@dataclass
class MeasureTable:
    """trec_eval's values: ``per_query`` ``[(qid, [(name, value), ...]), ...]`` in its order of
    query ids, and ``summary`` ``[(name, value), ...]`` (``num_q`` first); counts are ``int``.
    ``queries``: the queries evaluated."""

    per_query: List[Tuple[str, List[Tuple[str, float]]]]
    summary: List[Tuple[str, float]]
    #: the evaluated queries (for checks of the run beyond trec_eval's numbers)
    queries: Sequence[Query] = ()

    def as_dict(self) -> Dict[str, Dict[str, float]]:
        """``{qid: {name: value}, "all": {name: value}}``."""
        out = {qid: dict(values) for qid, values in self.per_query}
        out["all"] = dict(self.summary)
        return out


def evaluate_measures(
    queries: Sequence[Query],
    selection: Selection,
    version: str = "10.0",
    complete_num_rel: Optional[int] = None,
    judged_only: bool = False,
) -> MeasureTable:
    """The selected families of each query, and their combination over queries.

    ``complete_num_rel``: with ``-c``, trec_eval's summary ``num_rel`` (every qrels grade > 0).
    A qrels query absent from the run (``-c``) is evaluated as trec_eval does: 10.0 ranks one
    document outside the pool for it (none with ``-J``), then reports ``num_ret``, ``utility``,
    ``unj_k`` and ``rbp_resid`` as 0 and ``relstring`` empty; 9.0.8 leaves it out of the
    per-query lines and the sums, and counts it in the number of queries the means divide by
    (with ``log(MIN_GEO_MEAN)`` in the geometric ones).
    """
    if version not in VERSIONS:
        raise ValueError(f"version: expected one of {', '.join(VERSIONS)}, got {version!r}")
    per_query = []
    columns: Dict[str, List[float]] = {}
    combine: Dict[str, str] = {}
    for q in queries:
        if not q.in_run and version.startswith("9"):
            continue
        if q.in_run:
            ranking = f.Ranking.of(q.grades, q.judged, q.level)
        else:  # trec_eval 10.0's stand-in ranking of a query without results
            ranking = f.Ranking.of([] if judged_only else [None], q.judged, q.level)
        row = []
        for name, (params, given) in selection.items():
            family = FAMILIES[name]
            for measure, value in family.compute(ranking, params, version):
                if given is not None and family.suffixed:
                    measure = f"{measure}_{given}"
                if not q.in_run and (measure in _RESET_WITHOUT_RESULTS or measure.startswith("unj")):
                    value = "''" if measure == "relstring" else type(value)(0)
                columns.setdefault(measure, []).append(value)
                combine[measure] = family.combine
                if family.per_query:
                    row.append((measure, value))
        per_query.append((q.qid, row))
    summary: List[Tuple[str, float]] = [("num_q", len(queries))]
    for measure, column in columns.items():
        if combine[measure] != "none":  # relstring: per query only
            summary.append((measure, _combined(column, combine[measure], len(queries))))
    if complete_num_rel is not None and "num_rel" in selection:
        summary = [(m, complete_num_rel if m == "num_rel" else v) for m, v in summary]
    return MeasureTable(per_query, summary, queries)


def _combined(column: List[float], how: str, n_queries: int) -> float:
    """trec_eval's combination: the running sum over queries in its order of query ids, divided
    by the number of queries (``n_queries``; more than the column under 9.0.8's ``-c``)."""
    if how == "sum":
        return sum(int(v) for v in column)
    total = 0.0
    for value in column:
        total += value
    if how == "gm":
        total += (n_queries - len(column)) * math.log(f.MIN_GEO_MEAN)
        return math.exp(total / n_queries) if n_queries else total
    return total / n_queries if n_queries else total


def shown(value) -> str:
    """A value as trec_eval prints it: counts as integers, others ``%.4f`` (C's ``-nan`` for a
    NaN with its sign bit set, as 0.0 / 0.0 gives on x86-64)."""
    if isinstance(value, (int, str)):  # counts; relstring
        return str(value)
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    return f"{value:.4f}"


def _line(name: str, qid: str, value) -> str:
    return f"{name:<22}\t{qid}\t{shown(value)}"


def trec_eval_text(table: MeasureTable, per_query: bool) -> str:
    """trec_eval's output: with ``per_query`` (``-q``) each query's lines first, then ``all``."""
    lines = []
    if per_query:
        for qid, row in table.per_query:
            lines += [_line(name, qid, value) for name, value in row]
    lines += [_line(name, "all", value) for name, value in table.summary]
    return "\n".join(lines)
