"""What a function might compute: the candidates that identification eliminates.

A :class:`Candidate` is a full description of a metric function's behaviour: a
:class:`~.reference_values.Convention` (junk rules, tie policy, AP rule, AP@k denominator, empty-query
policy), the CMC length rule, and zero or more known bugs (:mod:`.bugs`).  The tie policy may also
be ``unstable``: "some order that no declared policy gives", whose values lie between the
extreme tie orders (see :mod:`.predict`).

The harness never guesses a cause from one number: it keeps the candidates that reproduce
every field of every call, and names a cause only when it survives (:mod:`..engine.eliminate`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.candidates.bugs import Bug, bug_fits
from retrieval_conformance.conformance.harness.candidates.reference_values import (
    CLAUSE_VALUES,
    OPTION_VALUES,
    VALUE_MEANING,
    Convention,
    clause,
)

UNSTABLE = "unstable"
TIE_CANDIDATES = OPTION_VALUES["ties"] + (UNSTABLE,)
UNSTABLE_MEANING = (
    "tied items come out in an order no tie policy gives (an unstable sort: np.argsort's default "
    "kind, torch.sort); every value lies between the extreme tie orders"
)

# the CMC length rules: both are conventions of real codebases, neither is a bug
CMC_LENGTHS = ("max_rank", "gallery")
CMC_MEANING = {
    "max_rank": "a CMC of max_rank values, flat past the end of a short gallery",
    "gallery": "a CMC of min(max_rank, gallery size) values (torchreid, fast-reid and reid-strong-baseline lower "
    "max_rank to the gallery size with a printed note)",
}


#: how a report names each option searched over
OPTION_NAMES = {
    "ties": "tie policy",
    "ap_rule": "AP rule",
    "ap_at_k": "AP@k denominator",
    "empty": "empty-query policy",
    "gain": "nDCG gain",
    "discount": "nDCG discount",
    "recall": "Recall@k sense",
    "cmc_length": "CMC length",
}


def search_text(dims: Sequence[str]) -> str:
    """``tie policy x AP rule x ...``: what identification searched over, for an adapter's options."""
    names = [OPTION_NAMES[d] for d in dims]
    return " x ".join(names) + ", with up to two known bugs"


def meaning(option: str, value: str) -> str:
    if option == "ties" and value == UNSTABLE:
        return UNSTABLE_MEANING
    if option == "cmc_length":
        return CMC_MEANING[value]
    return VALUE_MEANING[(option, value)]


def option_clause(option: str, value: str) -> str:
    """The clause a report cites for ``option=value``: the conventions table's, and for the
    values a checked function can have but ``evaluate`` cannot be asked for (an unstable tie
    order, a CMC cut at the gallery, :data:`CLAUSE_VALUES`) their clauses of the specification."""
    if option == "cmc_length":
        return f"spec §7 cmc_length={value}"
    if option == "ties" and value == UNSTABLE:
        return f"spec §4 ties={UNSTABLE}"
    if (option, value) in CLAUSE_VALUES:
        return f"spec {CLAUSE_VALUES[(option, value)]}"
    return clause(option, value)


@dataclass(frozen=True)
class Candidate:
    """One full description of what a function computes."""

    conv: Convention
    cmc_length: Optional[str] = None  # None: no CMC, or either rule accepted (checking a protocol)
    bugs: Tuple[Bug, ...] = ()

    def option(self, name: str) -> str:
        return self.cmc_length if name == "cmc_length" else getattr(self.conv, name)

    def differences(self, other: "Candidate", dims: Sequence[str]) -> List[str]:
        return [
            d
            for d in dims
            if self.option(d) != other.option(d) and not (d == "cmc_length" and other.cmc_length is None)
        ]

    def label(self, dims: Sequence[str]) -> str:
        parts = [f"{d}={self.option(d)}" for d in dims if self.option(d) is not None]
        parts += [f"bug {b.label}" for b in self.bugs]
        return ", ".join(parts)


def conventions(bases: Sequence[str], values: Dict[str, Sequence[str]]) -> List[Convention]:
    """Every combination of a base and one value per option (``values``: option -> its values)."""
    names = list(values)
    return [
        Convention(b, **dict(zip(names, combo)))
        for b in bases
        for combo in itertools.product(*(values[n] for n in names))
    ]


def staged(
    convs: Sequence[Convention],
    cmc_lengths: Sequence[Optional[str]],
    bugs: Sequence[Bug],
    protocol: Convention,
    max_cost: int = 3,
    any_k: bool = True,
) -> Iterable[List[Candidate]]:
    """Candidates by what they assume (:func:`cost`): declared behaviour first, then one bug or
    "unstable" ties, then two, then three.

    Identification stops at the first stage where a candidate survives: a bug (or an order no
    policy gives) is named only when no simpler description reproduces the function.  An option
    a bug makes irrelevant (AP@k divided by k has no other denominator) stays at the protocol's
    value.  Without a cut-off passed (``any_k`` false), an AP@k denominator other than the
    protocol's only matters with a cut-off of the function's own (``default-cutoff``).
    """
    for n in range(max_cost + 1):
        stage: List[Candidate] = []
        for n_bugs in range(min(n, 2) + 1):
            unstable = n - n_bugs
            if unstable not in (0, 1):
                continue
            for combo in itertools.combinations(bugs, n_bugs):
                if len({b.id for b in combo}) < n_bugs:
                    continue  # two variants of one bug
                pinned = {d for b in combo for d in b.replaces}
                if not any_k and not any(b.id == "default-cutoff" for b in combo):
                    pinned.add("ap_at_k")
                for conv in convs:
                    if (conv.ties == UNSTABLE) != bool(unstable):
                        continue
                    if any(getattr(conv, d) != getattr(protocol, d) for d in pinned):
                        continue
                    if all(bug_fits(b, conv) for b in combo):
                        stage.extend(Candidate(conv, cl, combo) for cl in cmc_lengths)
        yield stage


def cost(c: Candidate) -> int:
    """How much a candidate assumes: one per known bug, one for an order no tie policy gives."""
    return len(c.bugs) + (c.conv.ties == UNSTABLE)
