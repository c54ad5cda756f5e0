"""Section 2 of an audit: which conventions (and known bugs) reproduce a published number.

A reported number matches a candidate when the candidate's value on the user's data rounds to
the reported digits: ``0.6026`` stands for [0.60255, 0.60265], ``88.2%`` (or ``88.2``, read as
percent because it is above 1) for [0.8815, 0.8825].  An interval value (an unstable tie
order) matches when it meets that range.  Several reported numbers must all match one
candidate, so they narrow the set together.

Candidates come from the harness stage by stage, simplest first (:mod:`.harness_link`): the
search stops after the first stage with a match, so a bug is named only when no plainer
description reproduces the numbers; within a stage, candidates closest to the declared
protocol come first.  A candidate whose value is only known to lie in [0, 1] (an unstable order
where the hits in the top k change with it) says nothing and is counted, not listed.  When none
matches, the nearest candidate is reported with its distance.  The search itself,
:func:`match_stages`, takes any candidates: a TREC run's settings (:mod:`.trec.candidates`,
with ``rounding="truncate"`` for a number printed truncated) go through it too.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from retrieval_conformance.conformance.audit.harness_link import Found, Values, needs_exact, stages
from retrieval_conformance.conformance.audit.metrics import Metric, metric

#: matches listed in full (the rest are counted)
LISTED = 25
_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(%?)\s*$")
#: the most decimals of a reported number: below float64's resolution a printed digit means nothing
MAX_DECIMALS = 15


def _clip(text: str) -> str:
    return text if len(text) <= 40 else text[:40] + "..."


@dataclass(frozen=True)
class Reported:
    """One published number: the metric, the text as printed, and the range it stands for."""

    metric: Metric
    text: str
    value: float  # as a fraction in [0, 1]
    half: float  # half a unit of the last printed digit, as a fraction
    percent: bool

    def distance(self, interval, rounding: str = "round") -> float:
        """How far (as a fraction) ``interval`` lies from the range the printed digits allow (0: it rounds to
        them; ``rounding="truncate"``: it truncates to them, ``0.6026`` standing for [0.6026, 0.6027))."""
        lo, hi = interval
        below, above = self.value - self.half, self.value + self.half
        if rounding == "truncate":
            below, above = self.value, self.value + 2 * self.half
        slack = 1e-12 + 1e-9 * self.half  # a value exactly on the rounding boundary rounds either way
        if hi < below - slack:
            return below - hi
        if lo > above + slack:
            return lo - above
        return 0.0

    def shown(self, value: float) -> str:
        digits = max(0, -int(round(math.log10(self.half * 2 * (100 if self.percent else 1)))))
        return f"{value * 100:.{digits}f}%" if self.percent else f"{value:.{digits}f}"


def parse(
    reported: Union[str, Mapping[str, Any], None],
    where: str = "reported",
    lookup: Callable[[str, str], Metric] = metric,
) -> List[Reported]:
    """``"map=0.6026,rank1=88.2%"`` or ``{"map": 0.6026, "rank1": "88.2%"}`` -> reported numbers
    (``lookup``: the metric a name names, the array metrics by default)."""
    if reported is None:
        return []
    if isinstance(reported, str):
        pairs = []
        for part in filter(None, (p.strip() for p in reported.split(","))):
            if "=" not in part:
                raise ValueError(f"{where}: expected METRIC=NUMBER pairs like map=0.6026,rank1=88.2%, got {part!r}")
            name, _, number = part.partition("=")
            pairs.append((name, number))
    elif isinstance(reported, Mapping):
        pairs = list(reported.items())
    else:
        raise TypeError(
            f"{where}: expected a dict like {{'map': 0.6026}} or a string like 'map=0.6026', "
            f"got {type(reported).__name__}"
        )
    out, seen = [], set()
    for name, number in pairs:
        m = lookup(str(name), where)
        if m.name in seen:
            raise ValueError(f"{where}: {m.name} is given twice; give each metric once")
        seen.add(m.name)
        text = repr(number) if isinstance(number, float) else str(number)
        match = _NUMBER.match(text)
        if isinstance(number, bool) or match is None:
            raise ValueError(f"{where}: {name}={number!r} is not a number; write it as printed, e.g. 0.6026 or 88.2%")
        digits, sign = match.groups()
        decimals = len(digits.partition(".")[2])
        if decimals > MAX_DECIMALS or len(digits) > 2 * MAX_DECIMALS:
            raise ValueError(
                f"{where}: {name}={_clip(text)} has {len(digits):,} digits ({decimals:,} decimals); a published "
                f"number has at most {MAX_DECIMALS} decimals (float64 holds about 16 significant digits): "
                "write it as printed, e.g. 0.6026 or 88.2%"
            )
        value = float(digits)
        percent = bool(sign) or value > 1
        if percent and value > 100:
            raise ValueError(f"{where}: {name}={number!r} is above 100%; metrics lie in [0, 1] (or 0-100 in percent)")
        half = 0.5 * 10.0**-decimals
        out.append(Reported(m, text, value / 100 if percent else value, half / 100 if percent else half, percent))
    return out


def _distance_from_declared(found: Found, declared: Dict[str, Any]) -> int:
    opts = found.options()
    return sum(opts.get(name) != declared[name] for name in declared)


def match(
    values: Values, protocol: str, declared: Dict[str, str], reported: Sequence[Reported], max_cost: int = 2
) -> Dict[str, Any]:
    """Every candidate of the first stage that reproduces all reported numbers, or the nearest."""
    if not reported:
        return match_stages([], values.value, declared, reported)
    metrics = [r.metric for r in reported]
    staged = stages(values.ev.data, protocol, values.k, metrics, max_cost, values.overrides)
    return match_stages(
        staged, values.value, declared, reported, skipped=lambda found: needs_exact(found) and not values.exact_allowed
    )


def match_stages(
    staged: Iterable[Sequence[Any]],
    value: Callable[[Any, Metric], Any],
    declared: Dict[str, Any],
    reported: Sequence[Reported],
    skipped: Optional[Callable[[Any], bool]] = None,
) -> Dict[str, Any]:
    """The search of :func:`match` over any candidates, stage by stage (simplest first).

    A candidate has ``cost``, ``bugs``, ``options()``, ``label()``, ``clauses()`` and
    ``meanings()``, and optionally ``rounding`` (``"truncate"``: the printed digits are its value
    truncated); ``value(candidate, metric)`` is its interval on the data, or None where it has none
    (``skipped(candidate)`` says whether that is a candidate left out of the search).
    """
    if not reported:
        return {"reported": [], "matches": [], "nearest": None, "searched": 0, "not_searched": 0, "uninformative": 0}
    searched = not_searched = uninformative = 0
    nearest, nearest_gap = None, math.inf
    matches: List[Dict[str, Any]] = []
    stage_reached = 0
    for stage_cost, stage in enumerate(staged):
        stage_reached = stage_cost
        for found in stage:
            intervals = [value(found, r.metric) for r in reported]
            if any(iv is None for iv in intervals):
                not_searched += bool(skipped and skipped(found))
                continue
            if any(iv[1] - iv[0] >= 1.0 for iv in intervals):
                uninformative += 1  # an interval spanning [0, 1]: it says nothing about the number
                continue
            searched += 1
            rounding = getattr(found, "rounding", "round")
            gap = max(r.distance(iv, rounding) for r, iv in zip(reported, intervals))
            entry = _entry(found, reported, intervals, gap, declared)
            if gap == 0.0:
                matches.append(entry)
            elif gap < nearest_gap:
                nearest, nearest_gap = entry, gap
        if matches:
            break
    matches = _merge_empty(matches)
    matches.sort(key=lambda e: (e["cost"], e["changed"], e["label"]))
    return {
        "reported": [
            {"metric": r.metric.name, "text": r.text, "low": r.value - r.half, "high": r.value + r.half}
            for r in reported
        ],
        "matches": matches[:LISTED],
        "more": max(0, len(matches) - LISTED),
        "n_matches": len(matches),
        "nearest": None if matches else nearest,
        "searched": searched,
        "not_searched": not_searched,
        "uninformative": uninformative,
        "stages": stage_reached + 1,
    }


def _entry(
    found: Found, reported: Sequence[Reported], intervals, gap: float, declared: Dict[str, str]
) -> Dict[str, Any]:
    opts = found.options()
    return {
        "label": found.label(),
        "options": opts,
        "bugs": found.bugs,
        "cost": found.cost,
        "changed": _distance_from_declared(found, declared),
        "clauses": found.clauses(),
        "meanings": found.meanings(),
        "gap": gap,
        "values": {
            r.metric.name: {
                "low": iv[0],
                "high": iv[1],
                "shown": (r.shown(iv[0]) if iv[0] == iv[1] else f"{r.shown(iv[0])} .. {r.shown(iv[1])}"),
            }
            for r, iv in zip(reported, intervals)
        },
    }


def _merge_empty(matches: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One entry for candidates that differ only in the empty-query policy and give the same values
    (every query has a relevant item, so the policies agree): ``empty=zero|skip``."""
    merged: Dict[Any, Dict[str, Any]] = {}
    for e in matches:
        if "empty" not in e["options"]:  # a candidate without an empty-query policy (a TREC run's)
            merged[id(e)] = e
            continue
        opts = {n: v for n, v in e["options"].items() if n != "empty"}
        key = (
            tuple(sorted(opts.items())),
            tuple(e["bugs"]),
            tuple((m, v["low"], v["high"]) for m, v in sorted(e["values"].items())),
        )
        if key in merged:
            kept = merged[key]
            kept["options"]["empty"] += "|" + e["options"]["empty"]
            kept["label"] = kept["label"].replace(
                f"empty={kept['options']['empty'].rsplit('|', 1)[0]}", f"empty={kept['options']['empty']}"
            )
            kept["changed"] = min(kept["changed"], e["changed"])
            # the policies agree here, so no one empty-query clause is the cause
            kept["clauses"] = _shared(kept, e)
        else:
            merged[key] = dict(e, options=dict(e["options"]))
    return list(merged.values())


def _shared(a: Dict[str, Any], b: Dict[str, Any]) -> List[str]:
    """The clauses two merged candidates have in common (their empty-query clauses differ)."""
    return [c for c in a["clauses"] if c in b["clauses"]]


def reported_values(reported: Sequence[Reported]) -> Optional[List[Dict[str, Any]]]:
    return [{"metric": r.metric.name, "text": r.text} for r in reported] or None
