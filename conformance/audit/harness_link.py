"""The audit's one link to the harness: its candidates, and each candidate's value on the user's data.

Everything the audit knows about *what a published number could have been computed as* comes
from the harness (``conformance/harness``): the conventions searched over and the known bugs of
spec §11 (``bugs.BUGS``, ``candidate.staged``: simplest first), their clauses and
meanings, and the exact predictions (``predict.Predictor``).  Only this module imports it, so a
change of the harness's internals touches one file of the audit.

Two ways to a candidate's value, chosen per candidate:

* **fast**: a candidate that is a preset plus options, possibly with a bug that only changes
  the cut-off, the input, the scale, the AP denominator or which queries are averaged
  (``FAST_BUGS``), is evaluated by ``rc.evaluate`` with the fast implementations at dataset
  scale; its per-query values are then put through the bug's effect on the mean, following the
  harness's model (:mod:`..harness.candidates.predict`): an ``unstable`` tie order is the per-query envelope
  of the four concrete orders, AP@k divided by the hits is [0, 1] for a query whose hits in the
  top k depend on the order.
* **exact**: the bugs modelled on the ranks themselves (0-based ranks, the previous-hit
  trapezoid, nDCG's ideal from the retrieved items, MRR counting junk) are predicted by the
  harness's exact machinery, which runs the reference per query in fractions; it is used while
  the data has at most ``EXACT_CELLS`` query-gallery pairs, and above that those candidates are
  listed as not searched (the report says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
from retrieval_conformance.conformance.audit.inputs import AuditData, Evaluator
from retrieval_conformance.conformance.audit.metrics import Metric
from retrieval_conformance.conformance.harness.adapters.base import Call
from retrieval_conformance.conformance.harness.candidates import candidate as hc
from retrieval_conformance.conformance.harness.candidates.bugs import applicable_bugs
from retrieval_conformance.conformance.harness.candidates.predict import EXTREME_ORDERS, Predictor
from retrieval_conformance.conformance.harness.candidates.reference_values import (
    OPTION_VALUES,
    Convention,
    ReferenceCache,
)
from retrieval_conformance.conformance.harness.inputs.public import case_from_inputs
from retrieval_conformance.reference.contract.conventions import AP_AT_K_DENOMINATORS

#: the bugs whose effect the fast path applies to fast per-query values
FAST_BUGS = (
    "topk-ignored",
    "last-item-dropped",
    "divided-by-k",
    "percent",
    "descending",
    "exact-label-match",
    "first-query-only",
)
#: the largest data (queries x gallery) the exact predictions run on
EXACT_CELLS = 20_000
#: the harness's name of each per-query value an exact prediction gives
EXACT_FIELDS = {
    "ap": "ap",
    "ndcg": "ndcg",
    "rr": "rr",
    "ap_at_r": "ap_at_r",
    "r_precision": "r_precision",
    "recall_at_k": "recall",
}
UNSTABLE = hc.UNSTABLE
Interval = Tuple[float, float]


@dataclass(frozen=True)
class Found:
    """One candidate, described for a report."""

    candidate: Any  # the harness's Candidate
    cost: int  # how much it assumes: one per bug, one for an unstable tie order

    def options(self) -> Dict[str, str]:
        c = self.candidate.conv
        return {"preset": c.base, "ties": c.ties, "ap_rule": c.ap_rule, "ap_at_k": c.ap_at_k, "empty": c.empty}

    def label(self) -> str:
        opts = self.options()
        parts = [f"preset {opts['preset']}"] + [f"{n}={opts[n]}" for n in ("ties", "ap_rule", "ap_at_k", "empty")]
        return ", ".join(parts + [f"bug {b}" for b in self.bugs])

    @property
    def bugs(self) -> List[str]:
        return [b.label for b in self.candidate.bugs]

    def clauses(self) -> List[str]:
        c = self.candidate.conv
        out = [hc.option_clause(name, getattr(c, name)) for name in ("ties", "ap_rule", "ap_at_k", "empty")]
        return out + [b.clause for b in self.candidate.bugs]

    def meanings(self) -> List[str]:
        return [b.what for b in self.candidate.bugs] + (
            [hc.meaning("ties", UNSTABLE)] if self.candidate.conv.ties == UNSTABLE else []
        )


def declared_target(protocol: str, overrides: Dict[str, str]) -> Dict[str, str]:
    """The declared protocol as a candidate's options (the base preset carries the junk rules)."""
    conv = Convention.from_protocol(protocol, **overrides)
    return {
        "preset": conv.base,
        "ties": conv.ties,
        "ap_rule": conv.ap_rule,
        "ap_at_k": conv.ap_at_k,
        "empty": conv.empty,
    }


