"""The harness proper: run a user's function on golden and generated inputs, compare with the
reference, explain deviations, identify conventions.

Flow of :meth:`Session.check`::

    golden cases ──┐
    hypothesis  ───┼─> adapter.calls(case) ─> Runner.call ─> adapter.read ─> compare with
    families       │                                                        ReferenceCache.expected
                   └─> first deviation of a family: hypothesis shrinks it to the smallest input
                       ─> explain (alternative conventions, §11 bug models, counterfactuals)
                       ─> Deviation (clauses, values, snippet)
"""
from __future__ import annotations

import fnmatch
import itertools
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness import adapters as ad
from retrieval_conformance.conformance.harness.cases import (
    FAMILIES,
    Case,
    Family,
    _fingerprint,
    family_skip_reason,
    golden_cases,
    hypothesis_strategy,
    sample_cases,
)
from retrieval_conformance.conformance.harness.expected import (
    BUG_MODELS,
    OPTION_VALUES,
    VALUE_MEANING,
    BugModel,
    Convention,
    Expected,
    ReferenceCache,
    bug_values,
    clause,
)
from retrieval_conformance.conformance.harness.report import (
    DEVIATE,
    KNOWN,
    PASS,
    SKIP,
    CheckResult,
    Deviation,
    Identification,
    Mismatch,
    Report,
    fmt_exact,
    fmt_float,
)
from retrieval_conformance.conformance.harness.runner import Outcome, Runner, torch_available
from retrieval_conformance.conformance.harness.snippet import make_snippet

K_PROTOCOLS = ("hashing", "hashnet", "dcmh", "gldv2")
HASHING_PRESETS = ("hashing", "hashnet", "dcmh", "gldv2", "reid", "reid-matlab")
REID_PRESETS = ("reid", "reid-matlab")
MAX_HANGS = 2
FAILED_CALLS_LIMIT = 8  # stop early when not one call has returned


@dataclass
class Evaluation:
    """One case run through the user's function and compared with the reference."""

    case: Case
    calls: List[ad.Call] = field(default_factory=list)
    outcomes: List[Outcome] = field(default_factory=list)
    readings: List[Optional[ad.Reading]] = field(default_factory=list)
    mismatches: List[Mismatch] = field(default_factory=list)
    skipped: Optional[str] = None
    expected: Optional[Expected] = None

    @property
    def deviates(self) -> bool:
        return self.skipped is None and bool(self.mismatches)

    @property
    def hung(self) -> bool:
        return any(o.kind == "timeout" for o in self.outcomes)

    @property
    def all_read(self) -> bool:
        return all(r is not None for r in self.readings)


def close(user: float, ref: Any, atol: float, rtol: float) -> bool:
    if ref is None:
        return True  # undefined reference (no query counted): any value is accepted
    if isinstance(ref, float) and math.isinf(ref):
        return math.isinf(user) and (user > 0) == (ref > 0)
    if not math.isfinite(user):
        return False
    r = float(ref)
    return abs(user - r) <= atol + rtol * abs(r)


