"""Every citation of the shipped specification (reference/SPECIFICATION.md) resolves.

Error messages, harness reports and docstrings cite clauses as ``spec §4 ties=stable``;
each citation must name a clause (or a section) of the specification that ships with the
package, so a user who reads it can look it up (``retrieval-conformance explain``).

* citations in code strings (messages, report clauses) must resolve to a clause exactly as
  ``spec.lookup`` reads them (f-string placeholders expanded over the option vocabularies);
* citations in docstrings and comments must name existing sections, and must resolve when they
  look like a clause id (``option=value``, or quoted in double backquotes);
* the clause builders of the harness (``clause``, ``option_clause``, the bugs, the input
  families) and the golden files' ``clauses`` resolve for every value;
* the conventions table (reference/contract/conventions.py) and the option clauses of the
  specification name the same values.

The scanner that finds the citations (:func:`all_citations`, :func:`problem_of`) lives here;
the document itself, its look-ups and ``explain`` are tested in ``test_specification``.
"""

from __future__ import annotations

import ast
import io
import itertools
import json
import re
import tokenize
from importlib import resources
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from retrieval_conformance.reference.contract import spec

PREFIX = "spec" + " "  # split so that this file's own strings are no citations
SEED_PACKAGES = (
    "retrieval_conformance",
    "retrieval_conformance.reference",
    "retrieval_conformance.implementations",
    "retrieval_conformance.conformance",
    "retrieval_conformance.golden",
)
_SECTIONS_RE = re.compile(r"^§(\d+)(?:\s*-\s*§(\d+))?")
_PLACEHOLDER_RE = re.compile(r"(\w+)=\{([^{}]*)\}")
_OPENERS, _CLOSERS = "([{", ")]}"


# -- where the citations are ----------------------------------------------------------------
def _package_dirs() -> Dict[str, Path]:
    """Every package of the installed distribution, found from the mapped top-level ones."""
    out: Dict[str, Path] = {}
    todo = list(SEED_PACKAGES)
    while todo:
        name = todo.pop()
        path = Path(str(resources.files(name)))
        out[name] = path
        for sub in sorted(path.iterdir()):
            if sub.is_dir() and (sub / "__init__.py").is_file():
                todo.append(f"{name}.{sub.name}")
    return out


def _source_files() -> List[Path]:
    files = set()
    for path in _package_dirs().values():
        files.update(p for p in path.glob("*.py"))
    return sorted(files)


def _string_of(node: ast.AST) -> Optional[str]:
    """A string literal's text; an f-string with its placeholders kept as ``{expr}``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                parts.append("{" + ast.unparse(v.value) + "}")
        return "".join(parts)
    return None


def _texts(path: Path) -> Iterator[Tuple[str, int, str]]:
    """(text, first line, kind) for every string literal and comment; kind is ``code`` for
    strings a program can show (messages, clause fields) and ``doc`` for docstrings, string
    statements and comments."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    doc_nodes = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Expr) and isinstance(n.value, (ast.Constant, ast.JoinedStr))
    }
    inside_fstring = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in ast.walk(n) if v is not n}
    for node in ast.walk(tree):
        if id(node) in inside_fstring:
            continue
        text = _string_of(node)
        if text is not None and "§" in text:
            yield text, node.lineno, "doc" if id(node) in doc_nodes else "code"
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and "§" in tok.string:
            yield tok.string, tok.start[0], "doc"


def _scan(text: str, start: int, quoted: bool) -> Tuple[str, int]:
    """The citation starting at ``text[start]`` (a ``§``) and where it ends.

    Inside double backquotes it runs to the closing backquote (line breaks become spaces);
    otherwise to a line break, a quote, a sentence end, or ``, ; :`` or an unmatched closing
    bracket outside brackets (backquotes around a value, ``§4 ``reverse````, are kept).
    """
    if quoted:
        end = text.find("`", start)
        end = len(text) if end < 0 else end
        return " ".join(text[start:end].split()), end
    depth, i = 0, start
    while i < len(text):
        ch = text[i]
        if ch in _OPENERS:
            depth += 1
        elif ch in _CLOSERS:
            if depth == 0:
                break
            depth -= 1
        elif ch in "\n\"'" or (depth == 0 and ch in ",;:"):
            break
        elif depth == 0 and ch == "." and (i + 1 == len(text) or text[i + 1].isspace()):
            break
        i += 1
    return text[start:i].strip(), i


def _citations(text: str) -> Iterator[Tuple[str, int, bool]]:
    """(citation without the prefix, offset in ``text``, quoted in backquotes) for each one."""
    pos = 0
    while True:
        at = text.find(PREFIX + "§", pos)
        if at < 0:
            return
        start = at + len(PREFIX)
        quoted = text[:at].endswith("`")
        cited, end = _scan(text, start, quoted)
        yield cited, at, quoted
        # "spec §6, §11": the sections listed after the first
        m = re.match(r",\s*(§\d+)", text[end:])
        while m:
            yield m.group(1), at, False
            end += m.end()
            m = re.match(r",\s*(§\d+)", text[end:])
        pos = end


