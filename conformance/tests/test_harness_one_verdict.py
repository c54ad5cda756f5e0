"""One engine, one verdict: ``check`` and ``--identify`` name the same causes on every lab-style
example of ``conformance/examples/``.

``identify``'s causes are the parts of its verdict (``Identification.causes``); ``check``'s are the
causes its deviations name (``Report.named_causes``).  A function whose verdict differs between
the two commands is described two ways, and at least one of them is a claim no input supports.
"""

from __future__ import annotations

import os
import pkgutil

import numpy as np
import pytest
from retrieval_conformance.conformance import examples
from retrieval_conformance.conformance.harness import check, identify
from retrieval_conformance.conformance.harness.report.results import DEVIATE

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
    # held-out style: real evaluation code of other fields, each reproduced by a function of our own
    ("heldout_dml_csq_map:csq_map", "hashing-codes", None),
    ("heldout_dml_faiss_intersection:recall_at_k", "recall-at-k", None),
    ("heldout_dml_hashnet_map:hashnet_map", "hashing-codes", None),
    ("heldout_dml_msloss_recall:msloss_recall_at_k", "recall-at-k", None),
    ("heldout_dml_pml_dict:pml_accuracy", "pml", None),
    ("heldout_dml_pml_map:pml_map_at_k", "distances-relevance", None),
    ("heldout_dml_pml_mrr:mrr", "mrr", None),
    ("heldout_dml_proxyanchor_recall:proxyanchor_recall_at_k", "recall-at-k", None),
    ("heldout_recsys_allrank_ndcg:allrank_ndcg", "sklearn-ndcg", None),
    ("heldout_recsys_cornac_map:cornac_map", "distances-relevance", None),
    ("heldout_recsys_cornac_mrr:cornac_mrr", "mrr", None),
    ("heldout_recsys_libreco_map:libreco_map", "distances-relevance", None),
    ("heldout_recsys_lightgcn_recall:lightgcn_recall", "recall-at-k", None),
    ("heldout_recsys_mlmetrics_mapk:mlmetrics_mapk", "distances-relevance", None),
    ("heldout_recsys_msrec_map_at_k:msrec_map_at_k", "distances-relevance", None),
    ("heldout_recsys_msrec_ndcg_raw:msrec_ndcg_raw", "sklearn-ndcg", None),
    ("heldout_recsys_msrec_recall:msrec_recall_at_k", "recall-at-k", None),
    ("heldout_recsys_recbole_map:recbole_map", "distances-relevance", None),
    ("heldout_recsys_recbole_mrr:recbole_mrr", "mrr", None),
    ("heldout_recsys_recbole_ndcg:recbole_ndcg", "sklearn-ndcg", None),
    ("heldout_xmodal_beir_map_cut:map_at_k", "distances-relevance", None),
    ("heldout_xmodal_beir_map_cut_unrounded:map_at_k", "distances-relevance", None),
    ("heldout_xmodal_beir_mrr:mrr", "mrr", None),
    ("heldout_xmodal_beir_recall_cap:recall_at_k", "recall-at-k", None),
    ("heldout_xmodal_beir_topk_acc:recall_at_k", "recall-at-k", None),
    ("heldout_xmodal_clip_benchmark:recall_at_k", "recall-at-k", None),
    ("heldout_xmodal_codebert_mrr:mrr", "mrr", None),
    ("heldout_xmodal_colbert_mrr10:mrr", "mrr", None),
    ("heldout_xmodal_colbert_recall:recall_at_k", "recall-at-k", None),
    ("heldout_xmodal_dpr_topk:recall_at_k", "recall-at-k", None),
    ("heldout_xmodal_graphcodebert_mrr:mrr", "mrr", None),
    ("heldout_xmodal_round5_min:recall_at_k", "recall-at-k", None),
    ("heldout_xmodal_unixcoder_map:mean_ap", "distances-relevance", None),
    ("heldout_xmodal_vsepp_i2t:recall_at_k", "recall-at-k", None),
    ("heldout2_ir_binary_gain_minimal:binary_gain_ndcg", "sklearn-ndcg", None),
    ("heldout2_ir_mteb_mrr:mrr", "mrr", None),
    ("heldout2_ir_mteb_recall_cap:recall_at_k", "recall-at-k", None),
    ("heldout2_ir_st_accuracy:st_accuracy_at_k", "recall-at-k", None),
    ("heldout2_ir_st_map_at_k:st_map_at_k", "distances-relevance", None),
    ("heldout2_ir_st_mrr:st_mrr", "mrr", None),
    ("heldout2_ir_st_ndcg:st_ndcg", "sklearn-ndcg", None),
    ("heldout2_ir_trectools_map:trectools_map", "distances-relevance", None),
    ("heldout2_ir_trectools_ndcg:trectools_ndcg", "sklearn-ndcg", None),
    ("heldout2_ir_trectools_rr:trectools_mrr", "mrr", None),
    ("heldout2_landmark_delf_gap:gap_sklearn", "sklearn", None),
    ("heldout2_landmark_delf_gldv2_map:gldv2_query_ap", "oxford", "gldv2"),
    ("heldout2_landmark_delf_revisited:revisited_ap", "oxford", "roxford-medium"),
    ("heldout2_reid_fastreid_cython:evaluate", "reid", "reid"),
    ("heldout2_reid_seqnet_prw:search_ap", "oxford", "oxford"),
    ("heldout2_reid_seqnet_prw:search_topk", "recall-at-k", None),
    ("heldout2_reid_vehicleid:evaluate", "reid", "reid"),
    ("heldout3_cmh_dcmh_pytorch_map:dcmh_map", "hashing-codes", None),
    ("heldout3_cmh_ucch_map:ucch_map", "hashing-codes", None),
    ("heldout3_rec_implicit_map:implicit_map_k", "distances-relevance", None),
    ("heldout3_rec_implicit_precision:implicit_precision", "recall-at-k", None),
    ("heldout3_rec_lenskit_ap:lenskit_ap", "distances-relevance", None),
    ("heldout3_rec_lenskit_ndcg:lenskit_ndcg", "sklearn-ndcg", None),
    ("heldout3_rec_ncf_hr:ncf_hit_ratio", "recall-at-k", None),
    ("heldout3_rec_spotlight_mrr:spotlight_mrr", "mrr", None),
    ("heldout3_rec_spotlight_recall:spotlight_recall", "recall-at-k", None),
    ("heldout3_sbir_sempcyc_map:map_at_k", "distances-relevance", None),
    ("heldout3_sbir_sempcyc_recall:recall_at_k", "recall-at-k", None),
    ("heldout3_vr_ce_v2t:recall_at_k", "recall-at-k", None),
    ("heldout3_vr_clip4clip_recall:recall_at_k", "recall-at-k", None),
    ("heldout3_vr_frozen_t2v:recall_at_k", "recall-at-k", None),
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


