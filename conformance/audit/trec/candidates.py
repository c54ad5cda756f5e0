"""Section 2 of a run's audit: which settings reproduce a published number.

A candidate is a :class:`~.evaluator.Setting` (the order of tied documents, nDCG's discount and gains,
``-J``, ``-M``, and where the data makes them matter the precision of the scores, the reading of
float grades and ``-c``) with a way of printing: rounded to the digits (the norm) or truncated.
The search is :func:`~retrieval_conformance.conformance.audit.reported.match_stages`, the array
audit's: stage 0 holds every setting with a concrete tie order, rounded; each assumption costs
one: an ``unstable`` tie order (the value known only to lie in [pessimistic, optimistic]) and a
truncated number.  The first stage with a match ends the search; within it, candidates closest
to the declared setting come first.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.audit.metrics import Metric
from retrieval_conformance.conformance.audit.trec import measures as ms
from retrieval_conformance.conformance.audit.trec.evaluator import Setting, TrecEvaluator
from retrieval_conformance.conformance.audit.trec.orders import CLAUSES, CONCRETE, MEANINGS

UNSTABLE = "unstable"
#: the clause of each trec_eval option a candidate may change
OPTION_CLAUSES = {
    "judged_only": "§13 trec_eval",
    "depth": "§13 trec_eval",
    "complete": "§13 trec_eval",
    "score_dtype": "§13 trec_eval",
    "float_grades": "§13 trec_eval",
}
OPTION_MEANINGS = {
    ("judged_only", True): "-J: unjudged documents dropped from the ranking",
    ("complete", True): "-c: every judged topic counts, 0 where the run has no results",
    ("score_dtype", "float32"): "scores compared as C float (trec_eval 9.0.8 and earlier)",
    ("float_grades", "truncate"): "grades read with atol, as trec_eval (2.5 is 2)",
    ("discount", "trec_eval_9.0a3"): "nDCG with trec_eval 9.0a3's discount (ranks 1 and 2 undiscounted)",
    ("gain", "exponential"): "nDCG with gains 2**grade - 1 (Burges et al.), not trec_eval's grades",
    ("gain", "map"): "nDCG with the declared gain map (trec_eval -m ndcg.GRADE=GAIN)",
}


@dataclass(frozen=True)
class Candidate:
    setting: Setting
    rounding: str = "round"

    @property
    def cost(self) -> int:
        return int(self.setting.ties == UNSTABLE) + int(self.rounding == "truncate")

    @property
    def bugs(self) -> List[str]:
        return []

    def options(self) -> Dict[str, Any]:
        return dict(self.setting.options(), rounding=self.rounding)

    def label(self) -> str:
        s = self.setting
        parts = [
            f"ties={s.ties}",
            f"discount={s.discount}",
            f"judged_only={s.judged_only}",
            f"depth={'all' if s.depth is None else s.depth}",
        ]
        parts += [
            f"{n}={getattr(s, n)}"
            for n in ("gain", "complete", "score_dtype", "float_grades")
            if getattr(s, n) != getattr(Setting(), n)
        ]
        return ", ".join(parts + (["truncated"] if self.rounding == "truncate" else []))

    def clauses(self) -> List[str]:
        s = self.setting
        out = [CLAUSES[s.ties], f"§7 discount={s.discount}"]
        if s.gain != "linear":
            out.append("§13 trec_eval" if s.gain == "map" else f"§7 gain={s.gain}")
        changed = [n for n in OPTION_CLAUSES if getattr(s, n) != getattr(Setting(), n)]
        return out + sorted({OPTION_CLAUSES[n] for n in changed} - set(out))

    def meanings(self) -> List[str]:
        s = self.setting
        out = [MEANINGS[s.ties]] if s.ties != "trec_eval" else []
        out += [what for (name, value), what in OPTION_MEANINGS.items() if getattr(s, name) == value]
        if s.depth is not None:
            out.append(f"-M {s.depth}: only the top {s.depth} documents of each ranking")
        if self.rounding == "truncate":
            out.append("the printed number is the value truncated, not rounded")
        return out


def stages(
    varied: Dict[str, Tuple], declared: Setting, reported: Sequence[Metric], max_cost: int
) -> Iterable[List[Candidate]]:
    """Candidates by cost (0, 1, 2), each stage in a fixed order; the discount only where an nDCG is reported."""
    ndcg = any(ms.discounted(m.name) for m in reported)
    values = {
        "ties": CONCRETE,
        "discount": varied["discount"] if ndcg else (declared.discount,),
        "gain": varied.get("gain", (declared.gain,)) if ndcg else (declared.gain,),
    }
    for axis in ("judged_only", "depth", "complete", "score_dtype", "float_grades"):
        values[axis] = varied.get(axis, (getattr(declared, axis),))
    names = list(values)
    settings = [declared.with_(**dict(zip(names, combo))) for combo in itertools.product(*values.values())]
    unstable = list(dict.fromkeys(s.with_(ties=UNSTABLE) for s in settings))
    stage0 = [Candidate(s) for s in settings]
    stage1 = [Candidate(s) for s in unstable] + [Candidate(s, "truncate") for s in settings]
    stage2 = [Candidate(s, "truncate") for s in unstable]
    for cost, stage in enumerate((stage0, stage1, stage2)):
        if cost <= max_cost:
            yield stage


def value(ev: TrecEvaluator):
    """``value(candidate, metric)``: the candidate's interval of the measure on the run."""

    def of(candidate: Candidate, metric: Metric) -> Optional[Tuple[float, float]]:
        s = candidate.setting
        if s.ties == UNSTABLE:
            lo = ev.run(s.with_(ties="pessimistic")).means[metric.name]
            hi = ev.run(s.with_(ties="optimistic")).means[metric.name]
            return (lo, hi)
        v = ev.run(s).means[metric.name]
        return (v, v)

    return of