def all_citations() -> List[Tuple[str, str, str, bool]]:
    """(citation, "file:line", kind, quoted) for every citation in the shipped Python sources."""
    out = []
    for path in _source_files():
        for text, line, kind in _texts(path):
            for cited, offset, quoted in _citations(text):
                where = f"{path.parent.name}/{path.name}:{line + text[:offset].count(chr(10))}"
                out.append((cited, where, kind, quoted))
    return out


# -- how a citation resolves ------------------------------------------------------------------
def _vocabularies() -> Dict[str, Sequence[str]]:
    from retrieval_conformance.conformance.harness.candidates.candidate import CMC_LENGTHS, TIE_CANDIDATES
    from retrieval_conformance.conformance.harness.candidates.reference_values import OPTION_VALUES
    from retrieval_conformance.reference.contract import problem

    vocab: Dict[str, Sequence[str]] = dict(OPTION_VALUES)
    vocab["ties"] = tuple(dict.fromkeys(tuple(TIE_CANDIDATES) + problem.TIE_POLICIES))
    vocab["empty"] = tuple(dict.fromkeys(tuple(OPTION_VALUES["empty"]) + problem.EMPTY_POLICIES))
    vocab["cmc_length"] = tuple(CMC_LENGTHS)
    return vocab


def expand(cited: str) -> List[str]:
    """``§6 ap_at_k={ap_at_k}`` -> one citation per value of the option; other placeholders
    are left in place (and then do not resolve)."""
    m = _PLACEHOLDER_RE.search(cited)
    if m is None:
        return [cited]
    values = _vocabularies().get(m.group(1))
    if values is None:
        return [cited]
    out = []
    for v in values:
        out += expand(cited[: m.start()] + f"{m.group(1)}={v}" + cited[m.end() :])
    return out


def _resolves(cited: str) -> bool:
    try:
        spec.lookup(cited)
    except KeyError:
        return False
    return True


def _sections_exist(cited: str) -> bool:
    m = _SECTIONS_RE.match(cited)
    if m is None:
        return False
    first = int(m.group(1))
    last = int(m.group(2) or first)
    known = spec.section_titles()
    return all(n in known for n in range(first, last + 1))


def problem_of(cited: str, kind: str, quoted: bool) -> Optional[str]:
    """None when the citation is fine, else why not."""
    cited = cited.strip().rstrip(".")
    if not _SECTIONS_RE.match(cited):
        return "not a section reference"
    if not _sections_exist(cited):
        return "names a section the specification does not have"
    if _SECTIONS_RE.fullmatch(cited):
        return None  # a section, or a range of sections
    variants = expand(cited)
    if kind == "code":
        bad = [v for v in variants if not _resolves(v)]
        return f"no clause {bad[0]!r}" if bad else None
    # docstrings and comments: a clause id must resolve, prose after a section may stay prose
    plain = [v.replace("`", "") for v in variants]
    if all(_resolves(v) for v in plain):
        return None
    looks_like_id = quoted or "=" in cited
    return f"no clause {cited!r}" if looks_like_id else None


# -- the tests ----------------------------------------------------------------------------------
def test_the_sources_cite_the_specification():
    cites = all_citations()
    assert len(cites) > 50, "the scan found almost no citation: is the package layout still the same?"
    kinds = {kind for _, _, kind, _ in cites}
    assert kinds == {"code", "doc"}
    bad = [
        f"{where}: {cited!r} ({why})"
        for cited, where, kind, quoted in cites
        for why in [problem_of(cited, kind, quoted)]
        if why
    ]
    assert not bad, "citations without a clause in SPECIFICATION.md:\n" + "\n".join(bad)


def test_the_scan_reads_citations_as_printed():
    from retrieval_conformance.reference.contract.conventions import AP_AT_K_DENOMINATORS

    text = (
        "broken: " + PREFIX + "§6 k=None (whole gallery); also " + PREFIX + "§8 fractions in [0, 1], "
        "(a stray `break`, " + PREFIX + "§6, §11){how} and ``" + PREFIX + "§5\n   ap_rule=trapezoid``."
    )
    assert [c for c, _, _ in _citations(text)] == [
        "§6 k=None (whole gallery)",
        "§8 fractions in [0, 1]",
        "§6",
        "§11",
        "§5 ap_rule=trapezoid",
    ]
    assert expand("§6 ap_at_k={ap_at_k}") == [f"§6 ap_at_k={v}" for v in AP_AT_K_DENOMINATORS]
    assert problem_of("§6 nonsense={value}", "code", False)
    assert problem_of("§5 ap_rule=sideways", "doc", False)
    assert problem_of("§4 closed forms in double-double", "doc", False) is None
    assert problem_of("§4 closed forms in double-double", "code", False)
    assert problem_of("§14", "doc", False)


