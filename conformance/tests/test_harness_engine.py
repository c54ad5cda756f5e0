"""The identification engine on lab-style functions (conformance/examples/): fields identified one
by one, every cause shown, evidence per ruled-out candidate, and the behaviours real code has that
the vocabulary now names (rounding, an empty query scoring 1, MAP@R as mAP, junk kept, values above 1).

Each test pins the verdict, the exit status and every cause named.
"""

from __future__ import annotations

import re

import pytest
from retrieval_conformance.conformance.harness import check, identify
from retrieval_conformance.conformance.harness.checks import Checker
from retrieval_conformance.conformance.harness.engine.causes import clause_and_why, partial, parts, remove
from retrieval_conformance.conformance.harness.explanations import UNKNOWN
from retrieval_conformance.conformance.harness.session import Session
from retrieval_conformance.reference.contract import spec

E = "retrieval_conformance.conformance.examples."
TIES = "spec §4 ties=stable"


def _convention_clauses(report):
    out = set()
    for r in report.deviations:
        out.update(c for c in r.deviation.clauses if not c.startswith("adapter "))
    return out


def test_fields_with_different_tie_policies_are_identified_field_by_field():
    ident = identify(E + "per_field_ties:evaluate", adapter="reid", protocol="reid", per_family=3).identification
    assert ident.composite is not None, ident.text()
    assert ident.per_field["mAP"] == {"ties": "grouped"} and ident.per_field["cmc"] == {"ties": "unstable"}
    text = ident.text()
    assert "mAP: matches `reid` except ties: grouped" in text and "CMC: matches `reid` except ties: unstable" in text
    assert "no known convention" not in text and not ident.matched  # an unstable order is a finding

    report = check(E + "per_field_ties:evaluate", adapter="reid", protocol="reid", max_examples=15)
    assert report.exit_code == 1
    assert _convention_clauses(report) == {TIES}, report.text()  # no §5 ap_rule, §7 cmc, §8 empty or mean
    assert any(
        "identified field by field" in n and "CMC: matches `reid` except ties: unstable" in n for n in report.notes
    ), report.notes
    assert any(
        w.startswith("mAP: your values equal the reference under ties=grouped")
        for r in report.deviations
        for w in r.deviation.explanations
    ), report.text()


def test_a_field_nothing_explains_is_said_per_field_and_never_blamed_on_a_clause():
    rep = identify(E + "cmc_counts_hits:evaluate", adapter="reid", protocol="reid", per_family=3)
    text = rep.text()
    assert rep.exit_code == 1 and "no known convention or bug reproduces every value" in text, text
    assert "    mAP: matches `reid`\n" in text and "    CMC: no known convention or bug reproduces its values" in text
    assert re.search(r"impossible value: cmc\[\d+\] = 2 \(above 1", text), text
    report = check(E + "cmc_counts_hits:evaluate", adapter="reid", protocol="reid", max_examples=10)
    assert report.exit_code == 1 and _convention_clauses(report) == {UNKNOWN}, report.text()


def test_a_deviation_only_identified_fields_show_is_named_beside_an_unexplained_field():
    ident = identify(
        E + "cmc_counts_hits:evaluate_grouped", adapter="reid", protocol="reid", per_family=3
    ).identification
    assert "    mAP: matches `reid` except ties: grouped" in ident.text(), ident.text()
    report = check(E + "cmc_counts_hits:evaluate_grouped", adapter="reid", protocol="reid", max_examples=10)
    assert report.exit_code == 1 and _convention_clauses(report) == {TIES, UNKNOWN}, report.text()
    assert any(
        "CMC: no known convention or bug reproduces its values" in w
        for r in report.deviations
        for w in r.deviation.explanations
    ), report.text()


def test_a_single_convention_function_is_not_split_into_fields():
    ident = identify(E + "reid_correct:evaluate_rank", adapter="reid", protocol="reid", per_family=3).identification
    assert ident.matched and ident.composite is None and ident.preset == "reid", ident.text()


def test_rounding_to_four_decimals_is_named():
    ident = identify(E + "rounded_map:calc_top_map", per_family=3).identification
    assert ident.bug == "rounded" and ident.conventions[0].bugs[0].variant == "4" and not ident.differences
    assert "rounded to 4 decimals" in ident.text()
    report = check(E + "rounded_map:calc_top_map", max_examples=15)
    assert report.exit_code == 1 and _convention_clauses(report) == {"spec §0 conformance"}, report.text()


def test_an_empty_query_scoring_one_is_named():
    ident = identify(E + "empty_scores_one:calc_top_map", per_family=3).identification
    assert ident.bug == "empty-scores-one" and not ident.differences, ident.text()
    report = check(E + "empty_scores_one:calc_top_map", max_examples=15)
    assert report.exit_code == 1 and _convention_clauses(report) == {"spec §8 empty=zero"}, report.text()
    assert "scores 1" in report.text()


