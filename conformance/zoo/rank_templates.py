"""The zoo's templates for the rank metrics besides AP: nDCG behind scikit-learn's signature and
MAP@R, R-precision and precision at 1 behind pytorch-metric-learning's.

Written as a lab writes them: a loop over the rows, an argsort (or, for scikit-learn's averaged
ties, a loop over the groups of equal scores), the lab's own gains, discounts and ideal DCG.
Nothing here calls the reference or the harness.
"""

from __future__ import annotations

from typing import List

from retrieval_conformance.conformance.zoo.code_parts import finish, ranking_expression, signature_k
from retrieval_conformance.conformance.zoo.recipes import Recipe


def _discounts(recipe: Recipe) -> str:
    """The discount of every rank 1 .. n of the row, as an expression."""
    if recipe.option("discount") == "trec_eval_9.0a3":  # 1 at rank 1, then 1 / log2(r)
        return "np.concatenate(([1.0], 1.0 / np.log2(np.arange(2, n + 1))))"
    return "1.0 / np.log2(np.arange(2, n + 2))"


def _gains(recipe: Recipe) -> str:
    return "2.0 ** grades - 1.0" if recipe.option("gain") == "exponential" else "grades"


def _empty_row(recipe: Recipe, outs: List[str], indent: str) -> List[str]:
    """What a row (or query) without a relevant item adds to each list of ``outs``."""
    if recipe.variant("empty-scores-one") is not None:
        return [f"{indent}{out}.append(1.0)" for out in outs] + [f"{indent}continue"]
    if recipe.option("empty") in ("skip", "skip_no_hit"):
        return [f"{indent}continue"]
    return [f"{indent}{out}.append(0.0)" for out in outs] + [f"{indent}continue"]


def _dcg_lines(recipe: Recipe) -> List[str]:
    """``dcg`` of the row from ``gains``, ``disc`` (zero past the cut-off) and the sort key ``key``."""
    if recipe.option("ties") == "expected":  # scikit-learn: a group of equal scores shares its mean gain
        if recipe.style:
            return [
                "        values, group = np.unique(key, return_inverse=True)",
                "        sizes = np.bincount(group)",
                "        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))",
                "        dcg = 0.0",
                "        for g in range(values.size):",
                "            mean_gain = gains[group == g].mean()",
                "            dcg += mean_gain * disc[starts[g] : starts[g] + sizes[g]].sum()",
            ]
        return [
            "        dcg = 0.0",
            "        start = 0",
            "        for value in np.unique(key):",
            "            tied = key == value",
            "            m = int(tied.sum())",
            "            dcg += gains[tied].mean() * disc[start : start + m].sum()",
            "            start += m",
        ]
    return [
        # the optimistic order puts the highest grade first: ~grade sorts it so
        f"        order = {ranking_expression(recipe, 'dist', 'levels')}",
        "        dcg = float((gains[order] * disc).sum())",
    ]


def _grade_lines(recipe: Recipe) -> List[str]:
    """A query's grades as the code reads them: as given, or as a set (every grade above 0 is 1)."""
    if recipe.variant("grades-binarised") is not None:
        return ["        levels = (y_true[q] > 0).astype(np.int64)", "        grades = levels.astype(np.float64)"]
    return ["        grades = y_true[q].astype(np.float64)", "        levels = y_true[q].astype(np.int64)"]


