"""Known deviations: the entries of a ``--known-deviations`` file, and which deviations they accept.

An entry is either

* a **check id** or glob (``ties/tie-heavy``, ``golden/seed003-*``): every deviation that check
  finds is accepted, whatever its cause; or
* a **cause**, a clause of the specification as reports cite it (``§4 ties=unstable``,
  ``spec §4 ties=stable``, ``§11 percent``; a prefix such as ``§6 ap_at_k`` names every clause it
  starts): a deviation is accepted, under whichever check finds it, when *every* cause named for
  it is accepted.  A cause is named both by the protocol's clause it breaks (``§4 ties=stable``)
  and by what the function does instead (``§4 ties=unstable``; a bug by its ``§11`` clause), so
  either spelling accepts it.  A deviation whose cause is unknown is accepted by no cause entry.

An entry that names no check and no clause is refused by name (exit status 2), never ignored.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import FrozenSet, Iterable, List, Sequence

from retrieval_conformance.conformance.harness.adapters.base import UsageError

#: a cause entry: a section sign and its number, "spec " in front allowed
CAUSE_RE = re.compile(r"^(spec )?\u00a7\d")


def is_cause(entry: str) -> bool:
    """Whether an entry names a clause (a cause) rather than a check id."""
    return CAUSE_RE.match(entry.strip()) is not None


def clause_ids(citation: str) -> FrozenSet[str]:
    """The clause ids a citation names (``spec §4 ties`` -> every ``§4 ties=...``); KeyError if none."""
    from retrieval_conformance.reference.contract.spec import clauses, lookup

    found = [cid for cid, _ in lookup(citation)]
    if len(found) == 1 and found[0].count(" ") == 0:  # a whole section ("§4"): each of its clauses
        sec = found[0] + " "
        return frozenset(cid for cid in clauses() if cid.startswith(sec))
    return frozenset(found)


@dataclass
class KnownDeviations:
    """The parsed entries: check-id patterns and accepted clause ids."""

    patterns: List[str] = field(default_factory=list)
    causes: FrozenSet[str] = frozenset()

    @classmethod
    def parse(cls, entries: Iterable[str], check_ids: Sequence[str]) -> "KnownDeviations":
        """Parse ``entries``; raise :class:`UsageError` naming an entry that names nothing."""
        patterns: List[str] = []
        causes: set = set()
        for raw in entries:
            entry = raw.strip()
            if not entry:
                continue
            if is_cause(entry):
                try:
                    causes.update(clause_ids(entry))
                except KeyError as exc:
                    raise UsageError(
                        f"--known-deviations: the cause {entry!r} names no clause of the specification ({exc.args[0]})"
                    ) from None
                continue
            if not any(fnmatch.fnmatch(cid, entry) for cid in check_ids):
                raise UsageError(
                    f"--known-deviations: {entry!r} names no check (check ids look like "
                    "ties/tie-heavy or golden/seed003-*, as the report prints them) and is not a "
                    "cause (a clause starting with §, e.g. '§4 ties=unstable'); fix or remove the line"
                )
            patterns.append(entry)
        return cls(patterns, frozenset(causes))

    def names_check(self, check_id: str) -> bool:
        return any(fnmatch.fnmatch(check_id, p) for p in self.patterns)

    def accepts(self, check_id: str, causes: Sequence[Sequence[str]]) -> bool:
        """Whether a deviation of ``check_id`` whose causes are ``causes`` is accepted.

        ``causes``: per cause named for the deviation, its spellings (clause ids); empty when no
        cause reproduces the values (then only the check id can accept it).
        """
        if self.names_check(check_id):
            return True
        return bool(causes) and all(any(s in self.causes for s in spellings) for spellings in causes)


def cause_spellings(*citations: str) -> tuple:
    """The clause ids of the citations that resolve (a cause's spellings), in order, de-duplicated."""
    out: List[str] = []
    for c in citations:
        try:
            ids = clause_ids(c.split(" (", 1)[0])
        except KeyError:
            continue
        out.extend(i for i in sorted(ids) if i not in out)
    return tuple(out)
