"""A candidate per returned field: what a function computes when its fields come from different code.

A :class:`Composite` maps each field the adapter reads (``mAP``, ``cmc``, ``mINP``, ``MAP@R``...)
to the :class:`~..candidates.candidate.Candidate` that field follows.  Its prediction on a call is each
field's prediction under that field's candidate (:func:`predict_composite`), so the eliminator,
the comparison with the function and the split search treat it as one candidate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.harness.candidates.candidate import Candidate

#: keys of a prediction that belong to a field other than their own name
FIELD_OF_KEY = {"cmc_lengths": "cmc"}
#: how a report names a field read under a lower-case key
FIELD_NAMES = {"cmc": "CMC"}


def field_of(key: str) -> str:
    return FIELD_OF_KEY.get(key, key)


def field_name(field: str) -> str:
    return FIELD_NAMES.get(field, field)


@dataclass(frozen=True)
class Composite:
    """One candidate per field, in the adapter's field order (the main field first).

    ``parts``: ``((field, candidate), ...)``.  Fields that follow the same candidate are still
    listed one by one; :meth:`groups` gathers them for a report.
    """

    parts: Tuple[Tuple[str, Candidate], ...]

    def of(self, field: str) -> Candidate:
        for f, c in self.parts:
            if f == field:
                return c
        return self.main

    @property
    def main(self) -> Candidate:
        return self.parts[0][1]

    @property
    def fields(self) -> List[str]:
        return [f for f, _ in self.parts]

    def groups(self) -> List[Tuple[List[str], Candidate]]:
        """Fields that follow the same candidate, together, in field order."""
        out: List[Tuple[List[str], Candidate]] = []
        for f, c in self.parts:
            for names, cand in out:
                if cand == c:
                    names.append(f)
                    break
            else:
                out.append(([f], c))
        return out

    def replace(self, field: str, cand: Candidate) -> "Composite":
        return Composite(tuple((f, cand if f == field else c) for f, c in self.parts))

    def label(self, dims: Sequence[str]) -> str:
        return "; ".join(f"{'/'.join(field_name(f) for f in names)}: {c.label(dims)}" for names, c in self.groups())


def predict_composite(predict, comp: Composite, case, call, cmc_len: Optional[int] = None) -> Optional[Dict[str, Any]]:
    """Each field's prediction under its own candidate (None: a field's candidate has no value here)."""
    out: Dict[str, Any] = {}
    cache: Dict[Candidate, Optional[Dict[str, Any]]] = {}
    for field, cand in comp.parts:
        if cand not in cache:
            cache[cand] = predict(cand, case, call, cmc_len)
        pred = cache[cand]
        if pred is None:
            return None
        for key, value in pred.items():
            if field_of(key) == field:
                out[key] = value
    # keys of fields the function did not return (mINP of a (cmc, mAP) function) follow the main field
    main = cache[comp.main]
    for key, value in (main or {}).items():
        out.setdefault(key, value)
    return out
