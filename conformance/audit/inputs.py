"""The user's data as the audit holds it, and one cached ``rc.evaluate`` per distinct option set.

The audit takes the inputs of ``evaluate`` (one ranking input, one relevance input, cameras,
junk).  :class:`Evaluator` evaluates them under any preset and options through the fast
implementations and keeps every result, so each distinct option set is computed once however
many tables, candidates and findings read it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Optional, Tuple

import numpy as np
from retrieval_conformance.reference.contract import progress
from retrieval_conformance.reference.contract.aggregation import aggregate

#: the ranking inputs of ``evaluate``, in the order they are looked for
RANKING_INPUTS = ("distances", "scores", "query_codes", "query_embeddings")
#: every array argument the audit accepts (the ``evaluate`` arguments that describe the data)
DATA_ARGUMENTS = (
    "distances",
    "scores",
    "query_codes",
    "db_codes",
    "query_embeddings",
    "db_embeddings",
    "metric",
    "relevance",
    "query_labels",
    "db_labels",
    "query_cams",
    "db_cams",
    "junk",
)


@dataclass
class AuditData:
    """The data of one audit: the ``evaluate`` arguments that describe it, as given."""

    arrays: Dict[str, Any]
    #: the dtype each array was given in ("float16", "bfloat16"...), before any conversion
    dtypes: Dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_arguments(cls, **given: Any) -> "AuditData":
        unknown = sorted(set(given) - set(DATA_ARGUMENTS))
        if unknown:
            raise TypeError(f"{unknown[0]}: not a data argument of audit; expected some of {list(DATA_ARGUMENTS)}")
        arrays = {key: value for key, value in given.items() if value is not None}
        kinds = [key for key in RANKING_INPUTS if key in arrays]
        if len(kinds) != 1:
            raise ValueError(
                "give exactly one ranking input: distances=, scores=, query_codes= with db_codes=, "
                f"or query_embeddings= with db_embeddings=; got {kinds or 'none'}"
            )
        dtypes = {}
        for key in ("distances", "scores", "query_codes", "db_codes", "query_embeddings", "db_embeddings"):
            if key in arrays:
                dtypes[key] = str(getattr(arrays[key], "dtype", "")).replace("torch.", "")
                arrays[key] = _as_array(key, arrays[key])
        return cls(arrays, dtypes)

    @property
    def kind(self) -> str:
        """``distances``, ``scores``, ``codes`` or ``embeddings``."""
        key = next(k for k in RANKING_INPUTS if k in self.arrays)
        return key.replace("query_", "")

    @property
    def has_cams(self) -> bool:
        return "query_cams" in self.arrays and "db_cams" in self.arrays

    @property
    def single_ids(self) -> bool:
        return "query_labels" in self.arrays and np.ndim(self.arrays["query_labels"]) == 1

    @property
    def camera_rules(self) -> bool:
        """Whether the ReID presets apply: single ids with cameras, or with an explicit junk mask
        (``evaluate`` refuses them otherwise, rather than silently removing no junk)."""
        return self.single_ids and (self.has_cams or "junk" in self.arrays)

    @property
    def multi_hot(self) -> bool:
        return "query_labels" in self.arrays and np.ndim(self.arrays["query_labels"]) == 2

    @property
    def shape(self) -> Tuple[int, int]:
        a = self.arrays
        if self.kind in ("distances", "scores"):
            return tuple(np.shape(a[self.kind]))
        side = "codes" if self.kind == "codes" else "embeddings"
        return (len(a[f"query_{side}"]), len(a[f"db_{side}"]))

    def arguments(self, cams: bool, **replaced: Any) -> Dict[str, Any]:
        """The ``evaluate`` arguments of the data (cameras only where the preset reads them)."""
        out = {key: value for key, value in self.arrays.items() if cams or key not in ("query_cams", "db_cams")}
        out.update(replaced)
        return out

    def descending(self) -> Dict[str, Any]:
        """The ranking input sorted the wrong way (spec §11 ``descending``), as ``evaluate`` arguments;
        None for embeddings (their distance cannot be reversed through an argument)."""
        a = self.arrays
        if self.kind == "distances":
            return {"scores": a["distances"]}
        if self.kind == "scores":
            return {"distances": a["scores"]}
        if self.kind == "codes":
            codes = np.asarray(a["query_codes"])
            flipped = -codes if (codes < 0).any() else 1 - codes  # the Hamming distance becomes bits - H
            return {"query_codes": flipped, "db_codes": a["db_codes"]}
        return None

    def ranking_only(self) -> Dict[str, Any]:
        """Just the ranking input (``distances``, or codes / embeddings with their metric)."""
        keys = {
            "distances": ("distances",),
            "scores": ("scores",),
            "codes": ("query_codes", "db_codes"),
            "embeddings": ("query_embeddings", "db_embeddings", "metric"),
        }[self.kind]
        return {key: self.arrays[key] for key in keys if key in self.arrays}


def _as_array(name: str, value: Any) -> Any:
    """numpy arrays and memory maps as they are; a torch tensor on the CPU as its numpy view;
    anything else through ``np.asarray`` (evaluate's own checks name what is wrong)."""
    if isinstance(value, np.ndarray):
        return value
    if type(value).__module__.startswith("torch"):
        try:
            return value.detach().cpu().numpy()
        except (TypeError, RuntimeError):  # bfloat16 has no numpy dtype
            return value.detach().cpu().float().numpy()
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name}: could not be read as an array ({exc}); pass a numpy array") from None


