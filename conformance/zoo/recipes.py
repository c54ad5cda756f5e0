"""What a zoo function is made of: a :class:`Recipe` (its adapter, protocol, behaviours and style),
and its seeded drawing from the catalogue (:mod:`.catalogue`).

A behaviour is an option value that differs from the protocol (``("option", "ties",
"reverse")``), a known bug of spec §11 by its label (``("bug", "rounded[4]")``), a field's own
option value, an exception on its own trigger, or a landmark name rule.  :func:`unwritten` lists
what the catalogue holds and the writer (:mod:`.writer`) cannot express yet.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.adapters.registry import ADAPTERS
from retrieval_conformance.conformance.harness.candidates.bugs import BUGS
from retrieval_conformance.conformance.harness.candidates.candidate import UNSTABLE
from retrieval_conformance.conformance.harness.candidates.landmark_rules import PROTOCOL_RULES
from retrieval_conformance.conformance.harness.candidates.reference_values import OPTION_VALUES
from retrieval_conformance.conformance.zoo.catalogue import (
    EXCLUSIVE_BUGS,
    FIELD_OPTIONS,
    NAME_RULES,
    RAISE_TRIGGERS,
    TEMPLATES,
    WRITABLE,
    protocol_convention,
)


@dataclass(frozen=True)
class Recipe:
    """One zoo function: the adapter it is written for, the protocol it is checked under, the
    options where it differs from that protocol, its bugs (labels; a default or ``-1`` cut-off
    parameter comes with the bugs that need one), its CMC length rule (reid), which of the
    equivalent code styles it uses, and its number in the run (its name)."""

    adapter: str
    protocol: str
    options: Tuple[Tuple[str, str], ...] = ()
    bugs: Tuple[str, ...] = ()
    cmc_length: Optional[str] = None
    style: int = 0
    index: int = 0
    #: ``(field, option, value)``: a field computed under an option value of its own
    field_options: Tuple[Tuple[str, str, str], ...] = ()
    #: the triggers of :data:`RAISE_TRIGGERS` it raises on, each its own exception type
    raises: Tuple[str, ...] = ()
    #: ``(rule, value)``: a landmark name rule (oxford adapter) where it differs from the protocol's
    name_rules: Tuple[Tuple[str, str], ...] = ()

    def rule(self, name: str) -> str:
        """The value of landmark name rule ``name`` the function follows (``junk``: ``kept`` is the
        known bug ``junk-kept``)."""
        if name == "junk" and "junk-kept" in self.bugs:
            return "kept"
        return dict(self.name_rules).get(name, PROTOCOL_RULES[self.protocol][name])

    def for_field(self, name: str) -> "Recipe":
        """The recipe of field ``name``: its own option values where it has them."""
        own = {o: v for f, o, v in self.field_options if f == name}
        if not own:
            return self
        merged = {**dict(self.options), **own}
        main = protocol_convention(self.protocol)
        options = tuple(sorted((o, v) for o, v in merged.items() if v != getattr(main, o)))
        return replace(self, options=options, field_options=())

    def option(self, name: str) -> str:
        return dict(self.options).get(name, getattr(protocol_convention(self.protocol), name))

    @property
    def bug_ids(self) -> FrozenSet[str]:
        return frozenset(b.split("[")[0] for b in self.bugs)

    def variant(self, bug_id: str) -> Optional[str]:
        """The variant of bug ``bug_id`` (``"4"`` of ``rounded[4]``), ``""`` without one, None if absent."""
        for b in self.bugs:
            if b.split("[")[0] == bug_id:
                return b[len(bug_id) + 1 : -1] if "[" in b else ""
        return None

    @property
    def behaviours(self) -> List[str]:
        """The composed behaviours, as the report and the failure message name them."""
        out = [f"{name}={value}" for name, value in self.options]
        out += [f"bug {b}" for b in self.bugs]
        if self.cmc_length is not None and self.cmc_length != "max_rank":
            out.append(f"cmc_length={self.cmc_length}")
        out += [f"{f}: {o}={v}" for f, o, v in self.field_options]
        out += [f"raises {RAISE_TRIGGERS[t][1]} on {RAISE_TRIGGERS[t][0]}" for t in self.raises]
        return out + [f"{name} rule: {value}" for name, value in self.name_rules]

    @property
    def family(self) -> str:
        """The behaviour families it composes (``ties+rounded``), for the rates per family."""
        parts = [name for name, _ in self.options] + [b.split("[")[0] for b in self.bugs]
        parts += [f"{f}:{o}" for f, o, _ in self.field_options] + [f"raises[{t}]" for t in self.raises]
        parts += [f"rule:{name}" for name, _ in self.name_rules]
        if self.cmc_length == "gallery":
            parts.append("cmc_length")
        return "+".join(sorted(parts)) or "none"


def _bug_requires(label: str) -> Tuple[str, ...]:
    bug_id, _, variant = label.partition("[")
    variant = variant.rstrip("]")
    for b in BUGS:
        if b.id == bug_id and (not b.variant or b.variant == variant):
            return b.requires
    raise KeyError(label)


def _bug_replaces(label: str) -> Tuple[str, ...]:
    bug_id = label.split("[")[0]
    return next(b.replaces for b in BUGS if b.id == bug_id)


def unwritten() -> Dict[str, List[str]]:
    """Per adapter with a template, the catalogue's option values and bugs the writer cannot express."""
    out = {}
    for adapter, can in WRITABLE.items():
        cls = ADAPTERS[adapter]
        missing = [f"{o}={v}" for o in cls.options for v in OPTION_VALUES[o] if v not in can.get(o, ())]
        labels = {b.label for b in BUGS}
        missing += [f"bug {b}" for b in sorted(labels) if b not in can["bugs"]]
        out[adapter] = missing
    return out