def stages(
    data: AuditData,
    protocol: str,
    k: Optional[int],
    metrics: Sequence[Metric],
    max_cost: int = 2,
    overrides: Optional[Dict[str, str]] = None,
) -> Iterable[List[Found]]:
    """The harness's candidates for this data, stage by stage (what they assume: 0, 1, 2).

    The AP rule and AP@k denominator are searched only when a reported metric is an AP
    (they change nothing else); the bases are the presets whose junk rules differ.
    """
    declared = Convention.from_protocol(protocol, **(overrides or {}))
    bases = ["hashing", "reid", "reid-matlab"] if data.camera_rules else ["hashing"]
    if declared.base not in bases:
        bases.insert(0, declared.base)
    aps = any(m.source == "ap" for m in metrics)
    values = {
        "ties": hc.TIE_CANDIDATES,
        "ap_rule": OPTION_VALUES["ap_rule"] if aps else (declared.ap_rule,),
        "ap_at_k": AP_AT_K_DENOMINATORS if (aps and k is not None) else (declared.ap_at_k,),
        "empty": OPTION_VALUES["empty"],
    }
    convs = [
        c.with_(gain=declared.gain, recall=declared.recall, discount=declared.discount)
        for c in hc.conventions(bases, values)
    ]
    sources = {m.source for m in metrics}
    # a printed percent is read as one (reported.parse), so the percent bug never explains a number
    bugs = [
        b
        for b in applicable_bugs(True, data.multi_hot, k is not None, k is None, junk=data.single_ids)
        if (not b.metrics or any(_corrupts(b, s) for s in sources)) and b.id != "percent"
    ]
    for stage in hc.staged(convs, [None], bugs, declared, max_cost=max_cost):
        yield [Found(c, hc.cost(c)) for c in stage]


def _corrupts(bug, source: str) -> bool:
    return {"ap": "ap", "ndcg": "ndcg", "rr": "rr"}.get(source) in bug.metrics


def _equal_label_rows(data: AuditData) -> np.ndarray:
    """(Q, N) bool: the query's and the item's label vectors are equal and hold a label (the
    relevance the ``exact-label-match`` bug sees), from one id per distinct label row."""
    ql = np.asarray(data.arrays["query_labels"]) != 0
    dl = np.asarray(data.arrays["db_labels"]) != 0
    _, ids = np.unique(np.concatenate([ql, dl]), axis=0, return_inverse=True)
    ids = ids.reshape(-1)
    q_ids, d_ids = ids[: len(ql)], ids[len(ql) :]
    return (q_ids[:, None] == d_ids[None, :]) & ql.any(1)[:, None]


def needs_exact(found: Found) -> bool:
    return any(b.id not in FAST_BUGS for b in found.candidate.bugs)


