"""The source code of a zoo function, written as a lab writes it: a loop over queries, an argsort,
its own AP, its own mean.  Nothing here calls the reference or the harness.

:func:`write` turns a :class:`~.recipes.Recipe` into ``(function name, source)``.  Each behaviour
is one small change to the lab's code: the sort key and tie-break of the ranking, the rank terms,
the divisor, what an empty query adds, the cut-off, the mean, the returned number.  ``style``
picks between equivalent spellings (numpy vectors or a Python loop over ranks) so that the zoo
does not test one way of writing each rule.
"""

from __future__ import annotations

from typing import List, Tuple

from retrieval_conformance.conformance.zoo.catalogue import RAISE_TRIGGERS
from retrieval_conformance.conformance.zoo.code_parts import (
    HEADER,
    ap_divisor,
    ap_terms,
    cut_line,
    empty_lines,
    finish,
    first_query,
    loop_end,
    per_query_head,
    ranking_expression,
    signature_k,
    stop_lines,
)
from retrieval_conformance.conformance.zoo.landmark_template import oxford
from retrieval_conformance.conformance.zoo.rank_templates import pml, sklearn_ndcg
from retrieval_conformance.conformance.zoo.recipes import Recipe


def _ap_function(
    recipe: Recipe, name: str, params: str, queries: str, relevance: List[str], distance: str, k: str = "k"
) -> str:
    lines = per_query_head(recipe, relevance, distance, params, name)
    lines += [
        f"        order = {ranking_expression(recipe, 'dist', 'rel')}",
        "        ranked = rel[order]",
        "        R = int(ranked.sum())",
        cut_line(recipe, k),
        "        if R == 0:",
        *empty_lines(recipe, "scores", "            "),
    ]
    lines += stop_lines(recipe, "first-relevant")
    base = "np.flatnonzero(ranked)" if recipe.option("ap_at_k") == "dcmh" else "np.flatnonzero(ranked[:cut])"
    if recipe.option("ap_at_k") == "dcmh":
        base += "[: min(cut, R)]"
    offset = "" if recipe.variant("zero-based-ranks") is not None else " + 1"
    lines.append(f"        hits = {base}{offset}")
    if recipe.option("empty") == "skip_no_hit":
        lines += ["        if not ranked[:cut].any():", "            continue"]
    lines.append("        if hits.size == 0:")
    if first_query(recipe)[0] == "first-hit":
        lines.append("            continue")
    else:
        lines += ["            scores.append(0.0)", "            continue"]
    lines += stop_lines(recipe, "first-hit")
    lines += ap_terms(recipe)
    lines.append(f"        scores.append(total / {ap_divisor(recipe, k)})")
    lines += loop_end(recipe, "scores")
    return "\n".join(lines).replace("QUERIES", queries) + "\n"


def _rank_function(recipe: Recipe, name: str, params: str, relevance: List[str], reciprocal: bool) -> str:
    """Recall@k (``recall-at-k``) or, ``reciprocal``, the reciprocal rank after junk is dropped
    (``mrr``) per query, then the mean."""
    lines = per_query_head(recipe, relevance, "distances[q]", params, name)
    counting_junk = recipe.variant("mrr-counting-junk") is not None
    if reciprocal and not counting_junk:
        lines += ["        keep = ~junk[q]", "        dist, rel = dist[keep], rel[keep]"]
    lines += [
        f"        order = {ranking_expression(recipe, 'dist', 'rel')}",
        "        ranked = rel[order]",
        "        R = int(ranked.sum())",
        cut_line(recipe, "k"),
        "        if R == 0:",
        *empty_lines(recipe, "scores", "            "),
    ]
    lines += stop_lines(recipe, "first-relevant")
    lines.append("        found = int(ranked[:cut].sum())")
    if recipe.option("empty") == "skip_no_hit" or first_query(recipe)[0] == "first-hit":
        lines += ["        if found == 0:", "            continue"]
    if first_query(recipe)[0] == "first-hit":
        lines += ["        if found:", "            stop = True"]
    if reciprocal:
        lines += [
            "        first = np.flatnonzero(ranked[:cut])",
            "        scores.append(1.0 / (first[0] + 1) if first.size else 0.0)",
        ]
    elif recipe.option("recall") == "hit":
        lines.append("        scores.append(1.0 if found else 0.0)")
    else:
        lines.append("        scores.append(found / R)")
    lines += loop_end(recipe, "scores")
    return "\n".join(lines).replace("QUERIES", "distances") + "\n"


