"""Adapters: the signatures people actually write, and how a test case becomes a call.

Each adapter knows how to turn a :class:`~retrieval_conformance.conformance.harness.inputs.case.Case`
into one call (or one call per query), which metrics the return value carries, and what it
cannot express (then the check is skipped with that reason).

==================== ============================================================ =================
adapter              signature                                                    compares
==================== ============================================================ =================
hashing-codes        f(query_codes, db_codes, query_labels, db_labels[, topk])     mAP
distances-relevance  f(distances, relevance[, k])                                  mAP
reid                 f(distmat, q_pids, g_pids, q_camids, g_camids[, max_rank])   cmc, mAP[, mINP]
oxford               f(positives, junk, ranked_list)                               AP of one query
sklearn              f(y_true, y_score)                                            AP of one query
torchmetrics         f(preds, target, top_k=...)                                   AP of one query
==================== ============================================================ =================

The rank-metric adapters are in :mod:`.rank_metrics` (``sklearn-ndcg``, ``pml``, ``mrr``,
``recall-at-k``); all of them by name in :mod:`.registry`.
"""

from __future__ import annotations

import inspect
from typing import Optional

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
from retrieval_conformance.conformance.harness.candidates.reference_values import LANDMARK_CONVENTIONS, REID_PRESETS
from retrieval_conformance.conformance.harness.inputs.public import (
    Capabilities,
    codes_from_distances,
    ids_from_relevance,
    labels_from_relevance,
)
from retrieval_conformance.reference.contract.presets import PRESETS


class HashingCodes(Adapter):
    name = "hashing-codes"
    signature = "f(query_codes, db_codes, query_labels, db_labels, topk) -> mAP (4 parameters: full mAP)"
    preset_kinds = ("hashing",)  # codes carry no cameras: the ReID presets cannot apply
    reference_arguments = (
        "query_codes=query_codes, db_codes=db_codes, query_labels=query_labels, db_labels=db_labels, {proto}, k={k}"
    )
    reference_field = ".exact.map"
    codes_input = True

    @property
    def required_topk(self):
        return self.takes_k and not self.k_default

    def bind(self, func):
        params = positional_params(func)
        if params is not None and len(params) < 4 and not has_varargs(func):
            raise UsageError(
                f"adapter {self.name}: expected f(query_codes, db_codes, query_labels, db_labels[, topk]), "
                f"but the function takes {len(params)} positional parameter(s): "
                f"{[p.name for p in params]}"
            )
        self.takes_k, self.k_default = self._k_argument(params, 4)
        if params is not None and len(params) > 4:
            required = [p for p in params[4:] if p.default is inspect.Parameter.empty]
            if len(required) > 1:
                raise UsageError(
                    f"adapter {self.name}: the function requires more than 5 arguments ({[p.name for p in params]})"
                )

    def capabilities(self, protocol_k):
        return Capabilities(k=self.takes_k, junk=False, ids=False, multi_query=True, protocol_k=protocol_k)

    def calls(self, case, relevance, junk, arrays):
        if junk.any():
            raise Skip("the hashing-codes signature has no way to pass junk items")
        if case.k is not None and not self.takes_k:
            raise Skip("the function takes no topk (4 parameters: full mAP only)")
        if case.codes is not None and case.junk is None:
            qc, dc, ql, dl = case.codes
        else:
            d = case.distances if case.integer_distances else dense_rank(case.distances)
            qc, dc = codes_from_distances(d)
            ql, dl = labels_from_relevance(relevance)
        lab_dtype = np.float32 if arrays == "torch" else np.int64
        args = (qc.astype(np.float32), dc.astype(np.float32), ql.astype(lab_dtype), dl.astype(lab_dtype))
        names = ("query_codes", "db_codes", "query_labels", "db_labels")
        without_k = False
        note = ""
        if case.k is not None:
            args = args + (int(case.k),)
            names = names + ("topk",)
        elif self.takes_k and not self.k_default:
            args = args + (case.n_gallery,)
            names = names + ("topk",)
            note = "topk = the gallery size (full mAP)"
        elif self.takes_k:
            without_k = True
            note = "called without topk: the function's own default stands for the whole gallery"
        k_passed = args[4] if len(args) > 4 else None
        return [Call(args, {}, names, case.k, case.max_rank, without_k=without_k, note=note, k_passed=k_passed)]

    def read(self, value, call):
        return Reading({"mAP": read_scalar(value, "the return value (mAP)")})


