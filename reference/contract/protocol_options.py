"""The options of one evaluation: a protocol's preset with every explicit override applied and
validated, and the inputs a preset's junk rule needs (cameras for the ReID presets)."""

from __future__ import annotations

from typing import Optional

import numpy as np
from retrieval_conformance.reference.contract import validation as v
from retrieval_conformance.reference.contract.conventions import DISCOUNTS, GAINS, RECALL_SENSES
from retrieval_conformance.reference.contract.metric_names import check_requested, resolve_metrics
from retrieval_conformance.reference.contract.presets import Preset, get_preset
from retrieval_conformance.reference.contract.problem import (
    AP_AT_K_DENOMINATORS,
    AP_RULES,
    EMPTY_POLICIES,
    TIE_POLICIES,
    Options,
)


def resolve_options(
    protocol: str = "hashing",
    k: Optional[int] = None,
    max_rank: int = 50,
    ties: Optional[str] = None,
    ap_rule: Optional[str] = None,
    ap_at_k: Optional[str] = None,
    empty: Optional[str] = None,
    radius: Optional[float] = None,
    k_given: bool = True,
    gain: Optional[str] = None,
    recall: Optional[str] = None,
    discount: Optional[str] = None,
    metrics=None,
) -> Options:
    """A preset's options with every explicit override applied, each one validated."""
    preset = get_preset(protocol)
    if not k_given:
        k = preset.k
    chosen = resolve_metrics(metrics, cutoffs=(k,))
    check_requested(chosen, [name for name, value in (("k", k), ("radius", radius)) if value is not None])
    return Options(
        ties=v.choice("ties", ties if ties is not None else preset.ties, TIE_POLICIES),
        ap_rule=v.choice("ap_rule", ap_rule if ap_rule is not None else preset.ap_rule, AP_RULES),
        k=v.positive_int("k", k, allow_none=True),
        ap_at_k=v.choice("ap_at_k", ap_at_k if ap_at_k is not None else preset.ap_at_k, AP_AT_K_DENOMINATORS),
        empty=v.choice("empty", empty if empty is not None else preset.empty, EMPTY_POLICIES),
        max_rank=v.max_rank_value(max_rank),
        radius=v.non_negative_number("radius", radius),
        gain=v.choice("gain", gain if gain is not None else preset.gain, GAINS),
        recall=v.choice("recall", recall if recall is not None else preset.recall, RECALL_SENSES),
        discount=v.choice("discount", discount if discount is not None else preset.discount, DISCOUNTS),
        metrics=chosen,
    )


def check_camera_rule(protocol: str, preset: Preset, query_cams, db_cams, junk, query_labels) -> None:
    """Cameras only with a preset whose junk rule reads them, and that rule never left without them.

    Raises
    ------
    ValueError
        Naming ``query_cams``: cameras given to a preset without the camera junk rule, or single
        ids given to a ReID preset without cameras nor an explicit ``junk`` mask.
    """
    if (query_cams is not None or db_cams is not None) and "same_id_cam" not in preset.junk:
        raise ValueError(
            f"query_cams: protocol {protocol!r} has no camera junk rule; use protocol='reid' or "
            "'reid-matlab', or pass an explicit junk= mask"
        )
    if (
        "same_id_cam" in preset.junk
        and query_cams is None
        and db_cams is None
        and junk is None
        and query_labels is not None
        and np.ndim(query_labels) == 1
    ):
        # without cameras the preset's junk rule removes nothing, and mAP silently changes
        raise ValueError(
            f"query_cams: protocol {protocol!r} removes gallery items with the query's id and camera as "
            "junk, so it needs query_cams= and db_cams=; to evaluate without camera junk, say so with an "
            "explicit mask: junk=np.zeros((queries, gallery), bool)"
        )
