"""The zoo's catalogue: which adapters have a template, and per adapter the option values, known
bugs, per-field options, exceptions and landmark name rules the writer can express.

The options and their values come from the conventions table (through the harness's
``OPTION_VALUES``) and the bugs from the harness's ``BUGS``; :data:`WRITABLE` says which of them the
writer can express in lab-style code, so that a value or bug added to the catalogue shows up in
:func:`~.recipes.unwritten` until the writer learns it.
"""

from __future__ import annotations

from typing import Dict, Tuple

from retrieval_conformance.conformance.harness.candidates.candidate import UNSTABLE
from retrieval_conformance.conformance.harness.candidates.landmark_rules import BEHAVIOURS
from retrieval_conformance.conformance.harness.candidates.reference_values import (
    LANDMARK_CONVENTIONS,
    OPTION_VALUES,
    Convention,
)
from retrieval_conformance.conformance.harness.engine.findings import INPUT_KINDS

#: the adapters the writer has a lab-style template for, with the protocol each is checked under
TEMPLATES: Dict[str, str] = {
    "hashing-codes": "hashing",
    "distances-relevance": "hashing",
    "recall-at-k": "hashing",
    "mrr": "hashing",
    "reid": "reid",
    "sklearn": "hashing",
    "torchmetrics": "hashing",
    "sklearn-ndcg": "sklearn-ndcg",
    "pml": "pml",
    "oxford": "oxford",
}


def protocol_convention(protocol: str) -> Convention:
    """The convention a template's protocol names: a preset, or a landmark protocol's."""
    if protocol in LANDMARK_CONVENTIONS:
        return LANDMARK_CONVENTIONS[protocol]
    return Convention.from_protocol(protocol)


def _input_kind(start: str) -> str:
    """The harness's name of the input kind that begins with ``start`` (one source of the words)."""
    return next(name for name, _ in INPUT_KINDS if name.startswith(start))


#: the exceptions a zoo function may raise on its cut-off parameter: per trigger, the input kind
#: the harness must name for it, the exception type and the condition (``{k}``: the parameter,
#: ``{n}``: the gallery's size)
RAISE_TRIGGERS: Dict[str, Tuple[str, str, str]] = {
    "k-one": (_input_kind("topk = 1 passed"), "ValueError", "{k} == 1"),
    "k-beyond": (_input_kind("a cut-off k beyond the gallery"), "IndexError", "{k} is not None and {k} > {n}"),
}
_RAISES = tuple(RAISE_TRIGGERS)

