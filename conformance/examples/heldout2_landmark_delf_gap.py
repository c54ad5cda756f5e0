"""Global Average Precision (GAP, micro-AP) of landmark recognition, in the manner of DELF's module.

tensorflow/models @ e4009b2, ``research/delf/delf/python/datasets/google_landmarks_dataset/metrics.py``,
``GlobalAveragePrecision(predictions, recognition_solution)``.  One prediction (class, score) per
test image; the predictions are ordered by score descending with Python's stable ``sorted``
(pre-sorted by image key, then class, ascending), so tied scores keep key order; the precision at
each correct prediction is summed and divided by the number of test images that HAVE a ground
truth (a non-landmark image's prediction is always wrong); no such image: ``ZeroDivisionError``.

Wrapper for the ``sklearn`` adapter (``gap_sklearn``): item i is test image i (key i, so gallery
order is key order), predicted class 1 with score ``y_score[i]``; its ground truth is [1] when
``y_true[i]`` is 1 and empty otherwise.
"""


def global_average_precision(predictions, solution):
    """predictions: {key: {'class': c, 'score': s}}, solution: {key: [classes]} -> GAP."""
    n_expected = sum(1 for classes in solution.values() if classes)
    by_key = sorted(predictions.items(), key=lambda kv: (kv[0], kv[1]["class"]))
    ordered = sorted(by_key, key=lambda kv: kv[1]["score"], reverse=True)
    gap, seen, correct = 0.0, 0, 0
    for key, pred in ordered:
        seen += 1
        if pred["class"] in solution[key]:
            correct += 1
            gap += correct / seen
    return gap / n_expected


def gap_sklearn(y_true, y_score):
    """Adapter ``sklearn``: y_true in {0, 1}, y_score higher is better."""
    preds = {i: {"class": 1, "score": float(s)} for i, s in enumerate(y_score)}
    sol = {i: ([1] if t else []) for i, t in enumerate(y_true)}
    return global_average_precision(preds, sol)
