"""Inputs that separate real rules, no false findings, known deviations by cause.

Each test pins a verdict on one of our lab-style functions (conformance/examples/): the exit
status and every cause named.
"""

from __future__ import annotations

import pytest
from retrieval_conformance.conformance.harness import check, identify

E = "retrieval_conformance.conformance.examples."


def test_nan_for_an_empty_query_is_no_score_sign_finding():
    # NaN with scores <= 0 and NaN with scores > 0 are the same value, not a change
    rep = identify(
        E + "nan_for_empty:average_precision", adapter="sklearn", protocol="hashing", empty="skip", per_family=3
    )
    assert rep.exit_code == 0 and "scores <= 0" not in rep.text(), rep.text()
    report = check(
        E + "nan_for_empty:average_precision", adapter="sklearn", protocol="hashing", empty="skip", max_examples=15
    )
    assert report.exit_code == 0, report.text()


KNOWN_RUN = dict(max_examples=15, only=["golden/seed000-*", "ties/*", "mean/*"])


def test_known_deviations_accept_a_cause_under_every_check_that_finds_it():
    plain = check(E + "unstable_ties:calc_top_map", **KNOWN_RUN)
    found = {r.id for r in plain.deviations}
    assert plain.exit_code == 1 and "ties/tie-heavy" in found and len(found) > 1, plain.text()
    assert all(r.deviation.causes == [("§4 ties=stable", "§4 ties=unstable")] for r in plain.deviations)
    # what the function does, the clause it breaks, or the whole section: every deviation accepted
    for cause in ("§4 ties=unstable", "spec §4 ties=stable", "§4"):
        assert check(E + "unstable_ties:calc_top_map", known_deviations=[cause], **KNOWN_RUN).exit_code == 0, cause
    # a check id accepts that check only: the golden cases still deviate
    by_id = check(E + "unstable_ties:calc_top_map", known_deviations=["ties/*"], **KNOWN_RUN)
    assert by_id.exit_code == 1 and by_id.result("ties/tie-heavy").status == "known", by_id.text()
    # a cause it does not have accepts nothing
    assert check(E + "unstable_ties:calc_top_map", known_deviations=["§11 percent"], **KNOWN_RUN).exit_code == 1


def test_known_deviation_entries_naming_nothing_are_refused_by_name():
    for entry, words in (("§4 tie=wobbly", "names no clause"), ("tie/heavy", "names no check")):
        rep = check(E + "unstable_ties:calc_top_map", known_deviations=[entry], **KNOWN_RUN)
        assert rep.exit_code == 2 and repr(entry) in rep.usage_error and words in rep.usage_error, rep.usage_error


def test_identify_help_names_identify(capsys):
    from retrieval_conformance.conformance.harness.cli import check_main, identify_main

    assert identify_main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: retrieval-conformance identify") and "Name the conventions" in out
    assert check_main(["--help"]) == 0
    assert "§4 ties=unstable" in capsys.readouterr().out


# -- landmark rules: inputs outside the usual domain separate compute_ap.cpp's rule from revisitop's --


def test_landmark_model_is_each_reference_rule_exactly():
    import random

    from retrieval_conformance.conformance.harness.candidates.landmark_rules import landmark_ap
    from retrieval_conformance.reference.protocols.landmark.gldv2 import gldv2_ap_at_k
    from retrieval_conformance.reference.protocols.landmark.oxford import oxford_ap_exact
    from retrieval_conformance.reference.protocols.landmark.revisitop import revisitop_ap, revisitop_positions

    rng = random.Random(3)
    for _ in range(1500):  # repeated names, overlapping positive and junk lists, unranked positives
        names = [f"n{i}" for i in range(rng.randint(1, 7))]
        ranked = [rng.choice(names) for _ in range(rng.randint(0, 9))]
        pos = [rng.choice(names) for _ in range(rng.randint(1, 4))]
        junk = [rng.choice(names) for _ in range(rng.randint(0, 3))]
        assert landmark_ap(ranked, pos, junk, ap_rule="trapezoid") == oxford_ap_exact(ranked, pos, [], junk)
        assert landmark_ap(ranked, pos, junk, ap_rule="trapezoid", overlap="positive", count="list") == revisitop_ap(
            revisitop_positions(ranked, pos, junk), len(pos)
        )
        assert landmark_ap(
            ranked, pos, [], ap_rule="precision_sum", repeats="once", count="list", k=3
        ) == gldv2_ap_at_k(ranked, pos, 3)


