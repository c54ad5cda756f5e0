"""retrieval-conformance: reference-conformance and regression suite for retrieval metrics.

>>> import retrieval_conformance as rc
>>> res = rc.evaluate(distances=D, query_labels=q_ids, db_labels=g_ids, protocol="reid")

The package face names what users call and loads each name's module on first use (PEP 562),
so ``import retrieval_conformance`` is cheap and importing a lower layer (for example
``retrieval_conformance.reference.contract``) loads nothing above it (ARCHITECTURE.md).
"""

# every name bound here is an attribute of the package: the machinery is private (``_Any``), and
# dir(rc) lists only the public names (__dir__ below)
from typing import Any as _Any

__version__ = "0.1.0"

# public name -> "module:attribute" it comes from
_EXPORTS: dict[str, str] = {
    "evaluate": "retrieval_conformance.dispatch:evaluate",
    "evaluate_run": "retrieval_conformance.reference.protocols.trec.evaluation:evaluate_run",
    "read_run": "retrieval_conformance.reference.readers.trec:read_run",
    "read_qrels": "retrieval_conformance.reference.readers.trec:read_qrels",
    "Accumulator": "retrieval_conformance.accumulator:Accumulator",
    "compare": "retrieval_conformance.comparison:compare",
    "Comparison": "retrieval_conformance.comparison:Comparison",
    # the harness (conformance/harness) checks a user's function against the reference
    "check_function": "retrieval_conformance.conformance.harness:check",
    "identify": "retrieval_conformance.conformance.harness:identify",
    # the audit (conformance/audit): every convention, reported numbers traced, fragility found
    "audit": "retrieval_conformance.conformance.audit:audit",
    "Audit": "retrieval_conformance.conformance.audit:Audit",
    "build_problem": "retrieval_conformance.reference.contract.evaluate:build_problem",
    "resolve_options": "retrieval_conformance.reference.contract.protocol_options:resolve_options",
    "available_implementations": "retrieval_conformance.reference.contract.registry:available",
    "ImplementationUnavailable": "retrieval_conformance.reference.contract.registry:ImplementationUnavailable",
    "Options": "retrieval_conformance.reference.contract.problem:Options",
    "PerQuery": "retrieval_conformance.reference.contract.problem:PerQuery",
    "Problem": "retrieval_conformance.reference.contract.problem:Problem",
    "Result": "retrieval_conformance.reference.contract.problem:Result",
    "NotComputedError": "retrieval_conformance.reference.contract.problem:NotComputedError",
    "ResultsAtK": "retrieval_conformance.reference.contract.problem:ResultsAtK",
    "PRESETS": "retrieval_conformance.reference.contract.presets:PRESETS",
    "mean_pr_curve": "retrieval_conformance.reference.curves:mean_pr_curve",
    "pr_curve": "retrieval_conformance.reference.curves:pr_curve",
    "plot_pr_curves": "retrieval_conformance.reference.curves:plot_pr_curves",
    "plot_cmc": "retrieval_conformance.reference.curves:plot_cmc",
    "curves": "retrieval_conformance.reference.contract.curves:curves",
    "Curve": "retrieval_conformance.reference.contract.curves:Curve",
    "cuhk03_single_shot_cmc": "retrieval_conformance.reference.protocols.reid:cuhk03_single_shot_cmc",
    "LANDMARK_PROTOCOLS": "retrieval_conformance.reference.protocols.landmark:LANDMARK_PROTOCOLS",
    "LandmarkResult": "retrieval_conformance.reference.protocols.landmark:LandmarkResult",
    "corrected_precision_at_k": "retrieval_conformance.reference.protocols.landmark:corrected_precision_at_k",
    "evaluate_landmark": "retrieval_conformance.reference.protocols.landmark:evaluate_landmark",
    "format_cpp_float": "retrieval_conformance.reference.protocols.landmark:format_cpp_float",
    "gldv2_ap_at_k": "retrieval_conformance.reference.protocols.landmark:gldv2_ap_at_k",
    "oxford_ap": "retrieval_conformance.reference.protocols.landmark:oxford_ap",
    "revisitop_ap": "retrieval_conformance.reference.protocols.landmark:revisitop_ap",
    "revisitop_positions": "retrieval_conformance.reference.protocols.landmark:revisitop_positions",
    "revisitop_precision_at_k": "retrieval_conformance.reference.protocols.landmark:revisitop_precision_at_k",
    "roxford_split": "retrieval_conformance.reference.protocols.landmark:roxford_split",
    "RestrictedUnpickler": "retrieval_conformance.reference.readers:RestrictedUnpickler",
    "read_gt_folder": "retrieval_conformance.reference.readers:read_gt_folder",
    "read_ranked_list": "retrieval_conformance.reference.readers:read_ranked_list",
    "read_revisitop_gnd": "retrieval_conformance.reference.readers:read_revisitop_gnd",
    "run_from_search": "retrieval_conformance.reference.readers.tables:run_from_search",
    "qrels_from_labels": "retrieval_conformance.reference.readers.tables:qrels_from_labels",
}

# old public names kept working, each with a DeprecationWarning saying what replaced it: name -> the
# replacement (one public entry per curve: the exact slow mean is the reference implementation of
# the fast one)
_DEPRECATED: dict[str, str] = {
    "mean_pr_curve": "rc.curves('pr_interpolated', ..., implementation='reference') (its .exact holds the "
    "exact means; any other implementation is as exact to 1e-15 and fast)",
}

__all__ = [name for name in _EXPORTS if name not in _DEPRECATED]


def __getattr__(name: str) -> _Any:
    import importlib

    if name not in _EXPORTS:
        raise AttributeError(f"module 'retrieval_conformance' has no attribute {name!r}")
    module, attribute = _EXPORTS[name].split(":")
    value = getattr(importlib.import_module(module), attribute)
    if name in _DEPRECATED:  # not cached: every use is told
        import warnings

        warnings.warn(f"rc.{name} is deprecated; use {_DEPRECATED[name]}", DeprecationWarning, stacklevel=2)
        return value
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list:
    """The public names and the version, not the machinery of this module."""
    return sorted([*__all__, "__version__"])
