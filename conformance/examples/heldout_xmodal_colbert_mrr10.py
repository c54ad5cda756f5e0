"""MS MARCO passage MRR@10 as ColBERT's evaluation utility computes it (cut-off 10 built in).

Reproduces stanford-futuredata/ColBERT@501c29d ``utility/evaluate/msmarco_passages.py``
``main``: the ranked list of each judged query is walked in rank order; the first positive
contributes 1/rank only when rank <= 10 (the cut-off is hard-coded; a later first positive
scores 0); the sum is divided by the number of judged queries (queries with a positive in the
qrels).  The script asserts that every ranked query is judged, so a ranked query without a
positive raises AssertionError.

Wrapper: the ranking "file" is produced from the distances with a stable ascending sort (the
order ColBERT's ranking file records); qrels hold only the positive pairs; junk passages are left
out of the ranked list.  There is no cut-off parameter: the MRR is reported at 10.
"""

from collections import defaultdict

import numpy as np


def msmarco_mrr10(qid2positives, qid2ranking):
    assert set(qid2ranking.keys()).issubset(set(qid2positives.keys()))
    qid2mrr = {}
    for qid in qid2positives:
        for rank, pid in enumerate(qid2ranking[qid]):
            rank = rank + 1
            if pid in qid2positives[qid]:
                if rank <= 10:
                    qid2mrr[qid] = 1.0 / rank
                break
    return sum(qid2mrr.values()) / len(qid2positives)


def mrr(distances, relevance, junk):
    distances, relevance, junk = np.asarray(distances, float), np.asarray(relevance, bool), np.asarray(junk, bool)
    positives, ranking = defaultdict(list), defaultdict(list)
    for q in range(len(distances)):
        for j in np.flatnonzero(relevance[q] & ~junk[q]):
            positives[q].append(int(j))
        for j in np.argsort(distances[q], kind="stable"):
            if not junk[q, j]:
                ranking[q].append(int(j))
    return msmarco_mrr10(dict(positives), dict(ranking))
