"""The round trip: write a zoo function, run ``identify`` on it, and compare the verdict with the
behaviours it was written with.

A verdict passes when its best candidate is exactly the composed behaviours (the options on the
adapter's dimensions, the set of known bugs, the CMC length rule where one is named), or when
the composed behaviours are among the candidates the report lists as equally consistent, with its
reason that no input tried tells them apart.  Anything else fails, with the function's source
and the verdict beside the truth.

The generated functions are our own code, so they run in the harness's process (isolation
``none``); :class:`~.memo.Memo` reuses a verdict where a function answered every call of an
earlier run identically.
"""

from __future__ import annotations

import linecache
import time
import types
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.adapters.registry import ADAPTERS
from retrieval_conformance.conformance.harness.entry import check, identify
from retrieval_conformance.conformance.zoo.catalogue import NAME_RULES, RAISE_TRIGGERS, WRITABLE
from retrieval_conformance.conformance.zoo.memo import Memo
from retrieval_conformance.conformance.zoo.recipes import Recipe
from retrieval_conformance.conformance.zoo.shared_cache import SharedReferenceCache
from retrieval_conformance.conformance.zoo.writer import write

#: inputs per family of ``identify`` in the zoo (the command line's default is 5)
PER_FAMILY = 2


def compile_recipe(recipe: Recipe) -> Callable:
    """The zoo function of ``recipe``, compiled into a module of its own (its source readable by
    ``inspect`` and tracebacks through ``linecache``)."""
    name, source = write(recipe)
    filename = f"<zoo {recipe.index}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = types.ModuleType(f"zoo_{recipe.index:05d}")
    module.__file__ = filename
    exec(compile(source, filename, "exec"), module.__dict__)
    return module.__dict__[name]


@dataclass(frozen=True)
class Found:
    """What ``identify`` said, kept apart from the function (a reused verdict is judged afresh
    against each recipe): its candidates' options and bugs, best first, and its text."""

    survivors: Tuple[Tuple[Tuple[str, object], ...], ...]
    composite: bool
    text: str
    #: a composite verdict's candidate per field, ``((field, candidate's options and bugs), ...)``
    fields: Tuple[Tuple[str, Tuple[Tuple[str, object], ...]], ...] = ()
    #: each exception type it raised where a value was due, with the input kind named as its trigger
    raises: Tuple[Tuple[str, Optional[str]], ...] = ()
    #: oxford adapter: per landmark name rule, the values that reproduce every edge input
    name_rules: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()


#: every dimension a candidate may be compared on
_DIMS = ("ties", "ap_rule", "ap_at_k", "empty", "gain", "discount", "recall", "cmc_length")


def _label(candidate) -> Tuple[Tuple[str, object], ...]:
    return tuple((d, candidate.option(d)) for d in _DIMS) + (("bugs", tuple(sorted(b.label for b in candidate.bugs))),)


def found(report) -> Found:
    ident = report.identification
    if ident is None:
        return Found((), False, report.text())
    survivors = tuple(_label(c) for c in ident.conventions)
    composite = ident.composite
    fields = tuple((f, _label(c)) for f, c in composite.parts) if composite is not None else ()
    raises = tuple(sorted(ident.raises, key=str))
    rules = tuple(sorted((n, tuple(v)) for n, v in ident.name_rules.items()))
    return Found(survivors, composite is not None, ident.text(), fields, raises, rules)


@dataclass(frozen=True)
class Verdict:
    """The round trip's judgement of one verdict."""

    ok: bool
    how: str  # "exact", "class" (an equivalence class stated), or why it failed
    best: str  # the best candidate's label
    text: str  # the report's identification text


def _dims(recipe: Recipe) -> List[str]:
    dims = [d for d in ADAPTERS[recipe.adapter].options if d in WRITABLE[recipe.adapter]]
    return dims + (["cmc_length"] if recipe.cmc_length is not None else [])


def truth_label(recipe: Recipe, field: Optional[str] = None) -> Dict[str, object]:
    """The options and bugs the verdict must name: the function's, or one field's own."""
    own = recipe.for_field(field) if field is not None else recipe
    out: Dict[str, object] = {d: (own.cmc_length if d == "cmc_length" else own.option(d)) for d in _dims(recipe)}
    out["bugs"] = tuple(sorted(recipe.bugs))
    return out


def _wrong_name_rules(recipe: Recipe, what: Found) -> List[str]:
    """The landmark name rules whose value the verdict leaves out (oxford adapter): each must
    survive, alone or among values the report states as equally consistent."""
    if recipe.adapter not in NAME_RULES:
        return []
    named = dict(what.name_rules)
    wrong = []
    for rule, values in NAME_RULES[recipe.adapter].items():
        survived = named.get(rule, ())
        stated = len(survived) in (1, len(values)) or "equally consistent" in what.text
        if recipe.rule(rule) not in survived or not stated:
            wrong.append(rule)
    return wrong


