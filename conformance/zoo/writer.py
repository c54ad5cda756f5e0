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

from retrieval_conformance.conformance.zoo.recipes import Recipe

_HEADER = "import math\n\nimport numpy as np\n\n\n"


def _order(recipe: Recipe, key: str, rel: str) -> str:
    """The expression ranking the items of one query: smallest ``key`` first, ties by the policy."""
    if recipe.variant("descending") is not None:
        key = f"(-{key})"  # parenthesised: the tie-breaks below take its .size and [::-1]
    ties = recipe.option("ties")
    if ties == "stable":
        return f'np.argsort({key}, kind="stable")'
    if ties == "reverse":
        if recipe.style:
            return f'({key}.size - 1 - np.argsort({key}[::-1], kind="stable"))'
        return f"np.lexsort((-np.arange({key}.size), {key}))"
    if ties == "optimistic":
        return f"np.lexsort((~{rel}, {key}))"
    if ties == "pessimistic":
        return f"np.lexsort(({rel}, {key}))"
    if ties == "unstable":  # numpy's default sort: tied items in an order no policy gives
        return f"np.argsort({key})" if recipe.style else f'np.argsort({key}, kind="quicksort")'
    raise ValueError(f"ties: the writer has no code for {ties!r}")


def _empty(recipe: Recipe, out: str, indent: str, cmc: bool = False) -> List[str]:
    """What a query without a relevant item does: the lines under ``if R == 0:``."""
    if _first_query(recipe)[0] in ("first-relevant", "first-hit"):
        return [f"{indent}continue"]  # the loop looks for the query that stops it
    if recipe.variant("empty-scores-one") is not None:
        return [f"{indent}{out}.append(1.0)", f"{indent}continue"]
    if recipe.option("empty") in ("skip", "skip_no_hit"):
        return [f"{indent}continue"]
    lines = [f"{indent}{out}.append(0.0)"]
    if cmc:
        lines += [f"{indent}all_inp.append(0.0)", f"{indent}all_cmc.append(np.zeros(max_rank))"]
    return lines + [f"{indent}continue"]


def _finish(recipe: Recipe, value: str) -> str:
    """The returned number: percent or rounded where the recipe says so."""
    if recipe.variant("percent") is not None:
        value = f"100.0 * {value}"
    decimals = recipe.variant("rounded")
    if decimals:
        value = f"round({value}, {decimals})"
    return value


def _first_query(recipe: Recipe) -> Tuple[str, str]:
    """(which query stops the loop, how the value is returned) of a stray ``break``, or ("", "")."""
    variant = recipe.variant("first-query-only")
    if not variant:
        return "", ""
    which, how = variant.split(",")
    return which, how


def _signature_k(recipe: Recipe, name: str) -> str:
    cutoff = recipe.variant("default-cutoff")
    if cutoff:
        return f"{name}={cutoff}"
    if recipe.variant("last-item-dropped") is not None:
        return f"{name}=-1"
    return name


def _ap_terms(recipe: Recipe) -> List[str]:
    """Lines computing ``ap`` from ``hits`` (the 1-based ranks of the counted relevant items, or
    0-based under the bug), ``R`` and the cut-off ``cut``."""
    rule = recipe.option("ap_rule")
    if recipe.style:  # a loop over the ranks; the terms summed as the vector style sums them
        lines = ["        terms = []", "        prev = 1.0", "        for i, r in enumerate(hits, start=1):"]
        if recipe.variant("zero-based-ranks") is not None:
            lines.append("            p = i / r if r else math.inf")
        else:
            lines.append("            p = i / r")
        if recipe.variant("previous-hit-trapezoid") is not None:
            lines += ["            terms.append((p + prev) / 2)", "            prev = p"]
        elif rule == "trapezoid":
            lines.append("            terms.append((p + ((i - 1) / (r - 1) if r > 1 else 1.0)) / 2)")
        else:
            lines.append("            terms.append(p)")
        return lines + ["        total = float(np.sum(terms))"]
    if recipe.variant("zero-based-ranks") is not None:
        lines = ["        with np.errstate(divide='ignore'):", "            prec = np.arange(1, hits.size + 1) / hits"]
    else:
        lines = ["        prec = np.arange(1, hits.size + 1) / hits"]
    if recipe.variant("previous-hit-trapezoid") is not None:
        lines.append("        prec = (prec + np.concatenate(([1.0], prec[:-1]))) / 2")
    elif rule == "trapezoid":
        lines += [
            "        left = np.where(hits > 1, np.arange(hits.size) / np.maximum(hits - 1, 1), 1.0)",
            "        prec = (prec + left) / 2",
        ]
    return lines + ["        total = float(prec.sum())"]


