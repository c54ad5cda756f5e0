"""Protocol presets: the conventions of real codebases, by name (spec §9).

A preset is a bundle of named options; every option can be overridden on its own in
``evaluate``.  ``junk`` says which junk rule the preset adds to an explicit junk mask:
``same_id_cam`` (a gallery item with the query's id and camera, when cameras are given) and
``minus_one`` (gallery id -1, Market-1501's "junk" images).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple


@dataclass(frozen=True)
class Preset:
    name: str
    ties: str
    ap_rule: str
    ap_at_k: str
    empty: str
    junk: Tuple[str, ...]
    matches: str
    k: Optional[int] = None
    gain: str = "linear"
    recall: str = "fraction"
    discount: str = "log2"


PRESETS: Dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "hashing",
            "stable",
            "precision_sum",
            "hits",
            "zero",
            (),
            "seed 000 CalcTopMap, jiangqy/DPSH-pytorch, swuxyj/DeepHash-pytorch (with a stable sort)",
        ),
        Preset(
            "hashnet",
            "stable",
            "precision_sum",
            "hits",
            "skip_no_hit",
            (),
            "thuml/HashNet pytorch (queries without a hit in the top k are left out)",
        ),
        Preset(
            "dcmh",
            "stable",
            "precision_sum",
            "dcmh",
            "zero",
            (),
            "seed 003 calc_map_k without its stray break, WangGodder/deep-cross-modal-hashing",
        ),
        Preset(
            "reid",
            "stable",
            "precision_sum",
            "hits",
            "skip",
            ("same_id_cam",),
            "torchreid, fast-reid (market1501 mode)",
        ),
        Preset(
            "reid-matlab",
            "stable",
            "trapezoid",
            "hits",
            "zero",
            ("same_id_cam", "minus_one"),
            "Market-1501 MATLAB compute_AP.m, layumi Person_reID_baseline_pytorch",
        ),
        Preset(
            "gldv2",
            "stable",
            "precision_sum",
            "min_k_r",
            "skip",
            (),
            "Google Landmarks v2 / Kaggle mAP@100 (divides by min(k, R))",
            k=100,
        ),
        Preset(
            "pml",
            "stable",
            "precision_sum",
            "r",
            "skip",
            (),
            "KevinMusgrave/pytorch-metric-learning AccuracyCalculator (MAP@R, R-precision, "
            "precision_at_1; queries without a match left out; Recall@k as the hit rate)",
            recall="hit",
        ),
        Preset(
            "trec",
            "reverse",
            "precision_sum",
            "r",
            "zero",
            (),
            "usnistgov/trec_eval 9.0.4 and later (9.0.8, 10.0), pytrec_eval: map, map_cut_k, ndcg_cut_k, "
            "recip_rank, P_k (ties by document name descending: reverse gallery order when the gallery "
            "is sorted by name; nDCG discounts every rank r by log2(r + 1))",
        ),
        Preset(
            "sklearn-ndcg",
            "expected",
            "precision_sum",
            "hits",
            "zero",
            (),
            "scikit-learn ndcg_score (ignore_ties=False averages the gain over tied scores; "
            "a row without a relevant item scores 0)",
        ),
    )
}


def get_preset(name: str) -> Preset:
    if not isinstance(name, str):
        raise TypeError(
            f"protocol: expected a preset name (str), got {type(name).__name__}; pass one of {sorted(PRESETS)}"
        )
    if name not in PRESETS:
        raise ValueError(f"protocol: unknown preset {name!r}; expected one of {sorted(PRESETS)}")
    return PRESETS[name]
