"""ReID extras: CUHK03's single-gallery-shot CMC with repeated sampling under an explicit seed.

CUHK03's "single-gallery-shot" protocol keeps, for every query and every repeat, one random
gallery item per identity (junk removed first), computes the CMC on what is left, and averages
the repeats (spec §7).  torchreid draws with an unseeded global RNG; here the draws come
from ``random.Random(seed)`` in a documented order, so the result is repeatable everywhere:
queries in order, repeats in order, identities in the order they first appear in the ranking
(stable ties), one ``randrange(count)`` per identity.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Dict, List

import numpy as np
from retrieval_conformance.reference.contract.evaluate import build_problem
from retrieval_conformance.reference.contract.validation import max_rank_value, positive_int


def cuhk03_single_shot_cmc(
    distances, query_ids, db_ids, query_cams, db_cams, max_rank: int = 50, repeats: int = 10, seed: int = 0
) -> Dict[str, object]:
    """Single-gallery-shot CMC averaged over ``repeats`` samplings, exactly.

    Returns ``{"cmc": [Fraction] * max_rank, "queries": counted, "skipped": [indices]}``;
    queries without a valid match are skipped, as torchreid does.
    """
    max_rank = max_rank_value(max_rank)
    repeats = positive_int("repeats", repeats)
    problem = build_problem(
        distances=distances, query_labels=query_ids, db_labels=db_ids, query_cams=query_cams, db_cams=db_cams
    )
    if problem.multi_label:
        raise ValueError("query_ids: expected one id per query (1-D), got multi-hot labels")
    rng = random.Random(seed)
    total = [Fraction(0)] * max_rank
    counted, skipped = 0, []
    for q in range(problem.n_queries):
        qid, qcam = int(problem.query_labels[q]), int(problem.query_cams[q])
        row = problem.distances[q]
        order = sorted(range(problem.n_gallery), key=lambda i: float(row[i]))  # stable ties
        valid = [i for i in order if not (int(problem.db_labels[i]) == qid and int(problem.db_cams[i]) == qcam)]
        if not any(int(problem.db_labels[i]) == qid for i in valid):
            skipped.append(q)
            continue
        by_id: Dict[int, List[int]] = {}
        for i in valid:  # identities in order of first appearance
            by_id.setdefault(int(problem.db_labels[i]), []).append(i)
        curve = [Fraction(0)] * max_rank
        for _ in range(repeats):
            kept = sorted(items[rng.randrange(len(items))] for items in by_id.values())
            kept_ranked = [i for i in valid if i in set(kept)]
            first = next(r for r, i in enumerate(kept_ranked, 1) if int(problem.db_labels[i]) == qid)
            for j in range(max_rank):
                curve[j] += int(first <= j + 1)
        total = [t + c / repeats for t, c in zip(total, curve)]
        counted += 1
    cmc = [t / counted for t in total] if counted else [Fraction(0)] * max_rank
    return {"cmc": cmc, "cmc_float": np.array([float(c) for c in cmc]), "queries": counted, "skipped": skipped}
