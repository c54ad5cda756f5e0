"""Adapters for the rank metrics of spec §7 besides AP: nDCG, MAP@R, MRR and Recall@k.

==================== ================================================================ ===============
adapter              signature                                                        compares
==================== ================================================================ ===============
sklearn-ndcg         f(y_true, y_score, k=None) (scikit-learn ``ndcg_score``)           nDCG (mean)
pml                  f(query, query_labels, reference, reference_labels)              MAP@R[, R-precision,
                     (pytorch-metric-learning ``AccuracyCalculator.get_accuracy``)     precision_at_1]
mrr                  f(distances, relevance, junk[, k])                               MRR (mean)
recall-at-k          f(distances, relevance, k)                                       Recall@k (mean)
==================== ================================================================ ===============

Each says which options its values depend on (``options``): nDCG on the tie policy, the gain, the
discount and the empty-query policy; MAP@R, MRR on the tie policy and the empty-query policy;
Recall@k also on what Recall@k means (``recall``).  The other options stay at the protocol's values.
"""

from __future__ import annotations

import inspect

import numpy as np
from retrieval_conformance.conformance.harness.adapters.base import (
    Adapter,
    Call,
    Reading,
    Skip,
    UsageError,
    WrongType,
    dense_rank,
    has_varargs,
    positional_params,
    positive_scores,
    read_scalar,
)
from retrieval_conformance.conformance.harness.inputs.public import (
    Capabilities,
    codes_from_distances,
    ids_from_relevance,
)