def test_a_value_above_one_is_named_impossible_with_its_input():
    rep = identify(E + "padded_topk:calc_top_map", per_family=3)
    text = rep.text()
    assert rep.exit_code == 1 and "no known convention or bug reproduces" in text, text
    m = re.search(r"impossible value: mAP = ([\d.]+).*above 1.*: (\d+) quer(?:y|ies) x 1 gallery item, k=(\d+)", text)
    assert m and float(m.group(1)) > 1 and int(m.group(3)) > 1, text
    # the smallest input ruling out the protocol, with both values and a runnable snippet
    assert re.search(
        r"ruled out the protocol `hashing`: on .*1 gallery item, k=\d+.*: mAP: yours [\d.]+.*, it "
        r"gives",
        text,
    ), text
    assert "print(calc_top_map(" in text and "rc.evaluate(" in text
    # its sum over the hits is divided by R: named on every input with k <= N, where nothing is padded
    assert "on every input without a cut-off k beyond the gallery" in text and "except ap_at_k: r" in text, text
    report = check(E + "padded_topk:calc_top_map", max_examples=15)
    assert report.exit_code == 1, report.text()
    assert _convention_clauses(report) == {UNKNOWN, "spec §6 ap_at_k=hits"}, report.text()
    beyond = report.result("k/beyond-gallery").deviation  # "cause unknown" confined to the padded inputs
    assert beyond.clauses == [UNKNOWN] and any("impossible value" in w for w in beyond.explanations), report.text()


def test_percent_and_an_unstable_sort_from_17_tied_items_are_both_named():
    ident = identify(E + "percent_unstable:calc_top_map", per_family=3).identification
    assert ident.bug == "percent" and ident.differences == {"ties": "unstable"}, ident.text()
    text = ident.text()
    assert "ruled out the same with ties=stable: on ties/tie-heavy" in text  # 17+ tied items decide it
    assert "ruled out the same without bug percent" in text
    report = check(E + "percent_unstable:calc_top_map", max_examples=15)
    assert report.exit_code == 1
    assert _convention_clauses(report) == {"spec §8 fractions in [0, 1]", TIES}, report.text()
    # percent is never said to reproduce every value on its own
    for r in report.deviations:
        if r.deviation.clauses == ["spec §8 fractions in [0, 1]"]:
            assert "together with ties=unstable" in r.deviation.explanations[-1], r.deviation.explanations


def test_map_at_r_through_a_distances_signature_is_named():
    ident = identify(E + "map_at_r_dists:map_at_r", adapter="distances-relevance", per_family=3).identification
    assert ident.bug == "cut-at-r" and "MAP@R" in ident.text(), ident.text()
    report = check(E + "map_at_r_dists:map_at_r", adapter="distances-relevance", max_examples=15)
    assert report.exit_code == 1 and _convention_clauses(report) == {"spec §6 k=None (whole gallery)"}, report.text()


def test_junk_not_removed_is_named():
    ident = identify(
        E + "junk_kept_oxford:compute_ap", adapter="oxford", protocol="oxford", per_family=3
    ).identification
    assert ident.bug == "junk-kept" and ident.preset == "oxford", ident.text()
    report = check(E + "junk_kept_oxford:compute_ap", adapter="oxford", protocol="oxford", max_examples=15)
    assert report.exit_code == 1
    assert _convention_clauses(report) == {"spec §3 junk is removed before ranking"}, report.text()


def test_camera_junk_not_removed_is_named_under_the_reid_preset():
    """Junk that follows from ids and cameras: the candidate's own junk rules, kept in the ranking."""
    target = E + "reid_same_camera_kept:evaluate_rank"
    ident = identify(target, adapter="reid", protocol="reid", per_family=3).identification
    assert ident.bug == "junk-kept" and ident.preset == "reid", ident.text()
    report = check(target, adapter="reid", protocol="reid", max_examples=15)
    assert report.exit_code == 1
    assert _convention_clauses(report) == {"spec §3 junk is removed before ranking"}, report.text()


def test_the_clause_builders_of_the_new_behaviours_resolve():
    from retrieval_conformance.conformance.harness.candidates.bugs import BUGS

    ids = spec.clauses()
    for bug_id in ("rounded", "empty-scores-one", "cut-at-r", "junk-kept"):
        assert f"§11 {bug_id}" in ids
        assert any(b.id == bug_id for b in BUGS)