def _judge_fields(recipe: Recipe, what: Found, keys: List[str], best_text: str) -> Verdict:
    """A function whose fields follow conventions of their own: a composite verdict naming each
    field's convention exactly."""
    if not what.composite:
        return Verdict(False, "one convention named for fields computed differently", best_text, what.text)
    named = {f: {k: v for k, v in label if k in keys} for f, label in what.fields}
    wrong = [f for f, label in named.items() if label != truth_label(recipe, f)]
    text = "; ".join(f"{f}: " + ", ".join(f"{k}={v}" for k, v in label.items()) for f, label in named.items())
    if wrong:
        return Verdict(False, f"field(s) {', '.join(wrong)} named otherwise", text, what.text)
    return Verdict(True, "exact, field by field", text, what.text)


def judge(recipe: Recipe, what: Found) -> Verdict:
    """Compare what ``identify`` found on the zoo function of ``recipe`` with its behaviours."""
    raises = tuple(sorted(((RAISE_TRIGGERS[t][1], RAISE_TRIGGERS[t][0]) for t in recipe.raises), key=str))
    if what.raises != raises:
        named = "; ".join(f"{error} on {kind or 'no one kind of input'}" for error, kind in what.raises) or "none"
        return Verdict(False, f"exceptions named: {named}", "-", what.text)
    if not what.survivors:
        return Verdict(False, "nothing identified", "-", what.text)
    wrong_rules = _wrong_name_rules(recipe, what)
    if wrong_rules:
        return Verdict(False, f"name rule(s) {', '.join(wrong_rules)} named otherwise", "-", what.text)
    keys = [*_dims(recipe), "bugs"]
    survivors = [{k: v for k, v in cand if k in keys} for cand in what.survivors]
    best = survivors[0]
    best_text = ", ".join(f"{k}={v}" for k, v in best.items())
    if recipe.field_options:
        return _judge_fields(recipe, what, keys, best_text)
    if what.composite:
        return Verdict(False, "identified field by field", best_text, what.text)
    want = truth_label(recipe)
    if best == want:
        return Verdict(True, "exact", best_text, what.text)
    if want in survivors[1:] and "equally consistent with" in what.text and "tells them apart" in what.text:
        return Verdict(True, "class", best_text, what.text)
    return Verdict(False, "other behaviours named", best_text, what.text)


def identify_found(recipe: Recipe, func: Callable, cache: Optional[SharedReferenceCache] = None) -> Found:
    """``identify`` on ``func`` in this process, with the run's shared reference cache."""
    report = identify(
        func,
        adapter=recipe.adapter,
        protocol=recipe.protocol,
        isolation="none",
        per_family=PER_FAMILY,
        reference_cache=(cache or SharedReferenceCache()).view(),
    )
    return found(report)


def check_exit(recipe: Recipe, func: Callable, max_examples: int = 10) -> int:
    """``check``'s exit status on the zoo function (0 conforms, 1 deviates)."""
    report = check(func, adapter=recipe.adapter, protocol=recipe.protocol, isolation="none", max_examples=max_examples)
    return report.exit_code


@dataclass
class Outcome:
    recipe: Recipe
    verdict: Verdict
    source: str

    def failure_text(self) -> str:
        return (
            f"zoo function {self.recipe.index} ({self.recipe.adapter}, protocol {self.recipe.protocol}): "
            f"{self.verdict.how}\n  truth:   {self.recipe.behaviours or ['none (correct)']}\n"
            f"  verdict: {self.verdict.best}\n{self.verdict.text}\n--- source ---\n{self.source}"
        )


@dataclass
class Tally:
    outcomes: List[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    memo: Optional[Memo] = None

    @property
    def failures(self) -> List[Outcome]:
        return [o for o in self.outcomes if not o.verdict.ok]

    @property
    def rate(self) -> float:
        return 1 - len(self.failures) / max(1, len(self.outcomes))

    def by_family(self) -> Dict[str, List[int]]:
        """Per behaviour family (``ties+rounded``): [passed, run]."""
        out: Dict[str, List[int]] = {}
        for o in self.outcomes:
            row = out.setdefault(f"{o.recipe.adapter}: {o.recipe.family}", [0, 0])
            row[0] += o.verdict.ok
            row[1] += 1
        return out

    def summary(self) -> str:
        n = len(self.outcomes)
        memo = self.memo
        reuse = f"; verdicts reused {memo.hits}, computed {memo.misses}" if memo is not None else ""
        return (
            f"zoo round trip: {n - len(self.failures)}/{n} identified ({100 * self.rate:.1f}%) "
            f"in {self.seconds:.0f} s{reuse}"
        )


def round_trip(recipes: Sequence[Recipe], memo: Optional[Memo] = None, progress: Optional[Callable] = None) -> Tally:
    """``identify`` on the zoo function of every recipe, each verdict judged against its recipe."""
    tally = Tally(memo=memo)
    cache = SharedReferenceCache()
    start = time.perf_counter()
    for recipe in recipes:
        func = compile_recipe(recipe)
        if memo is not None:
            kind = ("identify", recipe.adapter, recipe.protocol)
            what = memo.run(kind, func, lambda f, r=recipe: identify_found(r, f, cache))
        else:
            what = identify_found(recipe, func, cache)
        verdict = judge(recipe, what)
        tally.outcomes.append(Outcome(recipe, verdict, write(recipe)[1]))
        if progress is not None:
            progress(tally)
    tally.seconds = time.perf_counter() - start
    return tally
