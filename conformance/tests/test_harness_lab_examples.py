"""Verdicts on our own functions written in the manner of real lab code (conformance/examples/).

Each test pins the exact verdict: the exit status, the cause named, and that nothing else is
blamed.  The real behaviours they reproduce are described in each example's docstring.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from retrieval_conformance.conformance.harness import check, identify
from retrieval_conformance.conformance.harness.explanations import UNKNOWN

E = "retrieval_conformance.conformance.examples."
TIES = "spec §4 ties=stable"


def _convention_clauses(report):
    """Clauses of every deviation, without the adapter's "returns ... for every valid input"."""
    out = set()
    for r in report.deviations:
        out.update(c for c in r.deviation.clauses if not c.startswith("adapter "))
    return out


def test_torchreid_style_is_reid_with_unstable_ties_and_a_gallery_length_cmc():
    ident = identify(E + "torchreid_style:evaluate", adapter="reid", protocol="reid", per_family=3).identification
    assert ident.preset == "reid" and ident.differences == {"ties": "unstable"} and ident.bug is None, ident.text()
    assert ident.conventions[0].cmc_length == "gallery"
    text = ident.text()
    assert "matches `reid` except ties: unstable" in text and "cut at min(max_rank, its gallery after junk" in text
    assert "numpy " + np.__version__ in text  # the platform facts a tie verdict depends on

    report = check(
        E + "torchreid_style:evaluate",
        adapter="reid",
        protocol="reid",
        max_examples=15,
        only=["golden/*", "ties/*", "mean/*", "size/*"],
    )
    assert report.exit_code == 1
    assert _convention_clauses(report) == {TIES}, report.text()  # no §5 ap_rule, no §8, no stray break
    assert "CMC values" not in report.text()  # its CMC length is a convention, not a deviation


def test_torchreid_style_raising_on_uneven_cmc_rows_is_its_own_finding():
    # torchreid stacks per-query CMC rows of different lengths with np.asarray: numpy >= 1.24 raises
    report = check(
        E + "torchreid_style:evaluate",
        adapter="reid",
        protocol="reid",
        max_examples=15,
        only=["golden/*", "cmc/short-gallery", "mean/*"],
    )
    res = report.result("cmc/short-gallery")
    assert res.status == "deviate" and res.deviation.mismatches[0].kind == "raised", report.text()
    assert any("CMC rows of different lengths" in w for w in res.deviation.explanations), res.deviation.explanations
    assert _convention_clauses(report) <= {TIES}


def test_unseeded_sampler_is_reported_not_deterministic_before_any_convention():
    rep = identify(E + "cuhk03_sampler:evaluate", adapter="reid", protocol="reid", per_family=3)
    ident = rep.identification
    assert rep.exit_code == 1 and ident.nondeterministic and ident.preset is None, ident.text()
    assert re.search(r"called twice on the same input .* it returned \{.*\} and then \{.*\}", ident.text())
    report = check(
        E + "cuhk03_sampler:evaluate", adapter="reid", protocol="reid", max_examples=10, only=["mean/*", "call/*"]
    )
    assert report.result("call/deterministic").status == "deviate"
    assert all("ties=" not in c for c in report.clauses())


@pytest.mark.parametrize("command", ["check", "identify"])
def test_raising_on_every_input_is_exit_2_naming_the_exception_and_first_input(command):
    if command == "check":
        report = check(E + "raises_always:calc_map", max_examples=5)
    else:
        report = identify(E + "raises_always:calc_map", per_family=2)
    assert report.exit_code == 2, report.text()
    text = report.text()
    assert "TypeError" in text and "on every call (first input: golden/" in text


def test_raising_on_empty_queries_only_is_its_own_finding_and_the_rest_is_checked():
    report = check(E + "raises_on_empty:average_precision", adapter="sklearn", max_examples=15)
    assert report.exit_code == 1
    res = report.result("empty/no-relevant")
    assert res.status == "deviate" and res.deviation.mismatches[0].kind == "raised"
    assert any(
        "raises exactly on the inputs with a query without a relevant item" in w for w in res.deviation.explanations
    )
    assert report.result("ties/tie-heavy").status == "pass"  # every other check still ran
    assert report.result("ap/relevant-last").status == "pass"
    ident = identify(E + "raises_on_empty:average_precision", adapter="sklearn", per_family=3).identification
    assert ident.preset == "hashing" and ident.differences == {} and not ident.matched, ident.text()
    assert "raises ZeroDivisionError" in ident.text() and "on a query without a relevant item" in ident.text()


