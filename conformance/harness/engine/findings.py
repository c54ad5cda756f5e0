"""Findings that come before any convention: raising, non-determinism, mutated inputs, slow calls,
and the platform facts a tie verdict depends on.

A function that raises is not compared on that input.  When the raising inputs are exactly the
inputs of one kind (``INPUT_KINDS``: a query without a relevant item, a one-item gallery, ...)
that is a finding of its own; an exception that says the function cannot run here at all
(``ENVIRONMENT_ERRORS``: a removed numpy function, a wrong argument type on every input) makes
the function uncheckable (exit status 2).
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

# exceptions that mean "cannot run in this environment / with these argument types", not a convention
ENVIRONMENT_ERRORS = ("AttributeError", "NameError", "ImportError", "ModuleNotFoundError", "TypeError")


@dataclass
class CallRecord:
    """One call of an evaluated input, with the facts the input kinds are decided on."""

    ev: object
    index: int

    @property
    def call(self):
        return self.ev.calls[self.index]

    @property
    def outcome(self):
        return self.ev.outcomes[self.index]


def _queries(session, rec: CallRecord) -> List[int]:
    q = rec.call.query
    return [q] if q is not None else list(range(rec.ev.case.n_queries))


def _rel_junk(session, rec: CallRecord):
    return session.cache.effective(rec.ev.case, session.convention.base)


def _without_relevant(session, rec) -> List[bool]:
    """Per query of the call: whether it has no relevant non-junk item."""
    rel, junk = _rel_junk(session, rec)
    return [not (rel[q] & ~junk[q]).any() for q in _queries(session, rec)]


def _no_relevant(session, rec) -> bool:
    return any(_without_relevant(session, rec))


def _no_hit_in_top_k(session, rec) -> bool:
    k = rec.call.k
    if k is None:
        return False
    rel, junk = _rel_junk(session, rec)
    d = rec.ev.case.distances
    for q in _queries(session, rec):
        keep = ~junk[q]
        order = np.argsort(d[q][keep], kind="stable")
        r = rel[q][keep][order]
        if r.any() and not r[:k].any():
            return True
    return False


def _single_item(session, rec) -> bool:
    rel, junk = _rel_junk(session, rec)
    return any(int((~junk[q]).sum()) == 1 for q in _queries(session, rec))


def _k_beyond(session, rec) -> bool:
    return rec.call.k is not None and rec.call.k > rec.ev.case.n_gallery


def _k_one(session, rec) -> bool:
    """k = 1, or a topk of 1 passed for the whole one-item gallery: the same argument to the function."""
    return rec.call.k == 1 or rec.call.k_passed == 1


def _short_gallery(session, rec) -> bool:
    return session.adapter.reads_cmc and rec.call.max_rank > rec.ev.case.n_gallery


def _uneven_cmc_rows(session, rec) -> bool:
    """max_rank beyond some query's non-junk gallery, with queries keeping different numbers of
    items: CMC rows cut at each query's own length then differ in length (torchreid stacks them
    with np.asarray, which raises on numpy >= 1.24)."""
    if not session.adapter.reads_cmc:
        return False
    rel, junk = _rel_junk(session, rec)
    kept = [int((~junk[q]).sum()) for q in _queries(session, rec) if (rel[q] & ~junk[q]).any()]
    return len(set(kept)) > 1 and rec.call.max_rank > min(kept)


def _ties(session, rec) -> bool:
    return rec.ev.case.has_ties()


def _junk(session, rec) -> bool:
    rel, junk = _rel_junk(session, rec)
    return bool(any(junk[q].any() for q in _queries(session, rec)))


def _single_query(session, rec) -> bool:
    return rec.call.query is None and rec.ev.case.n_queries == 1


def _no_query_counted(session, rec) -> bool:
    """Every query without a relevant item: a mean over the queries that have one has no term."""
    return all(_without_relevant(session, rec))


INPUT_KINDS: Tuple[Tuple[str, Callable], ...] = (
    ("a query without a relevant item", _no_relevant),
    ("a query whose relevant items all rank below the cut-off k", _no_hit_in_top_k),
    ("a one-item gallery", _single_item),
    ("topk = 1 passed (k = 1, or the whole of a one-item gallery)", _k_one),
    ("a cut-off k beyond the gallery", _k_beyond),
    ("a gallery shorter than max_rank", _short_gallery),
    (
        "queries keeping different numbers of non-junk items, some fewer than max_rank (CMC rows of different lengths)",
        _uneven_cmc_rows,
    ),
    ("tied distances", _ties),
    ("junk items", _junk),
    ("a single query", _single_query),
    ("every query without a relevant item (no query would count in a mean that skips them)", _no_query_counted),
)


def error_type(rec: CallRecord) -> str:
    """The exception's type name, as the outcome spells it (``ZeroDivisionError``)."""
    return rec.outcome.error.split(":")[0].strip()