@dataclass
class Evaluator:
    """``rc.evaluate`` on the audit's data, one call per distinct evaluation, every result kept.

    ``run(protocol, variant, k=..., **options)`` returns a :class:`~retrieval_conformance.Result`,
    or the message of the ``ValueError`` a convention raises where it has no value (grouped ties
    with a cut-off inside a tie group).  ``variant`` names the data as a modelled bug sees it
    (``descending``, ``exact-labels``, ``no-self-matches``...); its arguments come from ``variants``.

    Two calls share one evaluation when they resolve to the same options and junk rules (two
    presets that differ only in name, or only in the empty-query policy): the per-query values
    do not depend on the empty-query policy, which is applied by aggregating them again.
    """

    data: AuditData
    implementation: str = "auto"
    max_rank: int = 50
    calls: int = 0
    variants: Dict[str, Optional[Dict[str, Any]]] = field(default_factory=dict)
    _cache: Dict[Tuple, Any] = field(default_factory=dict)

    def run(self, protocol: str, variant: str = "", k: Optional[int] = None, **options: Any):
        from retrieval_conformance.reference.contract.presets import get_preset
        from retrieval_conformance.reference.contract.protocol_options import resolve_options

        resolved = resolve_options(protocol, k=k, max_rank=self.max_rank, **options)  # named errors
        junk = get_preset(protocol).junk
        key = (junk, variant, replace(resolved, empty="zero"))
        if key not in self._cache:
            self._cache[key] = self._evaluate(protocol, variant, replace(resolved, empty="zero"))
        base = self._cache[key]
        if isinstance(base, str) or resolved.empty == "zero":
            return base
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no query counted: every mean is NaN, shown as "-"
            return aggregate(base.per_query, resolved, protocol, base.implementation, n_gallery=self.data.shape[1])

    def _evaluate(self, protocol: str, variant: str, options):
        import retrieval_conformance as rc
        from retrieval_conformance.reference.contract.presets import get_preset

        cams = "same_id_cam" in get_preset(protocol).junk
        replaced = self.variants.get(variant) or {}
        arguments = self.data.arguments(cams, **replaced)
        if variant == "descending":  # the reversed ranking input replaces the given one
            for name in RANKING_INPUTS + ("db_codes", "db_embeddings"):
                if name not in replaced:
                    arguments.pop(name, None)
        if "relevance" in replaced:
            arguments.pop("query_labels", None), arguments.pop("db_labels", None)
        self.calls += 1
        progress.tick()  # shown by the command line on a terminal
        quiet = self.calls > 1  # a warning about the data (low precision...) is given once, not per evaluation
        named = {
            name: getattr(options, name)
            for name in ("ties", "ap_rule", "ap_at_k", "empty", "radius", "gain", "recall", "discount")
        }
        try:
            with warnings.catch_warnings():
                if quiet:
                    warnings.simplefilter("ignore")
                return rc.evaluate(
                    **arguments,
                    protocol=protocol,
                    k=options.k,
                    max_rank=options.max_rank,
                    implementation=self.implementation,
                    **named,
                )
        except ValueError as exc:
            if "tie group" not in str(exc):
                raise
            return str(exc)