def _ap_divisor(recipe: Recipe, k: str) -> str:
    if recipe.variant("divided-by-k") is not None:
        return f"({k} if {k} is not None else ranked.size)"  # the k passed, even beyond the gallery
    if recipe.variant("cut-at-r") is not None:
        return "R"
    return {"hits": "hits.size", "r": "R", "min_k_r": "min(cut, R)", "dcmh": "min(cut, R)"}[recipe.option("ap_at_k")]


def _loop_end(recipe: Recipe, out: str) -> List[str]:
    which, how = _first_query(recipe)
    lines = []
    if which:
        if how == "divided":
            lines.append(f"    value = sum({out}) / num_query")
        else:
            lines.append(f"    value = {out}[-1] if {out} else 0.0")
    else:
        lines.append(f"    value = float(np.mean({out})) if {out} else float('nan')")
    return lines + [f"    return {_finish(recipe, 'value')}"]


def _stop_lines(recipe: Recipe, point: str) -> List[str]:
    """``stop = True`` where the stray ``break`` of the first-query bug is armed at ``point``."""
    which, _ = _first_query(recipe)
    if which == point:
        return ["        stop = True"]
    return []


def _per_query_head(recipe: Recipe, relevance: List[str], distance: str, params: str, name: str) -> List[str]:
    which, _ = _first_query(recipe)
    lines = [f"def {name}({params}):", "    num_query = len(QUERIES)", "    scores = []"]
    if which:
        lines.append("    stop = False")
    lines.append("    for q in range(num_query):")
    if which:
        lines += ["        if stop:", "            break"]
    lines += relevance
    lines.append(f"        dist = {distance}")
    if which == "first":
        lines.append("        stop = True")
    return lines


def _cut_line(recipe: Recipe, k: str) -> str:
    if recipe.variant("topk-ignored") is not None:
        return "        cut = ranked.size"
    if recipe.variant("cut-at-r") is not None:
        return "        cut = R"
    if recipe.variant("last-item-dropped") is not None:
        return f"        cut = {k} if {k} >= 0 else ranked.size + {k}"
    return f"        cut = ranked.size if {k} is None else min({k}, ranked.size)"


def _ap_function(
    recipe: Recipe, name: str, params: str, queries: str, relevance: List[str], distance: str, k: str = "k"
) -> str:
    lines = _per_query_head(recipe, relevance, distance, params, name)
    lines += [
        f"        order = {_order(recipe, 'dist', 'rel')}",
        "        ranked = rel[order]",
        "        R = int(ranked.sum())",
        _cut_line(recipe, k),
        "        if R == 0:",
        *_empty(recipe, "scores", "            "),
    ]
    lines += _stop_lines(recipe, "first-relevant")
    base = "np.flatnonzero(ranked)" if recipe.option("ap_at_k") == "dcmh" else "np.flatnonzero(ranked[:cut])"
    if recipe.option("ap_at_k") == "dcmh":
        base += "[: min(cut, R)]"
    offset = "" if recipe.variant("zero-based-ranks") is not None else " + 1"
    lines.append(f"        hits = {base}{offset}")
    if recipe.option("empty") == "skip_no_hit":
        lines += ["        if not ranked[:cut].any():", "            continue"]
    lines.append("        if hits.size == 0:")
    if _first_query(recipe)[0] == "first-hit":
        lines.append("            continue")
    else:
        lines += ["            scores.append(0.0)", "            continue"]
    lines += _stop_lines(recipe, "first-hit")
    lines += _ap_terms(recipe)
    lines.append(f"        scores.append(total / {_ap_divisor(recipe, k)})")
    lines += _loop_end(recipe, "scores")
    return "\n".join(lines).replace("QUERIES", queries) + "\n"


def _rank_function(recipe: Recipe, name: str, params: str, relevance: List[str], reciprocal: bool) -> str:
    """Recall@k (``recall-at-k``) or, ``reciprocal``, the reciprocal rank after junk is dropped
    (``mrr``) per query, then the mean."""
    lines = _per_query_head(recipe, relevance, "distances[q]", params, name)
    counting_junk = recipe.variant("mrr-counting-junk") is not None
    if reciprocal and not counting_junk:
        lines += ["        keep = ~junk[q]", "        dist, rel = dist[keep], rel[keep]"]
    lines += [
        f"        order = {_order(recipe, 'dist', 'rel')}",
        "        ranked = rel[order]",
        "        R = int(ranked.sum())",
        _cut_line(recipe, "k"),
        "        if R == 0:",
        *_empty(recipe, "scores", "            "),
    ]
    lines += _stop_lines(recipe, "first-relevant")
    lines.append("        found = int(ranked[:cut].sum())")
    if recipe.option("empty") == "skip_no_hit" or _first_query(recipe)[0] == "first-hit":
        lines += ["        if found == 0:", "            continue"]
    if _first_query(recipe)[0] == "first-hit":
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
    lines += _loop_end(recipe, "scores")
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
    else:
        lines += ["        dist, rel = dist[~junk], rel[~junk]"]
    lines += [
        f"        order = {_order(recipe, 'dist', 'rel')}",
        "        ranked = rel[order]",
        "        R = int(ranked.sum())",
        "        if R == 0:",
        *_empty(recipe, "scores", "            ", cmc=True),
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
    lines += _ap_terms(recipe)
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
        f"    return {_finish(recipe, 'cmc')}, {_finish(recipe, 'float(np.mean(scores))')}, "
        f"{_finish(recipe, 'float(np.mean(all_inp))')}"
    )
    text = "\n".join(lines) + "\n"
    decimals = recipe.variant("rounded")
    if decimals:  # round() of an array is np.round
        text = text.replace(f"round(cmc, {decimals})", f"np.round(cmc, {decimals})")
    return text