def test_check_names_the_impossible_value_identify_names():
    """HashNet's mAP@R (a held-out example) returns 25/12 on a one-item gallery with k beyond it:
    ``--identify`` names the impossible value; ``check`` did not, because no check's smallest
    input was that one.  Both name it now, word for word."""
    target = E + "heldout_dml_hashnet_map:hashnet_map"
    ident = identify(target, adapter="hashing-codes", per_family=3)
    report = check(target, adapter="hashing-codes", max_examples=10)
    said = [line.strip() for line in ident.text().splitlines() if line.strip().startswith("impossible value:")]
    assert len(said) == 1, ident.text()
    shown = [r for r in report.results if r.id == "identified/impossible-value"]
    assert len(shown) == 1 and shown[0].status == DEVIATE, report.text()
    assert said[0] in shown[0].deviation.explanations, report.text()


def test_a_raise_trigger_the_inputs_cannot_narrow_is_stated_with_its_rival():
    """Cornac's MRR (a held-out example) skips users without positives and divides by zero only
    when none has one; a second exception (galleries under 10 items) hid every input that would
    tell "a query without a relevant item" from "every query without one".  The report named the
    first as exact; it now states both, in check and in --identify alike."""
    target = E + "heldout_recsys_cornac_mrr:cornac_mrr"
    both = "a query without a relevant item (or only on every query without a relevant item"
    ident = identify(target, adapter="mrr", per_family=3)
    assert any(f[0] == "ZeroDivisionError" for f in ident.identification.raises), ident.text()
    assert both in ident.text(), ident.text()
    report = check(target, adapter="mrr", max_examples=10)
    assert both in report.text(verbose=True), report.text()