class DistancesRelevance(Adapter):
    name = "distances-relevance"
    signature = "f(distances, relevance, k) -> mAP (2 parameters: full mAP)"
    reference_arguments = "distances=distances, relevance=relevance, {proto}, k={k}"
    reference_field = ".exact.map"

    def bind(self, func):
        params = positional_params(func)
        if params is not None and len(params) < 2 and not has_varargs(func):
            raise UsageError(
                f"adapter {self.name}: expected f(distances, relevance[, k]), but the function "
                f"takes {len(params)} positional parameter(s)"
            )
        self.takes_k, self.k_default = self._k_argument(params, 2)

    def capabilities(self, protocol_k):
        return Capabilities(k=self.takes_k, junk=False, ids=False, multi_query=True, protocol_k=protocol_k)

    def calls(self, case, relevance, junk, arrays):
        if junk.any():
            raise Skip("the distances-relevance signature has no way to pass junk items")
        if case.k is not None and not self.takes_k:
            raise Skip("the function takes no k (2 parameters: full mAP only)")
        args = (case.distances.astype(np.float32), relevance.astype(bool))
        names = ("distances", "relevance")
        without_k = False
        if case.k is not None:
            args += (int(case.k),)
            names += ("k",)
        elif self.takes_k and not self.k_default:
            args += (None,)
            names += ("k",)
        elif self.takes_k:
            without_k = True
        return [Call(args, {}, names, case.k, case.max_rank, without_k=without_k)]

    def read(self, value, call):
        return Reading({"mAP": read_scalar(value, "the return value (mAP)")})


class Reid(Adapter):
    name = "reid"
    signature = "f(distmat, q_pids, g_pids, q_camids, g_camids, max_rank) -> (cmc, mAP) or (cmc, mAP, mINP)"
    metrics_text = "(cmc, mAP[, mINP])"
    default_protocol = "reid"
    preset_kinds = ("reid",)
    reference_arguments = (
        "distances=distmat, query_labels=q_pids, db_labels=g_pids, query_cams=q_camids, "
        "db_cams=g_camids, {proto}, k=None, max_rank={max_rank}"
    )
    junk_rule_presets = REID_PRESETS
    reads_cmc = True

    @property
    def passes_max_rank(self):
        return self.takes_max_rank

    def protocol_convention(self, name, overrides):
        conv = super().protocol_convention(name, overrides)
        if conv.base not in REID_PRESETS:
            raise UsageError(
                f"adapter reid passes cameras, so it needs a protocol with the camera junk rule "
                f"({', '.join(REID_PRESETS)}); got {name!r}"
            )
        return conv

    def bind(self, func):
        params = positional_params(func)
        if params is not None and len(params) < 5 and not has_varargs(func):
            raise UsageError(
                f"adapter {self.name}: expected f(distmat, q_pids, g_pids, q_camids, g_camids"
                f"[, max_rank]), but the function takes {len(params)} positional parameter(s)"
            )
        self.takes_max_rank = params is None or len(params) > 5 or has_varargs(func)

    def capabilities(self, protocol_k):
        return Capabilities(k=False, junk=True, ids=True, multi_query=True, protocol_k=False)

    def calls(self, case, relevance, junk, arrays):
        if case.k is not None:
            raise Skip("the reid signature has no cut-off k")
        ids = case.ids if case.ids is not None else ids_from_relevance(relevance, junk)
        if ids is None:
            raise Skip("the case's relevance is not an identity relation (ReID needs same-id relevance)")
        q_pids, g_pids, q_cams, g_cams = ids
        args = (
            case.distances.astype(np.float32),
            q_pids.astype(np.int64),
            g_pids.astype(np.int64),
            q_cams.astype(np.int64),
            g_cams.astype(np.int64),
        )
        names = ("distmat", "q_pids", "g_pids", "q_camids", "g_camids")
        if self.takes_max_rank:
            args += (int(case.max_rank),)
            names += ("max_rank",)
        return [Call(args, {}, names, None, case.max_rank)]

    def read(self, value, call):
        if isinstance(value, dict):
            raise WrongType(f"expected a tuple (cmc, mAP[, mINP]), got a dict with keys {sorted(value)}")
        if not isinstance(value, (tuple, list)) or len(value) not in (2, 3):
            raise WrongType(
                f"expected a tuple (cmc, mAP) or (cmc, mAP, mINP), got {type(value).__name__}"
                + (f" of length {len(value)}" if isinstance(value, (tuple, list)) else "")
            )
        cmc = np.asarray(value[0])
        if cmc.ndim != 1 or (cmc.size and cmc.dtype.kind not in "fiu"):
            raise WrongType(
                f"cmc: expected a 1-D array of numbers, got {type(value[0]).__name__} "
                f"with shape {getattr(cmc, 'shape', None)}"
            )
        # an empty curve is read as one: where no query is counted (every query's gallery junk or
        # without a match) the protocol leaves the CMC undefined, and elsewhere its length is compared
        out = Reading({"cmc": [float(c) for c in cmc], "mAP": read_scalar(value[1], "mAP (second element)")})
        if len(value) == 3:
            out.values["mINP"] = read_scalar(value[2], "mINP (third element)")
        return out


