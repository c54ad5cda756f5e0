"""The shipped specification (reference/SPECIFICATION.md): the document, look-ups, ``explain``.

* the document is well formed (every clause has its fields), the version line parses, and the
  presets, bugs and clauses the rest of the suite relies on are there;
* ``spec.lookup`` finds clauses by id, alias, section or close match;
* ``retrieval-conformance explain`` prints a clause, a section, or the index.

That every citation in the sources resolves is ``test_spec_citations``'s (with the scanner).
"""

from __future__ import annotations

import re
from typing import Tuple

import pytest
from retrieval_conformance.conformance.tests.test_spec_citations import PREFIX
from retrieval_conformance.reference.contract import spec


def test_presets_and_bugs_of_the_brief_are_clauses():
    from retrieval_conformance.reference.contract.presets import PRESETS
    from retrieval_conformance.reference.protocols.landmark import LANDMARK_PROTOCOLS

    ids = spec.clauses()
    for name in list(PRESETS) + list(LANDMARK_PROTOCOLS):
        assert f"§9 preset={name}" in ids, name
    for bug in (
        "first-query-only",
        "topk-ignored",
        "last-item-dropped",
        "divided-by-k",
        "zero-based-ranks",
        "previous-hit-trapezoid",
        "percent",
        "descending",
        "exact-label-match",
    ):
        assert f"§11 {bug}" in ids
    for cid in (
        "§4 ties=unstable",
        "§5 ranks start at 1",
        "§6 k=None (whole gallery)",
        "§6 the cut-off k",
        "§7 cmc_length=max_rank",
        "§7 cmc_length=gallery",
        "§8 mean over all queries",
        "§8 fractions in [0, 1]",
        "§1 smaller distance ranks first",
        "§2 relevant = sharing a label",
        "§2 relevance does not depend on the score",
        "§0 gallery",
        "§10 golden values",
    ):
        assert cid in ids, cid


def test_the_document_is_well_formed():
    titles = spec.section_titles()
    assert list(titles) == list(range(14))
    ids = spec.clauses()
    assert len(ids) > 100
    for cid, text in ids.items():
        assert text.startswith(f"### {cid}\n")
        for field in ("Meaning:", "Formula:", "Edge cases:", "Used by"):
            assert f"\n{field}" in text, f"{cid}: no {field!r}"
        assert cid in spec.section(cid[1:].split(" ", 1)[0])
    for alias, cid in spec.aliases().items():
        assert alias not in ids or alias == cid, alias
        assert [c for c, _ in spec.lookup(alias)] == [cid], alias


def test_version_line():
    head = spec.spec_text().splitlines()[:5]
    lines = [line for line in head if line.startswith("spec_version:")]
    assert len(lines) == 1
    m = re.fullmatch(r"spec_version: (\d+)\.(\d+)", lines[0])
    assert m and spec.SPEC_VERSION == f"{m.group(1)}.{m.group(2)}" == "1.0"


@pytest.mark.parametrize(
    "query, expected",
    [
        ("§4 ties=stable", ["§4 ties=stable"]),
        ("ties=stable", ["§4 ties=stable"]),
        (PREFIX + "§4 ties=stable", ["§4 ties=stable"]),
        ("  conventions §4 TIES=Stable ", ["§4 ties=stable"]),
        ("stable", ["§4 ties=stable"]),
        ("skip_no_hit", ["§8 empty=skip_no_hit"]),
        ("§6 min(k,R)", ["§6 ap_at_k=min_k_r"]),
        ("§5 ap_rule=trapezoid", ["§5 ap_rule=trapezoid"]),
        (
            "§5 ap_rule=trapezoid (precision at the previous rank)",
            ["§5 ap_rule=trapezoid (precision at the previous rank)"],
        ),
        ("§6 ap_at_k", ["§6 ap_at_k=hits", "§6 ap_at_k=r", "§6 ap_at_k=min_k_r", "§6 ap_at_k=dcmh"]),
        ("§8 mean over queries (a remark)", ["§8 mean over all queries"]),
        ("first-query-only", ["§11 first-query-only"]),
    ],
)
def test_lookup(query, expected):
    assert [cid for cid, _ in spec.lookup(query)] == expected


def test_lookup_sections_and_unknown():
    for query in ("§4", "4", " §4 "):
        ((cid, text),) = spec.lookup(query)
        assert cid == "§4" and text.startswith("## §4 ") and "### §4 ties=expected" in text
    assert spec.section(4) == spec.section("§4")
    with pytest.raises(KeyError, match="close matches: §4 ties=stable"):
        spec.lookup("§5 ties=stable")
    with pytest.raises(KeyError, match="no section §14"):
        spec.lookup("§14")
    with pytest.raises(KeyError):
        spec.section(99)


def _cli(capsys, *argv) -> Tuple[int, str, str]:
    from retrieval_conformance.cli import main

    status = main(["explain", *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_explain_prints_clauses(capsys):
    status, out, err = _cli(capsys, "§4 ties=stable")
    assert status == 0 and out.startswith("### §4 ties=stable\n") and "gallery order" in out and not err
    status, out, _ = _cli(capsys, PREFIX + "§6 k=None (whole gallery)")
    assert status == 0 and out.startswith("### §6 k=None (whole gallery)\n")
    status, out, _ = _cli(capsys, "§8", "empty=zero")  # unquoted words are joined
    assert status == 0 and out.startswith("### §8 empty=zero\n")
    status, out, _ = _cli(capsys, "7")
    assert status == 0 and out.startswith("## §7 ") and "### §7 INP" in out


def test_explain_unknown_and_index(capsys):
    status, out, err = _cli(capsys, "ties=sideways")
    assert status == 2 and not out
    assert "close matches" in err and "§4 ties=stable" in err
    status, out, err = _cli(capsys)
    assert status == 0 and not err
    assert f"spec_version {spec.SPEC_VERSION}" in out
    for n, title in spec.section_titles().items():
        assert f"§{n} {title}" in out
    assert all(f"    {cid}\n" in out for cid in spec.clauses())
