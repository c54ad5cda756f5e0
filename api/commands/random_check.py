"""``evaluate``'s warning when a result is far below a random order of the same items.

Similarities passed as distances (``--distances`` for ``--scores``) or a reversed ranking give a
plausible-looking small number; :mod:`~retrieval_conformance.reference.contract.random_ranking`
says when to warn, and this module feeds it what ``evaluate`` computed.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np
from retrieval_conformance.reference.contract.random_ranking import below_random_warning, expected_random_ap, worst_ap

#: the array arguments that hold the gallery, with the axis that counts its items
_GALLERY_AXES = (
    ("distances", 1),
    ("scores", 1),
    ("relevance", 1),
    ("db_codes", 0),
    ("db_embeddings", 0),
    ("db_labels", 0),
)


def arrays_warning(res, arguments: Dict[str, Any]) -> Optional[str]:
    """For ``evaluate`` on arrays: whole-ranking AP only (a cut-off changes what random scores)."""
    if not res.has("map") or res.options.k is not None:
        return None
    size = next(
        (np.shape(arguments[name])[axis] for name, axis in _GALLERY_AXES if arguments.get(name) is not None),
        None,
    )
    if not size:
        return None
    ap, n_relevant = res.per_query.ap, res.per_query.n_relevant
    kept = [q for q in range(len(ap)) if n_relevant[q] > 0 and np.isfinite(ap[q])]
    expected = [expected_random_ap(int(size), int(n_relevant[q])) for q in kept]
    worst = [worst_ap(int(size), int(n_relevant[q])) for q in kept]
    what = "--scores and --distances (scores: larger is closer; distances: smaller is closer)"
    return below_random_warning([float(ap[q]) for q in kept], expected, worst, what)


def run_warning(res) -> Optional[str]:
    """For ``evaluate --run`` with ``--k``: each query's AP against a random order of its retrieved
    documents (``extras``: the grades in ranking order and the judgments)."""
    extras = res.extras
    if not res.has("map") or "grades" not in extras:
        return None
    level = extras["relevance_level"]
    aps, expected, worst = [], [], []
    for ap, grades, judged in zip(res.ap, extras["grades"], extras["qrels_grades"]):
        n_relevant = sum(1 for g in judged.values() if g >= level)
        hits = sum(1 for g in grades if g is not None and g >= level)
        if n_relevant and hits:
            aps.append(float(ap))
            expected.append(hits / n_relevant * expected_random_ap(len(grades), hits))
            worst.append(hits / n_relevant * worst_ap(len(grades), hits))
    return below_random_warning(aps, expected, worst, "the run's scores (a higher score must rank first)")