def test_four_parameter_gnd_drop_names_both_the_dropped_item_and_the_ties():
    ident = identify(E + "gnd_drop_4param:calc_map", per_family=3).identification
    assert ident.bug == "last-item-dropped" and ident.differences == {"ties": "unstable"}, ident.text()
    assert "gnd[0:-1]" in ident.text()
    report = check(E + "gnd_drop_4param:calc_map", max_examples=15)
    assert report.exit_code == 1
    assert _convention_clauses(report) <= {"spec §6 k=None (whole gallery)", TIES}
    assert "spec §6 k=None (whole gallery)" in _convention_clauses(report), report.text()


def test_minus_one_for_all_is_noted_for_a_required_topk():
    # DeepHash-style functions get topk = N from the adapter; -1 (their configs' "all") drops an item
    ident = identify(E + "hashing_correct:calc_top_map", per_family=2).identification
    assert ident.matched and ident.preset == "hashing", ident.text()
    assert "with topk=-1" in ident.text() and "gnd[0:-1]" in ident.text()


def test_default_topk_divided_by_k_is_named_as_such_everywhere():
    ident = identify(E + "default_topk_div:calc_map", per_family=3).identification
    assert ident.bug == "divided-by-k" and ident.differences == {}, ident.text()
    report = check(E + "default_topk_div:calc_map", max_examples=15)
    assert _convention_clauses(report) == {"spec §6 ap_at_k=hits"}, report.text()
    assert "trapezoid" not in " ".join(report.clauses()) and "no known convention" not in report.text()


@pytest.mark.parametrize("protocol", ["oxford", "roxford-easy", "roxford-medium", "roxford-hard"])
def test_revisitop_style_ap_through_the_oxford_adapter(protocol):
    # it raises ZeroDivisionError without positives: those queries are left out by these presets
    usual = ["golden/*", "ties/*", "empty/*", "ap/*", "size/*", "mean/*"]
    report = check(E + "revisitop_style:compute_ap", adapter="oxford", protocol=protocol, max_examples=15, only=usual)
    assert report.exit_code == 0, report.text()
    # outside the usual inputs it is neither rule: junk tested first (compute_ap.cpp) but |P| = the list's
    # length (revisitop); each preset's own rule is broken on one input (it conformed to all four before
    # the inputs that separate the rules were drawn)
    full = check(E + "revisitop_style:compute_ap", adapter="oxford", protocol=protocol, max_examples=15)
    broken = "outside/positive-listed-twice" if protocol == "oxford" else "outside/positive-also-junk"
    assert {r.id for r in full.deviations} == {broken}, full.text()
    ident = identify(E + "revisitop_style:compute_ap", adapter="oxford", protocol=protocol, per_family=3)
    text = ident.text()
    assert ident.exit_code == 1 and "follows no landmark preset's rules" in text, text
    assert "a name both positive and junk is skipped as junk" in text and "length of the positive list" in text


def test_landmark_presets_are_named_for_the_oxford_adapter_only():
    bad = check(E + "revisitop_style:compute_ap", adapter="oxford", protocol="hashing")
    assert bad.exit_code == 2 and "roxford-medium" in bad.usage_error
    other = check(E + "hashing_correct:calc_top_map", protocol="roxford-medium")
    assert other.exit_code == 2 and "--adapter oxford" in other.usage_error
    gldv2 = identify(E + "revisitop_style:compute_ap", adapter="oxford", protocol="gldv2", per_family=2)
    # precision-sum: the trapezoid function is not GLDv2 (GLDv2's inputs pass no junk, so the nearest preset
    # is gldv2 itself, with the AP rule named as what differs)
    assert gldv2.exit_code == 1 and gldv2.identification.differences.get("ap_rule") == "trapezoid", gldv2.text()


