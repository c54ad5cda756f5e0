"""``rc.audit``: the number under every convention, the conventions behind a published number, and
what in the data makes it fragile, on the same inputs as ``evaluate`` (a TREC run: :mod:`.trec`)."""

from __future__ import annotations

import inspect
import time
from typing import Any, Mapping, Optional, Union

import numpy as np
from retrieval_conformance.conformance.audit import findings as fd
from retrieval_conformance.conformance.audit import movers as mv
from retrieval_conformance.conformance.audit import reported as rp
from retrieval_conformance.conformance.audit import table as tb
from retrieval_conformance.conformance.audit.harness_link import EXACT_CELLS, Values, declared_target
from retrieval_conformance.conformance.audit.inputs import AuditData, Evaluator
from retrieval_conformance.conformance.audit.metrics import METRICS, headline
from retrieval_conformance.conformance.audit.metrics import metric as metric_named
from retrieval_conformance.conformance.audit.result import Audit
from retrieval_conformance.conformance.audit.trec.run import audit_run


def audit(
    distances=None,
    scores=None,
    query_codes=None,
    db_codes=None,
    relevance=None,
    query_labels=None,
    db_labels=None,
    query_cams=None,
    db_cams=None,
    junk=None,
    *,
    query_embeddings=None,
    db_embeddings=None,
    metric: str = "euclidean",
    protocol: str = "hashing",
    k: Optional[int] = None,
    max_rank: int = 50,
    ties: Optional[str] = None,
    ap_rule: Optional[str] = None,
    ap_at_k: Optional[str] = None,
    empty: Optional[str] = None,
    gain: Optional[str] = None,
    discount: Optional[str] = None,
    recall: Optional[str] = None,
    reported: Union[str, Mapping[str, Any], None] = None,
    implementation: str = "auto",
    max_cost: int = 2,
    run=None,
    qrels=None,
    relevance_level: int = 1,
    depth: Optional[int] = None,
    judged_only: bool = False,
    complete: bool = False,
    score_dtype: str = "float64",
    float_grades: Optional[str] = None,
    gains: Optional[Mapping[int, float]] = None,
    ignore_identical_ids: bool = False,
) -> Audit:
    """Audit an evaluation: every headline metric under every convention, the conventions (and known
    bugs) that reproduce reported numbers, and what in the data makes the numbers fragile.

    Parameters
    ----------
    distances, scores, query_codes + db_codes, query_embeddings + db_embeddings, relevance,
    query_labels + db_labels, query_cams + db_cams, junk, metric
        The data, exactly as :func:`retrieval_conformance.evaluate` takes it.
    protocol, k, ties, ap_rule, ap_at_k, empty, gain, discount, recall
        The declared protocol (a preset of spec §9, its cut-off and overrides): marked in every
        table, held while one convention axis varies.  ``k`` None is the whole gallery.
    max_rank : int
        CMC length (Rank-1/5/10 are read from it).
    reported : str or dict, optional
        Published numbers to trace, ``"map=0.6026,rank1=88.2%"`` or ``{"map": "0.6026"}``: a value
        matches a candidate when the candidate's value rounds to the printed digits.
    implementation : str
        Who computes every evaluation (default: the fastest available).
    max_cost : int
        How much a candidate for a reported number may assume (one per known bug, one for an
        unstable tie order): 0, 1 or 2.
    run, qrels
        Instead of arrays, a TREC run and its qrels (files, ranx-style dicts or DataFrames, as
        ``evaluate(run=, qrels=)`` takes them): trec_eval's measures (``map``, ``ndcg``, ``Rprec``,
        ``recip_rank``, ``bpref``, and ``P_k``, ``recall_k``, ``map_cut_k``, ``ndcg_cut_k``,
        ``success_k`` at each cut-off ``k``, 10 when None, plus any a reported number names) under
        every order of tied documents (``ties``: ``trec_eval``, docno descending, by default;
        ``stable`` (file order), ``reverse``, ``docno_ascending``; ``pessimistic`` and
        ``optimistic`` bound them), both nDCG discounts, nDCG's gains (``gain``: ``linear``, trec_eval's,
        or ``exponential``; or a ``gains`` map), ``-J``, ``-M`` and, where they matter,
        ``-c``, float32 scores and truncated float grades; reported numbers are traced to those
        settings (and to a truncated rather than rounded number).  ``protocol``, ``ap_rule``,
        ``ap_at_k``, ``empty``, ``recall``, ``metric`` and ``max_rank`` are refused with a run.
    relevance_level, depth, judged_only, complete, score_dtype, float_grades, gains, ignore_identical_ids
        A run's declared trec_eval options, as
        :func:`~retrieval_conformance.reference.protocols.trec.evaluation.evaluate_run` takes them;
        refused with arrays.

    Returns
    -------
    Audit
        ``to_dict()`` (JSON), ``to_text()``, ``to_html()``, ``failures(conditions)``.

    Notes
    -----
    The tie interval of a metric is ``[value under ties='pessimistic', value under
    ties='optimistic']`` (spec §4): every order of tied items gives a value inside it.
    """
    start = time.perf_counter()
    run_options = dict(
        relevance_level=relevance_level,
        depth=depth,
        judged_only=judged_only,
        complete=complete,
        score_dtype=score_dtype,
        float_grades=float_grades,
        gains=gains,
        ignore_identical_ids=ignore_identical_ids,
    )
    if run is not None or qrels is not None:
        if run is None or qrels is None:
            missing = "run" if run is None else "qrels"
            raise ValueError(f"{missing}: a TREC run is audited against its qrels; pass both run= and qrels=")
        array_options = dict(
            distances=distances,
            scores=scores,
            query_codes=query_codes,
            db_codes=db_codes,
            relevance=relevance,
            query_labels=query_labels,
            db_labels=db_labels,
            query_cams=query_cams,
            db_cams=db_cams,
            junk=junk,
            query_embeddings=query_embeddings,
            db_embeddings=db_embeddings,
            ap_rule=ap_rule,
            ap_at_k=ap_at_k,
            empty=empty,
            recall=recall,
        )
        array_options.update(protocol=protocol, metric=metric, max_rank=max_rank)
        given = _changed(array_options)
        if given:
            raise ValueError(
                f"{given[0]}: with run= and qrels= the ranking and relevance come from them and "
                "trec_eval's measures are audited; pass k, ties, discount, gain, reported and trec_eval's "
                "options (relevance_level, depth, judged_only, complete, score_dtype, float_grades, "
                "gains, ignore_identical_ids)"
            )
        return audit_run(
            run,
            qrels,
            k=k,
            ties=ties,
            discount=discount,
            gain=gain,
            reported=reported,
            implementation=implementation,
            max_cost=max_cost,
            **run_options,
        )
    for name in _changed(run_options):
        raise ValueError(
            f"{name}: an option of a TREC run (trec_eval's); pass run= and qrels=, or leave it out for arrays"
        )
    if max_cost not in (0, 1, 2):
        raise ValueError(f"max_cost: expected 0, 1 or 2 (how much a candidate may assume), got {max_cost!r}")
    numbers = rp.parse(reported, lookup=lambda name, where: metric_named(name, where, k))  # refused before any work
    if metric != "euclidean" and query_embeddings is None:
        raise ValueError(
            f"metric: {metric!r} applies to embeddings (query_embeddings= and db_embeddings=); "
            "the ranking input given has its own distances"
        )
    data = AuditData.from_arguments(
        distances=distances,
        scores=scores,
        query_codes=query_codes,
        db_codes=db_codes,
        relevance=relevance,
        query_labels=query_labels,
        db_labels=db_labels,
        query_cams=query_cams,
        db_cams=db_cams,
        junk=junk,
        query_embeddings=query_embeddings,
        db_embeddings=db_embeddings,
        metric=metric if query_embeddings is not None else None,
    )
    overrides = {
        name: value
        for name, value in (
            ("ties", ties),
            ("ap_rule", ap_rule),
            ("ap_at_k", ap_at_k),
            ("empty", empty),
            ("gain", gain),
            ("discount", discount),
            ("recall", recall),
        )
        if value is not None
    }
    ev = Evaluator(data, implementation=implementation, max_rank=max_rank)
    declared = tb.declared_options(protocol, k, overrides)
    held = {name: declared[name] for name in tb.HELD}
    first = ev.run(protocol, k=k, **held)  # validates everything once, with evaluate's own errors
    if isinstance(first, str):
        raise ValueError(first)
    declared["junk"] = tb.junk_rule(protocol)
    n_q, n_g = data.shape
    metrics = headline(k, n_g)
    for number in numbers:
        if number.metric.name not in [m.name for m in metrics]:
            why = "needs a cut-off: pass k=" if number.metric.needs_k else f"needs a gallery of {number.metric.rank}"
            raise ValueError(f"reported: {number.metric.name} {why} (got k={k}, {n_g} gallery items)")
    main = METRICS["map"]
    graded = (
        "relevance" in data.arrays
        and np.asarray(data.arrays["relevance"]).dtype.kind in "iuf"
        and bool((np.asarray(data.arrays["relevance"]) > 1).any())
    )
    rows = tb.convention_rows(ev, protocol, declared, metrics, data.camera_rules, graded)
    intervals = tb.tie_intervals(rows, metrics)
    movers = tb.tie_movers(ev, protocol, declared, main)
    movers["by_convention"] = mv.query_movers(ev, protocol, declared, main, data.camera_rules)
    findings = fd.tie_findings(data, intervals, movers, main)
    findings += fd.leakage_findings(ev, protocol, dict(held, k=k), main)
    findings += fd.empty_findings(rows, first.per_query, main)
    if data.single_ids:
        findings += fd.reid_findings(ev, rows, main)
    findings += fd.label_findings(data)
    notes = []
    reproduced = {"reported": []}
    if numbers:
        values = Values(ev, k, max_rank, overrides)
        reproduced = rp.match(values, protocol, declared_target(protocol, overrides), numbers, max_cost)
        if reproduced["not_searched"]:
            notes.append(
                f"{reproduced['not_searched']} candidates with a bug modelled on the ranks themselves "
                "were not searched: their exact predictions run on data of at most "
                f"{EXACT_CELLS:,} query-gallery pairs"
            )
    return Audit(
        protocol=protocol,
        declared=declared,
        shape=(n_q, n_g),
        kind=data.kind,
        metrics=[m.name for m in metrics],
        rows=rows,
        tie_intervals=intervals,
        movers=movers,
        reproduced=reproduced,
        findings=findings,
        evaluations=ev.calls,
        seconds=time.perf_counter() - start,
        implementation=first.implementation,
        notes=notes,
    )


def _changed(given: Mapping[str, Any]) -> list:
    """The names in ``given`` whose value is not ``audit``'s default (read from its signature)."""
    defaults = inspect.signature(audit).parameters
    out = []
    for name, value in given.items():
        default = defaults[name].default
        if value is None or default is None:  # arrays among them: compared by identity only
            if value is not default:
                out.append(name)
        elif value != default:
            out.append(name)
    return out
