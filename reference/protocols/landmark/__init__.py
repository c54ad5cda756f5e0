"""Landmark-retrieval protocols: Oxford/Paris ``compute_ap``, Revisited Oxford/Paris, GLDv2.

These protocols start from ranked lists of database items (names or indices), not from
distances, and their ground truth is given as sets: so they live beside, not inside, the
distance-based :func:`retrieval_conformance.evaluate`.

Protocols (spec §3, §5, §6, §9)
--------------------------------------
``oxford``
    The VGG ``compute_ap.cpp`` tool of Oxford5k/Paris6k, reproduced to the printed digit by
    :func:`oxford_ap`: positives = set(good ∪ ok), junk skipped, trapezoid AP in float32.
    mAP = mean of the per-query values (NaN if a query has no positive at all).
``roxford-easy``, ``roxford-medium``, ``roxford-hard``
    Revisited Oxford/Paris (revisitop / cirtorch ``compute_map``): Easy = positives easy,
    junk = junk ∪ hard; Medium = positives easy ∪ hard (concatenated, not de-duplicated),
    junk = junk; Hard = positives hard, junk = junk ∪ easy.  Trapezoid AP with exact
    fractions; a query without positives is left out of the mean.  mP@k for k = 1, 5, 10
    both as revisitop computes it (the quirk, :func:`revisitop_precision_at_k`) and
    corrected (:func:`corrected_precision_at_k`).
``gldv2``
    Google Landmarks v2 retrieval, mAP@100 (Kaggle): precision-sum AP@k divided by
    min(k, R), duplicates in a prediction list skipped (they still use their position),
    queries without relevant item left out.

Entry point: :func:`evaluate_landmark` (``landmark.evaluation``; ``spec §9 preset=oxford``,
``spec §9 preset=roxford-easy`` and the other difficulties, ``spec §9 preset=gldv2``).  The
protocols live in their own modules and are re-exported here: ``landmark.oxford`` (with
``landmark.trapezoid``, the trapezoid sum in float32, float64 and exact arithmetic, and
``landmark.cpp_float``, how ``compute_ap`` prints), ``landmark.revisitop`` and
``landmark.gldv2``; ``landmark.inputs`` checks the arguments; ``landmark.cli`` is the
``compute-ap`` command.
"""

from __future__ import annotations

from retrieval_conformance.reference.protocols.landmark.cpp_float import format_cpp_float, normalize_cpp_float_text
from retrieval_conformance.reference.protocols.landmark.evaluation import (
    LANDMARK_PROTOCOLS,
    LandmarkResult,
    evaluate_landmark,
)
from retrieval_conformance.reference.protocols.landmark.gldv2 import gldv2_ap_at_k
from retrieval_conformance.reference.protocols.landmark.oxford import oxford_ap, oxford_ap_exact, oxford_ap_float64
from retrieval_conformance.reference.protocols.landmark.revisitop import (
    corrected_precision_at_k,
    revisitop_ap,
    revisitop_positions,
    revisitop_precision_at_k,
    roxford_split,
)

__all__ = [
    "LANDMARK_PROTOCOLS",
    "LandmarkResult",
    "corrected_precision_at_k",
    "evaluate_landmark",
    "format_cpp_float",
    "gldv2_ap_at_k",
    "normalize_cpp_float_text",
    "oxford_ap",
    "oxford_ap_exact",
    "oxford_ap_float64",
    "revisitop_ap",
    "revisitop_positions",
    "revisitop_precision_at_k",
    "roxford_split",
]
