"""The conventions table: every option, its values, and the clause of the specification for each.

One source of truth for the vocabularies.  Each value of an option that changes a number is a
:class:`Convention` with a stable clause id (``"§4 ties=stable"``); its one-line meaning and
the codebases that use it are the clause's ``Meaning:`` and ``Used by:`` lines in
``SPECIFICATION.md``, read from there (so they are written once).  :class:`~.problem.Options`,
validation, the presets, the implementations and the tests take their lists from here.

>>> values("ap_rule")
('precision_sum', 'trapezoid')
>>> convention("ties", "expected").clause
'§4 ties=expected'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Tuple

from retrieval_conformance.reference.contract import spec

#: option -> (section of the specification, its values in the order they are documented)
OPTIONS: Dict[str, Tuple[int, Tuple[str, ...]]] = {
    "ties": (4, ("stable", "reverse", "optimistic", "pessimistic", "expected", "grouped")),
    "ap_rule": (5, ("precision_sum", "trapezoid")),
    "ap_at_k": (6, ("hits", "r", "min_k_r", "dcmh")),
    "empty": (8, ("zero", "skip", "skip_no_hit", "nan", "error")),
    "gain": (7, ("linear", "exponential")),
    "discount": (7, ("log2", "trec_eval_9.0a3")),
    "recall": (7, ("fraction", "hit")),
}

#: values that once existed and changed meaning: refused by name, with what to write instead, so
#: that an old call never gives a silently different number
RETIRED: Dict[Tuple[str, str], str] = {
    ("discount", "trec"): (
        "'trec' no longer names a discount, because trec_eval changed its rule: pass 'log2' for "
        "trec_eval 9.0.4 and later (9.0.8, 10.0, pytrec_eval: every rank r divided by log2(r + 1)) or "
        "'trec_eval_9.0a3' for the 2008 rule (ranks 1 and 2 undiscounted, then 1 / log2(r))"
    ),
}


@dataclass(frozen=True)
class Convention:
    """One value of one option, e.g. ``Convention("ties", "stable")``."""

    option: str
    value: str

    @property
    def clause(self) -> str:
        """The id of the clause that defines it (``explain`` prints it)."""
        return f"§{OPTIONS[self.option][0]} {self.option}={self.value}"

    def _line(self, label: str) -> str:
        text = spec.clauses()[self.clause]
        m = re.search(rf"^{label}:(.*(?:\n(?![A-Z][a-z ]+:|###).*)*)", text, re.MULTILINE)
        return " ".join(m.group(1).split()) if m else ""

    @property
    def meaning(self) -> str:
        """The clause's ``Meaning:`` line."""
        return self._line("Meaning")

    @property
    def used_by(self) -> str:
        """The codebases that follow it (the clause's ``Used by:`` line)."""
        return self._line("Used by")


CONVENTIONS: Tuple[Convention, ...] = tuple(
    Convention(option, value) for option, (_, vals) in OPTIONS.items() for value in vals
)


def values(option: str) -> Tuple[str, ...]:
    """The allowed values of ``option`` (``"ties"``, ``"ap_rule"``, ``"ap_at_k"``, ``"empty"``,
    ``"gain"``, ``"discount"``, ``"recall"``)."""
    return OPTIONS[option][1]


def convention(option: str, value: str) -> Convention:
    """The table entry of ``option=value``; ``KeyError`` when there is none."""
    if option not in OPTIONS or value not in OPTIONS[option][1]:
        raise KeyError(f"no convention {option}={value!r}")
    return Convention(option, value)


TIE_POLICIES = values("ties")
#: the policies that put tied items in one definite order (the others average or group them)
CONCRETE_POLICIES = TIE_POLICIES[:4]
#: the concrete orders that follow the gallery index, so a sort key needs the index
INDEX_ORDERS = ("stable", "reverse")
AP_RULES = values("ap_rule")
AP_AT_K_DENOMINATORS = values("ap_at_k")
EMPTY_POLICIES = values("empty")
#: the empty-query policies that give a number (``error`` raises instead)
EMPTY_POLICIES_WITH_A_MEAN = tuple(p for p in EMPTY_POLICIES if p != "error")
#: the gain of a relevance grade g in nDCG: g (linear) or 2**g - 1 (exponential)
GAINS = values("gain")
#: the rank discount of DCG: 1 / log2(r + 1) (also trec_eval >= 9.0.4), or trec_eval 9.0a3's
#: (1 at rank 1, then 1 / log2(r))
DISCOUNTS = values("discount")
#: what Recall@k means: H(k) / R (the IR sense) or [r_1 <= k] (the metric-learning hit rate)
RECALL_SENSES = values("recall")
