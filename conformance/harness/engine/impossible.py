"""Values no fraction can take: a mAP, CMC, mINP, nDCG... above 1 or below 0 (spec §8 fractions in
[0, 1]), named as impossible with the smallest input that gave one.

Percent (``spec §11 percent``) is the one known reason for values above 1 and is identified as
such; the landmark quirks that exceed 1 (``spec §5 oxford repeated names``) are reproduced by
their own candidates.  Anything else above 1 is a fact about the function, whatever else is found.
"""

from __future__ import annotations

import math
from typing import Optional

from retrieval_conformance.conformance.harness.engine.composite import Composite, field_name
from retrieval_conformance.conformance.harness.engine.evidence import Decisive, size
from retrieval_conformance.conformance.harness.report.results import fmt_float

CLAUSE = "spec §8 fractions in [0, 1]"


def _scaled(described) -> bool:
    cands = [c for _, c in described.parts] if isinstance(described, Composite) else [described]
    return any(b.scale != 1 for c in cands for b in c.bugs)


def impossible(session, analysis) -> Optional[Decisive]:
    """The smallest input on which a returned fraction lies outside [0, 1], unless what was
    identified (percent, a landmark quirk) reproduces it."""
    v = analysis.verdict
    if v is not None and v.survivors and (_scaled(v.described) or session.adapter.exceeds_one_by_convention):
        return None
    for ev in sorted(analysis.evidence, key=lambda e: size(e.case)):
        found = outside(ev, session.atol)
        if found is not None:
            return found
    return None


def outside(ev, tol: float) -> Optional[Decisive]:
    """The first returned value of ``ev`` outside [0, 1] (beyond ``tol``), or None."""
    for call, reading in zip(ev.calls, ev.readings):
        if reading is None:
            continue
        for key, value in reading.values.items():
            for j, x in enumerate(value if isinstance(value, list) else [value]):
                if math.isfinite(x) and (x > 1 + tol or x < -tol):
                    return Decisive(ev, call, f"cmc[{j}]" if isinstance(value, list) else key, x, None)
    return None


def impossible_text(found: Decisive) -> str:
    case, call = found.ev.case, found.call
    side = "above 1" if found.user > 1 else "below 0"
    return (
        f"impossible value: {field_name(found.field)} = {fmt_float(found.user)} ({side}; a fraction lies in "
        f"[0, 1], {CLAUSE}) on {case.name}: {case.describe()}" + (f"; {call.note}" if call.note else "")
    )