def test_every_option_value_has_its_clause():
    from retrieval_conformance.conformance.harness.candidates.candidate import CMC_LENGTHS, UNSTABLE, option_clause
    from retrieval_conformance.conformance.harness.candidates.reference_values import (
        OPTION_SECTIONS,
        OPTION_VALUES,
        clause,
    )
    from retrieval_conformance.reference.contract import problem

    ids = spec.clauses()
    for option, values in OPTION_VALUES.items():
        for value in values:
            cited = clause(option, value)
            assert cited.startswith(PREFIX) and cited[len(PREFIX) :] in ids, cited
    assert option_clause("ties", UNSTABLE)[len(PREFIX) :] in ids
    for value in CMC_LENGTHS:
        assert option_clause("cmc_length", value)[len(PREFIX) :] in ids
    # the reference's own vocabularies (nan and error are options of rc.evaluate, not of the harness)
    for option, values in (
        ("ties", problem.TIE_POLICIES),
        ("ap_rule", problem.AP_RULES),
        ("ap_at_k", problem.AP_AT_K_DENOMINATORS),
        ("empty", problem.EMPTY_POLICIES),
    ):
        for value in values:
            assert f"{OPTION_SECTIONS[option]} {option}={value}" in ids


# -- the conventions table (reference/contract/conventions.py) --------------------------------
#: headings of the form ``§N option=value`` for an option of the table that name no value of it
NOT_OPTION_VALUES = {
    "§4 ties=unstable": "names the tie order of an unstable sort, which the harness reports; it is no "
    "policy one can request (the reference rejects ties='unstable')",
}
_OPTION_HEADING_RE = re.compile(r"§(\d+) (\w+)=([^\s()]+)(?: \((.+)\))?")


def test_every_convention_has_a_clause_with_meaning_and_used_by():
    from retrieval_conformance.reference.contract.conventions import CONVENTIONS, OPTIONS, values

    ids = spec.clauses()
    assert {c.option for c in CONVENTIONS} == set(OPTIONS)
    assert sum(len(values(option)) for option in OPTIONS) == len(CONVENTIONS) == len(set(CONVENTIONS))
    for c in CONVENTIONS:
        assert c.clause == f"§{OPTIONS[c.option][0]} {c.option}={c.value}"
        assert c.clause in ids, f"{c.clause}: no such clause in SPECIFICATION.md"
        assert c.meaning, f"{c.clause}: no Meaning: line"
        assert c.used_by, f"{c.clause}: no Used by: line"


def test_every_option_clause_of_the_specification_is_in_the_table():
    """A ``§N option=value`` heading (option in OPTIONS) is a value of the table, in section N;
    ``§N option=value (detail)`` headings elaborate a value and need that value in the table."""
    from retrieval_conformance.reference.contract.conventions import CONVENTIONS, OPTIONS, values

    ids = spec.clauses()
    table = {c.clause for c in CONVENTIONS}
    seen = set()
    for cid in ids:
        m = _OPTION_HEADING_RE.fullmatch(cid)
        if m is None or m.group(2) not in OPTIONS or cid in NOT_OPTION_VALUES:
            continue
        section, option, value, detail = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        assert section == OPTIONS[option][0], f"{cid}: option {option} is documented in §{OPTIONS[option][0]}"
        assert value in values(option), f"{cid}: {value!r} is no value of {option} in conventions.OPTIONS"
        if detail is None:
            seen.add(cid)
    assert seen == table
    for cid, why in NOT_OPTION_VALUES.items():  # the exceptions are still clauses, and still no value
        assert cid in ids and why, cid
        m = _OPTION_HEADING_RE.fullmatch(cid)
        assert m is not None and m.group(2) in OPTIONS and m.group(3) not in values(m.group(2)), cid


def test_presets_use_values_of_the_table():
    from retrieval_conformance.reference.contract.conventions import values
    from retrieval_conformance.reference.contract.presets import PRESETS

    assert PRESETS
    for name, preset in PRESETS.items():
        for option in ("ties", "ap_rule", "ap_at_k", "empty"):
            assert getattr(preset, option) in values(option), (name, option, getattr(preset, option))


def test_every_bug_and_family_clause_resolves():
    from retrieval_conformance.conformance.harness.candidates import reference_values
    from retrieval_conformance.conformance.harness.candidates.bugs import BUGS
    from retrieval_conformance.conformance.harness.inputs.public import FAMILIES

    ids = spec.clauses()
    models = list(BUGS) + list(getattr(reference_values, "BUG_MODELS", ()))
    for bug in models:
        assert f"§11 {bug.id}" in ids, bug.id
        values = reference_values.OPTION_VALUES
        for ap_at_k, empty in itertools.product(values["ap_at_k"], values["empty"]):
            cited = bug.clause.format(ap_at_k=ap_at_k, empty=empty)
            assert cited.startswith(PREFIX) and cited[len(PREFIX) :] in ids, cited
    for fam in FAMILIES:
        assert _resolves(fam.clause), fam.clause
        assert _resolves(fam.clause + " (no known convention or bug reproduces your values)")
    assert "§10 golden values" in ids


def test_golden_files_cite_clauses():
    from retrieval_conformance import golden

    seen = 0
    for name in golden.case_files():
        data = json.loads(resources.files("retrieval_conformance.golden").joinpath(name).read_text("utf-8"))
        for case in data.get("cases", []):
            for cited in case.get("clauses", []):
                seen += 1
                assert _resolves(cited), f"{name} {case.get('id')}: {cited!r}"
    assert seen > 20
