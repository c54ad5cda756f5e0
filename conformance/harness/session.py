"""One function under test: its adapter, the protocol, the worker that calls it, and what it returned.

:class:`Session` turns a :class:`~.inputs.case.Case` into the adapter's calls, runs them, keeps every
evaluated input (``observed``: the evidence identification eliminates candidates with) and
compares the returned fields with the protocol's prediction.  The checks (:mod:`.checks`) and
identification (:mod:`.identify`) build on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

from retrieval_conformance.conformance.harness.adapters.base import Call, Reading, Skip, UsageError, WrongType
from retrieval_conformance.conformance.harness.adapters.registry import DEFAULT_PROTOCOL, get_adapter
from retrieval_conformance.conformance.harness.calling.runner import Outcome, Runner, torch_available
from retrieval_conformance.conformance.harness.candidates.candidate import Candidate, conventions
from retrieval_conformance.conformance.harness.candidates.predict import Predictor, within
from retrieval_conformance.conformance.harness.candidates.reference_values import (
    K_PROTOCOLS,
    LANDMARK_CONVENTIONS,
    OPTION_VALUES,
    ReferenceCache,
)
from retrieval_conformance.conformance.harness.candidates.space import search_values
from retrieval_conformance.conformance.harness.engine.eliminate import Eliminator, exact_value
from retrieval_conformance.conformance.harness.inputs.public import Case
from retrieval_conformance.conformance.harness.report.results import Mismatch
from retrieval_conformance.reference.contract import options_table

MAX_HANGS = 2
FAILED_CALLS_LIMIT = 25  # stop early when not one of this many calls has returned


@dataclass
class Evaluation:
    """One case run through the user's function (and, once compared, its mismatches)."""

    case: Case
    calls: List[Call] = field(default_factory=list)
    outcomes: List[Outcome] = field(default_factory=list)
    readings: List[Optional[Reading]] = field(default_factory=list)
    mismatches: List[Mismatch] = field(default_factory=list)
    skipped: Optional[str] = None
    reference: Dict[Any, Any] = field(default_factory=dict)  # (metric, query) -> exact reference value

    @property
    def deviates(self) -> bool:
        return self.skipped is None and bool(self.mismatches)

    @property
    def hung(self) -> bool:
        return any(o.kind == "timeout" for o in self.outcomes)

    @property
    def all_read(self) -> bool:
        return all(r is not None for r in self.readings)

    @property
    def any_read(self) -> bool:
        return any(r is not None for r in self.readings)


#: what ``check`` and ``Session`` say of ``protocol`` beyond the options table
PROTOCOL_DETAIL = (
    'Default: the adapter\'s usual one (``hashing``, ``reid``...); with ``adapter="oxford"``, '
    "one of " + ", ".join(f"``{name}``" for name in LANDMARK_CONVENTIONS) + "."
)