@pytest.mark.parametrize(
    "example, own, other",
    [
        ("landmark_compute_ap_rule:compute_ap", "oxford", "roxford-medium"),
        ("landmark_revisitop_rule:compute_ap", "roxford-medium", "oxford"),
    ],
)
def test_compute_ap_and_revisitop_rules_are_told_apart(example, own, other):
    assert check(E + example, adapter="oxford", protocol=own, max_examples=15).exit_code == 0
    report = check(E + example, adapter="oxford", protocol=other, max_examples=15)
    clauses = (
        {
            "outside/positive-also-junk": "spec §5 oxford positive also junk",
            "outside/positive-listed-twice": "spec §5 oxford compute_ap",
        }
        if other == "oxford"
        else {
            "outside/positive-also-junk": "spec §5 revisitop positive also junk",
            "outside/positive-listed-twice": "spec §5 revisitop positives not de-duplicated",
        }
    )
    assert report.exit_code == 1 and {r.id: r.deviation.clauses for r in report.deviations} == {
        cid: [c] for cid, c in clauses.items()
    }, report.text()
    # accepted by the clause it breaks, under its own check id
    assert (
        check(
            E + example, adapter="oxford", protocol=other, max_examples=15, known_deviations=list(clauses.values())
        ).exit_code
        == 0
    )
    ident = identify(E + example, adapter="oxford", protocol=other, per_family=3)
    text = ident.text()
    assert ident.exit_code == 0 and ident.identification.preset.startswith(own.split("-")[0]), text
    assert f"(not `{other}`: its rules differ below)" in text
    overlap = "is skipped as junk" if own == "oxford" else "counts as a hit and still shifts"
    assert f"outside the protocol: a name both positive and junk {overlap}" in text


def test_gldv2_passes_no_junk_and_a_metric_without_junk_conforms():
    report = check(E + "gldv2_no_junk:gldv2_ap", adapter="oxford", protocol="gldv2", max_examples=15)
    assert report.exit_code == 0, report.text()
    # junk names are a fact outside GLDv2, not a deviation; under oxford they are the protocol's
    assert report.result("outside/junk-ranked").status == "pass"
    ident = identify(E + "gldv2_no_junk:gldv2_ap", adapter="oxford", protocol="gldv2", per_family=3)
    text = ident.text()
    assert ident.exit_code == 0 and ident.identification.preset == "gldv2", text
    assert "junk names are ranked as wrong predictions" in text and "skipped but keeps its position" in text
    oxford = check(E + "gldv2_no_junk:gldv2_ap", adapter="oxford", protocol="oxford", max_examples=15)
    assert oxford.exit_code == 1 and "outside/junk-ranked" in {r.id for r in oxford.deviations}, oxford.text()


# -- cut-offs that bind: lists longer than the cut-offs real code defaults to -------------------


def test_a_default_top10_is_caught_on_long_lists_and_identified():
    report = check(E + "default_top10:calc_map", max_examples=15, only=["k/*", "mean/*", "size/*"])
    # only the long lists show it: every input of the other families is at most 8 items long
    assert {r.id for r in report.deviations} == {"k/long-lists"}, report.text()
    dev = report.result("k/long-lists").deviation
    assert dev.clauses == ["spec §6 k=None (whole gallery)"] and "default k = 10" in " ".join(dev.explanations)
    ident = identify(E + "default_top10:calc_map", per_family=3)
    ident_ = ident.identification
    assert ident_.bug == "default-cutoff" and ident_.differences == {}, ident.text()
    assert [b.label for b in ident_.conventions[0].bugs] == ["default-cutoff[10]"]


