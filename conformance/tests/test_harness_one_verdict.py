"""One engine, one verdict: ``check`` and ``--identify`` name the same causes on every lab-style
example of ``conformance/examples/``.

``identify``'s causes are the parts of its verdict (``Identification.causes``); ``check``'s are the
causes its deviations name (``Report.named_causes``).  A function whose verdict differs between
the two commands is described two ways, and at least one of them is a claim no input supports.
"""

from __future__ import annotations

import os
import pkgutil

import pytest
from retrieval_conformance.conformance import examples
from retrieval_conformance.conformance.harness import check, identify

E = "retrieval_conformance.conformance.examples."

#: every example function the harness checks: (target, adapter, protocol)
EXAMPLES = [
    ("cmc_counts_hits:evaluate", "reid", "reid"),
    ("cuhk03_sampler:evaluate", "reid", "reid"),
    ("dataloader_workers:calc_map", "hashing-codes", "hashing"),
    ("dcmh_correct:calc_map_k", "hashing-codes", "dcmh"),
    ("default_top10:calc_map", "hashing-codes", "hashing"),
    ("default_top1000_div:calc_map", "hashing-codes", "hashing"),
    ("default_topk_div:calc_map", "hashing-codes", "hashing"),
    ("divided_by_k:calc_top_map", "hashing-codes", "hashing"),
    ("empty_dropped:calc_top_map", "hashing-codes", "hashing"),
    ("empty_scores_one:calc_top_map", "hashing-codes", "hashing"),
    ("fastreid_style:evaluate", "reid", "reid"),
    ("gldv2_no_junk:gldv2_ap", "oxford", "gldv2"),
    ("gnd_drop_4param:calc_map", "hashing-codes", "hashing"),
    ("grouped_ap:average_precision", "sklearn", "hashing"),
    ("hashing_correct:calc_top_map", "hashing-codes", "hashing"),
    ("junk_kept_oxford:compute_ap", "oxford", "oxford"),
    ("landmark_compute_ap_rule:compute_ap", "oxford", "roxford-medium"),
    ("landmark_found_positives:compute_ap", "oxford", "oxford"),
    ("landmark_previous_hit:compute_ap", "oxford", "oxford"),
    ("landmark_revisitop_rule:compute_ap", "oxford", "oxford"),
    ("last_item_dropped:calc_top_map", "hashing-codes", "hashing"),
    ("map_at_r_dists:map_at_r", "distances-relevance", None),
    ("map_at_r_codes:calc_map", "hashing-codes", "hashing"),
    ("market_port_mixed:evaluate", "reid", "reid"),
    ("mrr_counting_junk:mrr", "mrr", "hashing"),
    ("mrr_top100:mrr", "mrr", "hashing"),
    ("mutates_input:calc_map", "hashing-codes", "hashing"),
    ("nan_for_empty:average_precision", "sklearn", "hashing"),
    ("ndcg_exponential:ndcg_score", "sklearn-ndcg", "sklearn-ndcg"),
    ("ndcg_ideal_from_retrieved:ndcg_at_k", "sklearn-ndcg", None),
    ("ndcg_trec_eval_9_0a3:ndcg_cut", "sklearn-ndcg", "trec"),
    ("off_by_one:calc_top_map", "hashing-codes", "hashing"),
    ("one_sort_reid:evaluate", "reid", "reid"),
    ("padded_topk:calc_top_map", "hashing-codes", "hashing"),
    ("per_field_ties:evaluate", "reid", "reid"),
    ("percent_unstable:calc_top_map", "hashing-codes", "hashing"),
    ("pml_map_at_r:get_accuracy", "pml", "pml"),
    ("pool_per_query:calc_map", "hashing-codes", "hashing"),
    ("prev_hit_trapezoid:mean_ap", "distances-relevance", "reid-matlab"),
    ("prints_progress:calc_map", "hashing-codes", "hashing"),
    ("pytrec_eval_ndcg:ndcg_cut", "sklearn-ndcg", "trec"),
    ("raises_always:calc_map", "hashing-codes", "hashing"),
    ("raises_on_empty:average_precision", "sklearn", "hashing"),
    ("raises_two_ways:calc_top_map", "hashing-codes", "hashing"),
    ("recall_capped:recall_at_k", "recall-at-k", "hashing"),
    ("recall_hit:recall_at_k", "recall-at-k", "hashing"),
    ("reid_correct:evaluate_rank", "reid", "reid"),
    ("reid_empty_cmc:evaluate_rank", "reid", "reid"),
    ("reid_same_camera_kept:evaluate_rank", "reid", "reid"),
    ("reversed_ties:calc_top_map", "hashing-codes", "hashing"),
    ("reversed_ties_precision_at_k:calc_top_map", "hashing-codes", "hashing"),
    ("revisitop_style:compute_ap", "oxford", "oxford"),
    ("rounded_map:calc_top_map", "hashing-codes", "hashing"),
    ("seed003_break:calc_map_k", "hashing-codes", "dcmh"),
    ("sklearn_ndcg_style:ndcg_score", "sklearn-ndcg", "sklearn-ndcg"),
    ("topk_ignored:calc_top_map", "hashing-codes", "hashing"),
    ("torchreid_style:evaluate", "reid", "reid"),
    ("trapezoid:mean_ap", "distances-relevance", "hashing"),
    ("unstable_ties:calc_top_map", "hashing-codes", "hashing"),
    ("uses_removed_numpy:evaluate", "reid", "reid-matlab"),
]
#: example modules that are no function for the harness, or need a setting of their own
NOT_COMPARED = {
    "_common": "helpers, no metric function",
    "trec_eval_style": "trec_eval's measures of a run, checked against evaluate_run (test_trec.py)",
    "slow_first_call": "sleeps through its first call (test_harness_lab_examples.py sets the warm-up)",
}
#: the examples the default run compares (one per engine path: one sort behind two fields, fields
#: under different conventions, one family unexplained, two exceptions); the rest are slow
QUICK = {"one_sort_reid:evaluate", "per_field_ties:evaluate", "reversed_ties_precision_at_k:calc_top_map"}


def test_every_example_is_compared():
    modules = {m.name for m in pkgutil.iter_modules(examples.__path__)}
    listed = {target.split(":")[0] for target, _, _ in EXAMPLES}
    assert modules - listed - set(NOT_COMPARED) == set(), "add the new example to EXAMPLES"
    assert listed <= modules and set(NOT_COMPARED) <= modules


#: the rest take 5 to 90 s each (14 minutes for all 60 on a loaded 2-core machine): compared when
#: RC_LONG_CHECKS=1, which CI leaves unset to stay inside its time
LONG = os.environ.get("RC_LONG_CHECKS") == "1"


def _params():
    for target, adapter, protocol in EXAMPLES:
        skip = pytest.mark.skipif(not LONG, reason="a long check: RC_LONG_CHECKS=1 compares every example")
        marks = () if target in QUICK else (pytest.mark.slow, skip)
        yield pytest.param(target, adapter, protocol, marks=marks, id=target.replace(":", "-"))


@pytest.mark.parametrize("target, adapter, protocol", list(_params()))
def test_check_and_identify_name_the_same_causes(target, adapter, protocol):
    ident = identify(E + target, adapter=adapter, protocol=protocol, per_family=3)
    report = check(E + target, adapter=adapter, protocol=protocol, max_examples=10)
    assert (ident.exit_code == 2) == (report.exit_code == 2), (ident.text(), report.text())
    said, named = ident.identification.causes, report.named_causes
    assert said == named, f"identify: {said}\ncheck: {named}\n\n{ident.text()}\n\n{report.text()}"
