"""``evaluate --run ... --metrics``: the measures of a TREC run asked by name, in trec_eval's or
ir_measures' vocabulary (``P_10``, ``P@10``, ``nDCG@10``, ``AP``, ``Judged@10``).

The names are read as trec_eval's (:func:`~retrieval_conformance.reference.contract.metric_names.trec_measure`);
without ``--k`` their cut-offs are the evaluations' (``P_10`` and ``ndcg_cut_20``: k = 10 and 20,
and one without a cut-off where a name has none), with ``--k`` each cut-off named must be one of
``--k``'s.  Only the measures asked for are printed.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence

from retrieval_conformance.reference.contract.metric_names import trec_measure

__all__ = ["asked_measures", "cutoffs_to_evaluate", "selected"]

#: a trec_eval measure at a cut-off: ``P_10``, ``ndcg_cut_10``, ``success_5``
_AT_CUTOFF = re.compile(r"^(?!num_)[A-Za-z][A-Za-z_]*?_(\d+)$")


def asked_measures(text: str, relevance_level: Optional[int]) -> List[str]:
    """trec_eval's names of ``--metrics`` (comma-separated), each once, in the order given."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError("--metrics: expected at least one measure name, e.g. --metrics map,P_10 or AP,P@10")
    level = 1 if relevance_level is None else relevance_level
    return list(dict.fromkeys(trec_measure(name, "--metrics", level, "--relevance-level") for name in names))


def cutoffs_to_evaluate(measures: Sequence[str], given: Optional[List[Optional[int]]]) -> List[Optional[int]]:
    """The cut-offs to evaluate the run at: ``--k``'s (``given``), which must hold every cut-off a
    measure names, else those of the names (None first where a name has no cut-off)."""
    named = sorted({int(m.group(1)) for m in map(_AT_CUTOFF.match, measures) if m})
    if given is not None:
        missing = [c for c in named if c not in given]
        if missing:
            shown = ",".join("all" if c is None else str(c) for c in given)
            raise ValueError(
                f"--metrics: a measure at cut-off {missing[0]} was asked, but --k is {shown}; add {missing[0]} to "
                "--k, or drop --k (the cut-offs then come from the names)"
            )
        return list(given)
    uncut = any(not _AT_CUTOFF.match(m) for m in measures)
    return ([None] if uncut or not named else []) + list(named)


def selected(results, measures: Sequence[str]) -> Dict[str, object]:
    """``{measure: value}`` of the asked measures, each from the first evaluation that reports it.

    Raises
    ------
    ValueError
        A measure no evaluation reports (``ndcg`` at a ``--k``: trec_eval names it ``ndcg_cut_K``).
    """
    out: Dict[str, object] = {}
    for name in measures:
        for one in results:
            if name in one.extras["trec_eval"]:
                out[name] = one.extras["trec_eval"][name]
                break
        else:
            offered = sorted({n for one in results for n in one.extras["trec_eval"]})
            raise ValueError(
                f"--metrics: {name!r} is not reported at the cut-offs of --k; the run reports {', '.join(offered)}"
            )
    return out