class _OneQuery(Adapter):
    per_query = True
    metrics_text = "AP of one query"

    def capabilities(self, protocol_k):
        return Capabilities(k=False, junk=True, ids=False, multi_query=True, protocol_k=protocol_k, scores=True)

    def _query_arrays(self, case, relevance, junk, q):
        keep = ~junk[q]
        return case.distances[q][keep], relevance[q][keep]

    @staticmethod
    def _scores(case, d):
        if case.non_positive_scores:
            return (-dense_rank(d[None, :])[0]).astype(np.float32)  # 0, -1, -2, ...: same order
        return positive_scores(d[None, :])[0]

    def read(self, value, call):
        return Reading({"AP": read_scalar(value, "the return value (AP)")})

    def _score_calls(self, case, relevance, junk, make_call):
        """One call per query whose gallery is not empty after junk removal:
        ``make_call(q, similarity_scores, relevance)``."""
        out = []
        for q in range(case.n_queries):
            d, rel = self._query_arrays(case, relevance, junk, q)
            if d.size:
                out.append(make_call(q, self._scores(case, d), rel))
        return out


class Sklearn(_OneQuery):
    name = "sklearn"
    signature = "f(y_true, y_score) -> AP of one query (scikit-learn average_precision_score)"
    reference_arguments = "scores=np.asarray(y_score)[None, :], relevance=np.asarray(y_true)[None, :], {proto}, k=None"
    reference_field = ".exact.ap[0]"

    def bind(self, func):
        params = positional_params(func)
        if params is not None and len(params) < 2 and not has_varargs(func):
            raise UsageError(f"adapter {self.name}: expected f(y_true, y_score)")

    def calls(self, case, relevance, junk, arrays):
        if case.k is not None:
            raise Skip("f(y_true, y_score) has no cut-off k")
        return self._score_calls(
            case,
            relevance,
            junk,
            lambda q, score, rel: Call(
                (rel.astype(np.int64), score),
                {},
                ("y_true", "y_score"),
                None,
                case.max_rank,
                query=q,
                note="junk items removed; y_score = similarity scores (larger is closer)",
            ),
        )


class Torchmetrics(_OneQuery):
    name = "torchmetrics"
    signature = "f(preds, target, top_k=...) -> AP of one query (torchmetrics retrieval_average_precision)"
    forced_arrays = "torch"
    reference_arguments = "scores=preds[None, :], relevance=target[None, :], {proto}, k={k}"
    reference_field = ".exact.ap[0]"

    #: the cut-off's keyword, and whether the function has a default for it (its own cut-off
    #: when that is not None: a call for the whole list then leaves it out, so that it shows)
    k_name: str = "top_k"
    k_default: bool = False

    def bind(self, func):
        params = positional_params(func)
        if params is not None and len(params) < 2 and not has_varargs(func):
            raise UsageError(f"adapter {self.name}: expected f(preds, target, top_k=...)")
        try:
            named = inspect.signature(func).parameters
        except (TypeError, ValueError):
            named = {}
        k_param = named.get("top_k") or (params[2] if params is not None and len(params) > 2 else None)
        if k_param is not None:
            self.k_name = k_param.name
            self.k_default = k_param.default is not inspect.Parameter.empty

    def capabilities(self, protocol_k):
        return Capabilities(k=True, junk=True, ids=False, multi_query=True, protocol_k=protocol_k, scores=True)

    def calls(self, case, relevance, junk, arrays):
        without_k = case.k is None and self.k_default
        return self._score_calls(
            case,
            relevance,
            junk,
            lambda q, score, rel: Call(
                (score, rel.astype(bool)),
                {} if without_k else {self.k_name: case.k},
                ("preds", "target"),
                case.k,
                case.max_rank,
                query=q,
                without_k=without_k,
                note="junk items removed; preds = similarity scores (larger is closer)"
                + (f"; called without {self.k_name}: the function's own default stands" if without_k else ""),
            ),
        )


