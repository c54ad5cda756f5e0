"""The candidate space of an adapter: which value of each option identification tries, and why
each other value of the conventions table is not tried.

:func:`search_values` is what :meth:`~..session.Session.candidate_space` searches (one source:
the session, the table of ``docs/harness.md`` and its test read it); :func:`status` says, for one
(adapter, option, value), ``tried``, ``tried when a cut-off k is passed``, or why the adapter's
signature cannot express it.  Every value of ``OPTIONS`` and every clause of
:data:`~.reference_values.CLAUSE_VALUES` must have one or the other (a test walks them all).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from retrieval_conformance.conformance.harness.candidates.candidate import UNSTABLE
from retrieval_conformance.conformance.harness.candidates.reference_values import (
    CLAUSE_VALUES,
    OPTION_VALUES,
    SEARCH_VALUES,
    Convention,
)
from retrieval_conformance.reference.contract.conventions import OPTIONS

TRIED = "tried"
TRIED_WITH_K = "tried when a cut-off k is passed"
TRIED_WITH_OWN_CUTOFF = "tried with a cut-off of the function's own (spec §11 default-cutoff)"
#: the measure each option changes (an adapter returning none of it does not depend on the option)
OPTION_MEASURE = {
    "ap_rule": "AP",
    "ap_at_k": "AP@k",
    "gain": "nDCG",
    "discount": "nDCG",
    "recall": "Recall@k",
}
#: why the values ``evaluate`` takes but no function's value can be compared under are not tried
EMPTY_WITHOUT_A_VALUE = {
    "nan": "every mean is NaN, which compares with no value: a NaN returned for an empty query is "
    "reported as a non-finite value instead",
    "error": "raising is no value to compare: a function raising on an empty query is reported by the "
    "raising finding instead",
}


def search_values(adapter, protocol: Convention, any_k: bool, own_cutoff: bool = False) -> Dict[str, Tuple[str, ...]]:
    """Option -> the values identification tries for ``adapter`` under ``protocol`` (an option the
    adapter's values do not depend on stays at the protocol's value).

    ``own_cutoff``: without a cut-off passed, the AP@k denominators are still tried for a function
    that cuts at its own default (:func:`~.candidate.staged` keeps them for that behaviour only)."""
    values = {name: tuple(vals) for name, vals in SEARCH_VALUES.items()}
    values["ties"] = adapter.tie_candidates
    values["ap_at_k"] = OPTION_VALUES["ap_at_k"] if any_k or own_cutoff else ("hits",)
    # skip_no_hit differs from skip only in a mean over queries with a cut-off
    values["empty"] = tuple(e for e in values["empty"] if e != "skip_no_hit" or (any_k and not adapter.per_query))
    for name in values:
        if name not in adapter.options:
            values[name] = (getattr(protocol, name),)
    return values


def _reason(adapter, option: str, value: str) -> Optional[str]:
    """Why ``option=value`` is not among what ``adapter``'s function is identified among (None: no reason known)."""
    own = adapter.not_searched.get(f"{option}={value}") or adapter.not_searched.get(option)
    if own:
        return own
    if option not in adapter.options:
        return f"changes only {OPTION_MEASURE[option]}, which the function does not return"
    if option == "empty" and value in EMPTY_WITHOUT_A_VALUE:
        return EMPTY_WITHOUT_A_VALUE[value]
    if option == "empty" and value == "skip_no_hit" and adapter.per_query:
        return "a value of one query is no mean over queries: it differs from skip only in which queries a mean counts"
    if option == "empty" and value == "skip_no_hit" and not adapter.capabilities(True).k:
        return "differs from skip only under a cut-off k, which the signature does not pass"
    if option == "ap_at_k" and not adapter.capabilities(True).k:
        return "the signature passes no cut-off k: AP@k never arises"
    if option == "ties" and adapter.ranked_list:
        return "the function gets a ranked list: no tie is left to order"
    return None


def status(adapter, protocol: Convention, option: str, value: str) -> Tuple[str, Optional[str]]:
    """(``tried``, None), (``tried when a cut-off k is passed``, None) or (``not tried``, why)."""
    if option in adapter.options:
        if value in search_values(adapter, protocol, False)[option]:
            return TRIED, None
        if adapter.capabilities(True).k and value in search_values(adapter, protocol, True)[option]:
            return TRIED_WITH_K, None
        if value in search_values(adapter, protocol, False, own_cutoff=True)[option]:
            return TRIED_WITH_OWN_CUTOFF, None
    return "not tried", _reason(adapter, option, value)


def every_value() -> List[Tuple[str, str, str]]:
    """(option, value, clause) of every value of the conventions table, the clauses identification
    searches beside them, and the tie order no policy gives."""
    out = [
        (option, value, f"§{section} {option}={value}") for option, (section, vals) in OPTIONS.items() for value in vals
    ]
    out.insert(len(OPTIONS["ties"][1]), ("ties", UNSTABLE, f"§4 ties={UNSTABLE}"))
    out += [(option, value, clause) for (option, value), clause in CLAUSE_VALUES.items()]
    return out


def space_table(adapters) -> str:
    """The Markdown table clause x adapter (``adapters``: name -> an adapter bound to a function taking
    every argument, under its default protocol): ``tried``, ``with k`` (tried when a cut-off k is
    passed), ``own cut-off`` (tried with a cut-off of the function's own) or ``no (n)``, with the
    numbered reasons below it."""
    names = list(adapters)
    reasons: List[str] = []
    lines = ["| clause | " + " | ".join(f"`{n}`" for n in names) + " |", "|---|" + "---|" * len(names)]
    for option, value, clause in every_value():
        cells = []
        for name in names:
            adapter = adapters[name]
            state, why = status(adapter, adapter.protocol_convention(adapter.default_protocol, {}), option, value)
            if why is None:
                cells.append(
                    {TRIED: "tried", TRIED_WITH_K: "with k", TRIED_WITH_OWN_CUTOFF: "own cut-off"}.get(
                        state, "**no reason**"
                    )
                )
                continue
            if why not in reasons:
                reasons.append(why)
            cells.append(f"no ({reasons.index(why) + 1})")
        lines.append(f"| `{clause}` | " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"{i}. {why}" for i, why in enumerate(reasons, 1)]
    return "\n".join(lines)
