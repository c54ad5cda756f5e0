"""What every adapter shares: the call and reading records, the errors, signature inspection,
exact readers and score conversions, and the :class:`Adapter` base class (:mod:`.average_precision` and
:mod:`.rank_metrics` have the adapters themselves).
"""

from __future__ import annotations

import inspect
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
from retrieval_conformance.conformance.harness.calling.outcome import Opaque
from retrieval_conformance.conformance.harness.candidates.candidate import CMC_LENGTHS, TIE_CANDIDATES
from retrieval_conformance.conformance.harness.candidates.reference_values import (
    LANDMARK_CONVENTIONS,
    PLAIN_BASE,
    PRESET_KINDS,
    Convention,
)
from retrieval_conformance.conformance.harness.inputs.public import Capabilities, Case


class UsageError(Exception):
    """The function cannot be used with this adapter at all (exit status 2)."""


class Skip(Exception):
    """This case cannot be expressed through the adapter; the message says why."""


class WrongType(Exception):
    """The function returned something the adapter cannot read; the message says what."""


@dataclass
class Call:
    """One call of the user's function.

    ``args``/``kwargs`` hold numpy arrays (converted to tensors in the worker with
    ``arrays='torch'``); ``names`` names the positional arguments for the snippet; ``k`` is
    the cut-off the reference uses; ``query`` is set for one-query adapters.
    """

    args: Tuple
    kwargs: Dict[str, Any]
    names: Tuple[str, ...]
    k: Optional[int]
    max_rank: int
    query: Optional[int] = None
    without_k: bool = False  # a full-gallery call that relies on the function's own default
    k_passed: Optional[int] = None  # the cut-off actually passed (the gallery size for "all")
    note: str = ""


@dataclass
class Reading:
    """Metrics read from one return value: ``{"mAP": 0.59}`` or ``{"cmc": [...], "mAP": .., "mINP": ..}``."""

    values: Dict[str, Any] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)


def positional_params(func: Callable) -> Optional[List[inspect.Parameter]]:
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    return [
        p
        for p in sig.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]


def has_varargs(func: Callable) -> bool:
    try:
        return any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return True


def read_scalar(value: Any, what: str) -> float:
    """A Python float from a number, numpy scalar, 0-d or one-element array/tensor."""
    if isinstance(value, (bool, np.bool_)):
        raise WrongType(f"{what}: expected a number, got a boolean ({value!r})")
    if isinstance(value, Opaque):  # a number that could not be read says why
        raise WrongType(f"{what}: expected a number, got {value!r}")
    try:
        if isinstance(value, numbers.Real):
            return float(value)
        if isinstance(value, np.ndarray) and value.dtype.kind in "fiu":
            if value.size == 1:
                return float(value.reshape(()))
            raise WrongType(f"{what}: expected a scalar, got an array of shape {value.shape}")
    except WrongType:
        raise
    except Exception as exc:  # a numpy scalar subclass whose __float__ raises
        raise WrongType(f"{what}: float() raised {type(exc).__name__}: {exc}") from None
    raise WrongType(f"{what}: expected a number, got {type(value).__name__} {value!r:.80}")


def dense_rank(d: np.ndarray) -> np.ndarray:
    """Per-row dense ranks (0, 1, 2, ...) of a distance matrix: same order, same ties, integers."""
    out = np.empty(d.shape, dtype=np.float64)
    for q in range(d.shape[0]):
        _, inv = np.unique(d[q], return_inverse=True)
        out[q] = inv
    return out


def positive_scores(d: np.ndarray) -> np.ndarray:
    """Similarity scores > 0 ranking exactly like distances ``d`` (larger is closer).

    Integer distances give ``max + 1 - d`` (exact); others give ``max + 1 - rank``.
    """
    if not (np.all(d == np.round(d)) and np.all(np.abs(d) < 2**24)):
        d = dense_rank(d)
    return (d.max() + 1 - d).astype(np.float32)


