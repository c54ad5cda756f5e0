"""The options table: every evaluation option once, with what each entry point makes of it.

Entry points (``rc.evaluate``, ``rc.Accumulator``, ``evaluate`` on the command line, the
harness's ``check`` and its pytest plugin) take their option arguments from here: the command
lines and the pytest plugin generate their flags, choices and help from :data:`OPTIONS_TABLE`,
and the Python entry points' docstrings their option entries (:func:`documented` fills an
``{options}`` slot).  Their signatures keep explicit keyword parameters, which IDEs, ``help()``
and mypy read from the source; ``conformance/tests/test_options_table.py`` checks them, the
docstrings and each ``--help`` against the table: every entry point takes every option of the
table or refuses it by name (:data:`NOT_TAKEN`).  The values of a convention come from the
conventions table (:mod:`.conventions`), the presets from :mod:`.presets`, the implementations
from the registry: nothing is listed twice.

>>> [o.name for o in OPTIONS_TABLE][:4]
['protocol', 'k', 'max_rank', 'ties']
"""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from retrieval_conformance.reference.contract import command_line, conventions


def _presets() -> Tuple[str, ...]:
    from retrieval_conformance.reference.contract.presets import PRESETS

    return tuple(PRESETS)


def _implementations() -> Tuple[str, ...]:
    from retrieval_conformance.reference.contract import registry

    return ("auto",) + tuple(registry.names())


def _built_in_implementations() -> Tuple[str, ...]:
    from retrieval_conformance.reference.contract import registry

    return ("auto",) + registry.BUILT_IN


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
    #: the numpydoc type of the Python parameter where the values are not a fixed set ("float, optional")
    python_type: Optional[str] = None
    #: the docstrings' summary where the command line's reads differently (``k="1,5"`` is ``k=(1, 5)``)
    python_summary: Optional[str] = None
    #: the values docstrings list, where not every allowed one (the built-in implementations, not
    #: those registered by whatever else is installed where the docs are built)
    documented_choices: Optional[Callable[[], Tuple[str, ...]]] = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def values(self) -> Optional[Tuple[str, ...]]:
        return None if self.choices is None else tuple(self.choices())

    def help(self) -> str:
        """The command-line help: the summary, the values with their meanings, the clause."""
        text = self.summary
        if self.convention:
            meanings = "; ".join(
                f"{c.value}: {c.meaning.rstrip('.')}" for c in conventions.CONVENTIONS if c.option == self.name
            )
            text += f". Default: the preset's. {meanings}"
        elif self.choices is not None:
            text += f" (one of {', '.join(self.choices())})"
        if self.section is not None:
            text += f" [spec {self.section}; retrieval-conformance explain {self.name}]"
        return text.replace("%", "%%")  # argparse formats help with %

    def documented_values(self) -> Optional[Tuple[str, ...]]:
        choices = self.documented_choices or self.choices
        return None if choices is None else tuple(choices())

    def parameter_doc(self, default: Any = inspect.Parameter.empty, detail: str = "", width: int = 96) -> str:
        """The numpydoc entry of the Python parameter: its type and default, the summary, every value
        with its meaning, the clause, then ``detail`` (what one entry point adds)."""
        values = self.documented_values()
        kind = "{" + ", ".join(f'"{v}"' for v in values) + "}" if values else (self.python_type or self.kind.__name__)
        if default is None and "optional" not in kind:
            kind += ", optional"
        elif isinstance(default, (str, int, float)) and not isinstance(default, bool):
            kind += f", default {default!r}".replace("'", '"')
        summary = self.python_summary or self.summary
        text = (summary if summary[1:2].isupper() else summary[0].upper() + summary[1:]) + "."  # nDCG stays
        if self.convention:
            text += " Default: the preset's. " + " ".join(
                f"``{c.value}``: {c.meaning.rstrip('.')}." for c in conventions.CONVENTIONS if c.option == self.name
            )
        if self.section is not None:
            text += f" Spec {self.section} (``retrieval-conformance\0explain\0{self.name}``)."  # \0: kept on one line
        if detail:
            text += " " + " ".join(detail.split())
        body = textwrap.fill(
            text,
            width - 4,
            initial_indent="    ",
            subsequent_indent="    ",
            break_long_words=False,
            break_on_hyphens=False,
        ).replace("\0", " ")
        return f"{self.name} : {kind}\n{body}"


def _convention(name: str, summary: str) -> Option:
    section = conventions.convention(name, conventions.values(name)[0]).clause.split()[0]  # "§4"
    return Option(name, summary, choices=lambda: conventions.values(name), section=section, convention=True)