def _keyword(func, name: str) -> bool:
    """Whether ``func`` takes a parameter ``name`` (positional or keyword-only) or ``**kwargs``."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == name or p.kind == inspect.Parameter.VAR_KEYWORD for p in params)


def _need(func, n: int, adapter: str, shape: str) -> list:
    params = positional_params(func)
    if params is not None and len(params) < n and not has_varargs(func):
        raise UsageError(
            f"adapter {adapter}: expected {shape}, but the function takes {len(params)} positional "
            f"parameter(s): {[p.name for p in params]}"
        )
    return params


class SklearnNdcg(Adapter):
    name = "sklearn-ndcg"
    signature = "f(y_true, y_score, k=None) -> the mean nDCG@k of the rows (scikit-learn ndcg_score)"
    metrics_text = "nDCG"
    default_protocol = "sklearn-ndcg"
    preset_kinds = ("ndcg",)
    options = ("ties", "empty", "gain", "discount")
    fields = {"nDCG": "ndcg"}
    reference_arguments = "scores=y_score, relevance=y_true, {proto}, k={k}"
    reference_field = ".ndcg_at_k"

    def bind(self, func):
        params = _need(func, 2, self.name, "f(y_true, y_score, k=None)")
        # scikit-learn's k is keyword-only; a third positional parameter is taken as k too
        self.k_keyword = _keyword(func, "k")
        self.takes_k = self.k_keyword or params is None or len(params) > 2

    def capabilities(self, protocol_k):
        return Capabilities(
            k=self.takes_k,
            junk=False,
            ids=False,
            multi_query=True,
            protocol_k=protocol_k,
            scores=True,
            grades=True,
            metric="ndcg",
        )

    def calls(self, case, relevance, junk, arrays):
        if junk.any():
            raise Skip("f(y_true, y_score) has no way to pass junk items")
        if case.n_gallery < 2:
            raise Skip(
                "a one-item row: scikit-learn's ndcg_score refuses it ('only meaningful when there is "
                "more than 1 document')"
            )
        if case.k is not None and not self.takes_k:
            raise Skip("the function takes no k")
        y_true = np.where(relevance, case.grade_matrix(), 0).astype(np.int64)
        if case.non_positive_scores:
            y_score = (-dense_rank(case.distances)).astype(np.float32)  # 0, -1, -2, ...: same order
        else:
            y_score = positive_scores(case.distances)
        args, kwargs = (y_true, y_score), {}
        if case.k is not None:
            if self.k_keyword:
                kwargs["k"] = int(case.k)
            else:
                args += (int(case.k),)
        names = ("y_true", "y_score") + (("k",) if len(args) > 2 else ())
        return [
            Call(
                args,
                kwargs,
                names,
                case.k,
                case.max_rank,
                without_k=case.k is None,
                note="y_score = similarity scores (larger is closer); y_true = relevance grades",
            )
        ]

    def read(self, value, call):
        return Reading({"nDCG": read_scalar(value, "the return value (nDCG)")})


def _power_of_four_width(qc: np.ndarray, dc: np.ndarray):
    """Pad ±1 codes with +1 columns to a width 4^j: normalised they are ±2^-j exactly, so every
    Euclidean or cosine distance is exact and equal Hamming distances stay equal."""
    width = 4
    while width < qc.shape[1]:
        width *= 4
    pad = width - qc.shape[1]
    return (
        np.hstack([qc, np.ones((qc.shape[0], pad), qc.dtype)]),
        np.hstack([dc, np.ones((dc.shape[0], pad), dc.dtype)]),
    )


class PmlMapAtR(Adapter):
    name = "pml"
    signature = (
        "f(query, query_labels, reference, reference_labels) -> MAP@R, or a dict with "
        "mean_average_precision_at_r[, r_precision, precision_at_1] (pytorch-metric-learning "
        "AccuracyCalculator.get_accuracy)"
    )
    metrics_text = "MAP@R[, R-precision, precision_at_1]"
    default_protocol = "pml"
    preset_kinds = ("metric-learning",)
    options = ("ties", "empty")
    not_searched = {"ap_rule": "MAP@R sums the precisions at the hits within R whatever the AP rule (spec §7 MAP@R)"}
    fields = {"MAP@R": "ap_at_r", "R-precision": "r_precision", "P@1": "p1"}
    #: pytorch-metric-learning's names of the fields
    KEYS = {"mean_average_precision_at_r": "MAP@R", "r_precision": "R-precision", "precision_at_1": "P@1"}
    reference_arguments = (
        "query_embeddings=query, db_embeddings=reference, query_labels=query_labels, "
        "db_labels=reference_labels, {proto}, k=None"
    )
    reference_field = ".map_at_r"

    def bind(self, func):
        _need(func, 4, self.name, "f(query, query_labels, reference, reference_labels)")

    def capabilities(self, protocol_k):
        return Capabilities(k=False, junk=False, ids=True, multi_query=True, protocol_k=False, metric="ap_at_r")

    def calls(self, case, relevance, junk, arrays):
        if case.k is not None:
            raise Skip("MAP@R has no cut-off k (R is each query's own)")
        if junk.any():
            raise Skip("f(query, query_labels, reference, reference_labels) has no way to pass junk items")
        ids = ids_from_relevance(relevance) if case.ids is None else case.ids
        if ids is None:
            raise Skip("the case's relevance is not 'same label' (two queries' relevant sets overlap)")
        qc, dc = _power_of_four_width(*codes_from_distances(dense_rank(case.distances)))
        args = (qc.astype(np.float32), ids[0].astype(np.int64), dc.astype(np.float32), ids[1].astype(np.int64))
        return [
            Call(
                args,
                {},
                ("query", "query_labels", "reference", "reference_labels"),
                None,
                case.max_rank,
                note="embeddings: ±1 vectors whose Euclidean distances rank like the input's (ties kept)",
            )
        ]

    def read(self, value, call):
        if isinstance(value, dict):
            out = {field: read_scalar(value[key], key) for key, field in self.KEYS.items() if key in value}
            if "MAP@R" not in out:
                raise WrongType(f"expected a dict with 'mean_average_precision_at_r', got keys {sorted(value)}")
            return Reading(out)
        return Reading({"MAP@R": read_scalar(value, "the return value (MAP@R)")})


class _DistancesK(Adapter):
    """f(distances, relevance, ...[, k]): the cut-off is the parameter after ``n_fixed``."""

    n_fixed = 2
    shape = ""

    def bind(self, func):
        params = _need(func, self.n_fixed, self.name, self.shape)
        self.takes_k, self.k_default = self._k_argument(params, self.n_fixed)

    def _with_k(self, case, args, names):
        if case.k is not None and not self.takes_k:
            raise Skip("the function takes no k")
        without_k = False
        k_passed = None
        if case.k is not None:
            args, names, k_passed = args + (int(case.k),), names + ("k",), int(case.k)
        elif self.takes_k and not self.k_default:
            args, names, k_passed = args + (case.n_gallery,), names + ("k",), case.n_gallery
        else:
            without_k = True
        return Call(
            args,
            {},
            names,
            case.k,
            case.max_rank,
            without_k=without_k,
            k_passed=k_passed,
            note="k = the gallery size (the whole ranking)" if k_passed and case.k is None else "",
        )


class Mrr(_DistancesK):
    name = "mrr"
    signature = "f(distances, relevance, junk, k) -> MRR@k (3 parameters: MRR of the whole ranking)"
    metrics_text = "MRR"
    n_fixed = 3
    shape = "f(distances, relevance, junk[, k])"
    preset_kinds = ("hashing",)  # an explicit junk mask: the presets without camera junk rules
    options = ("ties", "empty")
    fields = {"MRR": "rr"}
    reference_arguments = "distances=distances, relevance=relevance, junk=junk, {proto}, k={k}"
    reference_field = ".mrr"

    def capabilities(self, protocol_k):
        return Capabilities(k=self.takes_k, junk=True, ids=False, multi_query=True, protocol_k=protocol_k, metric="rr")

    def calls(self, case, relevance, junk, arrays):
        args = (case.distances.astype(np.float32), (relevance & ~junk).astype(bool), junk.astype(bool))
        return [self._with_k(case, args, ("distances", "relevance", "junk"))]

    def read(self, value, call):
        return Reading({"MRR": read_scalar(value, "the return value (MRR)")})


class RecallAtK(_DistancesK):
    name = "recall-at-k"
    signature = "f(distances, relevance, k) -> the mean Recall@k"
    metrics_text = "Recall@k"
    shape = "f(distances, relevance, k)"
    preset_kinds = ("hashing",)
    options = ("ties", "empty", "recall")
    fields = {"R@k": "recall"}
    reference_arguments = "distances=distances, relevance=relevance, {proto}, k={k}"
    reference_field = ".recall_at_k"

    def capabilities(self, protocol_k):
        return Capabilities(
            k=self.takes_k, junk=False, ids=False, multi_query=True, protocol_k=protocol_k, metric="recall"
        )

    def calls(self, case, relevance, junk, arrays):
        if junk.any():
            raise Skip("f(distances, relevance, k) has no way to pass junk items")
        args = (case.distances.astype(np.float32), relevance.astype(bool))
        return [self._with_k(case, args, ("distances", "relevance"))]

    def read(self, value, call):
        return Reading({"R@k": read_scalar(value, "the return value (Recall@k)")})


RANK_ADAPTERS = (SklearnNdcg, PmlMapAtR, Mrr, RecallAtK)
