"""retrieval-conformance: reference-conformance and regression suite for retrieval metrics.

>>> import retrieval_conformance as rc
>>> res = rc.evaluate(distances=D, query_labels=q_ids, db_labels=g_ids, protocol="reid")
"""
from retrieval_conformance.accumulator import Accumulator
from retrieval_conformance.compare import Comparison, compare
from retrieval_conformance.dispatch import evaluate
from retrieval_conformance.implementations.registry import (
    ImplementationUnavailable,
)
from retrieval_conformance.implementations.registry import (
    available as available_implementations,
)
from retrieval_conformance.reference.curves import mean_pr_curve, plot_cmc, plot_pr_curves, pr_curve
from retrieval_conformance.reference.evaluate import build_problem, resolve_options
from retrieval_conformance.reference.landmark import (
    LANDMARK_PROTOCOLS,
    LandmarkResult,
    corrected_precision_at_k,
    evaluate_landmark,
    format_cpp_float,
    gldv2_ap_at_k,
    oxford_ap,
    revisitop_ap,
    revisitop_positions,
    revisitop_precision_at_k,
    roxford_split,
)
from retrieval_conformance.reference.presets import PRESETS
from retrieval_conformance.reference.problem import Options, PerQuery, Problem, Result, ResultsAtK
from retrieval_conformance.reference.readers import (
    RestrictedUnpickler,
    read_gt_folder,
    read_ranked_list,
    read_revisitop_gnd,
)
from retrieval_conformance.reference.reid import cuhk03_single_shot_cmc
from retrieval_conformance.reference.trec import evaluate_run, read_qrels, read_run

__version__ = "0.1.0"


def check_function(func, adapter="hashing-codes", protocol=None, **kwargs):
    """Check a user's metric function against the reference (see ``conformance.harness.check``)."""
    from retrieval_conformance.conformance.harness import check

    return check(func, adapter=adapter, protocol=protocol, **kwargs)


def identify(func, adapter="hashing-codes", **kwargs):
    """Name the preset and options a user's metric function follows (``conformance.harness.identify``)."""
    from retrieval_conformance.conformance.harness import identify as _identify

    return _identify(func, adapter=adapter, **kwargs)

__all__ = [
    "evaluate",
    "evaluate_run",
    "read_run",
    "read_qrels",
    "Accumulator",
    "compare",
    "Comparison",
    "check_function",
    "identify",
    "build_problem",
    "resolve_options",
    "available_implementations",
    "ImplementationUnavailable",
    "Options",
    "PerQuery",
    "Problem",
    "Result",
    "ResultsAtK",
    "PRESETS",
    "mean_pr_curve",
    "pr_curve",
    "plot_pr_curves",
    "plot_cmc",
    "cuhk03_single_shot_cmc",
    "LANDMARK_PROTOCOLS",
    "LandmarkResult",
    "corrected_precision_at_k",
    "evaluate_landmark",
    "format_cpp_float",
    "gldv2_ap_at_k",
    "oxford_ap",
    "revisitop_ap",
    "revisitop_positions",
    "revisitop_precision_at_k",
    "roxford_split",
    "RestrictedUnpickler",
    "read_gt_folder",
    "read_ranked_list",
    "read_revisitop_gnd",
]