@options_table.documented("check", protocol=PROTOCOL_DETAIL)
class Session:
    """Everything needed to check one function.  Use as a context manager so the worker stops.

    Parameters
    ----------
    func, adapter
        The function and its signature, as in :func:`~.entry.check`.
    {options}
    arrays, timeout, isolation, max_examples, atol, rtol, target, derandomize, known_deviations, only
        As in :func:`~.entry.check`.
    shrink_budget : int
        Calls allowed to shrink a failing input.
    warmup_timeout : float, optional
        Seconds allowed for the first call in a worker, as in :func:`~.entry.check`.
    reference_cache : ReferenceCache, optional
        The reference's values to reuse across sessions (the zoo's round trip shares one whose
        keys are the inputs' contents); a fresh one by default.
    """

    def __init__(
        self,
        func: Callable,
        adapter: str = "hashing-codes",
        protocol: Optional[str] = None,
        *,
        ties: Optional[str] = None,
        ap_rule: Optional[str] = None,
        ap_at_k: Optional[str] = None,
        empty: Optional[str] = None,
        gain: Optional[str] = None,
        recall: Optional[str] = None,
        discount: Optional[str] = None,
        arrays: str = "auto",
        timeout: float = 10.0,
        isolation: str = "auto",
        max_examples: int = 60,
        atol: float = 1e-6,
        rtol: float = 1e-5,
        target: Optional[str] = None,
        derandomize: bool = True,
        known_deviations: Sequence[str] = (),
        only: Sequence[str] = (),
        shrink_budget: int = 150,
        warmup_timeout: Optional[float] = None,
        reference_cache: Optional[ReferenceCache] = None,
    ):
        self.func = func
        self.target = target or _name_of(func)
        self.adapter = get_adapter(adapter, func)
        self.protocol = protocol or DEFAULT_PROTOCOL[adapter]
        self.overrides = {
            "ties": ties,
            "ap_rule": ap_rule,
            "ap_at_k": ap_at_k,
            "empty": empty,
            "gain": gain,
            "recall": recall,
            "discount": discount,
        }
        for name, value in self.overrides.items():
            if value is not None and value not in OPTION_VALUES[name]:
                raise UsageError(
                    f"--{name.replace('_', '-')}: expected one of {list(OPTION_VALUES[name])}, got {value!r}"
                )
        self.convention = self.adapter.protocol_convention(self.protocol, self.overrides)
        self.protocol_k = (self.protocol in K_PROTOCOLS or ap_at_k is not None) and not self.adapter.ranked_list
        self.requested_arrays = self.adapter.forced_arrays or arrays
        if self.requested_arrays not in ("auto", "numpy", "torch"):
            raise UsageError(f"--arrays: expected 'numpy', 'torch' or 'auto', got {arrays!r}")
        if self.requested_arrays == "torch" and torch_available() is not None:
            raise UsageError(f"arrays=torch: {torch_available()}; install it with: pip install torch==2.13.0")
        self.arrays = "numpy" if self.requested_arrays == "auto" else self.requested_arrays
        self.timeout, self.isolation, self.warmup_timeout = timeout, isolation, warmup_timeout
        self.max_examples, self.derandomize = max_examples, derandomize
        self.shrink_budget = shrink_budget
        self.atol, self.rtol = atol, rtol
        self.known = list(known_deviations)
        self.only = list(only)
        self.cache = reference_cache if reference_cache is not None else ReferenceCache()
        self.predictor = Predictor(
            self.cache, self.adapter.name, self.adapter.per_query, self.adapter.fields, reads_cmc=self.adapter.reads_cmc
        )
        self.eliminator = Eliminator(self.predictor, atol, rtol, check_cmc_length=self._passes_max_rank())
        # the protocol as a candidate; a CMC of either length rule conforms (both are conventions)
        self.protocol_candidate = Candidate(self.convention, None)
        self.runner: Optional[Runner] = None
        self._arrays_decided = self.requested_arrays != "auto"
        self.notes: List[str] = []
        self.observed: List[Evaluation] = []
        self._success_count = 0

    def _passes_max_rank(self) -> bool:
        return self.adapter.passes_max_rank

    # -- the candidate space of this adapter ------------------------------------------------
    def dims(self, any_k: bool) -> List[str]:
        """The options the adapter's values depend on (``Adapter.options``; AP@k's only with a cut-off)."""
        dims = [d for d in OPTION_VALUES if d in self.adapter.options and (any_k or d != "ap_at_k")]
        if self.adapter.cmc_lengths != (None,):
            dims.append("cmc_length")
        return dims

    def candidate_space(self, any_k: bool):
        """(conventions, CMC length rules) that identification starts from."""
        bases = self.adapter.junk_rule_presets
        values = search_values(self.adapter, self.convention, any_k, own_cutoff=not any_k)
        # a function that chooses its own max_rank is compared on the common prefix: no length rule
        return conventions(bases, values), self.adapter.cmc_lengths

    # -- calling ----------------------------------------------------------------------------
    def _runner(self) -> Runner:
        if self.runner is None:
            self.runner = self._make_runner(self.arrays)
        return self.runner

    def _make_runner(self, arrays: str) -> Runner:
        return Runner(self.func, self.timeout, self.isolation, arrays, warmup_timeout=self.warmup_timeout)

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()
            self.runner = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def call(self, call: Call) -> Outcome:
        out = self._call_once(call)
        if out.ok:
            self._success_count += 1
        return out

    @staticmethod
    def _invoke(runner: Runner, call: Call) -> Outcome:
        return runner.call(call.args, call.kwargs, names=call.names)

    def _call_once(self, call: Call) -> Outcome:
        out = self._invoke(self._runner(), call)
        if not self._arrays_decided:
            self._arrays_decided = True
            if not out.ok and out.kind == "raised" and torch_available() is None:
                # numpy arrays failed: a torch-written function (seed 003) gets tensors instead
                trial = self._make_runner("torch")
                t_out = self._invoke(trial, call)
                if t_out.ok:
                    self.close()
                    self.runner, self.arrays = trial, "torch"
                    self.notes.append(
                        f"numpy arrays made the function fail ({out.error_line}); "
                        "it was called with torch tensors instead (--arrays torch)"
                    )
                    return t_out
                trial.close()
        return out

    @property
    def convention_text(self) -> str:
        return self.convention.label([d for d in self.dims(True) if d in OPTION_VALUES])

    def adapter_calls(self, case: Case) -> List[Call]:
        """The adapter's calls for ``case``; :class:`~.adapters.base.Skip` when it cannot express it."""
        rel, junk = self.cache.effective(case, self.convention.base)
        return self.adapter.calls(case, rel, junk, self.arrays)

    def calls(self, case: Case) -> List[Call]:
        """The adapter's calls for ``case`` ([] when it cannot express it)."""
        try:
            return self.adapter_calls(case)
        except Skip:
            return []

    def run_case(self, case: Case) -> Evaluation:
        """Call the function on ``case`` (no comparison yet); keep it as evidence."""
        ev = Evaluation(case)
        if case.k is not None and not self.protocol_k:
            ev.skipped = f"the protocol {self.protocol!r} defines no AP@k (give --ap-at-k to check one)"
            return ev
        try:
            ev.calls = self.adapter_calls(case)
        except Skip as exc:
            ev.skipped = str(exc)
            return ev
        if not ev.calls:
            ev.skipped = "nothing to call (every gallery item is junk)"
            return ev
        for call in ev.calls:
            out = self.call(call)
            ev.outcomes.append(out)
            reading = None
            if out.ok:
                try:
                    reading = self.adapter.read(out.value, call)
                except WrongType as exc:
                    out.error = f"wrong return type: {exc} (got {out.type_name})"
            ev.readings.append(reading)
            if out.kind == "timeout":
                break
        self.observed.append(ev)
        return ev

    # -- comparing with the protocol ----------------------------------------------------------
    def prediction(self, ev: Evaluation, call: Call, reading: Optional[Reading], cand: Optional[Candidate] = None):
        cmc = reading.values.get("cmc") if reading is not None else None
        return self.predictor.predict(
            cand or self.protocol_candidate, ev.case, call, cmc_len=len(cmc) if cmc is not None else None
        )

    def compare(self, ev: Evaluation, cand: Optional[Candidate] = None) -> List[Mismatch]:
        """Mismatches of an evaluated case against a candidate (default: the protocol)."""
        out: List[Mismatch] = []
        for call, outcome, reading in zip(ev.calls, ev.outcomes, ev.readings):
            q = call.query
            pred = self.prediction(ev, call, reading, cand)
            if pred is None:
                continue
            main = self.adapter.main_field
            ref = exact_value(pred.get(main))
            if cand is None:
                ev.reference[(main, q)] = ref
            defined = any(v is not None for key, v in pred.items() if key != "cmc_lengths")
            if not outcome.ok:
                if defined:
                    detail = f"{self.timeout:g} s" if outcome.kind == "timeout" else ""
                    out.append(Mismatch(self._metric_name(q, main), outcome.kind, outcome.error, ref, q, detail))
                continue
            if reading is None:
                if defined:
                    out.append(Mismatch(self._metric_name(q, main), "wrong-type", outcome.error, None, q))
                continue
            for metric, value in reading.values.items():
                if metric == "cmc":
                    out.extend(self._compare_cmc(value, pred, call))
                    continue
                iv = pred.get(metric)
                if iv is None:
                    continue
                if not within(value, iv, self.atol, self.rtol):
                    kind = "value" if math.isfinite(value) else "non-finite"
                    out.append(Mismatch(self._metric_name(q, metric), kind, value, exact_value(iv), q))
        return out

    def _compare_cmc(self, user: List[float], pred: Dict[str, Any], call: Call) -> List[Mismatch]:
        cmc = pred.get("cmc")
        if cmc is None:
            return []
        n = len(user)
        if self._passes_max_rank() and n not in pred["cmc_lengths"]:
            allowed = " or ".join(str(v) for v in sorted(pred["cmc_lengths"]))
            return [
                Mismatch(
                    "cmc",
                    "length",
                    n,
                    None,
                    detail=f"returned {n} CMC values; expected {allowed} (max_rank={call.max_rank}, "
                    f"or min(max_rank, gallery size))",
                )
            ]
        out = []
        for j in range(min(n, len(cmc))):
            if not within(user[j], cmc[j], self.atol, self.rtol):
                name = "cmc[0] (Rank-1)" if j == 0 else f"cmc[{j}] (Rank-{j + 1})"
                out.append(
                    Mismatch(name, "value" if math.isfinite(user[j]) else "non-finite", user[j], exact_value(cmc[j]))
                )
        return out

    def _metric_name(self, q: Optional[int], metric: str) -> str:
        if self.adapter.per_query:
            return f"{metric} of query {q}"
        return metric

    def evaluate(self, case: Case) -> Evaluation:
        """Run ``case`` and compare it with the protocol."""
        ev = self.run_case(case)
        if ev.skipped is not None:
            return ev
        preds = [self.prediction(ev, c, r) for c, r in zip(ev.calls, ev.readings)]
        if all(p is None for p in preds):
            ev.skipped = "the protocol has no value for this input (grouped ties with a cut-off inside a tie group)"
            return ev
        ev.mismatches = self.compare(ev)
        return ev

    def user_value(self, ev: Evaluation, metric: Optional[str] = None):
        """The user's main value (mAP, nDCG...: aggregate adapters) or list of per-query APs
        (one-query adapters)."""
        metric = metric or self.adapter.main_field
        if self.adapter.per_query:
            vals: List[Optional[float]] = [None] * ev.case.n_queries
            for call, reading in zip(ev.calls, ev.readings):
                if reading is not None:
                    vals[call.query] = reading.values.get(metric)
            return vals
        if not ev.readings or ev.readings[0] is None:
            return None
        return ev.readings[0].values.get(metric)

    def aborted(self) -> Optional[str]:
        if self.runner is not None and self.runner.hangs >= MAX_HANGS:
            return f"not run: the function hung {self.runner.hangs} times (time limit {self.timeout:g} s)"
        if self.runner is not None and self.runner.calls >= FAILED_CALLS_LIMIT and self._success_count == 0:
            return f"not run: none of the first {self.runner.calls} calls returned (wrong adapter or --arrays?)"
        return None


def _name_of(func: Callable) -> str:
    mod = getattr(func, "__module__", None) or "?"
    return f"{mod}:{getattr(func, '__qualname__', repr(func))}"
