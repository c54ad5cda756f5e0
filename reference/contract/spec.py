"""The retrieval-conformance specification (``SPECIFICATION.md``), as data.

Error messages and harness reports cite clauses of the specification such as
``spec §4 ties=stable``; this module finds them:

>>> from retrieval_conformance.reference.contract import spec
>>> [cid for cid, _ in spec.lookup("spec §4 ties=stable")]
['§4 ties=stable']
>>> [cid for cid, _ in spec.lookup("skip_no_hit")]
['§8 empty=skip_no_hit']

A clause is a ``### §N name`` heading of the document and the text up to the next heading;
its id is ``§N name``.  A section is a ``## §N Title`` heading and everything up to the next
section.  A clause's ``Also cited as:`` line lists other spellings that resolve to it.
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache
from importlib import resources
from typing import Dict, List, Optional, Tuple

__all__ = [
    "SPEC_FILE",
    "SPEC_VERSION",
    "aliases",
    "clauses",
    "close_matches",
    "lookup",
    "section",
    "section_titles",
    "spec_text",
]

SPEC_FILE = "SPECIFICATION.md"
_PACKAGE = "retrieval_conformance.reference"

_SECTION_RE = re.compile(r"^## (§(\d+)) (.+?)\s*$")
_CLAUSE_RE = re.compile(r"^### (§\d+ .+?)\s*$")
_VERSION_RE = re.compile(r"^spec_version:\s*(\d+\.\d+)\s*$", re.MULTILINE)
_ALIAS_RE = re.compile(r"^Also cited as:(.*)$", re.MULTILINE)
_PREFIX_RE = re.compile(r"^\s*(?:conventions|specification|spec)\b[\s:]*", re.IGNORECASE)
_SECTION_ONLY_RE = re.compile(r"^§?\s*(\d+)$")
_SECTION_AND_REST_RE = re.compile(r"^§\s*(\d+)\s+(.+)$")
_TRAILING_PAREN_RE = re.compile(r"\s*\([^()]*\)\s*$")


@lru_cache(maxsize=1)
def spec_text() -> str:
    """The whole specification (Markdown)."""
    return resources.files(_PACKAGE).joinpath(SPEC_FILE).read_text(encoding="utf-8")


def _parse_version(text: str) -> str:
    m = _VERSION_RE.search(text)
    if m is None:
        raise RuntimeError(f"{SPEC_FILE}: no 'spec_version: X.Y' line")
    return m.group(1)


SPEC_VERSION: str = _parse_version(spec_text())


@lru_cache(maxsize=1)
def _parsed() -> Tuple[Dict[int, Tuple[str, str]], Dict[str, str], Dict[str, int]]:
    """(sections n -> (title, text), clauses id -> text, clause id -> section number)."""
    sections: Dict[int, Tuple[str, List[str]]] = {}
    clause_lines: Dict[str, List[str]] = {}
    clause_section: Dict[str, int] = {}
    current_section: Optional[int] = None
    current_clause: Optional[str] = None
    for line in spec_text().splitlines():
        if line.startswith("## "):
            current_clause = None
            m = _SECTION_RE.match(line)
            current_section = None
            if m:
                current_section = int(m.group(2))
                if current_section in sections:
                    raise RuntimeError(f"{SPEC_FILE}: section §{current_section} appears twice")
                sections[current_section] = (m.group(3), [])
        elif line.startswith("### "):
            m = _CLAUSE_RE.match(line)
            current_clause = m.group(1) if m and current_section is not None else None
            if current_clause is not None:
                if current_clause in clause_lines:
                    raise RuntimeError(f"{SPEC_FILE}: clause {current_clause!r} appears twice")
                if int(current_clause[1:].split(" ", 1)[0]) != current_section:
                    raise RuntimeError(f"{SPEC_FILE}: clause {current_clause!r} is not in section §{current_section}")
                clause_lines[current_clause] = []
                clause_section[current_clause] = current_section
        if current_section is not None:
            sections[current_section][1].append(line)
        if current_clause is not None:
            clause_lines[current_clause].append(line)
    section_texts = {n: (title, "\n".join(lines).strip() + "\n") for n, (title, lines) in sections.items()}
    clause_texts = {cid: "\n".join(lines).strip() + "\n" for cid, lines in clause_lines.items()}
    return section_texts, clause_texts, clause_section


def clauses() -> Dict[str, str]:
    """Every clause, in document order: id (``"§4 ties=stable"``) -> its text (heading included)."""
    return dict(_parsed()[1])


def section_titles() -> Dict[int, str]:
    """Section number -> title, in document order."""
    return {n: title for n, (title, _) in _parsed()[0].items()}


def section(n) -> str:
    """The text of section ``n`` (``4``, ``"4"`` or ``"§4"``), its clauses included."""
    m = _SECTION_ONLY_RE.match(str(n).strip())
    sections = _parsed()[0]
    if m is None or int(m.group(1)) not in sections:
        raise KeyError(f"no section {n!r} in the specification; sections are {', '.join('§%d' % k for k in sections)}")
    return sections[int(m.group(1))][1]


def aliases() -> Dict[str, str]:
    """Every ``Also cited as:`` spelling -> the id of its clause."""
    return dict(_aliases())


@lru_cache(maxsize=1)
def _aliases() -> Dict[str, str]:
    out: Dict[str, str] = {}
    for cid, text in _parsed()[1].items():
        for m in _ALIAS_RE.finditer(text):
            for alias in re.findall(r"`([^`]+)`", m.group(1)):
                out[alias] = cid
    return out


# -- look-up ------------------------------------------------------------------------------
def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip()).casefold()


def _split(text: str) -> Tuple[Optional[int], str]:
    """``"§4 ties=stable"`` -> (4, ``"ties=stable"``); ``"ties=stable"`` -> (None, same)."""
    m = _SECTION_AND_REST_RE.match(text)
    if m:
        return int(m.group(1)), m.group(2).strip()
    return None, text


@lru_cache(maxsize=1)
def _names() -> List[Tuple[str, int, str]]:
    """(clause id, section, normalised name without its section) for every id and alias."""
    parsed = _parsed()
    out = [(cid, parsed[2][cid], _norm(_split(cid)[1])) for cid in parsed[1]]
    for alias, cid in _aliases().items():
        sec, rest = _split(alias)
        out.append((cid, sec if sec is not None else parsed[2][cid], _norm(rest)))
    return out


def _clean(query: str) -> str:
    text = str(query).strip().strip("`'\"").strip()
    text = _PREFIX_RE.sub("", text).strip().strip("`'\"").strip()
    return _norm(text)


def _match(sec: Optional[int], rest: str) -> List[str]:
    """Clause ids for a name, best tier first: exact, option value, then option/name prefix."""
    names = [(cid, s, name) for cid, s, name in _names() if sec is None or s == sec]
    tiers = (
        lambda name: name == rest,
        lambda name: "=" in name and name.split("=", 1)[1] == rest,
        lambda name: name.startswith(rest) and name[len(rest) : len(rest) + 1] in ("=", " ", "("),
    )
    order = {cid: i for i, cid in enumerate(_parsed()[1])}
    for accept in tiers:
        found = {cid for cid, _, name in names if accept(name)}
        if found:
            return sorted(found, key=order.__getitem__)  # document order
    return []


def lookup(query: str) -> List[Tuple[str, str]]:
    """The clauses (or the section) a citation names, as ``[(id, text), ...]``.

    Accepts ``"§4"``/``"4"`` (a whole section: one entry, id ``"§4"``), ``"§4 ties=stable"``,
    ``"ties=stable"``, a bare option value (``"stable"``), an option or clause prefix
    (``"§6 ap_at_k"`` gives every denominator), an alias, and citations as reports print them
    (``"spec §4 ties=stable"``, or with a trailing remark in parentheses).  Case does
    not matter.  Raises ``KeyError`` listing close matches when nothing matches.
    """
    text = _clean(query)
    sections = _parsed()[0]
    clause_texts = _parsed()[1]
    m = _SECTION_ONLY_RE.match(text)
    if m:
        n = int(m.group(1))
        if n in sections:
            return [(f"§{n}", sections[n][1])]
        raise KeyError(_unknown_message(query, f"no section §{n}"))
    sec, rest = _split(text)
    if sec is not None and sec not in sections:
        raise KeyError(_unknown_message(query, f"no section §{sec}"))
    found: List[str] = []
    while rest:
        found = _match(sec, rest)
        if found:
            break
        shorter = _TRAILING_PAREN_RE.sub("", rest)  # "§4 ties (a remark)" -> "§4 ties"
        if shorter == rest:
            break
        rest = shorter
    if not found:
        raise KeyError(_unknown_message(query, "no such clause"))
    return [(cid, clause_texts[cid]) for cid in found]


def close_matches(query: str, n: int = 5) -> List[str]:
    """Clause ids that look like ``query`` (for "did you mean" messages)."""
    text = _clean(query)
    sec, rest = _split(text)
    ids = list(_parsed()[1])
    by_norm: Dict[str, str] = {}
    for cid in ids:
        by_norm.setdefault(_norm(cid), cid)
        by_norm.setdefault(_norm(_split(cid)[1]), cid)
    for alias, cid in _aliases().items():
        by_norm.setdefault(_norm(alias), cid)
    keys = list(by_norm)
    picked = difflib.get_close_matches(text, keys, n=n, cutoff=0.5)
    picked += difflib.get_close_matches(rest, keys, n=n, cutoff=0.5)
    # words of the query found in an id (e.g. "trapezoid" -> both trapezoid clauses)
    words = [w for w in re.split(r"[\s=_()\-,]+", rest) if len(w) >= 3]
    picked += [key for key in keys if words and any(w in key for w in words)]
    out = list(dict.fromkeys(by_norm[k] for k in picked))
    return out[:n]


def _unknown_message(query: str, why: str) -> str:
    near = close_matches(query)
    hint = f"; close matches: {', '.join(near)}" if near else ""
    return (
        f"{query!r}: {why} in the retrieval-conformance specification {SPEC_VERSION}{hint} "
        "(`retrieval-conformance explain` lists every clause)"
    )
