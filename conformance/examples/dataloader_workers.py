"""A correct ``hashing`` mAP@k whose queries go through a torch ``DataLoader(num_workers=2)``.

Evaluation loops written for training code batch the queries with a ``DataLoader`` and let its
worker processes compute; here each item of the dataset is one query's AP@k (seed 000's
``CalcTopMap``: stable sort, AP@k over the hits in the top k, a query without a hit counts 0).
The harness's worker must be allowed to start the loader's processes, and none may outlive the
call.  Expected: conforms to ``--protocol hashing``.
"""

import numpy as np
from retrieval_conformance.conformance.examples.hashing_correct import calc_top_map


class QueryAPs:
    """A map-style dataset: item ``q`` is the AP@k of query ``q``."""

    def __init__(self, qB, rB, query_L, retrieval_L, topk):
        self.qB, self.rB, self.query_L, self.retrieval_L, self.topk = qB, rB, query_L, retrieval_L, topk

    def __len__(self):
        return self.query_L.shape[0]

    def __getitem__(self, q):
        return calc_top_map(self.qB[q : q + 1], self.rB, self.query_L[q : q + 1], self.retrieval_L, self.topk)


def calc_map(qB, rB, query_L, retrieval_L, topk):
    """hashing mAP@topk, the queries in batches of 4 from two loader processes."""
    from torch.utils.data import DataLoader

    loader = DataLoader(QueryAPs(qB, rB, query_L, retrieval_L, topk), batch_size=4, num_workers=2)
    aps = [float(ap) for batch in loader for ap in batch]
    return float(np.mean(aps))