def test_printed_progress_stays_out_of_the_report(capfd):
    report = check(E + "prints_progress:calc_map", max_examples=10, isolation="process")
    out, err = capfd.readouterr()
    assert report.exit_code == 0, report.text()
    assert "query" not in out + err and "it/s" not in report.text()


def test_a_slow_first_call_is_a_warm_up_not_a_hang(monkeypatch):
    monkeypatch.setenv("RC_EXAMPLE_WARMUP_SECONDS", "2")
    report = check(
        E + "slow_first_call:calc_map",
        max_examples=5,
        timeout=1.0,
        warmup_timeout=10,
        only=["golden/*", "mean/one-query"],
    )
    assert report.exit_code == 0, report.text()
    assert any("allowed as a warm-up" in n for n in report.notes), report.notes


def test_a_function_modifying_its_inputs_is_reported():
    report = check(E + "mutates_input:calc_map", max_examples=10)
    assert [r.id for r in report.deviations] == ["call/inputs-unchanged"], report.text()
    assert "modifies its input arrays" in report.text()
    ident = identify(E + "mutates_input:calc_map", per_family=2).identification
    assert not ident.matched and "modifies its input arrays" in ident.text()


@pytest.mark.skipif(hasattr(np, "in1d"), reason="np.in1d exists in this numpy (removed in numpy 2.4)")
@pytest.mark.parametrize("command", ["check", "identify"])
def test_a_removed_numpy_api_is_exit_2_never_a_match(command):
    run = check if command == "check" else identify
    report = run(E + "uses_removed_numpy:evaluate", adapter="reid", protocol="reid-matlab")
    assert report.exit_code == 2, report.text()
    assert re.search(r"AttributeError: module 'numpy' has no attribute 'in1d' on \d+ of \d+ calls", report.text())
    assert "matches" not in report.text()


def test_alternatives_are_printed_once_each():
    text = identify(E + "grouped_ap:average_precision", adapter="sklearn", per_family=3).identification.text()
    line = next((ln for ln in text.splitlines() if "equally consistent with" in ln), "")
    items = line.split("equally consistent with: ")[-1].split(" (")[0].split("; ") if line else []
    assert len(items) == len(set(items))


def test_two_exceptions_on_two_triggers_are_two_findings_each_with_its_smallest_input():
    # ZeroDivisionError on topk = 1, IndexError on topk past the gallery: never one name for both
    text = identify(E + "raises_two_ways:calc_top_map", per_family=3).text()
    assert re.search(
        r"raises IndexError: [^;]* on a cut-off k beyond the gallery \(\d+ of \d+ calls\); smallest input: ", text
    ), text
    assert re.search(r"raises ZeroDivisionError: float division by zero on topk = 1 passed", text), text
    assert "(also ZeroDivisionError)" not in text and "(also IndexError)" not in text
    report = check(E + "raises_two_ways:calc_top_map", max_examples=10, only=["k/beyond-gallery", "size/*"])
    beyond, single = report.result("k/beyond-gallery").deviation, report.result("size/single-item").deviation
    assert beyond.mismatches[0].user.startswith("IndexError"), report.text()
    assert "it raises IndexError exactly on the inputs with a cut-off k beyond the gallery" in " ".join(
        beyond.explanations
    ), beyond.explanations
    assert any(w.startswith("it also raises ZeroDivisionError") for w in beyond.explanations)
    assert single.mismatches[0].user.startswith("ZeroDivisionError"), report.text()
    assert "it raises ZeroDivisionError exactly on the inputs with topk = 1 passed" in " ".join(single.explanations)
    assert any(w.startswith("it also raises IndexError") for w in single.explanations)