def _size(rec: CallRecord) -> Tuple:
    case = rec.ev.case
    return (case.n_queries * case.n_gallery, case.n_gallery, rec.call.k or 0)


@dataclass
class RaiseFinding:
    """One exception type and the input kind that triggers it: its calls, smallest input first."""

    error: str  # the first line of the first (smallest) such exception
    records: List[CallRecord]
    kind: Optional[str] = None  # the input kind that raises it exactly, if any
    #: other input kinds that fit the same calls: the inputs run do not tell them from ``kind``
    also: Tuple[str, ...] = ()

    @property
    def type(self) -> str:
        return error_type(self.records[0])

    @property
    def kind_text(self) -> str:
        return kind_text_of(self.kind, self.also)

    def first_text(self) -> str:
        rec = self.records[0]
        return f"{rec.ev.case.name} ({rec.ev.case.describe()})"

    def text(self, total: int) -> str:
        n = len(self.records)
        where = f"on {self.kind_text} ({n} of {total} calls)" if self.kind else f"on {n} of {total} calls"
        return f"raises {self.error} {where}; smallest input: {self.first_text()}"


@dataclass
class Raising:
    """How the function raised over the evaluated inputs."""

    raised: List[CallRecord]  # raised where a value was expected
    returned: int
    kind: Optional[str] = None  # the input kind that raises exactly, if any (every exception together)
    also: Tuple[str, ...] = ()  # other kinds that fit the same calls (RaiseFinding.also)
    error: str = ""
    allowed: List[CallRecord] = field(default_factory=list)  # raised where no value is due: fine
    #: each exception type on its own, with its trigger and smallest input (first raised first)
    findings: List[RaiseFinding] = field(default_factory=list)

    @property
    def every_call(self) -> bool:
        return bool(self.raised or self.allowed) and self.returned == 0

    @property
    def environment(self) -> bool:
        return any(r.outcome.error.split(":")[0] in ENVIRONMENT_ERRORS for r in self.raised)

    def first_text(self) -> str:
        rec = self.raised[0]
        return f"{rec.ev.case.name} ({rec.ev.case.describe()})"

    def finding_of(self, error: str) -> Optional[RaiseFinding]:
        """The finding of the exception type that ``error`` (an outcome's text) names."""
        name = error.split(":")[0].strip()
        return next((f for f in self.findings if f.type == name), None)

    def text(self) -> str:
        total = len(self.raised) + self.returned + len(self.allowed)
        if len(self.findings) > 1:
            return "; ".join(f.text(total) for f in self.findings)
        n = len(self.raised)
        where = (
            f"on {kind_text_of(self.kind, self.also)} ({n} of {total} calls)"
            if self.kind
            else f"on {n} of {total} calls"
        )
        return f"raises {self.error} {where}; first input: {self.first_text()}"


def kind_text_of(kind: Optional[str], also: Sequence[str]) -> str:
    if not also:
        return kind or ""
    return f"{kind} (or only on {' or on '.join(also)}: no input run tells these apart)"


def _triggers(session, records: Sequence[CallRecord], returned: Sequence[CallRecord]) -> Tuple[str, ...]:
    """Every input kind that every call of ``records`` has and no returning call has, in the order
    of ``INPUT_KINDS``: the first is named, the others are stated beside it (a second exception can
    hide the inputs that would tell them apart)."""
    if not returned:
        return ()
    return tuple(
        name
        for name, pred in INPUT_KINDS
        if all(pred(session, r) for r in records) and not any(pred(session, r) for r in returned)
    )


