"""The options table: every evaluation option once, with what each entry point makes of it.

Entry points (``rc.evaluate``, ``rc.Accumulator``, ``evaluate`` on the command line, the
harness's ``check`` and its pytest plugin) take their option arguments from here: the command
lines generate their flags, choices and help from :data:`OPTIONS_TABLE`, and
``conformance/tests/test_options_table.py`` checks that every entry point accepts every option
of the table or refuses it by name (:data:`NOT_TAKEN`).  The values of a convention come from the
conventions table (:mod:`.conventions`), the presets from :mod:`.presets`, the implementations
from the registry: nothing is listed twice.

>>> [o.name for o in OPTIONS_TABLE][:4]
['protocol', 'k', 'max_rank', 'ties']
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

from retrieval_conformance.reference.contract import conventions


def _presets() -> Tuple[str, ...]:
    from retrieval_conformance.reference.contract.presets import PRESETS

    return tuple(PRESETS)


def _implementations() -> Tuple[str, ...]:
    from retrieval_conformance.reference.contract import registry

    return ("auto",) + tuple(registry.names())


@dataclass(frozen=True)
class Option:
    """One option: its keyword, how a command line reads it, and its help."""

    name: str
    summary: str
    #: the allowed values (a function, so that registered implementations and presets count)
    choices: Optional[Callable[[], Tuple[str, ...]]] = None
    #: how a command line converts the text it is given (str, int, float)
    kind: type = str
    #: the section of the specification that defines it ("§4")
    section: Optional[str] = None
    #: True for the options that override one convention of the preset (ties, ap_rule, ...)
    convention: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def values(self) -> Optional[Tuple[str, ...]]:
        return None if self.choices is None else tuple(self.choices())

    def help(self) -> str:
        """The command-line help: the summary, the values with their meanings, the clause."""
        text = self.summary
        if self.convention:
            meanings = "; ".join(f"{c.value}: {c.meaning.rstrip('.')}" for c in conventions.CONVENTIONS
                                 if c.option == self.name)
            text += f". Default: the preset's. {meanings}"
        elif self.choices is not None:
            text += f" (one of {', '.join(self.choices())})"
        if self.section is not None:
            text += f" [spec {self.section}; retrieval-conformance explain {self.name}]"
        return text.replace("%", "%%")  # argparse formats help with %


def _convention(name: str, summary: str) -> Option:
    section = conventions.convention(name, conventions.values(name)[0]).clause.split()[0]  # "§4"
    return Option(name, summary, choices=lambda: conventions.values(name), section=section, convention=True)


OPTIONS_TABLE: Tuple[Option, ...] = (
    Option("protocol", "the preset whose conventions apply", choices=_presets, section="§9"),
    Option("k", "cut-off of AP@k, P@k, R@k, nDCG@k and MRR@k: an integer, several (1,5,10,100: each "
           "reported), or 'all'; default: the preset's", section="§6"),
    Option("max_rank", "length of the CMC (default 50)", kind=int, section="§7"),
    _convention("ties", "how items at equal distance are ordered"),
    _convention("ap_rule", "how the precision-recall curve is summed into AP"),
    _convention("ap_at_k", "what AP@k divides by"),
    _convention("empty", "what a query without a relevant item counts as"),
    _convention("gain", "nDCG's gain of a relevance grade"),
    _convention("discount", "nDCG's rank discount"),
    _convention("recall", "what Recall@k means"),
    Option("radius", "Hamming radius of precision and recall within a radius", kind=float, section="§7"),
    Option("implementation", "who computes (all give the same numbers; default auto: the fastest here)",
           choices=_implementations),
    Option("device", "where torch computes: cpu, cuda, cuda:1 (with implementation torch or auto)"),
    Option("metrics", "the metrics to compute, comma-separated (map,rank1); only they and what they depend on are "
           "computed, with the bits they have among all; default: every metric. Names: Result's fields "
           "(map, precision_at_k, recall_at_k, cmc, minp, r_precision, ndcg_at_k, mrr, map_at_r, "
           "precision_at_radius, recall_at_radius), rankN, and aliases (mAP, mINP, nDCG, MRR, P@k, MAP@R, ...)"),
)

#: option name -> Option
BY_NAME: Dict[str, Option] = {o.name: o for o in OPTIONS_TABLE}

#: the options that override the preset's conventions, in the table's order
CONVENTION_OPTIONS: Tuple[str, ...] = tuple(o.name for o in OPTIONS_TABLE if o.convention)

#: entry point -> {option it does not take: why}; every other option of the table it takes
NOT_TAKEN: Dict[str, Dict[str, str]] = {
    "evaluate": {},
    "accumulator": {},
    "evaluate-cli": {},
    # the harness draws its own inputs (cut-offs, ranks, radii) and computes the reference itself
    "check": {
        "k": "the harness draws cut-offs itself (inside, at and beyond the gallery)",
        "max_rank": "the harness reads the CMC length the function returns",
        "radius": "no adapter passes a Hamming radius",
        "implementation": "the harness compares with the exact reference",
        "device": "the harness compares with the exact reference on the CPU",
        "metrics": "the harness checks every metric the function under test returns",
    },
}
NOT_TAKEN["check-cli"] = NOT_TAKEN["pytest-plugin"] = NOT_TAKEN["check"]


def taken_by(entry_point: str) -> Tuple[Option, ...]:
    """The options of the table that ``entry_point`` (a key of :data:`NOT_TAKEN`) takes."""
    return tuple(o for o in OPTIONS_TABLE if o.name not in NOT_TAKEN[entry_point])


def refusal(entry_point: str, name: str) -> str:
    """The error text for an option ``entry_point`` does not take."""
    return f"{BY_NAME[name].flag}: not an option of {entry_point} ({NOT_TAKEN[entry_point][name]})"


def add_arguments(parser, entry_point: str, defaults: Optional[Dict[str, object]] = None,
                  skip: Tuple[str, ...] = ()) -> None:
    """Add the flags of the options ``entry_point`` takes to an argparse parser (or a pytest group):
    ``--ties {stable,...}`` with the values' meanings as help; ``skip`` names flags the
    entry point declares itself (with a wider set of values, say)."""
    defaults = defaults or {}
    add = getattr(parser, "add_argument", None) or parser.addoption  # argparse, or a pytest option group
    for option in taken_by(entry_point):
        if option.name in skip:
            continue
        kwargs = {"dest": option.name, "default": defaults.get(option.name), "help": option.help()}
        if option.kind is not str:
            kwargs["type"] = option.kind
        if option.choices is not None:
            kwargs["choices"] = option.values()
        add(option.flag, **kwargs)