class Values:
    """Candidates' values on the user's data (``value(found, metric)``: an interval, or None)."""

    def __init__(self, ev: Evaluator, k: Optional[int], max_rank: int, overrides: Optional[Dict[str, str]] = None):
        self.ev = ev
        self.k = k
        self.overrides = dict(overrides or {})  # the declared protocol's options besides its preset
        self.max_rank = max_rank
        n_q, n_g = ev.data.shape
        self.n_gallery = n_g
        self.exact_allowed = n_q * n_g <= EXACT_CELLS and ev.data.kind != "embeddings"
        self._predictor: Optional[Predictor] = None
        self._case = None
        ev.variants.setdefault("descending", ev.data.descending())
        if ev.data.multi_hot:
            ev.variants.setdefault("exact-labels", {"relevance": _equal_label_rows(ev.data)})

    # -- fast ---------------------------------------------------------------------------------
    def _run(self, conv, variant: str, k: Optional[int], ap_at_k: Optional[str] = None):
        options = dict(
            ties=conv.ties,
            ap_rule=conv.ap_rule,
            ap_at_k=ap_at_k or conv.ap_at_k,
            empty="zero",
            gain=conv.gain,
            discount=conv.discount,
            recall=conv.recall,
        )
        if k is None:
            options["ap_at_k"] = "hits"  # irrelevant without a cut-off: one evaluation serves all
        return self.ev.run(conv.base, variant, k=k, **options)

    def fast(self, found: Found, metric: Metric) -> Optional[Interval]:
        cand = found.candidate
        ids = {b.id: b for b in cand.bugs}
        variant = "descending" if "descending" in ids else "exact-labels" if "exact-label-match" in ids else ""
        if variant and self.ev.variants.get(variant) is None:
            return None  # embeddings cannot be reversed through an argument
        k = self.k
        if "topk-ignored" in ids:
            k = None
        if "last-item-dropped" in ids and self.k is None:
            k = self.n_gallery - 1 if self.n_gallery > 1 else None
        divided = "divided-by-k" in ids and metric.source == "ap"
        k_div = (self.k or self.n_gallery) if divided else None
        orders = EXTREME_ORDERS if cand.conv.ties == UNSTABLE else (cand.conv.ties,)
        values, hits, n_rel = [], [], None
        for order in orders:
            res = self._run(cand.conv.with_(ties=order), variant, k, "r" if divided else None)
            if isinstance(res, str):
                return None  # grouped ties cut inside a group: no value
            pq = res.per_query
            vals = metric.per_query(pq)
            if divided:
                vals = vals * pq.n_relevant / k_div  # the precision sum over k, as predict's Table
            values.append(vals)
            hits.append(np.asarray(pq.hits_at_k))
            n_rel = np.asarray(pq.n_relevant)
        lo, hi = np.min(values, axis=0), np.max(values, axis=0)
        # only a divisor that counts the hits in the top k makes AP@k not monotone in the order
        if len(orders) > 1 and k is not None and metric.source == "ap" and cand.conv.ap_at_k == "hits" and not divided:
            varies = np.any(np.asarray(hits) != hits[0], axis=0)
            lo, hi = np.where(varies, 0.0, lo), np.where(varies, 1.0, hi)
        return self._mean(found, lo, hi, n_rel, hits, metric)

    def _mean(self, found: Found, lo, hi, n_rel, hits, metric: Metric) -> Optional[Interval]:
        cand = found.candidate
        empty = cand.conv.empty
        if empty == "skip":
            counted = n_rel > 0
        elif empty == "skip_no_hit":
            if any((h > 0).tolist() != (hits[0] > 0).tolist() for h in hits):
                return None  # which queries count depends on the tie order
            counted = hits[0] > 0
        else:
            counted = np.ones(lo.size, bool)
        scale = float(np.prod([b.scale for b in cand.bugs])) if cand.bugs else 1.0
        first = next((b for b in cand.bugs if b.id == "first-query-only"), None)
        if first is not None:
            if metric.source != "ap":
                return None
            which, how = first.variant.split(",")
            if which == "first-hit" and any((h > 0).tolist() != (hits[0] > 0).tolist() for h in hits):
                return None  # which query has the first hit depends on the tie order
            cond = {"first": np.ones(lo.size, bool), "first-relevant": n_rel > 0, "first-hit": hits[0] > 0}[which]
            if not cond.any():
                return (0.0, 0.0)
            q = int(np.argmax(cond))
            div = lo.size if how == "divided" else 1
            return (lo[q] / div * scale, hi[q] / div * scale)
        if not counted.any():
            return None
        return (float(lo[counted].mean()) * scale, float(hi[counted].mean()) * scale)

    # -- exact --------------------------------------------------------------------------------
    def exact(self, found: Found, metric: Metric) -> Optional[Interval]:
        """The harness's exact prediction (None: not on this data or not for this metric)."""
        name = EXACT_FIELDS.get(metric.source) if not metric.rank else ("p1" if metric.rank == 1 else None)
        if not self.exact_allowed or name is None:
            return None
        if self._predictor is None:
            inputs = {key: value for key, value in self.ev.data.arrays.items() if key != "metric"}
            self._case = case_from_inputs("audit", inputs, k=self.k, max_rank=self.max_rank)
            self._predictor = Predictor(ReferenceCache(), "audit", per_query=False, fields={"value": name})
        self._predictor.fields = {"value": name}
        call = Call(
            args=(), kwargs={}, names=(), k=self.k, max_rank=self.max_rank, without_k=self.k is None, k_passed=self.k
        )
        pred = self._predictor.predict(found.candidate, self._case, call)
        iv = None if not pred else pred.get("value")
        if iv is None or any(not np.isfinite(float(v)) for v in iv):
            return None
        return (float(iv[0]), float(iv[1]))

    def value(self, found: Found, metric: Metric) -> Optional[Interval]:
        return self.exact(found, metric) if needs_exact(found) else self.fast(found, metric)