class Adapter:
    """Base class.  Subclasses set the class attributes and implement the methods."""

    name: str = ""
    signature: str = ""
    per_query: bool = False
    metrics_text: str = "mAP"
    forced_arrays: Optional[str] = None
    default_protocol: str = "hashing"
    #: the kinds of presets its function can be identified among (``hashing``, ``reid``, ``landmark``)
    preset_kinds: Tuple[str, ...] = ("hashing", "reid")
    #: the snippet's reference: ``rc.evaluate`` arguments for a call's input, with ``{proto}`` (the
    #: protocol and its overrides), ``{k}`` and ``{max_rank}``; and the field of the result it prints
    #: (empty: the CMC, mAP and mINP)
    reference_arguments: str = ""
    reference_field: str = ""
    #: the options its values depend on (the others stay at the protocol's values)
    options: Tuple[str, ...] = ("ties", "ap_rule", "ap_at_k", "empty")
    #: the fields it reads -> the per-query value each is the mean of (None: ``mAP``, or ``AP`` per query)
    fields: Optional[Dict[str, str]] = None
    #: the junk rules identification starts from: the presets whose junk rules its inputs express
    #: (the plain base where the caller gives the junk; the ReID presets where cameras are passed)
    junk_rule_presets: Tuple[str, ...] = (PLAIN_BASE,)
    #: its function returns a CMC curve up to ``max_rank`` and mINP beside mAP, each predicted
    reads_cmc: bool = False
    #: its function gets a ranked list, not distances: no ties to order, and no input's cut-off
    #: reaches it (a protocol that cuts the list says so through the adapter's own state)
    ranked_list: bool = False
    #: known conventions of its function give values above 1, so where a candidate reproduces
    #: them such a value is not named impossible
    exceeds_one_by_convention: bool = False
    #: why presets it cannot tell apart through its signature give the same values ("" : none)
    same_presets_note: str = ""
    #: its function is also called on the inputs real data holds outside the protocol's usual ones
    #: (names both positive and junk, names ranked twice), see ``outside.run_edges``
    outside_protocol_rules: bool = False
    #: its function gets binary codes, so the bugs of code-based evaluators apply
    codes_input: bool = False
    #: why identification does not try an option (key ``option``) or one value (``option=value``)
    #: that the general rules of :mod:`..candidates.space` do not explain (the table of docs/harness.md)
    not_searched: Dict[str, str] = {}

    @property
    def candidate_presets(self) -> Tuple[str, ...]:
        """The presets its function can be identified among (from :attr:`preset_kinds`)."""
        return tuple(name for kind in self.preset_kinds for name in PRESET_KINDS[kind])

    @property
    def tie_candidates(self) -> Tuple[str, ...]:
        """The tie policies identification tries (only ``stable`` when a ranked list is given)."""
        return ("stable",) if self.ranked_list else TIE_CANDIDATES

    @property
    def passes_max_rank(self) -> bool:
        """Whether its calls pass ``max_rank`` (else the function chooses its own CMC length)."""
        return True

    @property
    def cmc_lengths(self) -> Tuple[Optional[str], ...]:
        """The CMC length rules identification tries; ``(None,)``: no CMC, or one compared on the
        common prefix because the function chooses its own ``max_rank``."""
        return CMC_LENGTHS if self.reads_cmc and self.passes_max_rank else (None,)

    @property
    def aggregate_bugs(self) -> bool:
        """Whether the bugs of a lab's own mean over queries apply to its value (spec §11)."""
        return not self.per_query and not self.reads_cmc

    @property
    def required_topk(self) -> bool:
        """Whether its function requires a top-k that labs pass as -1 for "all" (then the harness
        asks what -1 means to it)."""
        return False

    def preset_convention(self, name: str) -> Convention:
        """The convention of preset ``name`` as seen through this adapter's inputs."""
        conv = Convention.from_protocol(name)
        return conv if conv.base in self.junk_rule_presets else conv.with_(base=PLAIN_BASE)

    def protocol_convention(self, name: str, overrides: Dict[str, Optional[str]]) -> Convention:
        """The convention of protocol ``name`` with the caller's option ``overrides`` (None: unset);
        :class:`UsageError` when this adapter cannot check that protocol."""
        if name in LANDMARK_CONVENTIONS and name != "gldv2":
            raise UsageError(
                f"--protocol {name!r} is a landmark preset: check a function "
                f"f(positives, junk, ranked_list) with --adapter oxford"
            )
        try:
            return Convention.from_protocol(name, **overrides)
        except ValueError as exc:
            raise UsageError(
                f"--protocol: {exc}; the landmark presets {list(LANDMARK_CONVENTIONS)} go with --adapter oxford"
            ) from None

    @property
    def main_field(self) -> str:
        """The field a deviation is reported on first (``mAP``, ``AP``, ``nDCG``...)."""
        if self.fields:
            return next(iter(self.fields))
        return "AP" if self.per_query else "mAP"

    @property
    def main_metric(self) -> str:
        """The per-query value its main field is the mean of (``ap``, ``ndcg``, ``rr``...)."""
        return self.fields[self.main_field] if self.fields else "ap"

    def __init__(self, func: Callable):
        self.func = func
        self.bind(func)

    def bind(self, func: Callable) -> None:
        """Check the function's signature; raise :class:`UsageError` if it cannot fit."""

    def capabilities(self, protocol_k: bool) -> Capabilities:
        raise NotImplementedError

    def calls(self, case: Case, relevance: np.ndarray, junk: np.ndarray, arrays: str) -> List[Call]:
        """The call(s) expressing ``case``; ``relevance``/``junk`` as the protocol sees them."""
        raise NotImplementedError

    def read(self, value: Any, call: Call) -> Reading:
        raise NotImplementedError

    # shared
    def reference_lines(self, call: Call, proto: str, ref_text: str) -> List[str]:
        """The snippet's lines printing the reference's value of ``call`` (``ref_text``); [] without one."""
        if not self.reference_arguments:
            return []
        arguments = self.reference_arguments.format(proto=proto, k=repr(call.k), max_rank=call.max_rank)
        ref = f"rc.evaluate({arguments}, implementation='reference')"
        if self.reference_field:
            return [f"print({ref}{self.reference_field})  # reference: {ref_text}"]
        return [f"res = {ref}", f"print(res.cmc, res.exact.map, res.exact.minp)  # reference: {ref_text}"]

    def _k_argument(self, params, index: int) -> Tuple[bool, bool]:
        """(takes_k, has_default) for the parameter at ``index``."""
        if params is None:
            return True, False
        if len(params) > index:
            return True, params[index].default is not inspect.Parameter.empty
        return has_varargs(self.func), False
