"""Test inputs of the harness: the public names, importable from here.

* :mod:`.case`: :class:`Case`, the neutral form of one input (a (Q, N) distance matrix and
  relevance, optional junk, and the native form it was born in), and the exact conversions
  between input forms (codes, multi-hot labels, ReID ids).
* :mod:`.golden`: the golden cases (or the seeds' worked examples) as cases.
* :mod:`.families`: the families of generated inputs, each with how it is drawn, and what an
  adapter can express (:class:`Capabilities`).
* :mod:`.long_lists`: the inputs longer than the cut-offs real code applies on its own.
* :mod:`.drawing` and :mod:`..generate`: drawing a case of a family through hypothesis or a
  seeded ``random``.
"""

from __future__ import annotations

from retrieval_conformance.conformance.harness.generate import (
    generate,
    hypothesis_storage,
    hypothesis_strategy,
    sample_cases,
)
from retrieval_conformance.conformance.harness.inputs.case import (
    Case,
    Codes,
    Ids,
    case_from_inputs,
    codes_from_distances,
    fingerprint,
    hamming_from_codes,
    ids_from_relevance,
    labels_from_relevance,
    relevance_from_labels,
)
from retrieval_conformance.conformance.harness.inputs.drawing import Drawer, HypothesisDrawer, RandomDrawer
from retrieval_conformance.conformance.harness.inputs.families import (
    FAMILIES,
    Capabilities,
    Family,
    family,
    family_skip_reason,
)
from retrieval_conformance.conformance.harness.inputs.golden import (
    SEED000,
    SEED003,
    builtin_cases,
    dedupe,
    golden_cases,
)
from retrieval_conformance.conformance.harness.inputs.long_lists import DEFAULT_CUTOFFS, long_cases, ranked_case

__all__ = [
    "Case",
    "Codes",
    "Ids",
    "Capabilities",
    "Family",
    "FAMILIES",
    "family",
    "family_skip_reason",
    "generate",
    "hypothesis_storage",
    "DEFAULT_CUTOFFS",
    "long_cases",
    "ranked_case",
    "hypothesis_strategy",
    "sample_cases",
    "golden_cases",
    "builtin_cases",
    "case_from_inputs",
    "dedupe",
    "fingerprint",
    "SEED000",
    "SEED003",
    "Drawer",
    "RandomDrawer",
    "HypothesisDrawer",
    "codes_from_distances",
    "labels_from_relevance",
    "ids_from_relevance",
    "hamming_from_codes",
    "relevance_from_labels",
]
