"""The harness's candidate space and its inputs (issue 34, classes 1, 2 and 8): every clause an
adapter can express is searched, cut-offs a function applies on its own are found on lists whose
first relevant item lies beyond them, and the smaller cases: an empty CMC, GLDv2 code without
junk, and nothing written into the user's working folder."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.harness import check, identify
from retrieval_conformance.conformance.harness.adapters.registry import ADAPTERS
from retrieval_conformance.conformance.harness.candidates.candidate import UNSTABLE
from retrieval_conformance.conformance.harness.candidates.reference_values import CLAUSE_VALUES
from retrieval_conformance.conformance.harness.candidates.space import status
from retrieval_conformance.conformance.harness.inputs.public import DEFAULT_CUTOFFS, long_cases
from retrieval_conformance.conformance.harness.session import Session
from retrieval_conformance.conformance.support.checkout import checkout
from retrieval_conformance.reference.contract import spec
from retrieval_conformance.reference.contract.conventions import CONVENTIONS

E = "retrieval_conformance.conformance.examples."


def _clauses(report):
    return {c for r in report.deviations for c in r.deviation.clauses}


# -- class 8 ------------------------------------------------------------------------------------
def test_check_writes_no_hypothesis_folder_into_the_working_folder(tmp_path):
    # a fresh process: hypothesis caches the constants of the modules it reads under ./.hypothesis
    code = (
        "from retrieval_conformance.conformance.harness import check\n"
        f"r = check({E + 'hashing_correct:calc_top_map'!r}, max_examples=10, only=['ties/*'])\n"
        "raise SystemExit(r.exit_code)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_empty_cmc_where_no_query_counts_is_read_not_a_wrong_type():
    # under reid (empty=skip) a query without a valid match is left out: nothing counted, nothing to compare
    ok = check(E + "reid_empty_cmc:evaluate_rank", adapter="reid", protocol="reid", max_examples=10, only=["empty/*"])
    assert ok.exit_code == 0, ok.text()
    # under reid-matlab (empty=zero) such a query counts 0: the empty curve is the empty-query policy's doing
    report = check(
        E + "reid_empty_cmc:evaluate_rank",
        adapter="reid",
        protocol="reid-matlab",
        ap_rule="precision_sum",
        max_examples=10,
        only=["empty/no-relevant"],
    )
    assert report.exit_code == 1 and "wrong return type" not in report.text(), report.text()
    assert _clauses(report) == {"spec §8 empty=zero"}, report.text()


# -- class 1: every clause an adapter can express is searched --------------------------------
def any_arguments(*args, **kwargs):
    """A function every adapter binds to, with a cut-off."""
    return None


def _searched(name):
    """(option, value) pairs the session of adapter ``name`` identifies among without a cut-off and, where
    its signature passes one, with one, for the options its values depend on."""
    if ADAPTERS[name].forced_arrays == "torch":  # its signature takes tensors: torch is needed
        pytest.importorskip("torch")
    session = Session(any_arguments, adapter=name)
    out = set()
    for any_k in (False, True)[: 1 + session.adapter.capabilities(True).k]:
        convs, _ = session.candidate_space(any_k)
        out |= {(option, getattr(c, option)) for c in convs for option in session.adapter.options}
    return session, out


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_every_clause_is_searched_or_carries_the_reason_it_cannot_be_expressed(name):
    session, searched = _searched(name)
    values = [(c.option, c.value) for c in CONVENTIONS] + list(CLAUSE_VALUES) + [("ties", UNSTABLE)]
    for option, value in values:
        state, why = status(session.adapter, session.convention, option, value)
        if (option, value) in searched:
            assert why is None and state.startswith("tried"), (name, option, value, why)
        else:
            assert why, f"adapter {name}: {option}={value} is neither searched nor given a reason"
            assert not state.startswith("tried"), (name, option, value, state)


def test_the_clauses_searched_beside_the_options_resolve_and_capped_recall_is_tried():
    assert all(clause in spec.clauses() for clause in CLAUSE_VALUES.values())
    assert ("recall", "capped") in _searched("recall-at-k")[1]


def test_the_search_table_of_the_harness_guide_is_current():
    loader = importlib.util.spec_from_file_location("docs_hooks", checkout() / "docs" / "hooks.py")
    hooks = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(hooks)
    page = hooks.HARNESS_PAGE
    assert hooks.current_page(page) == page.read_text(encoding="utf-8"), "stale: run python docs/hooks.py"
    assert "**no reason**" not in page.read_text(encoding="utf-8")


def test_capped_recall_is_searched_and_named_by_its_clause():
    ident = identify(E + "recall_capped:recall_at_k", adapter="recall-at-k", per_family=3)
    found = ident.identification
    assert found.matched and found.preset == "hashing" and found.differences == {"recall": "capped"}, ident.text()
    assert found.bug is None and "equally consistent" not in ident.text()
    report = check(E + "recall_capped:recall_at_k", adapter="recall-at-k", max_examples=10, only=["k/inside"])
    assert _clauses(report) == {"spec §7 recall=fraction"}, report.text()
    assert "R_cap@k" in " ".join(report.result("k/inside").deviation.explanations)


def test_map_at_r_behind_hashing_codes_is_named_with_no_ap_rule_alternative():
    ident = identify(E + "map_at_r_codes:calc_map", per_family=3)
    found = ident.identification
    assert found.bug == "cut-at-r" and found.differences == {}, ident.text()
    assert "equally consistent" not in ident.text()  # MAP@R sums precisions whatever the AP rule


# -- class 2: cut-offs a function applies on its own -------------------------------------------
#: each measure of a ranking: the options that ask ``evaluate`` for it, and where the result holds it
MEASURES = {
    "MRR": ({}, lambda res: res.mrr),
    "success (the hit rate, Rank-1 at k = 1)": ({"recall": "hit"}, lambda res: res.recall_at_k),
    "recall": ({}, lambda res: res.recall_at_k),
    "nDCG": ({}, lambda res: res.ndcg_at_k),
    "AP": ({}, lambda res: res.map),
}


def _per_cutoff(case, measure):
    """The measure's value at each default cut-off and over the whole ranking, through the reference."""
    options, value = MEASURES[measure]
    return [
        value(rc.evaluate(distances=case.distances, relevance=case.relevance, protocol="hashing", k=k, **options))
        for k in (*DEFAULT_CUTOFFS, None)
    ]


