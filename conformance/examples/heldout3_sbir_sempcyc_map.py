"""mAP@all / mAP@200 of sketch-based image retrieval as SEM-PCYC evaluates it (sklearn AP per query).

Reproduces AnjanDutta/sem-pcyc@2e083fa ``src/utils.py`` ``apsak`` (+ ``aps``) and the
``np.mean(valid_data['aps@all'])`` of ``src/test.py``: the gallery of each sketch query is ordered
by ``(-sim).argsort()`` (numpy's default quicksort: tied images in no promised order) and cut to
the first k (k=None: every image); queries with no relevant image in that cut score 0 (they stay
in the mean); every other query gets scikit-learn's ``average_precision_score(relevance_k,
sim_k)`` on its cut list, i.e. AP over score thresholds (a tie group enters at once) divided by the
relevant images inside the cut.  The mean is over all queries.  (The original allocates the
result with ``np.float``, removed in numpy >= 1.24; a plain float array is used here.)

Wrapper (``distances-relevance``): sim = -distances (SEM-PCYC uses exp(-euclidean), a monotone
map of the same order); relevance ("same class" in ``str_sim``) is passed as 0/1 integers.
"""

import numpy as np
from sklearn.metrics import average_precision_score


def aps_at_k(sim, str_sim, k=None):
    idx = (-sim).argsort()[:, :k]
    sim_k = np.take_along_axis(sim, idx, axis=1)
    str_sim_k = np.take_along_axis(str_sim, idx, axis=1)
    out = np.zeros(sim.shape[0], dtype=float)
    for q in np.where(str_sim_k.sum(axis=1) != 0)[0]:
        out[q] = average_precision_score(str_sim_k[q], sim_k[q])
    return out


def map_at_k(distances, relevance, k=None):
    sim = -np.asarray(distances, dtype=np.float64)
    str_sim = np.asarray(relevance).astype(bool).astype(int)
    return float(np.mean(aps_at_k(sim, str_sim, k)))
