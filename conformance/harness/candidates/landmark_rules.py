"""What landmark AP code does with names the protocol's usual inputs never hold, modelled exactly.

A function ``f(positives, junk, ranked_list)`` meets, on real ground truth and real ranked lists,
inputs the generated ones never have: a name both positive and junk, a name ranked twice, a
positive listed twice, a positive missing from a truncated list, junk names where the protocol
has none.  Real code differs there, one behaviour at a time (:data:`BEHAVIOURS`):

* ``overlap``: a name both positive and junk is skipped as junk yet counted in |P| (``junk``,
  ``compute_ap.cpp``, spec §5 oxford positive also junk), kept as a hit that still shifts later
  positives as junk (``positive``, revisitop, spec §5 revisitop positive also junk), or skipped and
  left out of |P| (``uncounted``: the junk list subtracted from the positives), whatever ``count``;
* ``repeats``: a name ranked twice is a hit each time (``each``: compute_ap.cpp, revisitop) or
  skipped after its first place, keeping its position (``once``: GLDv2);
* ``count``: |P| is the number of distinct positives (``set``: compute_ap.cpp), the length of the
  list (``list``: revisitop, GLDv2) or the positives found in the ranked list (``found``);
* ``junk``: junk names are removed before ranking (``removed``) or ranked as wrong predictions
  (``kept``: code without a junk notion).

:func:`landmark_ap` computes one query's AP under a choice of each, exactly; :data:`EDGE_INPUTS`
are the smallest inputs on which one behaviour alone changes the value.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, Hashable, List, Optional, Sequence, Tuple

#: the AP rule of a function with the known bug ``previous-hit-trapezoid`` (its id, spec §11): the
#: trapezoid's left side is the precision at the previous hit, 1 before the first
PREVIOUS_HIT = "previous-hit-trapezoid"

#: behaviour -> its values, the first being what the spec's clause names for it
BEHAVIOURS: Dict[str, Tuple[str, ...]] = {
    "overlap": ("junk", "positive", "uncounted"),
    "repeats": ("each", "once"),
    "count": ("set", "list", "found", "positions"),
    "junk": ("removed", "kept"),
}
MEANING = {
    ("overlap", "junk"): "a name both positive and junk is skipped as junk, yet still counted in |P| "
    "(compute_ap.cpp; spec §5 oxford positive also junk)",
    ("overlap", "positive"): "a name both positive and junk counts as a hit and still shifts later positives as "
    "junk (revisitop; spec §5 revisitop positive also junk)",
    ("overlap", "uncounted"): "a name both positive and junk is skipped as junk and left out of |P| (the junk "
    "list subtracted from the positives first)",
    ("repeats", "each"): "a name ranked twice is a hit each time (compute_ap.cpp, revisitop; spec §5 oxford "
    "repeated names)",
    ("repeats", "once"): "a name ranked again is skipped but keeps its position (GLDv2; spec §9 preset=gldv2)",
    ("count", "set"): "|P| counts distinct positives (compute_ap.cpp)",
    ("count", "list"): "|P| is the length of the positive list, duplicates included (revisitop, GLDv2; "
    "spec §5 revisitop positives not de-duplicated)",
    ("count", "found"): "|P| counts only the positives found in the ranked list (a positive missing from a "
    "truncated list costs nothing)",
    ("count", "positions"): "|P| counts the ranked positions that hold a positive (a positive ranked twice "
    "counts twice, one missing from the list costs nothing: DELF's revisited-dataset metrics)",
    ("junk", "removed"): "junk names are removed before ranking (spec §3 junk is removed before ranking)",
    ("junk", "kept"): "junk names are ranked as wrong predictions (no junk notion, as GLDv2's metric)",
}
#: what each landmark protocol does (a behaviour it does not name is outside it)
PROTOCOL_RULES: Dict[str, Dict[str, str]] = {
    "oxford": {"overlap": "junk", "repeats": "each", "count": "set", "junk": "removed"},
    "roxford-easy": {"overlap": "positive", "repeats": "each", "count": "list", "junk": "removed"},
    "roxford-medium": {"overlap": "positive", "repeats": "each", "count": "list", "junk": "removed"},
    "roxford-hard": {"overlap": "positive", "repeats": "each", "count": "list", "junk": "removed"},
    "gldv2": {"repeats": "once", "count": "list"},
}
#: the clause each protocol's behaviour is defined by (cited when a function does otherwise)
PROTOCOL_CLAUSES = {
    ("oxford", "overlap"): "spec §5 oxford positive also junk",
    ("oxford", "repeats"): "spec §5 oxford repeated names",
    ("oxford", "count"): "spec §5 oxford compute_ap",
    ("oxford", "junk"): "spec §3 junk is removed before ranking",
    ("roxford", "overlap"): "spec §5 revisitop positive also junk",
    ("roxford", "repeats"): "spec §5 revisitop positive also junk",
    ("roxford", "count"): "spec §5 revisitop positives not de-duplicated",
    ("roxford", "junk"): "spec §3 junk is removed before ranking",
    ("gldv2", "repeats"): "spec §9 preset=gldv2",
    ("gldv2", "count"): "spec §9 preset=gldv2",
}


def protocol_clause(protocol: str, behaviour: str) -> str:
    key = "roxford" if protocol.startswith("roxford") else protocol
    return PROTOCOL_CLAUSES[(key, behaviour)]


def landmark_ap(
    ranked: Sequence[Hashable],
    positives: Sequence[Hashable],
    junk: Sequence[Hashable],
    *,
    ap_rule: str,
    overlap: str = "junk",
    repeats: str = "each",
    count: str = "set",
    junk_rule: str = "removed",
    k: Optional[int] = None,
) -> Optional[Fraction]:
    """One query's AP, exact, under one choice of each behaviour (None: |P| = 0, no value).

    Ranks are 1-based after junk removal (revisitop's positions: index minus the junk before
    it, so a positive-and-junk name shares the next name's rank).  With the i-th hit at rank r:

        precision_sum:  AP = (1/n) Σ i / r
        trapezoid:      AP = (1/n) Σ ((i-1)/(r-1) + i/r) / 2,   (i-1)/(r-1) := 1 at r = 1
        previous-hit-trapezoid:  AP = (1/n) Σ ((i-1)/r' + i/r) / 2,  r' the previous hit's rank, 1 for i = 1

    where n = |P| by ``count``; with a cut-off k only names at rank <= k count and n becomes
    min(k, n) (GLDv2's AP@k).
    """
    pos = set(positives)
    jk = set(junk) if junk_rule == "removed" else set()
    junk_before = 0
    seen = set()
    hits: List[Tuple[int, int]] = []
    for i, name in enumerate(ranked):
        is_junk, is_pos = name in jk, name in pos
        if is_junk and not (overlap == "positive" and is_pos):
            junk_before += 1
            continue
        rank = i - junk_before + 1
        junk_before += is_junk  # a positive-and-junk name still shifts later names (revisitop)
        if k is not None and rank > k:
            break
        if repeats == "once" and name in seen:
            continue
        seen.add(name)
        if is_pos:
            hits.append((len(hits) + 1, rank))
    # |P|: the count rule over the positives that count (a skipped positive-and-junk name may not)
    counted = [p for p in positives if not (overlap == "uncounted" and p in jk)]
    counted_set = set(counted)
    n = {
        "set": len(counted_set),
        "list": len(counted),
        "found": len({ranked_name for ranked_name in ranked if ranked_name in counted_set}),
        "positions": sum(1 for ranked_name in ranked if ranked_name in counted_set),
    }[count]
    if k is not None:
        n = min(k, n)
    if n == 0:
        return None
    total = Fraction(0)
    previous = Fraction(1)
    for i, r in hits:
        if ap_rule == PREVIOUS_HIT:
            total += (previous + Fraction(i, r)) / 2
            previous = Fraction(i, r)
        elif ap_rule == "trapezoid":
            before = Fraction(1) if r == 1 else Fraction(i - 1, r - 1)
            total += (before + Fraction(i, r)) / 2
        else:
            total += Fraction(i, r)
    return total / n


@dataclass(frozen=True)
class EdgeInput:
    """A smallest input on which one behaviour alone changes the value."""

    id: str
    behaviour: str
    what: str
    positives: Tuple[str, ...]
    junk: Tuple[str, ...]
    ranked: Tuple[str, ...]


EDGE_INPUTS: Tuple[EdgeInput, ...] = (
    EdgeInput(
        "outside/positive-also-junk",
        "overlap",
        "a name both positive and junk",
        ("img001", "img004"),
        ("img001",),
        ("img002", "img001", "img004", "img003"),
    ),
    EdgeInput(
        "outside/repeated-name",
        "repeats",
        "a positive ranked twice",
        ("img001", "img004"),
        (),
        ("img001", "img002", "img001", "img004", "img003"),
    ),
    EdgeInput(
        "outside/positive-listed-twice",
        "count",
        "a positive listed twice",
        ("img001", "img001", "img004"),
        (),
        ("img001", "img002", "img004", "img003"),
    ),
    EdgeInput(
        "outside/positive-not-ranked",
        "count",
        "a positive missing from the ranked list",
        ("img001", "img004", "img009"),
        (),
        ("img001", "img002", "img004", "img003"),
    ),
    EdgeInput(
        "outside/junk-ranked",
        "junk",
        "junk names in the ranked list",
        ("img001", "img004"),
        ("img002",),
        ("img002", "img001", "img003", "img004"),
    ),
)