@pytest.mark.parametrize("measure", list(MEASURES))
def test_long_lists_tell_every_default_cutoff_apart_for_every_measure(measure):
    """For each measure, some long input whose first relevant items lie beyond the cut-offs gives a
    different value at each default cut-off and over the whole ranking: no built-in cut-off hides."""
    firsts = [c for c in long_cases() if "first-past" in c.name]
    assert firsts
    cut_values = list(zip(*(_per_cutoff(c, measure) for c in firsts)))  # per cut-off: the values of every case
    assert len(set(cut_values)) == len(DEFAULT_CUTOFFS) + 1, (measure, cut_values)
    for case in firsts:  # every query's first relevant item lies beyond some default cut-off
        ranks = [int(np.sum(d < d[r].min())) + 1 for d, r in zip(case.distances, case.relevance)]
        assert all(rank > DEFAULT_CUTOFFS[0] for rank in ranks), (case.name, ranks)


def test_an_mrr_of_the_top_100_is_caught_and_its_cutoff_named():
    report = check(E + "mrr_top100:mrr", adapter="mrr", max_examples=10, only=["k/long-lists", "mean/*"])
    assert {r.id for r in report.deviations} == {"k/long-lists"}, report.text()
    dev = report.result("k/long-lists").deviation
    assert dev.clauses == ["spec §6 k=None (whole gallery)"] and "default k = 100" in " ".join(dev.explanations)
    ident = identify(E + "mrr_top100:mrr", adapter="mrr", per_family=3)
    assert [b.label for b in ident.identification.conventions[0].bugs] == ["default-cutoff[100]"], ident.text()
    assert "MRR@100" in ident.text()


def test_gldv2_code_without_junk_is_named_as_keeping_junk_under_oxford():
    # the inputs of --protocol oxford pass junk names; GLDv2's metric ranks them as wrong predictions
    # and reads its first 100 names, dividing by min(R, 100): both are named, beside the preset gldv2
    ident = identify(E + "gldv2_no_junk:gldv2_ap", adapter="oxford", protocol="oxford", per_family=3)
    found = ident.identification
    assert found.preset == "gldv2" and found.differences == {}, ident.text()
    assert sorted(b.label for b in found.conventions[0].bugs) == ["default-cutoff[100]", "junk-kept"], ident.text()
    assert "junk items are not removed" in ident.text()
