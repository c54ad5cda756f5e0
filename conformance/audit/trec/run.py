"""``rc.audit(run=, qrels=)``: a TREC run's numbers under every setting, the settings behind a
published number, and what in the run and qrels makes them fragile."""

from __future__ import annotations

import numbers
import time
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from retrieval_conformance.conformance.audit import reported as rp
from retrieval_conformance.conformance.audit.result import Audit
from retrieval_conformance.conformance.audit.trec import candidates as cd
from retrieval_conformance.conformance.audit.trec import findings as fd
from retrieval_conformance.conformance.audit.trec import measures as ms
from retrieval_conformance.conformance.audit.trec import table as tb
from retrieval_conformance.conformance.audit.trec.data import RunData
from retrieval_conformance.conformance.audit.trec.evaluator import Setting, TrecEvaluator
from retrieval_conformance.conformance.audit.trec.orders import TIE_ORDERS
from retrieval_conformance.reference.contract.conventions import DISCOUNTS, GAINS
from retrieval_conformance.reference.contract.validation import choice
from retrieval_conformance.reference.protocols.trec.ndcg_gains import gain_map
from retrieval_conformance.reference.readers.trec import SCORE_DTYPES

#: the cut-off audited when none is declared (trec_eval's most printed, P_10 and ndcg_cut_10)
DEFAULT_CUTOFF = 10
#: the measure the per-topic tables and findings follow
MAIN = "map"
#: the measures the text report shows (all are in the JSON report)
TEXT_WHOLE = ("map", "ndcg", "Rprec", "recip_rank", "bpref")


class TrecAudit(Audit):
    """An :class:`~retrieval_conformance.conformance.audit.run.Audit` of a TREC run (trec_eval's names)."""

    def to_dict(self) -> Dict[str, Any]:
        from retrieval_conformance.reference.contract.spec import SPEC_VERSION

        d = self.declared
        cut = ", ".join(str(k) for k in d["k"])
        text = (
            f"declared: trec_eval's measures at k={cut}, ties={d['ties']}, discount={d['discount']}, "
            f"gain={d['gain']}, "
            f"judged_only={d['judged_only']}, depth={'all' if d['depth'] is None else d['depth']}, "
            f"complete={d['complete']}, score_dtype={d['score_dtype']}, float_grades={d['float_grades']}, "
            f"relevance_level={d['relevance_level']}"
        )
        first_k = d["k"][0]
        shown = list(TEXT_WHOLE) + [f"{m}_{first_k}" for m in ("ndcg_cut", "P", "map_cut")]
        return {
            "specification_version": SPEC_VERSION,
            "protocol": self.protocol,
            "declared": self.declared,
            "declared_text": text,
            "data": {
                "kind": self.kind,
                "queries": self.shape[0],
                "gallery": self.shape[1],
                "summary": f"Audit of a TREC run: {self.shape[0]:,} topics evaluated, "
                f"{self.shape[1]:,} documents retrieved",
            },
            "metrics": {name: name for name in self.metrics},
            "shown": [m for m in shown if m in self.metrics],
            "conventions": self.rows,
            "tie_intervals": self.tie_intervals,
            "per_query": self.movers,
            "reproduced": self.reproduced,
            "findings": self.findings,
            "cost": {"evaluations": self.evaluations, "seconds": self.seconds, "implementation": self.implementation},
            "notes": self.notes,
        }


def _cutoffs(k: Union[None, int, Sequence[int]], reported: Sequence[Any]) -> List[int]:
    if k is None:
        given: List[Any] = [DEFAULT_CUTOFF]
    elif isinstance(k, (list, tuple)):
        given = list(k)
    else:
        given = [k]
    out = []
    for c in given:
        if isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 1:
            raise ValueError(f"k: expected a positive cut-off or a list of them (P_k, ndcg_cut_k...), got {c!r}")
        out.append(int(c))
    for r in reported:  # a reported ndcg_cut_20 is audited at 20 too
        c = ms.cutoff(r.metric.name)
        if c is not None:
            out.append(c)
    return list(dict.fromkeys(out))