def _hashing_codes(recipe: Recipe, name: str) -> str:
    k = _signature_k(recipe, "topk")
    if recipe.variant("exact-label-match") is not None:
        relevance = ["        rel = (retrieval_L == query_L[q]).all(axis=1)"]
    else:
        relevance = ["        rel = (query_L[q] @ retrieval_L.T) > 0"]
    params = f"qB, rB, query_L, retrieval_L, {k}"
    return _ap_function(recipe, name, params, "query_L", relevance, "0.5 * (qB.shape[1] - qB[q] @ rB.T)", "topk")


def _distances_relevance(recipe: Recipe, name: str) -> str:
    params = f"distances, relevance, {_signature_k(recipe, 'k')}"
    return _ap_function(recipe, name, params, "distances", ["        rel = relevance[q]"], "distances[q]")


def _recall_at_k(recipe: Recipe, name: str) -> str:
    params = f"distances, relevance, {_signature_k(recipe, 'k')}"
    return _rank_function(recipe, name, params, ["        rel = relevance[q]"], reciprocal=False)


def _mrr(recipe: Recipe, name: str) -> str:
    params = f"distances, relevance, junk, {_signature_k(recipe, 'k')}"
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
    empty = "1.0" if recipe.variant("empty-scores-one") is not None else "0.0"
    lines = [
        f"def {name}({params}):",
        f"    rel = np.asarray({labels}) > 0",
        f"    dist = -np.asarray({scores}, dtype=np.float64)",
        f"    order = {_order(recipe, 'dist', 'rel')}",
        "    ranked = rel[order]",
        "    R = int(ranked.sum())",
        "    if R == 0:",
        f"        return {_finish(recipe, empty)}",
        f"    cut = {cut}",
    ]
    if recipe.option("ap_at_k") == "dcmh":
        lines.append(f"    hits = np.flatnonzero(ranked)[: min(cut, R)]{offset}")
    else:
        lines.append(f"    hits = np.flatnonzero(ranked[:cut]){offset}")
    lines += ["    if hits.size == 0:", f"        return {_finish(recipe, '0.0')}"]
    lines += [line[4:] for line in _ap_terms(recipe)]  # written for a loop body: one level less here
    divisor = _ap_divisor(recipe, k) if k else "R"
    lines.append(f"    return {_finish(recipe, f'total / {divisor}')}")
    return "\n".join(lines) + "\n"


def _sklearn(recipe: Recipe, name: str) -> str:
    """``average_precision_score(y_true, y_score)`` as a lab writes it: no cut-off."""
    return _one_query(recipe, name, "y_true, y_score", "y_true", "y_score")


def _torchmetrics(recipe: Recipe, name: str) -> str:
    """``retrieval_average_precision(preds, target, top_k)`` as a lab writes it (tensors read by numpy)."""
    return _one_query(recipe, name, f"preds, target, {_signature_k(recipe, 'top_k')}", "target", "preds", "top_k")


#: the writer of each adapter of ``recipes.TEMPLATES``: the function a lab writes behind its signature
_WRITERS = {
    "hashing-codes": _hashing_codes,
    "distances-relevance": _distances_relevance,
    "recall-at-k": _recall_at_k,
    "mrr": _mrr,
    "reid": _reid_function,
    "sklearn": _sklearn,
    "torchmetrics": _torchmetrics,
}


def write(recipe: Recipe) -> Tuple[str, str]:
    """(function name, module source) of the zoo function of ``recipe``."""
    name = f"zoo_{recipe.index:05d}"
    writer = _WRITERS.get(recipe.adapter)
    if writer is None:
        raise ValueError(f"adapter: the zoo has no template for {recipe.adapter!r}; it has {', '.join(_WRITERS)}")
    return name, _HEADER + writer(recipe, name)
