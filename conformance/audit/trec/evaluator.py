"""``evaluate_run`` on the audit's run under any setting, one evaluation per distinct setting.

A :class:`Setting` is one way of computing the numbers: the order of tied documents
(:mod:`.orders`) and trec_eval's options that change them (``-J``, ``-M``, ``-c``, the
precision of the scores, the reading of float grades), and nDCG's gains and discount (spec §7).
The gains are ``linear`` (each grade its own gain, trec_eval's), ``exponential`` (``2**g - 1``
for an integer grade g, the rule of spec §7 gain=exponential, given to ``evaluate_run`` as a
gain map; a grade that is not an integer keeps its own value) or ``map`` (the declared
``gains``).  The discount only changes the nDCG measures, which are summed again from the
ranked grades of the same evaluation
(:func:`~retrieval_conformance.reference.protocols.trec.ndcg_gains.ndcg_with_gains`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np
from retrieval_conformance.conformance.audit.trec import measures as ms
from retrieval_conformance.conformance.audit.trec.data import RunData
from retrieval_conformance.conformance.audit.trec.orders import gains_conflict, ranked_run
from retrieval_conformance.reference.contract import progress
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run
from retrieval_conformance.reference.protocols.trec.measures import mean
from retrieval_conformance.reference.protocols.trec.ndcg_gains import ndcg_with_gains


@dataclass(frozen=True)
class Setting:
    ties: str = "trec_eval"
    discount: str = "log2"
    gain: str = "linear"
    judged_only: bool = False
    depth: Optional[int] = None
    complete: bool = False
    score_dtype: str = "float64"
    float_grades: str = "exact"

    def with_(self, **changes: Any) -> "Setting":
        return replace(self, **changes)

    def options(self) -> Dict[str, Any]:
        return {
            "ties": self.ties,
            "discount": self.discount,
            "gain": self.gain,
            "judged_only": self.judged_only,
            "depth": self.depth,
            "complete": self.complete,
            "score_dtype": self.score_dtype,
            "float_grades": self.float_grades,
        }


@dataclass
class Evaluation:
    """One setting's numbers: ``means`` by trec_eval name, ``per_query`` aligned with ``query_ids``."""

    query_ids: List[str]
    per_query: Dict[str, np.ndarray]
    means: Dict[str, float]
    ranked: List[List[str]]
    grades: List[List[Any]]
    judged: List[Dict[str, Any]]
    left_out: Dict[str, List[str]]
    implementation: str

    def column(self, name: str, query_ids: Sequence[str]) -> np.ndarray:
        """Per-query values of ``name`` for ``query_ids`` (NaN where this setting does not evaluate the query)."""
        where = {q: i for i, q in enumerate(self.query_ids)}
        values = self.per_query[name]
        return np.array([values[where[q]] if q in where else np.nan for q in query_ids], dtype=np.float64)


class TrecEvaluator:
    """Evaluations of one run, each distinct setting computed once (``calls`` counts them)."""

    def __init__(
        self,
        data: RunData,
        cutoffs: Sequence[int],
        relevance_level: int = 1,
        gains: Optional[Mapping[int, Any]] = None,
        ignore_identical_ids: bool = False,
        implementation: str = "auto",
    ):
        self.data = data
        self.cutoffs = tuple(cutoffs)
        self.level = relevance_level
        self.gains = gains
        self.ignore_identical_ids = ignore_identical_ids
        self.implementation = implementation
        self.calls = 0
        self._cache: Dict[Setting, Evaluation] = {}

    def run(self, setting: Setting) -> Evaluation:
        base = setting.with_(discount="log2")
        if base not in self._cache:
            self._cache[base] = self._evaluate(base)
        if setting.discount == "log2":
            return self._cache[base]
        if setting not in self._cache:
            self._cache[setting] = self._discounted(self._cache[base], setting)
        return self._cache[setting]

    def _evaluate(self, setting: Setting) -> Evaluation:
        progress.tick()  # one setting evaluated: shown by the command line on a terminal
        qrels = self.data.qrels(setting.float_grades)
        scores = self.data.scores(setting.score_dtype)
        gains = self.gains_of(setting)
        out = self._call(ranked_run(scores, setting.ties, qrels, self.level, gains), qrels, setting)
        if setting.ties in ("pessimistic", "optimistic") and gains_conflict(qrels, self.level, gains):
            by_gain = self._call(
                ranked_run(scores, setting.ties, qrels, self.level, gains, by_gain=True), qrels, setting
            )
            for name in out.per_query:
                if ms.discounted(name):
                    out.per_query[name], out.means[name] = by_gain.per_query[name], by_gain.means[name]
        return out

    def _call(self, run, qrels, setting: Setting) -> Evaluation:
        common = dict(
            relevance_level=self.level,
            complete=setting.complete,
            depth=setting.depth,
            judged_only=setting.judged_only,
            ignore_identical_ids=self.ignore_identical_ids,
            gains=self.gains_of(setting),
            float_grades="exact",
            implementation=self.implementation,
        )
        self.calls += 1
        whole = evaluate_run(run, qrels, k=None, **common)
        per_query = {name: whole.extras["trec_eval_per_query"][name] for name in ms.WHOLE + ("num_rel", "num_ret")}
        means = {name: float(whole.extras["trec_eval"][name]) for name in ms.WHOLE}
        if self.cutoffs:
            cut = evaluate_run(run, qrels, k=self.cutoffs if len(self.cutoffs) > 1 else self.cutoffs[0], **common)
            for k, result in cut.items() if isinstance(cut, dict) else [(self.cutoffs[0], cut)]:
                for name in [f"{m}_{k}" for m in ms.AT_K] + [f"Judged_{k}"]:
                    per_query[name] = result.extras["trec_eval_per_query"][name]
                    means[name] = float(result.extras["trec_eval"][name])
        return Evaluation(
            list(whole.extras["query_ids"]),
            per_query,
            means,
            whole.extras["ranked"],
            whole.extras["grades"],
            whole.extras["qrels_grades"],
            whole.extras["left_out"],
            whole.implementation,
        )

    def gains_of(self, setting: Setting) -> Optional[Mapping[Any, Any]]:
        """The gain map ``evaluate_run`` takes for ``setting`` (None: each grade its own gain)."""
        if setting.gain == "map":
            return self.gains
        if setting.gain == "exponential":
            grades = {g for docs in self.data.qrels(setting.float_grades).values() for g in docs.values()}
            return {int(g): Fraction(2) ** int(g) - 1 for g in grades if isinstance(g, int) and g >= 0}
        return None

    def _discounted(self, base: Evaluation, setting: Setting) -> Evaluation:
        """The nDCG measures of ``base`` summed again under ``setting``'s discount (exact, then rounded once)."""
        per_query, means = dict(base.per_query), dict(base.means)
        gains = self.gains_of(setting) or {}
        for name in [n for n in base.per_query if ms.discounted(n)]:
            k = ms.cutoff(name)
            exact = [ndcg_with_gains(g, j, gains, k, setting.discount) for g, j in zip(base.grades, base.judged)]
            per_query[name] = np.array([float(x) for x in exact])
            means[name] = mean(exact)
        return replace(base, per_query=per_query, means=means)