def audit_run(
    run,
    qrels,
    *,
    k: Union[None, int, Sequence[int]] = None,
    ties: Optional[str] = None,
    discount: Optional[str] = None,
    gain: Optional[str] = None,
    reported: Union[str, Mapping[str, Any], None] = None,
    implementation: str = "auto",
    max_cost: int = 2,
    relevance_level: int = 1,
    depth: Optional[int] = None,
    judged_only: bool = False,
    complete: bool = False,
    score_dtype: str = "float64",
    float_grades: Optional[str] = None,
    gains: Optional[Mapping[int, float]] = None,
    ignore_identical_ids: bool = False,
) -> TrecAudit:
    """Audit a TREC run against its qrels (the arguments of ``evaluate_run``; see ``rc.audit``)."""
    start = time.perf_counter()
    if max_cost not in (0, 1, 2):
        raise ValueError(f"max_cost: expected 0, 1 or 2 (how much a candidate may assume), got {max_cost!r}")
    numbers_ = rp.parse(reported, lookup=ms.measure)  # refused before any work
    if ties is not None and ties not in TIE_ORDERS:
        raise ValueError(
            f"ties: a run's ties are ordered as one of {list(TIE_ORDERS)}, got {ties!r} (trec_eval: docno descending)"
        )
    if discount is not None:
        choice("discount", discount, DISCOUNTS)
    choice("score_dtype", score_dtype, SCORE_DTYPES)  # the audit rounds scores itself, before evaluate_run
    if gain is not None:
        choice("gain", gain, GAINS)
        if gains is not None:
            raise ValueError(f"gain: {gain!r} and a gains map both say what a grade gains; pass one of them")
    cutoffs = _cutoffs(k, numbers_)
    data = RunData.read(run, qrels, float_grades)
    data.qrels()  # the declared reading, with its warning about float grades (once)
    declared = Setting(
        ties=ties or "trec_eval",
        discount=discount or "log2",
        gain="map" if gains is not None else gain or "linear",
        judged_only=judged_only,
        depth=depth,
        complete=complete,
        score_dtype=score_dtype,
        float_grades=float_grades or "exact",
    )
    ev = TrecEvaluator(data, cutoffs, relevance_level, gain_map(gains), ignore_identical_ids, implementation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the declared reading warned above
        base = ev.run(declared)  # evaluate_run's own checks of every option, once
        names = ms.measures(cutoffs)
        varied = tb.axes(ev, declared)
        rows = tb.convention_rows(ev, declared, names, varied)
        intervals = tb.tie_intervals(rows, names)
        movers = tb.tie_movers(ev, declared, MAIN)
        movers["by_convention"] = tb.query_movers(ev, declared, MAIN, varied)
        findings = fd.tie_findings(ev, declared, intervals, movers, MAIN)
        findings += fd.duplicate_findings(ev, declared, MAIN)
        findings += fd.topic_findings(ev, declared, base, MAIN)
        findings += fd.unjudged_findings(ev, declared, base, MAIN)
        findings += fd.grade_findings(ev, declared)
        reproduced: Dict[str, Any] = {"reported": []}
        if numbers_:
            target = dict(declared.options(), rounding="round")
            reproduced = rp.match_stages(
                cd.stages(varied, declared, [r.metric for r in numbers_], max_cost), cd.value(ev), target, numbers_
            )
    options = dict(
        declared.options(),
        k=cutoffs,
        relevance_level=relevance_level,
        gains=gains,
        ignore_identical_ids=ignore_identical_ids,
    )
    n_ret = int(sum(base.per_query["num_ret"]))
    return TrecAudit(
        protocol="trec_eval",
        declared=options,
        shape=(len(base.query_ids), n_ret),
        kind="trec run",
        metrics=names,
        rows=rows,
        tie_intervals=intervals,
        movers=movers,
        reproduced=reproduced,
        findings=findings,
        evaluations=ev.calls,
        seconds=time.perf_counter() - start,
        implementation=base.implementation,
        notes=[],
    )
