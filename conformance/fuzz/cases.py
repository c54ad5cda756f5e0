"""The fuzz campaign's inputs: a valid retrieval problem, then at most one hostile change.

A case is rebuilt from its drawer every time it is needed (:func:`draw_case`), so every
implementation gets fresh objects: a generator is consumed by the first call that reads it,
and an input modified by one implementation must not reach the next.

Each change in :data:`CHANGES` declares what a correct library does with it:

* ``"value"``: the input is valid (an edge of the contract: a tensor, a list, a negative
  stride, a huge ``k``); every implementation must return the reference's numbers;
* ``"error"``: the input is invalid; every implementation must raise the same
  ``ValueError``/``TypeError``, whose message names the argument, before computing;
* ``"either"``: the library may accept or reject (both are documented outcomes), but must do
  one of the two cleanly.

A change may also name a *twin*: the same problem written the plain way, whose result must be
identical bit for bit (``"same"``) or equal in the fields a huge cut-off leaves unchanged
(``"same_uncut"``).
"""

from __future__ import annotations

from retrieval_conformance.conformance.problems.evaluate_inputs import evaluate_problem

from .case import Case
from .changes import CHANGES, Change

__all__ = ["CHANGES", "Case", "Change", "draw_case"]


def draw_case(d) -> Case:
    """A case: a valid problem (about a third of the time as it is), or one change applied."""
    kw = evaluate_problem(d)
    if d.chance(0.3):
        return _grouped_cutoff(Case(kw))
    weights = [c.weight for c in CHANGES]
    pick = d.integer(0, sum(weights) - 1)
    for change in CHANGES:
        pick -= change.weight
        if pick < 0:
            break
    case = change.apply(d, kw)
    if case is None:  # not applicable here (no such argument, torch absent, ...): the plain problem
        case = Case(kw, notes=[f"{change.name} not applicable"])
    return _grouped_cutoff(case)


def _grouped_cutoff(case: Case) -> Case:
    """Under ``ties="grouped"`` a cut-off inside a tie group is a documented error (spec §6)."""
    kw = case.kwargs
    if case.expect == "value" and kw.get("ties") == "grouped" and kw.get("k", None) is not None:
        case.expect = "either"
    if case.expect == "value" and kw.get("ties") == "grouped" and kw.get("protocol") == "gldv2" and "k" not in kw:
        case.expect = "either"  # gldv2's own k=100
    return case