def raising(session, evs: Sequence, defined: Optional[Callable[[CallRecord], bool]] = None) -> Raising:
    """How the function raised; ``defined(call)`` says whether a value was expected there."""
    raised: List[CallRecord] = []
    returned: List[CallRecord] = []
    allowed: List[CallRecord] = []
    for ev in evs:
        for i, out in enumerate(ev.outcomes):
            rec = CallRecord(ev, i)
            if out.kind == "raised":
                if defined is None or defined(rec):
                    raised.append(rec)
                else:
                    allowed.append(rec)
            elif out.ok:
                returned.append(rec)
    res = Raising(raised, len(returned), allowed=allowed)
    if not raised:
        return res
    res.error = raised[0].outcome.error_line[:200]
    kinds = _triggers(session, raised, returned)
    res.kind, res.also = (kinds[0], kinds[1:]) if kinds else (None, ())
    by_type: Dict[str, List[CallRecord]] = {}
    for rec in raised:
        by_type.setdefault(error_type(rec), []).append(rec)
    for records in by_type.values():
        records = sorted(records, key=_size)
        error = records[0].outcome.error_line[:200]
        kinds = _triggers(session, records, returned)
        res.findings.append(RaiseFinding(error, records, *((kinds[0], kinds[1:]) if kinds else (None, ()))))
    return res


def nondeterminism(session, evs: Sequence, limit: int = 6) -> Optional[str]:
    """Call the function again on up to ``limit`` inputs (fresh copies); the first difference."""
    tried = 0
    for ev in sorted(evs, key=lambda e: -e.case.n_queries * e.case.n_gallery):
        if tried >= limit:
            break
        if not ev.all_read or ev.case.n_gallery < 2:
            continue
        tried += 1
        for call, reading in zip(ev.calls, ev.readings):
            again = session.call(call)
            if again.kind == "timeout":
                continue  # slow or hung this time (a loaded machine, a deadlocked fork): no other value
            if not again.ok:
                return (
                    f"on {ev.case.name} ({ev.case.describe()}) it returned {_values(reading.values)} and then "
                    f"{again.failure[:130]}"
                )
            try:
                second = session.adapter.read(again.value, call)
            except Exception:
                continue
            if not _same(reading.values, second.values):
                return (
                    f"called twice on the same input ({ev.case.name}: {ev.case.describe()}), it returned "
                    f"{_values(reading.values)} and then {_values(second.values)}"
                )
    return None


def _same(a: Dict, b: Dict) -> bool:
    if set(a) != set(b):
        return False
    for key in a:
        x, y = np.asarray(a[key], dtype=float), np.asarray(b[key], dtype=float)
        if x.shape != y.shape or not np.allclose(x, y, rtol=0, atol=1e-12, equal_nan=True):
            return False
    return True


def _values(values: Dict) -> str:
    parts = []
    for key, v in values.items():
        if isinstance(v, list):
            parts.append(f"{key}=[{', '.join(f'{x:.6g}' for x in v[:5])}{', ...' if len(v) > 5 else ''}]")
        else:
            parts.append(f"{key}={v:.6g}")
    return "{" + ", ".join(parts) + "}"


def mutations(evs: Sequence) -> Optional[str]:
    for ev in evs:
        for out in ev.outcomes:
            changed = getattr(out, "mutated", ())
            if changed:
                return (
                    f"it modifies its input arrays ({', '.join(changed)}) on {ev.case.name}: a caller that "
                    "reuses them afterwards computes on changed data"
                )
    return None


def timing(runner) -> Optional[str]:
    """The runner's timing sentence, when a call was slow (a warm-up is allowed its own limit)."""
    if runner is None:
        return None
    warm = runner.warmup_seconds
    if (warm is not None and warm > runner.timeout / 2) or runner.slow_calls:
        return runner.timing_text()
    return None


def platform_facts() -> str:
    """What a tie verdict depends on: numpy's default argsort breaks ties differently by CPU."""
    parts = [f"numpy {np.__version__}"]
    try:
        import torch

        parts.append(f"torch {torch.__version__}")
    except Exception:
        pass
    parts.append(f"{platform.machine()} CPU")
    flags = _cpu_flags()
    if flags is not None:
        simd = [f for f in ("avx512f", "avx512_fp16", "avx2", "asimd", "sve") if f in flags]
        parts.append("features " + (", ".join(simd) if simd else "none of avx2/avx512f/asimd/sve"))
    return (
        "the order of tied items depends on the platform: "
        + ", ".join(parts)
        + " (numpy's default argsort and torch.sort order equal keys differently by CPU (AVX2, AVX-512), "
        "library version and array length; only a stable sort gives the same order everywhere)"
    )


def _cpu_flags() -> Optional[set]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        return None
    return None
