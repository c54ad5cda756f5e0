"""nDCG@k computed by pytrec_eval (trec_eval's own C code): each row a query, each column a
document named so that name order is gallery order, every document judged with its grade.

trec_eval ranks by score descending and equal scores by document name descending, i.e. reverse
gallery order here, and discounts every rank r by log2(r + 1) since 9.0.4: under the ``trec``
preset (spec §9 preset=trec) this conforms; it needs ``pytrec_eval`` (``pip install
pytrec-eval-terrier``).

Expected: ``check`` with ``--adapter sklearn-ndcg --protocol trec`` conforms.
"""

import numpy as np


def ndcg_cut(y_true, y_score, k=None):
    import pytrec_eval

    y_true, y_score = np.asarray(y_true), np.asarray(y_score, dtype=np.float64)
    width = len(str(y_true.shape[1]))
    names = [f"d{j:0{width}d}" for j in range(y_true.shape[1])]  # name order = gallery order
    qrels = {f"q{i}": {name: int(g) for name, g in zip(names, row)} for i, row in enumerate(y_true)}
    run = {f"q{i}": {name: float(s) for name, s in zip(names, row)} for i, row in enumerate(y_score)}
    measure = "ndcg" if k is None else f"ndcg_cut.{int(k)}"
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {measure}).evaluate(run)
    key = "ndcg" if k is None else f"ndcg_cut_{int(k)}"
    return float(np.mean([per_query[f"q{i}"][key] for i in range(y_true.shape[0])]))