@pytest.mark.parametrize(
    "target, adapter, protocol",
    [
        ("percent_unstable:calc_top_map", "hashing-codes", "hashing"),
        ("per_field_ties:evaluate", "reid", "reid"),
        ("padded_topk:calc_top_map", "hashing-codes", "hashing"),
        ("gnd_drop_4param:calc_map", "hashing-codes", "hashing"),
        ("trapezoid:mean_ap", "distances-relevance", "hashing"),
        ("cmc_counts_hits:evaluate_grouped", "reid", "reid"),
    ],
)
def test_no_clause_is_named_unless_its_candidate_reproduces_the_values(target, adapter, protocol, monkeypatch):
    """Every clause heading a deviation belongs to a part of what was identified, and the protocol
    changed in exactly the named parts reproduces that deviation's input; otherwise "cause unknown"."""
    from retrieval_conformance.conformance.harness.calling.loading import load_function

    inputs = {}
    real = Checker._evidence

    def keep(self, check_id, ev, clauses, why):
        inputs[check_id] = ev
        return real(self, check_id, ev, clauses, why)

    monkeypatch.setattr(Checker, "_evidence", keep)
    with Session(load_function(E + target), adapter, protocol, max_examples=10, target=E + target) as s:
        checker = Checker(s)
        report = checker.check()
        a = checker.analysis()
        v = a.verdict
        named = 0
        for res in report.deviations:
            clauses = [c for c in res.deviation.clauses if not c.startswith("adapter ")]
            if clauses == [UNKNOWN] or res.id.startswith("call/"):
                continue
            described = v.described if v is not None and v.survivors else partial(s, a)
            if described is None and a.partition is not None:  # what explains every input outside one family
                described = a.partition.candidate
            assert described is not None, (res.id, clauses)
            every = parts(s, described, a.dims)
            chosen = [p for p in every if clause_and_why(s, described, p)[0] in clauses]
            assert {clause_and_why(s, described, p)[0] for p in chosen} == set(clauses), (res.id, clauses)
            candidate = remove(s, described, [p for p in every if p not in chosen])
            assert s.eliminator.consistent(candidate, inputs[res.id])[0], (res.id, clauses)
            named += 1
        assert named or all(r.deviation.clauses == [UNKNOWN] for r in report.deviations if r.deviation)


@pytest.mark.parametrize(
    "target, adapter, protocol",
    [
        ("percent_unstable:calc_top_map", "hashing-codes", "hashing"),
        ("gnd_drop_4param:calc_map", "hashing-codes", "hashing"),
    ],
)
def test_check_and_identify_say_the_same(target, adapter, protocol):
    """One engine: check runs what --identify runs and words what it identified the same way."""
    ident = identify(E + target, adapter=adapter, protocol=protocol, per_family=3).identification
    said = ident.lines[1].strip()
    report = check(E + target, adapter=adapter, protocol=protocol, max_examples=10)
    assert f"identified: {said}" in report.notes, (said, report.notes)


def test_each_near_candidate_is_ruled_out_on_its_own_smallest_input():
    text = identify(E + "seed003_break:calc_map_k", per_family=2).text()
    lines = [ln for ln in text.splitlines() if "ruled out" in ln]
    # the protocol, the preset it is described against, and that preset's AP@k without the stray break
    assert [ln.split(":")[0].strip() for ln in lines] == [
        "ruled out the protocol `hashing`",
        "ruled out the preset `dcmh`",
        "ruled out the same with ap_at_k=hits",
    ], text
    assert all(re.search(r"yours [\d.]+.*, it gives [\d/.]+", ln) for ln in lines), lines
    assert "# the same with ap_at_k=hits: mAP 0" in text  # a candidate rc.evaluate cannot compute: its value
    assert text.count("print(calc_map_k(") == 3


def test_a_main_candidate_that_reproduces_another_field_describes_it_too():
    """One unstable sort behind mAP and CMC: the CMC's own search may keep a declared tie order its
    values could not rule out, yet the mAP's candidate reproduces the CMC as well; that is one
    description of the function, not "CMC: ties=stable"."""
    from retrieval_conformance.conformance.harness.candidates.candidate import Candidate
    from retrieval_conformance.conformance.harness.candidates.reference_values import Convention
    from retrieval_conformance.conformance.harness.engine.per_field import FieldResult, combine

    stable = Candidate(Convention.from_protocol("reid"), "gallery")
    unstable = Candidate(stable.conv.with_(ties="unstable"), "gallery")
    results = {"mAP": FieldResult([unstable], 1), "cmc": FieldResult([stable], 0)}

    def near(ref):
        return lambda c: c.label(["ties"])

    shared, composite = combine(results, ["mAP", "cmc"], near, fits=lambda c, f: c == unstable)
    assert shared == [unstable] and composite is None
    # where the main field's candidate does not reproduce the CMC, the CMC keeps its own
    shared, composite = combine(results, ["mAP", "cmc"], near, fits=lambda c, f: False)
    assert shared == [] and composite.of("cmc") == stable
