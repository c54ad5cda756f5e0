"""TREC run files for ``retrieval-conformance compare A.run B.run --qrels qrels.txt``.

Each run is evaluated with :func:`retrieval_conformance.evaluate_run` against the one qrels,
at the cut-offs its measure names ask for (``P_10``, ``ndcg_cut_10``: k = 10) and without a
cut-off when a measure has none (``map``, ``ndcg``, ``recip_rank``), and handed to ``compare``
as a ``ResultsAtK`` whose results the metric lookup reads by trec_eval's names.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from retrieval_conformance.reference.contract import progress
from retrieval_conformance.reference.contract.problem import ResultsAtK
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run
from retrieval_conformance.reference.readers.trec import read_qrels

__all__ = ["DEFAULT_TREC_METRICS", "cutoffs_of", "evaluate_trec_runs", "split_metrics"]

#: what ``compare --qrels`` compares when ``--metrics`` is not given
DEFAULT_TREC_METRICS = ("map", "P_10", "ndcg_cut_10", "recip_rank")
#: a measure at a cut-off, trec_eval's spelling: ``P_10``, ``recall_100``, ``ndcg_cut_10``
_AT_CUTOFF = re.compile(r"^(?!num_)([A-Za-z][A-Za-z_]*?)_(\d+)$")


def split_metrics(given: Optional[Sequence[str]]) -> Optional[List[str]]:
    """``--metrics`` as a list: each value may hold several names separated by commas."""
    if given is None:
        return None
    names = [name.strip() for value in given for name in value.split(",") if name.strip()]
    if not names:
        raise ValueError("--metrics: expected at least one metric name, e.g. --metrics map,P_10")
    return list(dict.fromkeys(names))


def cutoffs_of(metrics: Sequence[str]) -> Tuple[bool, Tuple[int, ...]]:
    """(whether a measure without a cut-off is asked, the cut-offs asked), from trec_eval's names."""
    cutoffs: List[int] = []
    without = False
    for name in metrics:
        match = _AT_CUTOFF.match(name)
        if match and int(match.group(2)) >= 1:
            cutoffs.append(int(match.group(2)))
        else:
            without = True
    return without, tuple(sorted(set(cutoffs)))


def evaluate_trec_runs(
    paths: Sequence[str],
    names: Sequence[str],
    qrels_path: str,
    metrics: Sequence[str],
    complete: bool,
    relevance_level: int,
    implementation: str,
    float_grades: Optional[str] = None,
) -> Dict[str, Any]:
    """Every run file evaluated against the qrels at the cut-offs ``metrics`` need.

    Raises
    ------
    ValueError
        A malformed file (named with its line), no query with both results and judgments,
        an invalid option; the message names the run.
    """
    try:
        qrels = read_qrels(qrels_path, float_grades=float_grades)
    except (ValueError, TypeError, OSError) as exc:
        raise ValueError(f"--qrels {qrels_path}: {exc}") from None
    without, cutoffs = cutoffs_of(metrics)
    # the qrels are read once, above (None: exact, with one warning); every run is evaluated on them
    settings: Dict[str, Any] = dict(
        complete=complete,
        relevance_level=relevance_level,
        implementation=implementation,
        float_grades=float_grades or "exact",
    )
    results: Dict[str, Any] = {}
    for name, path in zip(names, paths):
        try:
            parts: List[Tuple[Optional[int], Any]] = []
            if without or not cutoffs:
                parts.append((None, evaluate_run(path, qrels, **settings)))
            if cutoffs:
                at_k = evaluate_run(path, qrels, k=cutoffs if len(cutoffs) > 1 else cutoffs[0], **settings)
                parts += list(at_k.items()) if isinstance(at_k, ResultsAtK) else [(cutoffs[0], at_k)]
        except (ValueError, TypeError, OSError) as exc:
            raise ValueError(f"run {name!r} ({path}): {exc}") from None
        results[name] = ResultsAtK(parts)
        progress.tick()  # one run evaluated: shown by the command line on a terminal
    return results