#: per template family, the option values and bug labels the writer expresses
_AP_BUGS = (
    "percent",
    "rounded[2]",
    "rounded[3]",
    "rounded[4]",
    "rounded[5]",
    "divided-by-k",
    "topk-ignored",
    "empty-scores-one",
    "descending",
    "zero-based-ranks",
    "previous-hit-trapezoid",
    "last-item-dropped",
    "cut-at-r",
    *(f"default-cutoff[{k}]" for k in (10, 20, 50, 100, 1000)),
    *(f"first-query-only[{w},{h}]" for w in ("first", "first-relevant", "first-hit") for h in ("divided", "own")),
)
_RANK_BUGS = (
    "percent",
    "rounded[2]",
    "rounded[3]",
    "rounded[4]",
    "rounded[5]",
    "topk-ignored",
    "empty-scores-one",
    "descending",
    *(f"default-cutoff[{k}]" for k in (10, 20, 50, 100, 1000)),
    *(f"first-query-only[{w},{h}]" for w in ("first", "first-relevant", "first-hit") for h in ("divided", "own")),
)
#: one query's AP from labels and scores (sklearn, torchmetrics): the bugs of its rank terms and number
_ONE_QUERY_BUGS = (
    "percent",
    "rounded[2]",
    "rounded[3]",
    "rounded[4]",
    "rounded[5]",
    "descending",
    "zero-based-ranks",
    "previous-hit-trapezoid",
    "cut-at-r",
)
_CONCRETE_TIES = ("stable", "reverse", "optimistic", "pessimistic")
#: the bugs of a mean over queries of a rank metric whose code the zoo writes without a cut-off
_MEAN_BUGS = ("percent", "rounded[2]", "rounded[3]", "rounded[4]", "rounded[5]", "empty-scores-one", "descending")
#: numpy's default sort as well: the harness's "unstable" (reid's three fields leave it to a test
#: of its own: its identification takes about 25 s a function)
_WRITTEN_TIES = _CONCRETE_TIES + (UNSTABLE,)
WRITABLE: Dict[str, Dict[str, Tuple[str, ...]]] = {
    "hashing-codes": {
        "raises": _RAISES,
        "ties": _WRITTEN_TIES,
        "ap_rule": OPTION_VALUES["ap_rule"],
        "ap_at_k": OPTION_VALUES["ap_at_k"],
        "empty": ("zero", "skip", "skip_no_hit"),
        "bugs": _AP_BUGS + ("exact-label-match",),
    },
    "distances-relevance": {
        "raises": _RAISES,
        "ties": _WRITTEN_TIES,
        "ap_rule": OPTION_VALUES["ap_rule"],
        "ap_at_k": OPTION_VALUES["ap_at_k"],
        "empty": ("zero", "skip", "skip_no_hit"),
        "bugs": _AP_BUGS,
    },
    "recall-at-k": {
        "raises": _RAISES,
        "ties": _WRITTEN_TIES,
        "empty": ("zero", "skip", "skip_no_hit"),
        "recall": OPTION_VALUES["recall"],
        "bugs": _RANK_BUGS + ("first-item-dropped",),
    },
    "mrr": {
        "raises": _RAISES,
        "ties": _WRITTEN_TIES,
        "empty": ("zero", "skip", "skip_no_hit"),
        "bugs": _RANK_BUGS + ("mrr-counting-junk", "first-item-dropped"),
    },
    "sklearn": {  # one query, no cut-off, no mean: the AP@k denominators and empty policies do not apply
        "ties": _WRITTEN_TIES + ("grouped",),
        "ap_rule": OPTION_VALUES["ap_rule"],
        "bugs": _ONE_QUERY_BUGS,  # not empty-scores-one: one query's value without a relevant item is read only under
        # empty=zero, and the presets that skip such queries (gldv2, pml, reid) accept any value,
        # so no input through this signature tells a 1 there from a skip preset
    },
    "torchmetrics": {  # one query with a cut-off: the AP@k denominators apply, the empty policies do not
        "raises": _RAISES,
        "ties": _WRITTEN_TIES,
        "ap_rule": OPTION_VALUES["ap_rule"],
        "ap_at_k": OPTION_VALUES["ap_at_k"],
        "bugs": _ONE_QUERY_BUGS
        + ("topk-ignored", "divided-by-k", *(f"default-cutoff[{k}]" for k in (10, 20, 50, 100, 1000))),
    },
    "sklearn-ndcg": {  # scikit-learn's averaged ties are the protocol's; a skip without a hit is not
        # written: where a cut-off falls inside a tie group, whether the top k holds a relevant item
        # is a chance, not a code path
        "ties": _WRITTEN_TIES + ("expected",),
        "empty": ("zero", "skip"),
        "gain": OPTION_VALUES["gain"],
        "discount": OPTION_VALUES["discount"],
        "bugs": _MEAN_BUGS
        + (
            "topk-ignored",
            "ndcg-ideal-from-retrieved",
            "grades-binarised",
            *(f"default-cutoff[{k}]" for k in (10, 20, 50, 100, 1000)),
        ),
    },
    "pml": {
        "ties": _WRITTEN_TIES,
        "empty": ("zero", "skip"),
        "bugs": _MEAN_BUGS,
    },
    "oxford": {  # a ranked list of names: no tie order, cut-off or mean of the writer's to choose
        "ap_rule": OPTION_VALUES["ap_rule"],
        # junk-kept is the name rule "junk: kept" (code without a junk notion), named as the known bug
        "bugs": (
            "percent",
            "rounded[2]",
            "rounded[3]",
            "rounded[4]",
            "rounded[5]",
            "previous-hit-trapezoid",
            "junk-kept",
        ),
    },
    "reid": {
        "ties": _CONCRETE_TIES,
        "ap_rule": OPTION_VALUES["ap_rule"],
        "empty": ("zero", "skip"),
        "cmc_length": ("max_rank", "gallery"),
        "bugs": (
            "percent",
            "rounded[2]",
            "rounded[3]",
            "rounded[4]",
            "rounded[5]",
            "descending",
            "junk-kept",
            "junk-judged-by-relevance",
        ),
    },
}

#: per adapter, the fields a function may compute under a convention of their own (written with
#: their own ranking or their own empty-query rule), and the options that may differ there
FIELD_OPTIONS: Dict[str, Tuple[Tuple[str, ...], Dict[str, Tuple[str, ...]]]] = {
    "pml": (("R-precision", "P@1"), {"ties": _CONCRETE_TIES, "empty": ("zero", "skip")}),
}
#: bugs whose labels cannot be combined in one function (the order of two scalings is ambiguous)
EXCLUSIVE_BUGS = (("percent", "rounded"),)
#: per adapter, what its code does with names the protocol's usual inputs never hold (the oxford
#: adapter's landmark rules: their values, the protocol's first)
NAME_RULES: Dict[str, Dict[str, Tuple[str, ...]]] = {"oxford": {n: v for n, v in BEHAVIOURS.items() if n != "junk"}}
