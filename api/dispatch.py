"""``rc.evaluate``: arrays go to the reference ``evaluate``, a TREC run and qrels to ``evaluate_run``.

One entry point for both kinds of input a lab has: matrices (distances, scores, codes,
embeddings with labels or relevance) and TREC-style runs (files or ranx-style dicts).
"""

from __future__ import annotations

import functools
import inspect

from retrieval_conformance.reference.contract.evaluate import evaluate as evaluate_arrays
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run

#: the options a TREC run takes through ``evaluate`` (the rest belong to arrays; see evaluate_run)
RUN_OPTIONS = ("k", "max_rank", "implementation")


@functools.wraps(evaluate_arrays)
def evaluate(*args, run=None, qrels=None, **kwargs):
    if run is None and qrels is None:
        return evaluate_arrays(*args, **kwargs)
    if run is None or qrels is None:
        missing = "run" if run is None else "qrels"
        raise ValueError(f"{missing}: a TREC run is evaluated against qrels; pass both run= and qrels=")
    given = sorted(set(kwargs) - set(RUN_OPTIONS))
    if args or given:
        name = given[0] if given else "distances"
        raise ValueError(
            f"{name}: with run= and qrels= the ranking and relevance come from them (trec_eval's order: "
            f"score descending, then docno descending); only {', '.join(RUN_OPTIONS)} apply, and "
            "retrieval_conformance.evaluate_run takes the others (relevance_level, complete, score_dtype, "
            "depth, judged_only, ignore_identical_ids, gains, float_grades)"
        )
    return evaluate_run(run, qrels, **kwargs)


# the signature callers (and the harness) read: evaluate's arguments plus run= and qrels=
_parameters = list(inspect.signature(evaluate_arrays).parameters.values())
# a function takes the __signature__ attribute that inspect.signature reads; typeshed does not declare it
evaluate.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    _parameters
    + [
        inspect.Parameter("run", inspect.Parameter.KEYWORD_ONLY, default=None),
        inspect.Parameter("qrels", inspect.Parameter.KEYWORD_ONLY, default=None),
    ]
)
_RUN_PARAMETERS = """    run, qrels : path or dict, optional
        Instead of arrays: a TREC run and its qrels (files, or ranx-style dicts
        ``{qid: {doc_id: score}}`` and ``{qid: {doc_id: grade}}``), evaluated as trec_eval does
        (:func:`retrieval_conformance.reference.protocols.trec.evaluation.evaluate_run`; ``k``, ``max_rank`` and
        ``implementation`` apply).

"""
evaluate.__doc__ = (evaluate_arrays.__doc__ or "").replace("    Returns\n", _RUN_PARAMETERS + "    Returns\n", 1)