def _pessimistic_small_reverse_large(distances, relevance, k):
    """Hit rate whose sort puts relevant items last in tie groups under 16 items and reverses the
    gallery order of larger ones (as SeqNet's ``argsort()[::-1]`` does on a held-out run)."""
    hits = []
    for d, r in zip(np.asarray(distances), np.asarray(relevance)):
        order = []
        for value in np.unique(d):
            group = np.flatnonzero(d == value)
            if group.size >= 16:
                order += list(group[::-1])
            else:
                order += [g for g in group if not r[g]] + [g for g in group if r[g]]
        hits.append(1.0 if r[np.array(order[:k], dtype=int)].any() else 0.0)
    return float(np.mean(hits))


def test_a_tie_order_is_claimed_only_where_large_groups_tell_it_from_reverse():
    """Large tie groups with the relevant item first in gallery order cannot tell relevant-last
    from a reversing sort: check named ties=pessimistic where --identify, by another input, said
    unstable.  A group whose relevant item is last in gallery order tells them apart."""
    ident = identify(_pessimistic_small_reverse_large, adapter="recall-at-k", per_family=3)
    report = check(_pessimistic_small_reverse_large, adapter="recall-at-k", max_examples=10)
    verdict = next(line for line in ident.text().splitlines() if line.startswith("  matches"))
    assert "ties: unstable" in verdict and "ties: pessimistic" not in verdict, ident.text()
    note = next(n for n in report.notes if n.startswith("identified:"))
    assert "ties: unstable" in note and "ties: pessimistic" not in note, report.text()


def _sketch_map_at_k(distances, relevance, k=None):
    """SEM-PCYC's mAP@k (a held-out example, ``heldout3_sbir_sempcyc_map``) without scikit-learn:
    numpy's default sort cut to k, then AP over the cut list's score thresholds (a tie group enters
    at once), 0 for a query with no relevant item in the cut, the mean over every query."""
    sim = -np.asarray(distances, dtype=np.float64)
    rel = np.asarray(relevance).astype(bool)
    idx = (-sim).argsort()[:, :k]
    out = []
    for q in range(sim.shape[0]):
        s, r = sim[q, idx[q]], rel[q, idx[q]]
        if not r.any():
            out.append(0.0)
            continue
        total, before = 0.0, 0.0
        for t in np.unique(s)[::-1]:  # thresholds, the highest score first
            top = s >= t
            found = r[top].sum() / r.sum()
            total += (found - before) * (r[top].sum() / top.sum())
            before = found
        out.append(total)
    return float(np.mean(out))


def test_the_family_set_apart_is_the_one_whose_candidate_assumes_least():
    """SEM-PCYC's mAP@k: scikit-learn's AP of an unstable top k, so grouped ties on whole lists,
    and an order no policy gives where k cuts a tie group.  --identify set apart the one input
    with a grade above 1 and named an unstable order everywhere else, check set apart the
    cut-offs inside the list and named grouped ties: the family chosen by the most inputs
    explained changes as inputs are added.  The family whose candidate assumes least (grouped,
    before an unstable order) is kept by both."""
    ident = identify(_sketch_map_at_k, adapter="distances-relevance")  # as the command line runs them
    report = check(_sketch_map_at_k, adapter="distances-relevance", max_examples=30)
    family = "on every input without a cut-off k inside the list"
    line = next(x for x in ident.text().splitlines() if x.strip().startswith("on every input"))
    assert family in line and "ties: grouped" in line, ident.text()
    note = next(n for n in report.notes if n.startswith("identified"))
    assert family in note and "ties: grouped" in note, report.text()
