"""Zero-shot code-to-code search MAP as UniXcoder's ``zero-shot-search/run.py`` computes it.

Reproduces microsoft/CodeBERT@c0de43d ``UniXcoder/downstream-tasks/zero-shot-search/run.py``
``evaluate``: candidates ordered by ``np.argsort(scores, kind='quicksort')[:, ::-1]`` (unstable
ascending sort read backwards); the query's own entry is skipped (``cont``); each candidate with
the query's label adds precision (hits so far)/(position) ; a query's AP is the mean of these
precisions over all its relevant candidates (no cut-off); queries without a relevant candidate
are left out of the mean (``if len(Avep) != 0``).

Wrapper: scores = -distances; relevance row = same label; the query is not in the gallery given
by the harness, so no entry is skipped (its index never matches a candidate's).
"""

import numpy as np


def mean_ap(distances, relevance):
    scores = -np.asarray(distances, float)
    relevance = np.asarray(relevance, bool)
    sort_ids = np.argsort(scores, axis=-1, kind="quicksort")[:, ::-1]
    MAP = []
    for i in range(scores.shape[0]):
        cont, avep = 0, []
        for j, index in enumerate(list(sort_ids[i])):
            if index == -1:  # the query's own index; never present here
                cont += 1
                continue
            if relevance[i, index]:
                avep.append((len(avep) + 1) / (j + 1 - cont))
        if len(avep) != 0:
            MAP.append(sum(avep) / len(avep))
    return float(np.mean(MAP))