def test_what_the_catalogue_explains_is_named_beside_one_unexplained_family():
    # reversed ties everywhere (catalogued), P@k in place of AP@k where topk cuts the list (not)
    rep = identify(E + "reversed_ties_precision_at_k:calc_top_map", per_family=3)
    text = rep.text()
    assert rep.exit_code == 1 and "no known convention or bug reproduces every value" in text, text
    assert re.search(
        r"on every input without a cut-off k inside the list \(\d+ of \d+ inputs\): matches `hashing` except "
        r"ties: reverse",
        text,
    ), text
    assert re.search(
        r"no known convention or bug reproduces its values on \d+ input\(s\) with a cut-off k inside", text
    )
    assert rep.identification.causes == ["spec §4 ties=reverse"]
    report = check(
        E + "reversed_ties_precision_at_k:calc_top_map", max_examples=15, only=["golden/*", "ties/*", "mean/*"]
    )
    assert report.result("ties/tie-heavy").deviation.clauses == [TIES], report.text()
    assert report.result("mean/many-queries").deviation.clauses == [TIES], report.text()
    unknown = report.result("golden/seed000-map-at-5").deviation  # k = 5 inside a longer list
    assert unknown.clauses == [UNKNOWN], report.text()
    assert any(
        "every other input is reproduced by: matches `hashing` except ties: reverse" in w for w in unknown.explanations
    )


def test_an_option_that_cannot_change_a_field_is_no_difference_of_that_field():
    # mAP: trapezoid AP over a stable sort; CMC: the default argsort.  The AP rule is the mAP's alone.
    ident = identify(E + "market_port_mixed:evaluate", adapter="reid", protocol="reid", per_family=3).identification
    assert ident.per_field == {"mAP": {"ap_rule": "trapezoid"}, "cmc": {"ties": "unstable"}}, ident.text()
    cmc_line = next(ln for ln in ident.lines if ln.strip().startswith("CMC:"))
    assert "ap_rule" not in cmc_line, ident.text()
    assert [c.split(":")[0] for c in ident.causes] == ["CMC", "mAP"], ident.causes
    assert "ap_rule" not in ident.causes[0] and "ap_rule=trapezoid" in ident.causes[1], ident.causes
    report = check(E + "market_port_mixed:evaluate", adapter="reid", protocol="reid", max_examples=10)
    assert report.named_causes == ident.causes, report.text()


def test_landmark_name_rules_are_judged_under_the_identified_ap_rule():
    # a previous-hit trapezoid on compute_ap.cpp's walk: its name rules are oxford's under its own AP rule
    target = E + "landmark_previous_hit:compute_ap"
    ident = identify(target, adapter="oxford", protocol="oxford", per_family=3).identification
    text = ident.text()
    assert ident.bug == "previous-hit-trapezoid" and ident.preset == "oxford", text
    assert "no known landmark rule reproduces" not in text and "not `oxford`'s" not in text, text
    assert "skipped as junk, yet still counted in |P|" in text and "|P| counts distinct positives" in text, text
    report = check(target, adapter="oxford", protocol="oxford", max_examples=10, only=["golden/*", "outside/*"])
    assert not [r.id for r in report.deviations if r.id.startswith("outside/")], report.text()


def test_landmark_name_rules_are_independent_factors_each_named_on_its_own():
    # positives minus junk, |P| = positives found: two factors, two findings, never one joint combination
    target = E + "landmark_found_positives:compute_ap"
    text = identify(target, adapter="oxford", protocol="oxford", per_family=3).text()
    assert "a name both positive and junk is skipped as junk and left out of |P|" in text, text
    assert "|P| counts only the positives found in the ranked list" in text, text
    assert "\n  matches `" not in text and "on the usual inputs, matches `" in text, text  # never "matches" alone
    report = check(target, adapter="oxford", protocol="oxford", max_examples=10, only=["outside/*"])
    found = {r.id: r.deviation for r in report.deviations}
    assert set(found) == {"outside/positive-also-junk", "outside/positive-not-ranked"}, report.text()
    assert found["outside/positive-also-junk"].clauses == ["spec §5 oxford positive also junk"]
    assert "left out of |P|" in found["outside/positive-also-junk"].explanations[0]
    assert found["outside/positive-not-ranked"].clauses == ["spec §5 oxford compute_ap"]
    assert "positives found in the ranked list" in found["outside/positive-not-ranked"].explanations[0]
