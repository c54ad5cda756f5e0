"""Google Landmarks v2 retrieval mAP@100 in the manner of DELF's GLDv2 metrics module.

tensorflow/models @ e4009b2, ``research/delf/delf/python/datasets/google_landmarks_dataset/metrics.py``,
``MeanAveragePrecision(predictions, retrieval_solution, max_predictions=100)``.  Per query: walk the
first ``max_predictions`` positions of the prediction list; a name already seen is skipped but keeps
its position; a new name in the solution list adds (hits so far) / (1-based position); the sum is
divided by min(len(solution list), max_predictions) (the list's length, duplicates included); the
mean divides by the number of queries in the solution (a query with no prediction adds 0).  No
junk notion.  Signature of the ``oxford`` adapter through ``gldv2_query_ap`` (junk not read).
"""


def mean_ap_at(predictions, solution, max_predictions=100):
    """predictions: {query: [names]}, solution: {query: [names]} -> mean AP@max_predictions."""
    total = 0.0
    for query, ranked in predictions.items():
        if query not in solution:
            raise ValueError(f"Test image {query} is not part of retrieval_solution")
        relevant = solution[query]
        seen = set()
        hits = 0
        ap = 0.0
        for i, name in enumerate(ranked[:max_predictions]):
            if name in seen:
                continue
            if name in relevant:
                hits += 1
                ap += hits / (i + 1)
            seen.add(name)
        total += ap / min(len(relevant), max_predictions)
    return total / len(solution)


def gldv2_query_ap(positives, junk, ranked_list):
    """Adapter ``oxford``: one query's AP@100."""
    return mean_ap_at({"q": list(ranked_list)}, {"q": list(positives)})