def sklearn_ndcg(recipe: Recipe, name: str) -> str:
    """``ndcg_score(y_true, y_score, k=None)`` as a lab writes it: the mean nDCG@k of the rows."""
    ideal_from_top = recipe.variant("ndcg-ideal-from-retrieved") is not None
    if recipe.variant("topk-ignored") is not None:
        cut = "n"
    else:
        cut = "n if k is None else min(k, n)"
    key = "dist" if recipe.variant("descending") is None else "(-dist)"
    k = signature_k(recipe, "k")
    lines = [
        f"def {name}(y_true, y_score, {'k=None' if k == 'k' else k}):",
        "    y_true = np.asarray(y_true)",
        "    y_score = np.asarray(y_score, dtype=np.float64)",
        "    scores = []",
        "    for q in range(y_true.shape[0]):",
        *_grade_lines(recipe),
        "        rel = grades > 0",
        "        dist = -y_score[q]",
        f"        key = {key}",
        "        n = dist.size",
        f"        cut = {cut}",
        "        if not rel.any():",
        *_empty_row(recipe, ["scores"], "            "),
        f"        disc = {_discounts(recipe)}",
        "        disc[cut:] = 0.0",
        f"        gains = {_gains(recipe)}",
        *_dcg_lines(recipe),
    ]
    if ideal_from_top:  # the bug: the ideal of what the top k holds
        lines += [
            "        best = np.sort(gains[order][:cut])[::-1]",
            "        idcg = float((best * disc[: best.size]).sum())",
            "        if idcg == 0:",
            "            scores.append(0.0)",
            "            continue",
        ]
    else:
        lines += ["        best = np.sort(gains)[::-1]", "        idcg = float((best * disc).sum())"]
    if recipe.option("empty") == "skip_no_hit":
        lines += ["        if not rel[np.argsort(key, kind='stable')][:cut].any():", "            continue"]
    lines += [
        "        scores.append(dcg / idcg)",
        "    value = float(np.mean(scores)) if scores else float('nan')",
        f"    return {finish(recipe, 'value')}",
    ]
    return "\n".join(lines) + "\n"


def pml(recipe: Recipe, name: str) -> str:
    """``AccuracyCalculator.get_accuracy`` as a lab writes it: MAP@R, R-precision and precision
    at 1 over the queries, from Euclidean distances of the embeddings.  A field with an option
    value of its own (``Recipe.field_options``) gets its own ranking or its own empty rule."""
    if recipe.style:  # the vectors are of one norm: a dot product ranks as the distance does
        distances = "    distances = -(query @ reference.T)"
    else:
        distances = "    distances = ((query[:, None, :] - reference[None, :, :]) ** 2).sum(axis=2)"
    own = {field: recipe.for_field(field) for field in ("MAP@R", "R-precision", "P@1")}
    lists = {"MAP@R": "map_r", "R-precision": "r_prec", "P@1": "p1"}
    rankings = {"MAP@R": "ranked"}
    lines = [
        f"def {name}(query, query_labels, reference, reference_labels):",
        "    query = np.asarray(query, dtype=np.float64)",
        "    reference = np.asarray(reference, dtype=np.float64)",
        distances,
        "    map_r, r_prec, p1 = [], [], []",
        "    for q in range(query.shape[0]):",
        "        dist = distances[q]",
        "        rel = np.asarray(reference_labels) == query_labels[q]",
        f"        ranked = rel[{ranking_expression(recipe, 'dist', 'rel')}]",
    ]
    for field in ("R-precision", "P@1"):
        if own[field].option("ties") == recipe.option("ties"):
            rankings[field] = "ranked"
        else:  # this field's own sort
            rankings[field] = f"ranked_{lists[field]}"
            lines.append(f"        {rankings[field]} = rel[{ranking_expression(own[field], 'dist', 'rel')}]")
    lines += ["        R = int(ranked.sum())", "        if R == 0:"]
    for field, out in lists.items():
        if recipe.variant("empty-scores-one") is not None:
            lines.append(f"            {out}.append(1.0)")
        elif own[field].option("empty") == "zero":
            lines.append(f"            {out}.append(0.0)")
    lines += [
        "            continue",
        "        hits = np.flatnonzero(ranked[:R]) + 1",
        "        map_r.append(float((np.arange(1, hits.size + 1) / hits).sum()) / R)",
        f"        r_prec.append(int({rankings['R-precision']}[:R].sum()) / R)",
        f"        p1.append(float({rankings['P@1']}[0]))",
        "    def mean(values):",
        "        return float(np.mean(values)) if values else float('nan')",
        "    return {",
        f"        'mean_average_precision_at_r': {finish(recipe, 'mean(map_r)')},",
        f"        'r_precision': {finish(recipe, 'mean(r_prec)')},",
        f"        'precision_at_1': {finish(recipe, 'mean(p1)')},",
        "    }",
    ]
    return "\n".join(lines) + "\n"