class Oxford(_OneQuery):
    name = "oxford"
    signature = "f(positives, junk, ranked_list) -> AP of one query (Oxford compute_ap)"
    default_protocol = "oxford"
    preset_kinds = ("landmark",)
    #: set by the session from the protocol: whether it has junk lists (GLDv2 has none) and the cut-off
    #: it reads the ranked list to (GLDv2: the first 100 names)
    protocol_junk: bool = True
    cutoff: Optional[int] = None
    ranked_list = True
    exceeds_one_by_convention = True  # compute_ap counts a repeated positive twice (spec §5)
    same_presets_note = "roxford's difficulties differ only in the positive and junk sets you pass"
    outside_protocol_rules = True
    not_searched = {
        "ap_at_k": "compute_ap has no cut-off k; under --protocol gldv2, whose lists are read to their first "
        "100 names, every AP@k denominator is tried"
    }

    def preset_convention(self, name):
        return LANDMARK_CONVENTIONS[name]

    def protocol_convention(self, name, overrides):
        if name not in LANDMARK_CONVENTIONS:
            raise UsageError(
                f"--protocol: the oxford adapter checks the landmark presets {list(LANDMARK_CONVENTIONS)}; got {name!r}"
            )
        preset = PRESETS[name] if name in PRESETS else None
        # GLDv2 has no junk and reads the first k names: its inputs say so
        self.protocol_junk = preset is None or bool(preset.junk)
        self.cutoff = preset.k if preset is not None else None
        return LANDMARK_CONVENTIONS[name].with_(**{k: v for k, v in overrides.items() if v is not None})

    def bind(self, func):
        params = positional_params(func)
        if params is not None and len(params) < 3 and not has_varargs(func):
            raise UsageError(f"adapter {self.name}: expected f(positives, junk, ranked_list)")

    def capabilities(self, protocol_k):
        return Capabilities(
            k=False, junk=self.protocol_junk, ids=False, multi_query=True, protocol_k=False, scores=False
        )

    def calls(self, case, relevance, junk, arrays):
        if case.k is not None:
            raise Skip("compute_ap has no cut-off k")
        if junk.any() and not self.protocol_junk:
            raise Skip("the protocol has no junk (GLDv2): its inputs pass an empty junk list")
        out = []
        for q in range(case.n_queries):
            order = np.argsort(case.distances[q], kind="stable")
            names = [f"img{int(i):03d}" for i in range(case.n_gallery)]
            positives = [names[i] for i in np.flatnonzero(relevance[q])]
            junk_names = [names[i] for i in np.flatnonzero(junk[q])]
            ranked = [names[i] for i in order]
            note = "the ranked list is the stable order of the distances"
            if self.cutoff is not None:
                note += f"; the protocol reads its first {self.cutoff} names"
            out.append(
                Call(
                    (positives, junk_names, ranked),
                    {},
                    ("positives", "junk", "ranked_list"),
                    self.cutoff,
                    case.max_rank,
                    query=q,
                    without_k=self.cutoff is not None,
                    note=note,
                )
            )
        return out

    def reference_lines(self, call, proto, ref_text):
        return [
            "from retrieval_conformance.reference.protocols.landmark import oxford_ap_exact",
            f"print(oxford_ap_exact({call.args[2]!r}, {call.args[0]!r}, [], {call.args[1]!r}))"
            f"  # reference: {ref_text}",
        ]


AP_ADAPTERS = (HashingCodes, DistancesRelevance, Reid, Oxford, Sklearn, Torchmetrics)