def _reid_function(recipe: Recipe, name: str) -> str:
    """A torchreid-style ``eval_market1501``: junk by same id and camera, CMC, AP and INP."""
    junk_kept = recipe.variant("junk-kept") is not None
    lines = [
        f"def {name}(distmat, q_pids, g_pids, q_camids, g_camids, max_rank=50):",
        "    num_q, num_g = distmat.shape",
    ]
    if recipe.cmc_length == "gallery":
        lines += ["    if num_g < max_rank:", "        max_rank = num_g"]
    lines += ["    all_cmc, scores, all_inp = [], [], []", "    for q in range(num_q):"]
    lines += [
        "        dist = distmat[q]",
        "        rel = g_pids == q_pids[q]",
        "        junk = rel & (g_camids == q_camids[q])",
    ]
    if junk_kept:
        lines.append("        rel = rel & ~junk")
    elif recipe.variant("junk-judged-by-relevance") is None:  # else: nothing removed, judged by id
        lines += ["        dist, rel = dist[~junk], rel[~junk]"]
    lines += [
        f"        order = {ranking_expression(recipe, 'dist', 'rel')}",
        "        ranked = rel[order]",
        "        R = int(ranked.sum())",
        "        if R == 0:",
        *empty_lines(recipe, "scores", "            ", cmc=True),
        "        cmc = np.minimum(np.cumsum(ranked), 1).astype(np.float64)",
    ]
    if recipe.cmc_length == "gallery":
        lines.append("        all_cmc.append(cmc[:max_rank])")
    else:
        lines.append("        all_cmc.append(np.pad(cmc, (0, max(0, max_rank - cmc.size)), mode='edge')[:max_rank])")
    lines += [
        "        hits = np.flatnonzero(ranked) + 1",
        "        all_inp.append(R / hits[-1])",
    ]
    lines += ap_terms(recipe)
    lines += [
        "        scores.append(total / R)",
        "    if not scores:",
        "        raise ValueError('no query has a match')",
    ]
    if recipe.cmc_length == "gallery":
        lines.append("    width = min(c.size for c in all_cmc)")
        lines.append("    cmc = np.mean([c[:width] for c in all_cmc], axis=0)")
    else:
        lines.append("    cmc = np.mean(all_cmc, axis=0)")
    lines.append(
        f"    return {finish(recipe, 'cmc')}, {finish(recipe, 'float(np.mean(scores))')}, "
        f"{finish(recipe, 'float(np.mean(all_inp))')}"
    )
    text = "\n".join(lines) + "\n"
    decimals = recipe.variant("rounded")
    if decimals:  # round() of an array is np.round
        text = text.replace(f"round(cmc, {decimals})", f"np.round(cmc, {decimals})")
    return text


def _hashing_codes(recipe: Recipe, name: str) -> str:
    k = signature_k(recipe, "topk")
    if recipe.variant("exact-label-match") is not None:
        relevance = ["        rel = (retrieval_L == query_L[q]).all(axis=1)"]
    else:
        relevance = ["        rel = (query_L[q] @ retrieval_L.T) > 0"]
    params = f"qB, rB, query_L, retrieval_L, {k}"
    return _ap_function(recipe, name, params, "query_L", relevance, "0.5 * (qB.shape[1] - qB[q] @ rB.T)", "topk")


def _distances_relevance(recipe: Recipe, name: str) -> str:
    params = f"distances, relevance, {signature_k(recipe, 'k')}"
    return _ap_function(recipe, name, params, "distances", ["        rel = relevance[q]"], "distances[q]")


def _recall_at_k(recipe: Recipe, name: str) -> str:
    params = f"distances, relevance, {signature_k(recipe, 'k')}"
    return _rank_function(recipe, name, params, ["        rel = relevance[q]"], reciprocal=False)


def _mrr(recipe: Recipe, name: str) -> str:
    params = f"distances, relevance, junk, {signature_k(recipe, 'k')}"
    return _rank_function(recipe, name, params, ["        rel = relevance[q]"], reciprocal=True)


def _one_query(recipe: Recipe, name: str, params: str, labels: str, scores: str, k: str = "") -> str:
    """One query's AP from labels and scores: the items sorted by score, largest first, its own
    rank terms; with ``k``, the top k (a cut-off parameter, None for the whole list)."""
    if recipe.variant("cut-at-r") is not None:
        cut = "R"
    elif k and recipe.variant("topk-ignored") is None:
        cut = f"(ranked.size if {k} is None else min({k}, ranked.size))"
    else:
        cut = "ranked.size"
    offset = "" if recipe.variant("zero-based-ranks") is not None else " + 1"
    empty_value = "1.0" if recipe.variant("empty-scores-one") is not None else "0.0"
    if recipe.option("ties") == "grouped":
        return _thresholds_ap(recipe, name, params, labels, scores, empty_value)
    lines = [
        f"def {name}({params}):",
        f"    rel = np.asarray({labels}) > 0",
        f"    dist = -np.asarray({scores}, dtype=np.float64)",
        f"    order = {ranking_expression(recipe, 'dist', 'rel')}",
        "    ranked = rel[order]",
        "    R = int(ranked.sum())",
        "    if R == 0:",
        f"        return {finish(recipe, empty_value)}",
        f"    cut = {cut}",
    ]
    if recipe.option("ap_at_k") == "dcmh":
        lines.append(f"    hits = np.flatnonzero(ranked)[: min(cut, R)]{offset}")
    else:
        lines.append(f"    hits = np.flatnonzero(ranked[:cut]){offset}")
    lines += ["    if hits.size == 0:", f"        return {finish(recipe, '0.0')}"]
    lines += [line[4:] for line in ap_terms(recipe)]  # written for a loop body: one level less here
    divisor = ap_divisor(recipe, k) if k else "R"
    lines.append(f"    return {finish(recipe, f'total / {divisor}')}")
    return "\n".join(lines) + "\n"