OPTIONS_TABLE: Tuple[Option, ...] = (
    Option("protocol", "the preset whose conventions apply", choices=_presets, section="§9"),
    Option(
        "k",
        "cut-off of AP@k, P@k, R@k, nDCG@k and MRR@k: an integer, several (1,5,10,100: each "
        "reported), or 'all'; default: the preset's",
        section="§6",
        python_type="int or None",
        python_summary="cut-off of AP@k, P@k, R@k, nDCG@k and MRR@k: an int >= 1, or None for the whole "
        "gallery; default: the preset's",
    ),
    Option("max_rank", "length of the CMC (default 50)", kind=int, section="§7", python_summary="length of the CMC"),
    _convention("ties", "how items at equal distance are ordered"),
    _convention("ap_rule", "how the precision-recall curve is summed into AP"),
    _convention("ap_at_k", "what AP@k divides by"),
    _convention("empty", "what a query without a relevant item counts as"),
    _convention("gain", "nDCG's gain of a relevance grade"),
    _convention("discount", "nDCG's rank discount"),
    _convention("recall", "what Recall@k means"),
    Option(
        "radius",
        "Hamming radius of precision and recall within a radius",
        kind=float,
        section="§7",
        python_type="float, optional",
    ),
    Option(
        "implementation",
        "who computes (all give the same numbers; default auto: the fastest here)",
        choices=_implementations,
        documented_choices=_built_in_implementations,
    ),
    Option(
        "device",
        "where torch computes: cpu, cuda, cuda:1 (with implementation torch or auto)",
        python_type="str or torch.device, optional",
    ),
    Option(
        "metrics",
        "the metrics to compute, comma-separated (map,rank1); only they and what they depend on are "
        "computed, with the bits they have among all; default: every metric. Names: Result's fields "
        "(map, precision_at_k, recall_at_k, cmc, minp, r_precision, ndcg_at_k, mrr, map_at_r, "
        "precision_at_radius, recall_at_radius), rankN, aliases (mAP, mINP, nDCG, MRR, P@k, MAP@R, ...), and "
        "trec_eval's and ir_measures' names (P_10, P@10, nDCG@10, recip_rank; with --run: map, bpref, Judged@10, ...)",
        python_type="list of str or str, optional",
        python_summary="the metrics to compute: Result fields (``map``, ``cmc``, ``minp``, ...), their aliases "
        "(``mAP``, ``mINP``, ``nDCG``, ...), ``rankN``, or trec_eval's and ir_measures' names at the cut-off ``k`` "
        "(``P_10``, ``P@10``, ``nDCG@10``), as a list or one comma-separated string; only they and "
        "what they depend on are computed, each with the bits it has among all, and reading another raises "
        "``NotComputedError`` naming it.  Default None: every metric the protocol reports",
    ),
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


def add_arguments(
    parser,
    entry_point: str,
    defaults: Optional[Dict[str, object]] = None,
    skip: Tuple[str, ...] = (),
    wider: Optional[Dict[str, Tuple[Tuple[str, ...], str]]] = None,
) -> None:
    """Add the flags of the options ``entry_point`` takes to an argparse parser (or a pytest group):
    ``--ties {stable,...}`` with the values' meanings as help; ``skip`` names flags the
    entry point declares itself; ``wider``: option name -> (the values it takes beyond the
    table's, the help that says when), such as the landmark presets of the harness's oxford adapter."""
    defaults, wider = defaults or {}, wider or {}
    add = getattr(parser, "add_argument", None) or parser.addoption  # argparse, or a pytest option group
    for option in taken_by(entry_point):
        if option.name in skip:
            continue
        extra, note = wider.get(option.name, ((), ""))
        kwargs = {
            "dest": option.name,
            "default": defaults.get(option.name),
            "help": option.help() + (f"; {note}" if note else ""),
        }
        if option.kind is not str:  # an int through the one reading of an integer option (no 1_0)
            kwargs["type"] = command_line.integer if option.kind is int else option.kind
        values = option.values()
        if values is not None:
            kwargs["choices"] = values + tuple(v for v in extra if v not in values)
        add(option.flag, **kwargs)


#: where a docstring takes the generated entries of its options
SLOT = "{options}"


def options_doc(
    entry_point: str,
    defaults: Optional[Dict[str, Any]] = None,
    details: Optional[Dict[str, str]] = None,
    indent: str = "",
) -> str:
    """The numpydoc entries (``name : type``, indented text) of every option ``entry_point`` takes,
    in the table's order, each with its default from ``defaults`` and the text ``details`` adds."""
    defaults, details = defaults or {}, details or {}
    entries = [
        o.parameter_doc(defaults.get(o.name, inspect.Parameter.empty), details.get(o.name, ""))
        for o in taken_by(entry_point)
    ]
    return textwrap.indent("\n".join(entries), indent).lstrip()


def documented(entry_point: str, **details: str) -> Callable:
    """Decorator: fill the ``{options}`` slot of a function's (or a class's) numpydoc "Parameters"
    section with :func:`options_doc`, the defaults read from its signature (a class's ``__init__``);
    ``details``: option name -> what this entry point says beyond the table (its own limits)."""

    def fill(obj):
        doc = obj.__doc__
        if doc is None:  # python -OO drops docstrings
            return obj
        if SLOT not in doc:
            raise ValueError(f"{obj.__qualname__}: its docstring has no {SLOT} slot for the options of the table")
        unknown = sorted(set(details) - {o.name for o in taken_by(entry_point)})
        if unknown:
            raise ValueError(f"{obj.__qualname__}: details given for options it does not take: {unknown}")
        signature = inspect.signature(obj.__init__ if isinstance(obj, type) else obj)
        defaults = {name: p.default for name, p in signature.parameters.items()}
        line = next(text for text in doc.splitlines() if SLOT in text)
        indent = line[: len(line) - len(line.lstrip())]
        obj.__doc__ = doc.replace(SLOT, options_doc(entry_point, defaults, details, indent))
        return obj

    return fill
