"""Orders of tied documents in a run, as runs whose scores are the ranks.

trec_eval ranks by score descending and breaks ties by docno *descending*
(``§13 trec_eval``).  Other tools and other ways of writing the same run give other orders of
the same tie groups: the order of the file (``stable``, spec §4), its reverse (``reverse``),
docno ascending.  ``pessimistic`` and ``optimistic`` put a tie group's relevant documents
last or first (and among them the smaller or larger nDCG gains first), so every order of tied
documents gives a value between them for every measure that rewards relevant documents placed
earlier: ``map``, ``map_cut_k``, ``P_k``, ``recall_k``, ``Rprec``, ``recip_rank``, ``success_k``,
``bpref`` (judged non-relevant documents ahead of the relevant ones) and the nDCG measures
(spec §4 ties=optimistic; rearrangement of gains under a non-increasing discount).

Each order becomes a run whose scores are ``n, n - 1, ..., 1`` in that order, so
``evaluate_run`` (which sorts by score) ranks exactly that order; scores are first put in the
precision compared (``score_dtype``), which decides the tie groups.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

from retrieval_conformance.reference.protocols.trec.queries import trec_order
from retrieval_conformance.reference.readers.trec import id_bytes

#: every order of tied documents an audit evaluates, trec_eval's first
TIE_ORDERS = ("trec_eval", "stable", "reverse", "docno_ascending", "pessimistic", "optimistic")
#: the orders a tool can produce (pessimistic and optimistic are bounds)
CONCRETE = ("trec_eval", "stable", "reverse", "docno_ascending")
#: what each order is, for reports
MEANINGS = {
    "trec_eval": "score ties broken by docno descending (trec_eval, pytrec_eval, ir_measures)",
    "stable": "score ties kept in the order of the run file (a stable sort)",
    "reverse": "score ties in reverse file order",
    "docno_ascending": "score ties broken by docno ascending",
    "pessimistic": "relevant documents last in every score tie (the lower bound)",
    "optimistic": "relevant documents first in every score tie (the upper bound)",
    "unstable": "score ties in an unknown order: the interval [pessimistic, optimistic]",
}
#: the clause of the specification each order is
CLAUSES = {
    "trec_eval": "§13 trec_eval",
    "stable": "§4 ties=stable",
    "reverse": "§4 ties=reverse",
    "docno_ascending": "§4 tie group",
    "pessimistic": "§4 ties=pessimistic",
    "optimistic": "§4 ties=optimistic",
    "unstable": "§4 ties=unstable",
}


def gain_of(gains: Optional[Mapping[int, Any]]) -> Callable[[Any], Any]:
    """A judged grade's nDCG gain (unjudged and negative grades gain 0), as ``evaluate_run`` reads it."""
    table = gains or {}

    def gain(grade: Any) -> Any:
        return 0 if grade is None or grade < 0 else table.get(grade, grade)

    return gain


def ordered(
    docs: Dict[str, float],
    order: str,
    judged: Mapping[str, Any],
    level: int,
    gain: Callable[[Any], Any],
    by_gain: bool = False,
) -> List[str]:
    """The docnos of one query ranked by score, ties in ``order`` (``by_gain``: the bounds by gain alone)."""
    if order == "trec_eval":
        return [d for d, _ in trec_order(docs)]
    items = list(docs.items())
    if order == "stable":
        key: Callable = lambda i: (-items[i][1], i)  # noqa: E731
    elif order == "reverse":
        key = lambda i: (-items[i][1], -i)  # noqa: E731
    elif order == "docno_ascending":
        key = lambda i: (-items[i][1], id_bytes(items[i][0]))  # noqa: E731
    else:
        sign = 1 if order == "pessimistic" else -1

        def key(i: int):
            grade = judged.get(items[i][0])
            relevant = 0 if by_gain else int(grade is not None and grade >= level)
            return (-items[i][1], sign * relevant, sign * gain(grade))

    return [items[i][0] for i in sorted(range(len(items)), key=key)]


def ranked_run(
    run: Dict[str, Dict[str, float]],
    order: str,
    qrels: Mapping[str, Mapping[str, Any]],
    level: int,
    gains: Optional[Mapping[int, Any]] = None,
    by_gain: bool = False,
) -> Dict[str, Dict[str, float]]:
    """The run with every query's scores replaced by ranks in ``order`` (n for the first document)."""
    gain = gain_of(gains)
    out = {}
    for qid, docs in run.items():
        names = ordered(docs, order, qrels.get(qid, {}), level, gain, by_gain)
        out[qid] = {d: float(len(names) - i) for i, d in enumerate(names)}
    return out


def gains_conflict(qrels: Mapping[str, Mapping[str, Any]], level: int, gains: Optional[Mapping[int, Any]]) -> bool:
    """Whether a non-relevant grade gains more than a relevant one (``relevance_level`` above 1, or a gain
    map that does not grow with the grade): then the nDCG bounds need orders by gain alone."""
    gain = gain_of(gains)
    grades = {g for docs in qrels.values() for g in docs.values()}
    below = [gain(g) for g in grades if g < level]
    above = [gain(g) for g in grades if g >= level]
    return bool(below and above and max(below) > min(above))
