"""The zoo's template for a landmark AP function, ``f(positives, junk, ranked_list)``, as a lab
writes it: the positives and junk as sets, a loop over the ranked names, its own AP.

Its landmark name rules (``Recipe.rule``) decide what it does with names the usual inputs never
hold: a name both positive and junk, a name ranked twice, the count |P|, junk at all.  Two
spellings (``style``): the hits' ranks collected first and summed after (revisitop's way), or
compute_ap.cpp's running recall and precision over every name (not for a positive-and-junk name
kept as a hit: its rank is shared with the next name, which the running form cannot say).
"""

from __future__ import annotations

from typing import List

from retrieval_conformance.conformance.zoo.code_parts import finish
from retrieval_conformance.conformance.zoo.recipes import Recipe


def _count_lines(recipe: Recipe) -> List[str]:
    """``n``, the |P| the AP is divided by."""
    if recipe.rule("overlap") == "uncounted":  # the junk list subtracted from the positives first
        lines = ["    counted = [p for p in positives if p not in amb]"]
    else:
        lines = ["    counted = list(positives)"]
    count = recipe.rule("count")
    if count == "list":
        return lines + ["    n = len(counted)"]
    if count == "found":
        return lines + ["    n = len(set(counted) & set(ranked_list))"]
    if count == "positions":  # every ranked place that holds a positive, repeats included
        return lines + ["    n = sum(1 for name in ranked_list if name in set(counted))"]
    return lines + ["    n = len(set(counted))"]


def _ranks_first(recipe: Recipe) -> List[str]:
    """The hits' (i, rank) pairs, junk removed, then the AP summed over them."""
    keeps_overlap = recipe.rule("overlap") == "positive"
    lines = [
        "    hits = []",
        "    skipped = 0",
        "    seen = set()",
        "    for position, name in enumerate(ranked_list):",
    ]
    lines.append("        if name in amb and name not in pos:" if keeps_overlap else "        if name in amb:")
    lines += ["            skipped += 1", "            continue", "        rank = position - skipped + 1"]
    if keeps_overlap:  # a hit, and still junk for the names after it
        lines += ["        if name in amb:", "            skipped += 1"]
    if recipe.rule("repeats") == "once":
        lines += ["        if name in seen:", "            continue", "        seen.add(name)"]
    lines += ["        if name in pos:", "            hits.append((len(hits) + 1, rank))", "    total = 0.0"]
    if recipe.variant("previous-hit-trapezoid") is not None:
        lines += [
            "    previous = 1.0",
            "    for i, r in hits:",
            "        total += (previous + i / r) / 2",
            "        previous = i / r",
        ]
    elif recipe.option("ap_rule") == "trapezoid":
        lines += [
            "    for i, r in hits:",
            "        left = (i - 1) / (r - 1) if r > 1 else 1.0",
            "        total += (left + i / r) / 2",
        ]
    else:
        lines += ["    for i, r in hits:", "        total += i / r"]
    return lines + [f"    return {finish(recipe, 'total / n')}"]


def _running(recipe: Recipe) -> List[str]:
    """compute_ap.cpp's loop: recall and precision after every name, the AP grown at each step."""
    lines = [
        "    old_recall, old_precision, ap = 0.0, 1.0, 0.0",
        "    intersect, j = 0, 0",
        "    seen = set()",
        "    for name in ranked_list:",
        "        if name in amb:",
        "            continue",
    ]
    if recipe.rule("repeats") == "once":  # a name ranked again is a miss at its place
        lines += [
            "        if name in pos and name not in seen:",
            "            intersect += 1",
            "        seen.add(name)",
        ]
    else:
        lines += ["        if name in pos:", "            intersect += 1"]
    lines += [
        "        recall = intersect / n",
        "        precision = intersect / (j + 1.0)",
    ]
    if recipe.variant("previous-hit-trapezoid") is not None:  # the left side moves only at a hit
        lines += [
            "        if recall > old_recall:",
            "            ap += (recall - old_recall) * ((old_precision + precision) / 2.0)",
            "            old_precision = precision",
        ]
    elif recipe.option("ap_rule") == "trapezoid":
        lines += [
            "        ap += (recall - old_recall) * ((old_precision + precision) / 2.0)",
            "        old_precision = precision",
        ]
    else:
        lines.append("        ap += (recall - old_recall) * precision")
    lines += ["        old_recall = recall", "        j += 1", f"    return {finish(recipe, 'ap')}"]
    return lines


def oxford(recipe: Recipe, name: str) -> str:
    """``compute_ap(positives, junk, ranked_list)``: one query's AP from lists of names."""
    lines = [f"def {name}(positives, junk, ranked_list):", "    pos = set(positives)"]
    if recipe.rule("junk") == "kept":  # code without a junk notion: the junk list is never read
        lines.append("    amb = set()")
    else:
        lines.append("    amb = set(junk)")
    lines += _count_lines(recipe)
    running = recipe.style and recipe.rule("overlap") != "positive"
    lines += _running(recipe) if running else _ranks_first(recipe)
    return "\n".join(lines) + "\n"