def _fits(adapter: str, protocol: str, options: Dict[str, str], bugs: Sequence[str], k_default: bool) -> bool:
    """Whether the composition is one function could have: each bug's conditions hold."""
    conv = protocol_convention(protocol).with_(**options)
    ids = [b.split("[")[0] for b in bugs]
    if len(set(ids)) < len(ids):
        return False
    for a, b in EXCLUSIVE_BUGS:
        if a in ids and b in ids:
            return False
    for label in bugs:
        req = _bug_requires(label)
        if "trapezoid" in req and conv.ap_rule != "trapezoid":
            return False
        if "precision_sum" in req and conv.ap_rule != "precision_sum":
            return False
        if "no-k" in req and not k_default:
            return False
        if "concrete" in req and conv.ties in ("expected", "grouped"):
            return False  # the bug is written in one order of the items: an average over orders has none
        if any(o in options for o in _bug_replaces(label)):
            return False
    if ("default-cutoff" in ids or "last-item-dropped" in ids) and not k_default:
        return False
    if k_default and not ({"default-cutoff", "last-item-dropped"} & set(ids)):
        return False
    if conv.ties == "grouped" and (conv.ap_rule != "precision_sum" or "cut-at-r" in ids):
        return False  # scikit-learn's thresholds: precision at each score, no rank to cut at or average with
    if "cut-at-r" in ids and conv.empty == "skip_no_hit":
        return False  # whether the skip looks in the top k or the top R is not the writer's to guess
    if "cut-at-r" in ids and ({"topk-ignored", "divided-by-k", "default-cutoff", "last-item-dropped"} & set(ids)):
        return False  # the writer cuts at R: the cut-off parameter, its default with it, is never read
    if "divided-by-k" in ids and ("last-item-dropped" in ids or "topk-ignored" in ids):
        return False  # which k the divisor is then is not the writer's to guess
    if "topk-ignored" in ids and ("default-cutoff" in ids or "last-item-dropped" in ids):
        return False  # a cut-off parameter the code never reads: its default is never seen
    if "default-cutoff" in ids and "last-item-dropped" in ids:
        return False  # one parameter, one default: a cut-off or -1, and the other is never seen
    if "empty-scores-one" in ids and any(b.startswith("first-query-only[first-") for b in bugs):
        return False  # the loop passes over empty queries looking for its first: the 1 is never added
    if conv.ap_at_k == "dcmh" and any(b.startswith("first-query-only[first-hit") for b in bugs):
        return False  # dcmh's terms reach past k: the writer's first hit is the first relevant item
    if conv.recall == "hit" and "first-query-only[first-hit,own]" in bugs:
        return False  # the first query with a hit has hit rate 1, as has the mean over the queries
        # with one (hashnet): the same function on every input, so the simpler description is named
    if "ndcg-ideal-from-retrieved" in ids and "topk-ignored" in ids:
        return False  # the whole list retrieved: its own ideal is every relevant item's
    recall = "recall" in (ADAPTERS[adapter].fields or {}).values()
    if recall and "topk-ignored" in ids and conv.empty == "skip_no_hit":
        return False  # the whole list holds a hit of every query counted: each scores 1 as a hit rate
        # within k does on every query it counts (a mean over no query is undefined)
    if recall and "topk-ignored" in ids and "descending" in ids:
        return False  # recall over the whole list counts every relevant item in any order
    reciprocal = "rr" in (ADAPTERS[adapter].fields or {}).values()
    if reciprocal and "default-cutoff[1000]" in bugs and "rounded[2]" in bugs:
        return False  # a reciprocal rank past 1000 is under 0.001: rounded to 2 decimals, 0 either way
    if "junk-kept" in ids and "junk-judged-by-relevance" in ids:
        return False  # two readings of one line of code
    if "mrr-counting-junk" in ids and "first-item-dropped" in ids:
        return False  # whether the item dropped first may be junk is not the writer's to guess
    if "mrr-counting-junk" in ids and conv.ties not in ("stable", "reverse"):
        return False  # a relevant/junk order inside ties is not the writer's to guess
    return True


