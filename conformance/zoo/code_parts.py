"""The pieces of code every zoo template is written from: the ranking of one query under a tie
policy, what an empty query adds, the cut-off line, the AP terms and divisor, the loop around the
queries with its stray ``break``, and the returned number (percent, rounded).

Each takes the :class:`~.recipes.Recipe` and returns lines (or an expression) of lab-style
Python; the templates (:mod:`.writer`, :mod:`.rank_templates`) put them together.
"""

from __future__ import annotations

from typing import List, Tuple

from retrieval_conformance.conformance.zoo.recipes import Recipe

HEADER = "import math\n\nimport numpy as np\n\n\n"


def ranking_expression(recipe: Recipe, key: str, rel: str) -> str:
    """The expression ranking the items of one query: smallest ``key`` first, ties by the policy
    (without its first item where the recipe drops it as the query itself)."""
    order = _sorted_expression(recipe, key, rel)
    return f"{order}[1:]" if recipe.variant("first-item-dropped") is not None else order


def _sorted_expression(recipe: Recipe, key: str, rel: str) -> str:
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


def empty_lines(recipe: Recipe, out: str, indent: str, cmc: bool = False) -> List[str]:
    """What a query without a relevant item does: the lines under ``if R == 0:``."""
    if first_query(recipe)[0] in ("first-relevant", "first-hit"):
        return [f"{indent}continue"]  # the loop looks for the query that stops it
    if recipe.variant("empty-scores-one") is not None:
        return [f"{indent}{out}.append(1.0)", f"{indent}continue"]
    if recipe.option("empty") in ("skip", "skip_no_hit"):
        return [f"{indent}continue"]
    lines = [f"{indent}{out}.append(0.0)"]
    if cmc:
        lines += [f"{indent}all_inp.append(0.0)", f"{indent}all_cmc.append(np.zeros(max_rank))"]
    return lines + [f"{indent}continue"]


def finish(recipe: Recipe, value: str) -> str:
    """The returned number: percent or rounded where the recipe says so."""
    if recipe.variant("percent") is not None:
        value = f"100.0 * {value}"
    decimals = recipe.variant("rounded")
    if decimals:
        value = f"round({value}, {decimals})"
    return value


def first_query(recipe: Recipe) -> Tuple[str, str]:
    """(which query stops the loop, how the value is returned) of a stray ``break``, or ("", "")."""
    variant = recipe.variant("first-query-only")
    if not variant:
        return "", ""
    which, how = variant.split(",")
    return which, how


def signature_k(recipe: Recipe, name: str) -> str:
    cutoff = recipe.variant("default-cutoff")
    if cutoff:
        return f"{name}={cutoff}"
    if recipe.variant("last-item-dropped") is not None:
        return f"{name}=-1"
    return name


def ap_terms(recipe: Recipe) -> List[str]:
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


def ap_divisor(recipe: Recipe, k: str) -> str:
    if recipe.variant("divided-by-k") is not None:
        return f"({k} if {k} is not None else ranked.size)"  # the k passed, even beyond the gallery
    if recipe.variant("cut-at-r") is not None:
        return "R"
    return {"hits": "hits.size", "r": "R", "min_k_r": "min(cut, R)", "dcmh": "min(cut, R)"}[recipe.option("ap_at_k")]


def loop_end(recipe: Recipe, out: str) -> List[str]:
    which, how = first_query(recipe)
    lines = []
    if which:
        if how == "divided":
            lines.append(f"    value = sum({out}) / num_query")
        else:
            lines.append(f"    value = {out}[-1] if {out} else 0.0")
    else:
        lines.append(f"    value = float(np.mean({out})) if {out} else float('nan')")
    return lines + [f"    return {finish(recipe, 'value')}"]


def stop_lines(recipe: Recipe, point: str) -> List[str]:
    """``stop = True`` where the stray ``break`` of the first-query bug is armed at ``point``."""
    which, _ = first_query(recipe)
    if which == point:
        return ["        stop = True"]
    return []


def per_query_head(recipe: Recipe, relevance: List[str], distance: str, params: str, name: str) -> List[str]:
    which, _ = first_query(recipe)
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


def cut_line(recipe: Recipe, k: str) -> str:
    if recipe.variant("topk-ignored") is not None:
        return "        cut = ranked.size"
    if recipe.variant("cut-at-r") is not None:
        return "        cut = R"
    if recipe.variant("last-item-dropped") is not None:
        return f"        cut = {k} if {k} >= 0 else ranked.size + {k}"
    return f"        cut = ranked.size if {k} is None else min({k}, ranked.size)"
