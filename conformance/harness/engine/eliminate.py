"""Identification as elimination: keep the candidates that reproduce every value, then split them.

1. Every evaluated input (its calls and what the function returned) removes the candidates whose
   prediction disagrees with any returned field (:meth:`Eliminator.survivors`).  Calls that
   raised compare nothing; neither do fields a candidate leaves undefined.
2. Candidates are tried in stages (no bug, one bug, two bugs): a bug is named only when no
   simpler description survives.
3. The survivors are split: inputs on which they predict different values are searched for in a
   pool of generated inputs, run, and eliminate again (:meth:`Eliminator.split`), so that
   "matches X" means the alternatives were ruled out where they disagree.
4. What is left is reported; survivors that no tried input can tell apart are "equally
   consistent".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.candidates.candidate import UNSTABLE, Candidate, cost
from retrieval_conformance.conformance.harness.candidates.predict import Predictor, agreement
from retrieval_conformance.conformance.harness.engine.composite import Composite, field_of


def _key(value: Any) -> Any:
    """A hashable form of a prediction (dicts, lists, sets, intervals)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_key(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(value))
    return value


@dataclass
class Verdict:
    """What survived: ``survivors`` best first; ``stage`` = number of bugs they assume."""

    survivors: List[Candidate]
    stage: int
    compared: int = 0  # values compared on the inputs that ran
    inputs: int = 0  # inputs that returned something comparable
    split_inputs: int = 0  # inputs the split search added
    undecided: List[Candidate] = field(default_factory=list)  # told apart by an input not run (budget)
    #: each field under its own candidate, where no one candidate reproduces every field (then
    #: ``survivors`` are the main field's)
    composite: Optional[Composite] = None

    @property
    def best(self) -> Optional[Candidate]:
        """The main field's best candidate (every field's, unless there is a composite)."""
        return self.survivors[0] if self.survivors else None

    @property
    def described(self):
        """What reproduces every value: the composite if there is one, else the best candidate."""
        return self.composite or self.best


class Eliminator:
    def __init__(
        self,
        predictor: Predictor,
        atol: float,
        rtol: float,
        check_cmc_length: bool = True,
        fields: Optional[FrozenSet[str]] = None,
    ):
        self.predictor = predictor
        self.atol, self.rtol = atol, rtol
        self.check_cmc_length = check_cmc_length
        #: the returned fields compared (None: all): identification field by field
        self.fields = fields

    def only(self, fields: Iterable[str]) -> "Eliminator":
        """The same eliminator comparing only ``fields`` (``mAP``, ``cmc``...)."""
        return Eliminator(self.predictor, self.atol, self.rtol, self.check_cmc_length, frozenset(fields))

    def _restrict(self, pred: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
        if pred is None or self.fields is None:
            return pred
        return {key: v for key, v in pred.items() if field_of(key) in self.fields}

    def consistent(self, cand: Candidate, ev) -> Tuple[bool, int]:
        """(reproduces every returned field of ``ev``, values compared)."""
        total = 0
        for call, reading in zip(ev.calls, ev.readings):
            if reading is None:
                continue
            cmc = reading.values.get("cmc")
            pred = self.predictor.predict(cand, ev.case, call, cmc_len=len(cmc) if cmc is not None else None)
            ok, n = agreement(pred, reading, self.atol, self.rtol, self.check_cmc_length, self.fields)
            total += n
            if not ok:
                return False, total
        return True, total

    def same_predictions(self, a: Candidate, b: Candidate, evs: Sequence) -> bool:
        """Whether ``a`` and ``b`` predict the same values of the compared fields on every call of
        ``evs``: an option in which they differ cannot affect those fields on these inputs."""
        for ev in evs:
            for call, reading in zip(ev.calls, ev.readings):
                if reading is None:
                    continue
                cmc = reading.values.get("cmc")
                n = len(cmc) if cmc is not None else None
                pa = self._restrict(self.predictor.predict(a, ev.case, call, cmc_len=n))
                pb = self._restrict(self.predictor.predict(b, ev.case, call, cmc_len=n))
                if _key(pa) != _key(pb):
                    return False
        return True

    def survivors(self, cands: Iterable[Candidate], evs: Sequence) -> List[Tuple[Candidate, int]]:
        out = []
        for cand in cands:
            total = 0
            for ev in evs:
                ok, n = self.consistent(cand, ev)
                total += n
                if not ok:
                    break
            else:
                out.append((cand, total))
        return out

    def split(
        self, survivors: List[Candidate], pool: Sequence, calls_of: Callable, run: Callable, budget: int
    ) -> Tuple[List[Candidate], List[Any], List[Candidate]]:
        """Run pool inputs on which the survivors disagree until one class is left or the
        budget is spent.  Returns (survivors, evaluations added, survivors an unrun input could
        still tell apart)."""
        added = []
        undecided: List[Candidate] = []
        for case in pool:
            if len(survivors) <= 1:
                break
            calls = calls_of(case)
            if not calls:
                continue
            preds = [[self._restrict(self.predictor.predict(c, case, call)) for call in calls] for c in survivors]
            if not any(
                _distinguishable(preds[i], preds[j]) for i in range(len(preds)) for j in range(i + 1, len(preds))
            ):
                continue
            if budget <= 0:
                undecided = survivors
                break
            ev = run(case)
            budget -= 1
            if ev is None or not any(r is not None for r in ev.readings):
                continue
            added.append(ev)
            survivors = [c for c in survivors if self.consistent(c, ev)[0]]
        return survivors, added, undecided


def _distinguishable(a: List[Optional[Dict[str, Any]]], b: List[Optional[Dict[str, Any]]]) -> bool:
    """Whether some returned value could agree with one prediction and not the other: a field both
    define differently (an undefined field agrees with anything, so it tells nothing apart)."""
    for pa, pb in zip(a, b):
        if (pa is None) != (pb is None):
            return True
        if pa is None:
            continue
        for key in set(pa) & set(pb):
            x, y = pa[key], pb[key]
            if x is None or y is None:
                continue
            if key == "cmc_lengths":
                if not set(x) & set(y):
                    return True
            elif key == "cmc":
                if any(_disjoint(i, j) for i, j in zip(x, y)):
                    return True
            elif _disjoint(x, y):
                return True
    return False


def _disjoint(a, b, eps: float = 1e-9) -> bool:
    """Intervals no single value can agree with both of (a value inside both agrees with both)."""
    return float(a[1]) + eps < float(b[0]) or float(b[1]) + eps < float(a[0])


def preference(protocol: Candidate, dims: Sequence[str]) -> Callable[[Candidate], Tuple]:
    """Order of survivors: fewer bugs, a declared tie policy before "unstable", nearest the protocol,
    the commoner reading of a line of code before the rarer one (``Bug.rare``)."""

    def key(c: Candidate) -> Tuple:
        rare = sum(b.rare for b in c.bugs)
        return (cost(c), len(c.bugs) + len(c.differences(protocol, dims)), c.conv.ties == UNSTABLE, rare, c.label(dims))

    return key


def drop_dominated(survivors: List[Candidate]) -> List[Candidate]:
    """ "unstable" contains every declared tie order: where a declared tie policy reproduces every
    value, the "unstable" candidates are dropped (the declared one is the more specific claim)."""
    if any(c.conv.ties != UNSTABLE for c in survivors):
        return [c for c in survivors if c.conv.ties != UNSTABLE]
    return survivors


def exact_value(iv) -> Optional[Fraction]:
    if iv is None:
        return None
    lo, hi = iv
    return lo if lo == hi else None