def _field_option(name: str, value: str) -> Tuple[str, str, str]:
    field, option = name.split("|")
    return field, option, value


def _fits_fields(own: Sequence[Tuple[str, str, str]], bugs: Sequence[str], ties: str) -> bool:
    """Whether a field's own option values fit the bugs and the function's ties: a bug that
    replaces an option (a 1 for an empty query) leaves no field a value of that option of its own,
    and an unstable sort's values span every order of a field's own (no input tells them apart)."""
    if ties == UNSTABLE and any(o == "ties" for _, o, _ in own):
        return False
    return not any(o in _bug_replaces(label) for _, o, _ in own for label in bugs)


def draw(rng: random.Random, adapter: str, index: int = 0, max_behaviours: int = 3) -> Recipe:
    """A recipe for ``adapter`` composing 1 to ``max_behaviours`` behaviours (or none, one time in
    ten: the correct function), drawn from what the writer can express."""
    protocol = TEMPLATES[adapter]
    can = WRITABLE[adapter]
    proto = protocol_convention(protocol)
    pool: List[Tuple[str, str, str]] = []
    for name, values in can.items():
        if name in ("bugs", "cmc_length", "raises"):
            continue
        pool += [("option", name, v) for v in values if v != getattr(proto, name)]
    pool += [("bug", label, "") for label in can["bugs"]]
    pool += [("raise", t, "") for t in can.get("raises", ())]
    rules = NAME_RULES.get(adapter, {})
    pool += [("rule", n, v) for n, values in rules.items() for v in values if v != PROTOCOL_RULES[protocol][n]]
    fields, field_values = FIELD_OPTIONS.get(adapter, ((), {}))
    pool += [("field", f"{f}|{o}", v) for f in fields for o, values in field_values.items() for v in values]
    for _ in range(200):
        n = 0 if rng.random() < 0.1 else rng.randint(1, max_behaviours)
        chosen = rng.sample(pool, n)
        options = {name: v for kind, name, v in chosen if kind == "option"}
        if len(options) < sum(kind == "option" for kind, _, _ in chosen):
            continue  # two values of one option
        own = tuple(sorted((*name.split("|"), v) for kind, name, v in chosen if kind == "field"))
        if len({(f, o) for f, o, _ in own}) < len(own) or any(
            v == options.get(o, getattr(proto, o)) for _, o, v in own
        ):
            continue  # two values of one field's option, or a field's own value that is the function's
        bugs = tuple(sorted(name for kind, name, _ in chosen if kind == "bug"))
        if len(bugs) > 2:
            continue  # identification searches up to two known bugs
        k_default = any(b.startswith(("default-cutoff", "last-item-dropped")) for b in bugs)
        raises = tuple(sorted(name for kind, name, _ in chosen if kind == "raise"))
        name_rules = tuple(sorted((name, v) for kind, name, v in chosen if kind == "rule"))
        if len({n for n, _ in name_rules}) < len(name_rules):
            continue  # two values of one rule
        if not _fits(adapter, protocol, options, bugs, k_default) or not _fits_fields(
            own, bugs, options.get("ties", proto.ties)
        ):
            continue
        if raises and "divided-by-k" in bugs:
            continue  # the divisor k shows past the gallery, where one of them raises
        if "k-beyond" in raises and "default-cutoff" in {b.split("[")[0] for b in bugs}:
            continue  # its own default reaches past short galleries too: no one kind of input triggers it
        cmc = rng.choice(can["cmc_length"]) if "cmc_length" in can else None
        return Recipe(
            adapter,
            protocol,
            tuple(sorted(options.items())),
            bugs,
            cmc_length=cmc,
            style=rng.randint(0, 1),
            index=index,
            field_options=own,
            raises=raises,
            name_rules=name_rules,
        )
    return Recipe(adapter, protocol, index=index)


def zoo_recipes(n: int, seed: int = 0, adapters: Optional[Sequence[str]] = None, profile: str = "long") -> List[Recipe]:
    """``n`` recipes, the adapters in turn, from a seeded ``random.Random``.

    ``profile="long"`` composes 1 to 3 behaviours of the whole writable catalogue; ``"default"``
    one behaviour each (or none).
    """
    if profile not in ("long", "default"):
        raise ValueError(f"profile: expected 'long' or 'default', got {profile!r}")
    rng = random.Random(seed)
    names = list(adapters or TEMPLATES)
    out = []
    while len(out) < n:
        adapter = names[len(out) % len(names)]
        out.append(draw(rng, adapter, index=len(out), max_behaviours=3 if profile == "long" else 1))
    return out