def load_function(target: str) -> Callable:
    """``package.module:function`` (or ``path/to/file.py:function``) -> the function.

    The current directory is put on ``sys.path`` first, like ``python -m`` does.
    Raises :class:`~.adapters.UsageError` with the reason when it cannot be loaded.
    """
    import importlib
    import importlib.util
    import os
    import sys

    if ":" not in target:
        raise ad.UsageError(f"target: expected 'module:function' (e.g. mylab.eval:calc_map), got {target!r}")
    module_name, _, attr = target.rpartition(":")
    try:
        if module_name.endswith(".py"):
            if not os.path.exists(module_name):
                raise ad.UsageError(f"target: file {module_name!r} does not exist")
            spec = importlib.util.spec_from_file_location("_rc_user_module", module_name)
            module = importlib.util.module_from_spec(spec)
            sys.modules["_rc_user_module"] = module
            spec.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
    except ad.UsageError:
        raise
    except BaseException as exc:  # anything the user's module does on import
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise ad.UsageError(f"target: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ad.UsageError(f"target: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ad.UsageError(f"target: {target!r} is not callable")
    return obj


def read_known_deviations(path: str) -> List[str]:
    """Check ids (or glob patterns) from a known-deviations file: one per line, ``#`` comments."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if line:
                out.append(line)
    return out


class Session:
    """Everything needed to check one function: adapter, protocol, runner, reference cache.

    Parameters mirror :func:`check`.  Use as a context manager (or call :meth:`close`) so the
    worker process is stopped.
    """

    def __init__(self, func: Callable, adapter: str = "hashing-codes", protocol: Optional[str] = None, *,
                 ties: Optional[str] = None, ap_rule: Optional[str] = None, ap_at_k: Optional[str] = None,
                 empty: Optional[str] = None, arrays: str = "auto", timeout: float = 10.0,
                 isolation: str = "auto", max_examples: int = 60, atol: float = 1e-6, rtol: float = 1e-5,
                 target: Optional[str] = None, derandomize: bool = True, known_deviations: Sequence[str] = (),
                 only: Sequence[str] = (), shrink_budget: int = 150):
        self.func = func
        self.target = target or _name_of(func)
        self.adapter = ad.get_adapter(adapter, func)
        self.protocol = protocol or ad.DEFAULT_PROTOCOL[adapter]
        self.overrides = {"ties": ties, "ap_rule": ap_rule, "ap_at_k": ap_at_k, "empty": empty}
        self.custom_reference = None
        for name, value in self.overrides.items():
            if value is not None and value not in OPTION_VALUES[name]:
                raise ad.UsageError(f"{name}: expected one of {list(OPTION_VALUES[name])}, got {value!r}")
        if self.protocol == "oxford":
            self.convention = Convention("hashing", "stable", "trapezoid", "hits", "zero")
        else:
            try:
                self.convention = Convention.from_protocol(self.protocol, **self.overrides)
            except ValueError as exc:
                raise ad.UsageError(str(exc)) from None
        for name, value in self.overrides.items():
            if value is not None and value not in OPTION_VALUES[name]:
                raise ad.UsageError(f"{name}: expected one of {list(OPTION_VALUES[name])}, got {value!r}")
        if self.adapter.name == "reid" and self.protocol not in REID_PRESETS:
            raise ad.UsageError(f"adapter reid passes cameras, so it needs a protocol with the camera junk rule "
                                f"({', '.join(REID_PRESETS)}); got {self.protocol!r}")
        self.protocol_k = self.protocol in K_PROTOCOLS or ap_at_k is not None
        self.requested_arrays = self.adapter.forced_arrays or arrays
        if self.requested_arrays not in ("auto", "numpy", "torch"):
            raise ad.UsageError(f"arrays: expected 'numpy', 'torch' or 'auto', got {arrays!r}")
        if self.requested_arrays == "torch" and torch_available() is not None:
            raise ad.UsageError(f"arrays=torch: {torch_available()}; pip install torch==2.13.0 (CPU)")
        self.arrays = "numpy" if self.requested_arrays == "auto" else self.requested_arrays
        self.timeout, self.isolation = timeout, isolation
        self.max_examples, self.derandomize = max_examples, derandomize
        self.shrink_budget = shrink_budget
        self.atol, self.rtol = atol, rtol
        self.known = list(known_deviations)
        self.only = list(only)
        self.cache = ReferenceCache()
        self.runner: Optional[Runner] = None
        self._arrays_decided = self.requested_arrays != "auto"
        self.notes: List[str] = []
        self._success_count = 0
        self._verify_cache: Dict[str, List[Evaluation]] = {}
        if self.protocol == "oxford":
            self._setup_oxford()

    # -- plumbing ------------------------------------------------------------------------
    def _setup_oxford(self) -> None:
        try:
            from retrieval_conformance.reference.landmark import oxford_ap_exact
        except ImportError:
            self.custom_reference = None
            return

        def reference(positives, junk, ranked):
            # exact compute_ap semantics (trapezoid, junk skipped, positives de-duplicated);
            # None where the program prints -nan (no positive): any answer is accepted there
            return oxford_ap_exact(ranked, positives, [], junk)

        self.custom_reference = reference

    def _runner(self) -> Runner:
        if self.runner is None:
            self.runner = Runner(self.func, self.timeout, self.isolation, self.arrays)
        return self.runner

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()
            self.runner = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, call: ad.Call) -> Outcome:
        out = self._call_once(call)
        if out.ok:
            self._success_count += 1
        return out

    def _call_once(self, call: ad.Call) -> Outcome:
        out = self._runner().call(call.args, call.kwargs)
        if not self._arrays_decided:
            self._arrays_decided = True
            if not out.ok and out.kind == "raised" and torch_available() is None:
                # numpy arrays failed: a torch-written function (seed 003) gets tensors instead
                trial = Runner(self.func, self.timeout, self.isolation, "torch")
                t_out = trial.call(call.args, call.kwargs)
                if t_out.ok:
                    self.close()
                    self.runner, self.arrays = trial, "torch"
                    self.notes.append(f"numpy arrays made the function fail ({out.error.splitlines()[0]}); "
                                      "it was called with torch tensors instead (--arrays torch)")
                    return t_out
                trial.close()
        return out

    @property
    def convention_text(self) -> str:
        dims = ["ties", "ap_rule", "ap_at_k", "empty"]
        return self.convention.label(dims) if self.protocol != "oxford" else "Oxford compute_ap"

    # -- one case ----------------------------------------------------------------------
    def expected(self, case: Case, conv: Optional[Convention] = None, k="case") -> Expected:
        conv = conv or self.convention
        return self.cache.expected(case, conv, case.k if k == "case" else k, case.max_rank)

    def calls(self, case: Case) -> List[ad.Call]:
        rel, junk = self.cache.effective(case, self.convention.base)
        return self.adapter.calls(case, rel, junk, self.arrays)

    def run_case(self, case: Case) -> Evaluation:
        """Call the function on ``case`` (no comparison yet)."""
        ev = Evaluation(case)
        if self.protocol == "oxford" and self.custom_reference is None:
            ev.skipped = "the Oxford reference (retrieval_conformance.reference.landmark) is not installed"
            return ev
        if case.k is not None and not self.protocol_k:
            ev.skipped = f"the protocol {self.protocol!r} defines no AP@k (give --ap-at-k to check one)"
            return ev
        try:
            ev.calls = self.calls(case)
        except ad.Skip as exc:
            ev.skipped = str(exc)
            return ev
        if not ev.calls:
            ev.skipped = "nothing to call (every gallery item is junk)"
            return ev
        for call in ev.calls:
            out = self._call(call)
            ev.outcomes.append(out)
            reading = None
            if out.ok:
                try:
                    reading = self.adapter.read(out.value, call)
                except ad.WrongType as exc:
                    out.error = f"wrong return type: {exc} (got {out.type_name})"
            ev.readings.append(reading)
            if out.kind == "timeout":
                break
        return ev

    def compare(self, ev: Evaluation, exp: Expected) -> List[Mismatch]:
        """Mismatches of an evaluated case against ``exp`` (empty: it conforms)."""
        out: List[Mismatch] = []
        for call, outcome, reading in zip(ev.calls, ev.outcomes, ev.readings):
            q = call.query
            if self.adapter.per_query:
                ref_ap = exp.ap[q] if exp.ap is not None else None
                refs = {"AP": ref_ap}
                undefined = ref_ap is None
            else:
                refs = {"mAP": exp.map}
                if self.adapter.name == "reid":
                    refs["mINP"] = exp.minp
                undefined = exp.map is None
            if not outcome.ok:
                if undefined:
                    continue  # raising where the reference has no value is fine
                what = outcome.kind
                detail = f"{self.timeout:g} s" if what == "timeout" else ""
                out.append(Mismatch(self._metric_name(q), what, outcome.error, refs.get("AP", refs.get("mAP")),
                                    q, detail))
                continue
            if reading is None:
                if not undefined:
                    out.append(Mismatch(self._metric_name(q), "wrong-type", outcome.error, None, q))
                continue
            for metric, value in reading.values.items():
                if metric == "cmc":
                    out.extend(self._compare_cmc(value, exp, ev.case, call))
                    continue
                ref = refs.get(metric)
                if ref is None:
                    continue
                if not close(value, ref, self.atol, self.rtol):
                    kind = "value" if math.isfinite(value) else "non-finite"
                    out.append(Mismatch(self._metric_name(q, metric), kind, value, ref, q))
        return out

    def _custom_value(self, call: ad.Call):
        value = self.custom_reference(*call.args)
        if isinstance(value, Fraction):
            return value
        f = float(value)
        return None if math.isnan(f) else Fraction(f)

    def _metric_name(self, q: Optional[int], metric: Optional[str] = None) -> str:
        if self.adapter.per_query:
            return f"AP of query {q}"
        return metric or "mAP"

    def _compare_cmc(self, user: List[float], exp: Expected, case: Case, call: ad.Call) -> List[Mismatch]:
        if exp.cmc is None or exp.map is None:
            return []
        max_rank = call.max_rank
        n = len(user)
        allowed = {max_rank, min(max_rank, case.n_gallery)}
        if n not in allowed:
            return [Mismatch("cmc", "length", n, None, detail=f"returned {n} CMC values; expected max_rank={max_rank}"
                             + (f" (or {case.n_gallery}, the gallery size)" if case.n_gallery < max_rank else ""))]
        out = []
        for j in range(n):
            ref = exp.cmc[j]
            if ref is not None and not close(user[j], ref, self.atol, self.rtol):
                name = "cmc[0] (Rank-1)" if j == 0 else f"cmc[{j}] (Rank-{j + 1})"
                out.append(Mismatch(name, "value" if math.isfinite(user[j]) else "non-finite", user[j], ref))
        return out

    def evaluate(self, case: Case) -> Evaluation:
        ev = self.run_case(case)
        if ev.skipped is not None:
            return ev
        if self.custom_reference is not None:
            exp = Expected(ap=[None] * case.n_queries)
            for call in ev.calls:
                exp.ap[call.query] = self._custom_value(call)
        else:
            exp = self.expected(case)
        if exp.error:
            ev.skipped = f"the protocol has no value for this input ({exp.error})"
            return ev
        ev.expected = exp
        ev.mismatches = self.compare(ev, exp)
        return ev

    def user_value(self, ev: Evaluation, metric: str = "mAP"):
        """The user's mAP (aggregate adapters) or list of per-query APs (one-query adapters)."""
        if self.adapter.per_query:
            vals: List[Optional[float]] = [None] * ev.case.n_queries
            for call, reading in zip(ev.calls, ev.readings):
                if reading is not None:
                    vals[call.query] = reading.values.get("AP")
            return vals
        if not ev.readings or ev.readings[0] is None:
            return None
        return ev.readings[0].values.get(metric)

    def protocol_expected(self, ev: Evaluation) -> Expected:
        """The reference values of the protocol itself for an evaluated case."""
        if self.custom_reference is not None and ev.expected is not None:
            return ev.expected
        return self.expected(ev.case)

    def agrees(self, ev: Evaluation, exp: Expected) -> bool:
        return not exp.error and not self.compare(ev, exp)

    # -- explaining one deviation --------------------------------------------------------
    def explain(self, ev: Evaluation, fam_clause: str, fam_id: str = "") -> Tuple[List[str], List[str]]:
        """(clauses broken, explanations) for a deviating evaluation.

        Candidate explanations are collected on the failing input -- one option of the
        protocol changed, a bug of CONVENTIONS §11 (:data:`.expected.BUG_MODELS`), two
        options changed -- and, when several fit (a small input often fits more than one),
        they are tried on further inputs of the same kind: the ones that keep reproducing the
        function's values win.  As a last resort the same input is re-run with its ties broken.
        """
        clauses: List[str] = []
        why: List[str] = []
        kinds = {m.kind for m in ev.mismatches}
        case = ev.case
        conv = self.convention
        user = self.user_value(ev)
        bug = (case.golden or {}).get("known_bug")
        if bug and isinstance(user, float) and close(user, Fraction(bug["value"]), self.atol, self.rtol):
            why.append(f"this is the documented bug of golden case {case.golden.get('id')}: {bug['what']}")
        failing = kinds & {"raised", "timeout", "crashed", "wrong-type"}
        if failing:
            clauses.append(f"adapter {self.adapter.name}: returns {self.adapter.metrics_text} for every valid input")
            for m in ev.mismatches:
                if m.kind in failing:
                    why.append({"raised": f"the function raised {m.user}",
                                "timeout": f"the function did not return within {self.timeout:g} s",
                                "crashed": f"the function crashed the worker process ({m.user})",
                                "wrong-type": f"{m.user}"}[m.kind])
                    break
            return clauses, why
        cands = self._verify(self._candidates(ev), fam_id)
        for cand in cands:
            clauses.extend(cand.clauses)
            why.append(cand.why + (f" [also reproduces {cand.verified} further input(s) of this kind]"
                                   if cand.verified else ""))
        if not clauses and case.non_positive_scores:
            from dataclasses import replace as _replace

            ev2 = self.evaluate(_replace(case, non_positive_scores=False, name=case.name + " (scores > 0)"))
            if ev2.skipped is None and not ev2.mismatches:
                clauses.append("CONVENTIONS §2 relevance does not depend on the score")
                why.append("the same input with positive scores conforms: relevant items with a score <= 0 were "
                           "counted as not relevant (torchmetrics >= 1.7.4, Lightning-AI/torchmetrics#3104)")
        if not clauses and case.has_ties():
            ev2 = self.evaluate(case.untied())
            if ev2.skipped is None and not ev2.mismatches:
                clauses.append(clause("ties", conv.ties))
                why.append("with its ties broken in gallery order the same input conforms, and your value matches "
                           "no tie policy: tied items come out in an order no policy promises (an unstable sort: "
                           "np.argsort's default kind, torch.sort), CONVENTIONS §4, §11")
        if not clauses:
            clauses.append(fam_clause + " (no known convention or bug reproduces your value)")
        if "non-finite" in kinds and not any("0-based" in w for w in why):
            why.append("the function returned a non-finite value (NaN or inf) where the reference is a number")
        return _unique(clauses), why

    def _candidates(self, ev: Evaluation) -> List["_Candidate"]:
        conv = self.convention
        dims = self._dims(ev.case)
        out: List[_Candidate] = []
        for name in dims:
            for value in OPTION_VALUES[name]:
                if value == getattr(conv, name):
                    continue
                alt = conv.with_(**{name: value})
                if self.agrees(ev, self.expected(ev.case, alt)):
                    out.append(_Candidate(
                        [clause(name, getattr(conv, name))],
                        f"your value equals the reference under {name}={value}: {VALUE_MEANING[(name, value)]} "
                        f"(the protocol says {getattr(conv, name)}: {VALUE_MEANING[(name, getattr(conv, name))]})",
                        alt=alt))
        for model in BUG_MODELS:
            hit = self._model_matches(model, ev, conv)
            if hit is not None:
                out.append(_Candidate([model.clause.format_map(_Defaults(k=ev.case.k, ap_at_k=conv.ap_at_k))],
                                      model.what.format_map(_Defaults(hit)), model=model))
        if not out:
            for (n1, n2) in itertools.combinations(dims, 2):
                for v1 in OPTION_VALUES[n1]:
                    for v2 in OPTION_VALUES[n2]:
                        if v1 == getattr(conv, n1) or v2 == getattr(conv, n2):
                            continue
                        alt = conv.with_(**{n1: v1, n2: v2})
                        if self.agrees(ev, self.expected(ev.case, alt)):
                            out.append(_Candidate(
                                [clause(n1, getattr(conv, n1)), clause(n2, getattr(conv, n2))],
                                f"your value equals the reference under {n1}={v1} ({VALUE_MEANING[(n1, v1)]}) and "
                                f"{n2}={v2} ({VALUE_MEANING[(n2, v2)]})", alt=alt))
        return out

    def _predicts(self, cand: "_Candidate", ev: Evaluation, conv: Optional[Convention] = None) -> bool:
        """Does candidate explanation ``cand`` reproduce the function's values on ``ev``?"""
        conv = conv or self.convention
        if cand.alt is not None:
            return self.agrees(ev, self.expected(ev.case, cand.alt))
        if self._bug_values(cand.model, ev, conv) and self._model_matches(cand.model, ev, conv) is not None:
            return True
        return self.agrees(ev, self.expected(ev.case, conv))

    def _verification(self, fam_id: str) -> List[Evaluation]:
        """Further inputs (same family first), run once per session and kept."""
        key = fam_id or "golden"
        if key not in self._verify_cache:
            caps = self.adapter.capabilities(self.protocol_k)
            cases: List[Case] = []
            for fam in FAMILIES:
                if family_skip_reason(fam, caps) is None:
                    cases.extend(sample_cases(fam, caps, 8 if fam.id == fam_id else 2, seed=1))
            evs = []
            for c in cases:
                e = self.run_case(c)
                if e.skipped is None and e.all_read and not self.expected(c).error:
                    evs.append(e)
            self._verify_cache[key] = evs
        return self._verify_cache[key]

    def _verify(self, cands: List["_Candidate"], fam_id: str) -> List["_Candidate"]:
        """Keep the candidates that best reproduce the function on further inputs.

        Score: how many further *deviating* inputs the candidate reproduces, minus how many
        conforming ones it would break.  A candidate that reproduces none of several further
        deviations is a coincidence of the small input and is dropped.
        """
        if not cands:
            return cands
        evs = self._verification(fam_id)
        deviating = [e for e in evs if not self.agrees(e, self.expected(e.case))]
        if not deviating:
            return cands
        conforming = [e for e in evs if e not in deviating]
        for cand in cands:
            cand.verified = sum(self._predicts(cand, e) for e in deviating)
            cand.score = cand.verified - sum(not self._predicts(cand, e) for e in conforming)
        best = max(c.score for c in cands)
        return [c for c in cands if c.score == best and c.verified > 0]

    def _dims(self, case: Case) -> List[str]:
        dims = ["ties", "ap_rule"]
        if case.k is not None:
            dims.append("ap_at_k")
        if not self.adapter.per_query:
            dims.append("empty")
        return dims

    def _bug_values(self, model: BugModel, ev: Evaluation, conv: Convention):
        called_without_k = any(c.without_k for c in ev.calls)
        k = ev.case.k
        if model.id == "divided-by-k" and k is None and ev.calls and ev.calls[0].k_passed is not None:
            k = ev.calls[0].k_passed  # topk = N passed for the whole gallery: divided by N
        return bug_values(model, ev.case, conv, k, self.cache, self.adapter.per_query, called_without_k)

    def _model_matches(self, model: BugModel, ev: Evaluation, conv: Convention) -> Optional[Dict[str, str]]:
        """The filled-in details when bug ``model`` reproduces the user's value, else None."""
        user = self.user_value(ev)
        if user is None:
            return None
        for value, details in self._bug_values(model, ev, conv):
            if self.adapter.per_query:
                if value is None or not any(u is not None for u in user):
                    continue
                if all(u is None or close(u, v, self.atol, self.rtol) for u, v in zip(user, value)):
                    if not all(u is None or close(u, v, self.atol, self.rtol)
                               for u, v in zip(user, self.expected(ev.case, conv).ap or [])):
                        return details
                continue
            if isinstance(value, float) and math.isinf(value):
                if math.isinf(user):
                    return details
                continue
            if value is not None and close(user, value, self.atol, self.rtol):
                return details
        return None

    # -- checks ------------------------------------------------------------------------
    def _selected(self, check_id: str) -> bool:
        return not self.only or any(fnmatch.fnmatch(check_id, pat) for pat in self.only)

    def _is_known(self, check_id: str, clauses: Sequence[str]) -> bool:
        for pat in self.known:
            if fnmatch.fnmatch(check_id, pat) or any(pat == c or pat in c for c in clauses):
                return True
        return False

    def _deviation(self, check_id: str, ev: Evaluation, fam_clause: str) -> Deviation:
        clauses, why = self.explain(ev, fam_clause, "" if check_id.startswith("golden/") else check_id)
        # the first call that deviates, for the snippet
        idx = 0
        if self.adapter.per_query:
            bad_q = {m.query for m in ev.mismatches}
            for i, c in enumerate(ev.calls):
                if c.query in bad_q:
                    idx = i
                    break
        call = ev.calls[min(idx, len(ev.calls) - 1)]
        outcome = ev.outcomes[min(idx, len(ev.outcomes) - 1)]
        m0 = ev.mismatches[0]
        user_text = fmt_float(m0.user) if m0.kind in ("value", "non-finite") else f"{m0.kind}: {m0.user}"
        exp = ev.expected
        if self.adapter.per_query:
            ref_val = exp.ap[call.query] if exp is not None and exp.ap is not None else None
        else:
            ref_val = exp.map if exp is not None else None
        snippet = make_snippet(self.func, self.target, self.adapter, call, self.arrays, self.protocol,
                               {k: v for k, v in self.overrides.items() if v is not None}, self.convention,
                               user_text.replace("\n", " ")[:120], fmt_exact(ref_val))
        case_text = ev.case.describe() + (f"; {call.note}" if call.note else "")
        return Deviation(check_id, clauses, why, ev.mismatches, case_text, snippet, outcome.stdout,
                         outcome.traceback, size=ev.case.n_queries * ev.case.n_gallery)

    def _aborted(self) -> Optional[str]:
        if self.runner is not None and self.runner.hangs >= MAX_HANGS:
            return f"not run: the function hung {self.runner.hangs} times (time limit {self.timeout:g} s)"
        if self.runner is not None and self.runner.calls >= FAILED_CALLS_LIMIT and self._success_count == 0:
            return f"not run: none of the first {self.runner.calls} calls returned (wrong adapter or --arrays?)"
        return None

    def check_golden(self, case: Case) -> CheckResult:
        start = time.perf_counter()
        cid = case.name
        clause_text = ", ".join((case.golden or {}).get("clauses", [])) or "CONVENTIONS §10 golden values"
        title = (case.golden or {}).get("source", "") or "seed example"
        ev = self.evaluate(case)
        res = CheckResult(cid, title, clause_text, PASS, examples=1)
        if ev.skipped is not None:
            res.status, res.reason = SKIP, ev.skipped
        elif ev.mismatches:
            res.status = DEVIATE
            res.deviation = self._deviation(cid, ev, "CONVENTIONS §10 golden values")
        res.seconds = time.perf_counter() - start
        return res

    def check_family(self, fam: Family) -> CheckResult:
        from hypothesis import HealthCheck, Phase, find, settings
        from hypothesis.errors import NoSuchExample, Unsatisfiable

        start = time.perf_counter()
        res = CheckResult(fam.id, fam.purpose, fam.clause, PASS)
        caps = self.adapter.capabilities(self.protocol_k)
        reason = family_skip_reason(fam, caps)
        if reason is None and self.protocol == "oxford" and self.custom_reference is None:
            reason = "the Oxford reference (retrieval_conformance.reference.landmark) is not installed"
        if reason is not None:
            res.status, res.reason = SKIP, reason
            return res
        state: Dict[str, Any] = {"n": 0, "expressed": 0, "skip": None, "hang": None, "found": 0, "best": None}

        seen: Dict[Tuple, bool] = {}

        def deviates(case: Case) -> bool:
            key = _fingerprint(case)
            if key in seen:  # hypothesis replays inputs: answer consistently
                return seen[key]
            if state["hang"] is not None or self._aborted():
                return False
            if state["found"] and state["n"] >= state["found"] + self.shrink_budget:
                seen[key] = False  # shrink budget spent: keep the smallest input found so far
                return False
            ev = self.evaluate(case)
            state["n"] += 1
            result = False
            if ev.skipped is not None:
                state["skip"] = ev.skipped
            else:
                state["expressed"] += 1
                if ev.hung:
                    state["hang"] = ev  # not shrunk: every further try could cost a time limit
                elif ev.deviates:
                    result = True
                    if not state["found"]:
                        state["found"] = state["n"]
                    if state["best"] is None or _size(case) < _size(state["best"]):
                        state["best"] = case
            seen[key] = result
            return result

        cfg = settings(max_examples=self.max_examples, derandomize=self.derandomize, database=None,
                       deadline=None, suppress_health_check=list(HealthCheck),
                       phases=(Phase.generate, Phase.shrink), report_multiple_bugs=False)
        found = None
        try:
            found = find(hypothesis_strategy(fam, caps), deviates, settings=cfg)
        except (NoSuchExample, Unsatisfiable):
            found = None
        except Exception as exc:  # hypothesis gave up (e.g. a flaky function): keep the smallest seen
            found = state["best"]
            res.note = f"hypothesis stopped early ({type(exc).__name__})"
        if found is not None and state["best"] is not None and _size(state["best"]) < _size(found):
            found = state["best"]
        res.examples = state["n"]
        if state["hang"] is not None:
            ev = state["hang"]
            ev.mismatches = ev.mismatches or self.compare(ev, ev.expected or Expected())
            res.status = DEVIATE
            res.deviation = self._deviation(fam.id, ev, fam.clause)
        elif found is not None:
            ev = self.evaluate(found)
            if not ev.deviates:  # flaky function: keep what we have
                res.note = "the smallest input did not deviate again when re-run (non-deterministic function?)"
                ev = self.evaluate(found)
            if ev.deviates:
                res.status = DEVIATE
                res.deviation = self._deviation(fam.id, ev, fam.clause)
        elif state["expressed"] == 0:
            res.status = SKIP
            res.reason = f"no generated input could be expressed: {state['skip']}"
        res.seconds = time.perf_counter() - start
        return res

    def plan(self) -> List[Tuple[str, Callable[[], CheckResult]]]:
        """Every check id (golden cases first, then the generated families) with its runner."""
        plan: List[Tuple[str, Callable[[], CheckResult]]] = []
        for case in golden_cases():
            plan.append((case.name, lambda c=case: self.check_golden(c)))
        for fam in FAMILIES:
            plan.append((fam.id, lambda f=fam: self.check_family(f)))
        return [(cid, run) for cid, run in plan if self._selected(cid)]

    def check_ids(self) -> List[str]:
        return [cid for cid, _ in self.plan()]

    def run_one(self, cid: str, run: Optional[Callable[[], CheckResult]] = None) -> CheckResult:
        """Run one check by id, with the known-deviations file applied."""
        if run is None:
            run = dict(self.plan())[cid]
        aborted = self._aborted()
        if aborted:
            return CheckResult(cid, "", "", SKIP, reason=aborted)
        res = run()
        if res.status == DEVIATE and self._is_known(cid, res.deviation.clauses if res.deviation else []):
            res.status = KNOWN
            res.reason = "; ".join(res.deviation.clauses)
        elif res.status == PASS and any(fnmatch.fnmatch(cid, p) for p in self.known):
            res.note = "listed as a known deviation but conforms now: remove it from the file"
        return res

    def check(self) -> Report:
        """Run every selected check; see :class:`~.report.Report` for the result."""
        report = Report(self.target, self.adapter.name, self.protocol, self.convention_text, self.arrays)
        for cid, run in self.plan():
            report.results.append(self.run_one(cid, run))
        report.arrays = self.arrays
        report.notes.extend(self.notes)
        runner = self.runner
        if runner is not None and runner.calls and not self._any_success(report):
            first = next((r.deviation for r in report.results if r.deviation), None)
            err = first.mismatches[0].text() if first and first.mismatches else "no call succeeded"
            report.usage_error = (f"the function could not be called successfully on any input with adapter "
                                  f"{self.adapter.name!r} ({err}); check the adapter and --arrays")
        elif runner is None and not any(r.status != SKIP for r in report.results):
            report.notes.append("no check could run with this adapter and protocol")
        return report

    def _any_success(self, report: Report) -> bool:
        return self._success_count > 0

    # -- identify ----------------------------------------------------------------------
    def identification_cases(self, per_family: int = 5) -> List[Case]:
        caps = self.adapter.capabilities(True)
        cases = list(golden_cases())
        for fam in FAMILIES:
            if family_skip_reason(fam, caps) is None and not fam.needs_scores:
                cases.extend(sample_cases(fam, caps, per_family, seed=0))
        return cases

    def _score_shift_note(self, per_family: int) -> Optional[str]:
        """Metamorphic probe for score adapters: the same ranking with scores <= 0 must give the
        same values (torchmetrics >= 1.7.4 drops relevant items with a score <= 0)."""
        from dataclasses import replace as _replace

        caps = self.adapter.capabilities(True)
        if not caps.scores:
            return None
        changed = 0
        for case in sample_cases(next(f for f in FAMILIES if f.needs_scores), caps, per_family, seed=0):
            neg, pos = self.run_case(case), self.run_case(_replace(case, non_positive_scores=False))
            if neg.all_read and pos.all_read and neg.readings and any(
                    not close(a.values["AP"], Fraction(b.values["AP"]), self.atol, self.rtol)
                    for a, b in zip(neg.readings, pos.readings)):
                changed += 1
        if changed:
            return (f"with every score <= 0 (same ranking) its values change on {changed} of {per_family} inputs: "
                    "relevant items with a score <= 0 count as not relevant (torchmetrics >= 1.7.4, "
                    "Lightning-AI/torchmetrics#3104); CONVENTIONS §2")
        return None

    def conventions(self, any_k: bool) -> List[Convention]:
        bases = REID_PRESETS if self.adapter.name == "reid" else ("hashing",)
        ap_at_k = OPTION_VALUES["ap_at_k"] if any_k else ("hits",)
        empty = OPTION_VALUES["empty"] if not self.adapter.per_query else (self.convention.empty,)
        if not any_k:
            empty = tuple(e for e in empty if e != "skip_no_hit") or empty  # same as skip without a cut-off
        out = []
        for base in bases:
            for t, a, kk, e in itertools.product(OPTION_VALUES["ties"], OPTION_VALUES["ap_rule"], ap_at_k, empty):
                out.append(Convention(base, t, a, kk, e))
        return out

    def identify(self, per_family: int = 5) -> Identification:
        """Run the function on a fixed set of inputs and name the convention(s) it follows."""
        ident = self._identify(per_family)
        note = self._score_shift_note(per_family)
        if note:
            ident.lines.append("  also: " + note)
            ident.matched = False
        return ident

    def _identify(self, per_family: int) -> Identification:
        if self.protocol == "oxford":
            return Identification(False, ["identify: not available for the oxford adapter (one fixed convention)"])
        cases = self.identification_cases(per_family)
        evs: List[Evaluation] = []
        errored: List[Evaluation] = []
        for case in cases:
            if self._aborted():
                break
            ev = self.run_case(case)
            if ev.skipped is not None:
                continue
            if not ev.all_read:
                exp = self.expected(case)
                if not (exp.error or (exp.map is None and not self.adapter.per_query)):
                    errored.append(ev)  # raising where the protocol has no value is fine
                continue
            evs.append(ev)
        if not evs:
            first = errored[0] if errored else None
            why = ""
            if first is not None:
                bad = next(o for o, r in zip(first.outcomes, first.readings) if r is None)
                why = f": {bad.error or bad.kind}"
            return Identification(False, [f"identify: the function returned no usable value on any input{why}"])
        any_k = any(ev.case.k is not None for ev in evs)
        convs = self.conventions(any_k)
        protocol_conv = self.convention
        if self.adapter.name != "reid":
            protocol_conv = protocol_conv.with_(base="hashing")
        dims = ["ties", "ap_rule"] + (["ap_at_k"] if any_k else []) + ([] if self.adapter.per_query else ["empty"])
        score: Dict[Convention, List[bool]] = {}
        for conv in convs:
            score[conv] = [self.agrees(ev, self.expected(ev.case, conv)) for ev in evs]
        full = [c for c in convs if all(score[c])]
        n = len(evs)
        lines = [f"identify: {self.target} (adapter {self.adapter.name}), {n} inputs"
                 + (f", {len(errored)} more where it raised or returned no number" if errored else "")]
        if self.adapter.name == "reid":
            presets = REID_PRESETS
        elif self.adapter.name == "hashing-codes":
            presets = HASHING_PRESETS[:4]  # codes carry no cameras: the ReID presets cannot apply
        else:
            presets = HASHING_PRESETS
        if full:
            ranked = sorted(full, key=lambda c: (len(_preset_distance(c, presets, dims)[1]), c != protocol_conv))
            best = ranked[0]
            preset, diffs = _preset_distance(best, presets, dims)
            lines.append("  " + _describe(best, preset, diffs))
            others = [c for c in ranked[1:]]
            if others:
                alt = sorted({"; ".join(f"{d}={getattr(c, d)}" for d in dims if getattr(c, d) != getattr(best, d))
                              for c in others})
                lines.append(f"  equally consistent with these inputs: {', '.join(alt[:6])}"
                             + (" ..." if len(alt) > 6 else ""))
            if errored:
                lines.append(f"  note: {_errored_text(errored[0])}")
            return Identification(True, lines, conventions=full, preset=preset,
                                  differences={d: getattr(best, d) for d in diffs}, n_cases=n)
        # no convention explains every input: the bugs of §11 on top of the best conventions
        # the protocol and the presets first (the most useful names), then the best scorers
        preferred = [protocol_conv] + [c for c in convs if any(
            c.options() == Convention.from_protocol(p).options() for p in presets)]
        top = list(dict.fromkeys(preferred + sorted(convs, key=lambda c: -sum(score[c]))[:12]))
        for conv in top:
            for model in BUG_MODELS:
                ok = True
                details: Optional[Dict[str, str]] = None
                for ev, plain in zip(evs, score[conv]):
                    hit = self._model_matches(model, ev, conv)
                    if hit is not None and not plain:
                        details = details or hit  # the bug shows on this input
                    elif not plain:
                        ok = False
                        break
                if ok and details is not None:
                    preset, diffs = _preset_distance(conv, presets, dims)
                    generic = _Defaults(meaning=details.get("meaning", ""), divided=details.get("generic", ""))
                    what = model.what.format_map(generic)
                    lines.append("  " + _describe(conv, preset, diffs, extra=what))
                    return Identification(True, lines, conventions=[conv], preset=preset,
                                          differences={d: getattr(conv, d) for d in diffs}, bug=model.id, n_cases=n)
        # unstable ties: agrees on every input without ties, and stays within the tie extremes
        for conv in top:
            untied_ok = all(s for ev, s in zip(evs, score[conv]) if not ev.case.has_ties())
            if not untied_ok or all(score[conv]):
                continue
            if all(s or self._within_tie_range(ev, conv) for ev, s in zip(evs, score[conv])):
                preset, diffs = _preset_distance(conv, presets, [d for d in dims if d != "ties"])
                lines.append("  " + _describe(conv, preset, diffs, extra=(
                    "ties: an order no tie policy gives (it agrees on every input without ties and stays between "
                    "the optimistic and pessimistic values: an unstable sort such as np.argsort's default kind or "
                    "torch.sort)"), skip_ties=True))
                return Identification(False, lines, conventions=[conv], preset=preset,
                                      differences={"ties": "unstable"}, n_cases=n)
        best = max(top, key=lambda c: sum(score[c]))
        got = sum(score[best])
        preset, diffs = _preset_distance(best, presets, dims)
        lines.append(f"  no convention matches every input; nearest: {_describe(best, preset, diffs)} "
                     f"on {got} of {n} inputs")
        for ev, s in zip(evs, score[best]):
            if not s:
                exp = self.expected(ev.case, best)
                user = self.user_value(ev)
                ref = exp.ap if self.adapter.per_query else exp.map
                lines.append(f"  first input where it differs: {ev.case.name} ({ev.case.describe()}): yours "
                             f"{_short(user)}, {best.label(dims)} gives {_short(ref)}")
                break
        return Identification(False, lines, conventions=[best], preset=preset,
                              differences={d: getattr(best, d) for d in diffs}, n_cases=n)

    def _within_tie_range(self, ev: Evaluation, conv: Convention) -> bool:
        if self.adapter.per_query:
            user = self.user_value(ev)
            lo = self.expected(ev.case, conv.with_(ties="pessimistic")).ap
            hi = self.expected(ev.case, conv.with_(ties="optimistic")).ap
            for u, a, b in zip(user, lo or [], hi or []):
                if u is None or a is None or b is None:
                    continue
                eps = self.atol + self.rtol * abs(float(b))
                if not float(a) - eps <= u <= float(b) + eps:
                    return False
            return lo is not None and hi is not None
        user = self.user_value(ev)
        lo = self.expected(ev.case, conv.with_(ties="pessimistic")).map
        hi = self.expected(ev.case, conv.with_(ties="optimistic")).map
        if user is None or lo is None or hi is None:
            return False
        eps = self.atol + self.rtol * abs(float(hi))
        return float(lo) - eps <= user <= float(hi) + eps


# -- helpers ---------------------------------------------------------------------------------

@dataclass
class _Candidate:
    """One possible explanation of a deviation: an alternative convention or a §11 bug model."""

    clauses: List[str]
    why: str
    alt: Optional[Convention] = None
    model: Optional[BugModel] = None
    verified: int = 0
    score: int = 0


class _Defaults(dict):
    def __missing__(self, key):
        return ""


def _size(case: Case) -> Tuple:
    """Order of "smaller" inputs: fewer queries x items, then fewer items, smaller distances."""
    return (case.n_queries * case.n_gallery, case.n_gallery, case.n_queries,
            float(abs(case.distances).sum()), int(case.relevance.sum()), case.k or 0)


def _unique(items: Iterable[str]) -> List[str]:
    out: List[str] = []
    for i in items:
        if i not in out:
            out.append(i)
    return out


def _name_of(func: Callable) -> str:
    mod = getattr(func, "__module__", None) or "?"
    return f"{mod}:{getattr(func, '__qualname__', repr(func))}"


def _preset_distance(conv: Convention, presets: Sequence[str], dims: Sequence[str]) -> Tuple[str, List[str]]:
    """The nearest preset to ``conv`` and the option names in which they differ."""
    best, best_diffs = presets[0], None
    for name in presets:
        p = Convention.from_protocol(name)
        if conv.base in REID_PRESETS and p.base != conv.base:
            continue  # ReID: the junk rules (the base) must agree too
        diffs = [d for d in dims if getattr(conv, d) != getattr(p, d)]
        if best_diffs is None or len(diffs) < len(best_diffs):
            best, best_diffs = name, diffs
    return best, best_diffs or []


def _describe(conv: Convention, preset: str, diffs: List[str], extra: str = "", skip_ties: bool = False) -> str:
    parts = [f"{d}: {getattr(conv, d)} ({VALUE_MEANING[(d, getattr(conv, d))]})" for d in diffs
             if not (skip_ties and d == "ties")]
    if extra:
        parts.append(extra)
    if not parts:
        return f"matches `{preset}`"
    sep = " except: " if extra and len(parts) == 1 else " except "
    return f"matches `{preset}`{sep}" + "; ".join(parts)


def _short(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    if isinstance(value, Fraction):
        return f"{float(value):.6g}"
    if value is None:
        return "undefined"
    return fmt_float(value)


def _errored_text(ev: Evaluation) -> str:
    bad = next(o for o, r in zip(ev.outcomes, ev.readings) if r is None)
    return f"on {ev.case.name} ({ev.case.describe()}) it {bad.kind}: {(bad.error or '').splitlines()[0][:160]}"