def test_a_default_top1000_with_an_unstable_sort_divided_by_k_is_identified():
    ident = identify(E + "default_top1000_div:calc_map", per_family=3)
    best = ident.identification.conventions[0]
    assert ident.identification.differences == {"ties": "unstable"}, ident.text()
    assert sorted(b.label for b in best.bugs) == ["default-cutoff[1000]", "divided-by-k"], ident.text()
    report = check(E + "default_top1000_div:calc_map", max_examples=15, only=["k/long-lists", "mean/*"])
    assert report.exit_code == 1
    assert {c for r in report.deviations for c in r.deviation.clauses} == {
        "spec §6 k=None (whole gallery)",
        "spec §6 ap_at_k=hits",
    }, report.text()


def _cut_at_1000(qB, rB, query_L, retrieval_L, topk=1000):
    """hashing mAP with a stable sort whose topk defaults to 1000 (no division by k)."""
    import numpy as np

    total = 0.0
    for q in range(query_L.shape[0]):
        gnd = (retrieval_L @ query_L[q]) > 0
        ham = 0.5 * (qB.shape[1] - rB @ qB[q])
        ranks = np.flatnonzero(gnd[np.argsort(ham, kind="stable")][:topk]) + 1.0
        if ranks.size:
            total += np.mean(np.arange(1, ranks.size + 1) / ranks)
    return total / query_L.shape[0]


def test_the_challenge_runs_the_input_where_the_nearest_alternative_differs():
    # evidence of short inputs only: the protocol and "its own default cut at 1000" agree on all of them
    from retrieval_conformance.conformance.harness.engine.analysis import analyse
    from retrieval_conformance.conformance.harness.inputs.public import family, sample_cases
    from retrieval_conformance.conformance.harness.session import Session

    with Session(_cut_at_1000, isolation="none") as s:
        caps = s.adapter.capabilities(True)
        for case in sample_cases(family("mean/many-queries"), caps, 6):
            s.run_case(case)
        verdict = analyse(s).verdict
        assert [b.label for b in verdict.best.bugs] == ["default-cutoff[1000]"], verdict.best
        assert any(ev.case.name.endswith("#past-1000") for ev in s.observed)
        assert verdict.split_inputs >= 1


def test_every_known_bug_has_its_clause_a_cause_entry_can_name():
    from retrieval_conformance.conformance.harness.candidates.bugs import BUG_SECTION, BUGS
    from retrieval_conformance.reference.contract.spec import clauses

    assert all(f"{BUG_SECTION} {b.id}" in clauses() for b in BUGS)


def _gldv2_without_cut(positives, junk, ranked_list):
    """Precision-sum AP over the whole list / |P|: GLDv2's metric without its cut at 100."""
    relevant, hits, total = set(positives), 0, 0.0
    for i, name in enumerate(ranked_list, start=1):
        if name in relevant:
            hits += 1
            total += hits / i
    return total / len(positives)


def _gldv2_over_r(positives, junk, ranked_list):
    """GLDv2's AP@100 divided by |P| instead of min(100, |P|)."""
    relevant, hits, total = set(positives), 0, 0.0
    for i, name in enumerate(ranked_list[:100], start=1):
        if name in relevant:
            hits += 1
            total += hits / i
    return total / len(positives)


@pytest.mark.parametrize(
    "func, clause, named",
    [
        (_gldv2_without_cut, "spec §6 the cut-off k", "the cut-off is ignored"),
        (_gldv2_over_r, "spec §6 ap_at_k=min_k_r", "ap_at_k=r"),
    ],
)
def test_gldv2_cut_at_100_and_min_r_100_bind_on_long_lists(func, clause, named):
    report = check(func, adapter="oxford", protocol="gldv2", max_examples=10, only=["k/*", "mean/*"])
    assert {r.id: r.deviation.clauses for r in report.deviations} == {"k/long-lists": [clause]}, report.text()
    assert named in " ".join(report.result("k/long-lists").deviation.explanations)