def _thresholds_ap(recipe: Recipe, name: str, params: str, labels: str, scores: str, empty_value: str) -> str:
    """scikit-learn's AP of one query: precision and the step in recall at each distinct score,
    every item of a group of equal scores counted at once (``ties=grouped``)."""
    key = "dist" if recipe.variant("descending") is None else "(-dist)"
    lines = [
        f"def {name}({params}):",
        f"    rel = np.asarray({labels}) > 0",
        f"    dist = -np.asarray({scores}, dtype=np.float64)",
        "    R = int(rel.sum())",
        "    if R == 0:",
        f"        return {finish(recipe, empty_value)}",
    ]
    if recipe.style:  # a loop over the thresholds, as precision_recall_curve walks them
        lines += [
            "    total, before = 0.0, 0.0",
            f"    for t in np.unique({key}):",
            f"        top = {key} <= t",
            "        found = rel[top].sum()",
            "        total += (found / R - before) * (found / top.sum())",
            "        before = found / R",
            f"    return {finish(recipe, 'float(total)')}",
        ]
    else:
        lines += [
            f"    _, group = np.unique({key}, return_inverse=True)",
            "    ends = np.cumsum(np.bincount(group))",
            "    in_group = np.bincount(group, weights=rel)",
            "    total = float((in_group * np.cumsum(in_group) / ends).sum())",
            f"    return {finish(recipe, 'total / R')}",
        ]
    return "\n".join(lines) + "\n"


def _sklearn(recipe: Recipe, name: str) -> str:
    """``average_precision_score(y_true, y_score)`` as a lab writes it: no cut-off."""
    return _one_query(recipe, name, "y_true, y_score", "y_true", "y_score")


def _torchmetrics(recipe: Recipe, name: str) -> str:
    """``retrieval_average_precision(preds, target, top_k)`` as a lab writes it (tensors read by numpy)."""
    return _one_query(recipe, name, f"preds, target, {signature_k(recipe, 'top_k')}", "target", "preds", "top_k")


#: the writer of each adapter of ``recipes.TEMPLATES``: the function a lab writes behind its signature
_WRITERS = {
    "hashing-codes": _hashing_codes,
    "distances-relevance": _distances_relevance,
    "recall-at-k": _recall_at_k,
    "mrr": _mrr,
    "reid": _reid_function,
    "sklearn": _sklearn,
    "torchmetrics": _torchmetrics,
    "sklearn-ndcg": sklearn_ndcg,
    "pml": pml,
    "oxford": oxford,
}


#: the cut-off parameter and the gallery's size in each template with a cut-off (where it raises)
_CUTOFF = {
    "hashing-codes": ("topk", "rB.shape[0]"),
    "distances-relevance": ("k", "distances.shape[1]"),
    "recall-at-k": ("k", "distances.shape[1]"),
    "mrr": ("k", "distances.shape[1]"),
    "torchmetrics": ("top_k", "np.asarray(preds).size"),
}


def _raise_lines(recipe: Recipe) -> List[str]:
    """The checks a lab puts first: each trigger's own exception."""
    lines = []
    for trigger in recipe.raises:
        _, error, condition = RAISE_TRIGGERS[trigger]
        k, n = _CUTOFF[recipe.adapter]
        lines += [f"    if {condition.format(k=k, n=n)}:", f"        raise {error}('{k}: {trigger} is not supported')"]
    return lines


def write(recipe: Recipe) -> Tuple[str, str]:
    """(function name, module source) of the zoo function of ``recipe``."""
    name = f"zoo_{recipe.index:05d}"
    writer = _WRITERS.get(recipe.adapter)
    if writer is None:
        raise ValueError(f"adapter: the zoo has no template for {recipe.adapter!r}; it has {', '.join(_WRITERS)}")
    head, body = writer(recipe, name).split("\n", 1)  # the checks go right after the def line
    return name, HEADER + "\n".join([head, *_raise_lines(recipe), body])
