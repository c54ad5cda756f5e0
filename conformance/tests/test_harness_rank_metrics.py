"""The harness on nDCG, MAP@R, MRR and Recall@k functions: our examples (conformance/examples/)
each with its verdict, the conventions and bugs ``identify`` names, and scikit-learn's real
``ndcg_score`` identified as ``sklearn-ndcg``."""

from __future__ import annotations

import numpy as np
import pytest
from retrieval_conformance.conformance.harness import check, identify
from retrieval_conformance.conformance.harness.adapters.registry import ADAPTERS, get_adapter
from retrieval_conformance.conformance.harness.inputs.public import Case

E = "retrieval_conformance.conformance.examples."
FAST = dict(max_examples=15)


def _ident(target, adapter, **kw):
    report = identify(target if callable(target) else E + target, adapter=adapter, **kw)
    ident = report.identification
    assert ident is not None and not ident.uncheckable, report.text()
    return report, ident


def _best(ident):
    return ident.conventions[0]


# -- identify ---------------------------------------------------------------------------------
IDENTIFIED = [
    # target, adapter, preset named, options that differ from it, bug named
    ("sklearn_ndcg_style:ndcg_score", "sklearn-ndcg", "sklearn-ndcg", {}, None),
    ("ndcg_exponential:ndcg_score", "sklearn-ndcg", "sklearn-ndcg", {"gain": "exponential"}, None),
    (
        "ndcg_ideal_from_retrieved:ndcg_at_k",
        "sklearn-ndcg",
        "sklearn-ndcg",
        {"ties": "stable"},
        "ndcg-ideal-from-retrieved",
    ),
    ("pml_map_at_r:get_accuracy", "pml", "pml", {}, None),
    ("mrr_counting_junk:mrr", "mrr", "hashing", {}, "mrr-counting-junk"),
    ("mrr_counting_junk:mrr_junk_removed", "mrr", "hashing", {}, None),
    ("recall_hit:recall_at_k", "recall-at-k", "hashing", {"recall": "hit"}, None),
    ("ndcg_trec_eval_9_0a3:ndcg_cut", "sklearn-ndcg", "trec", {"discount": "trec_eval_9.0a3"}, None),
]


@pytest.mark.parametrize("target,adapter,preset,differences,bug", IDENTIFIED, ids=[i[0] for i in IDENTIFIED])
def test_identify_names_the_convention_and_the_bug(target, adapter, preset, differences, bug):
    report, ident = _ident(target, adapter)
    assert ident.matched and report.exit_code == 0, report.text()
    assert ident.preset == preset and ident.differences == differences, report.text()
    assert ident.bug == bug, report.text()
    assert [b.id for b in _best(ident).bugs] == ([bug] if bug else [])
    assert "equally consistent" not in ident.text(), report.text()  # the alternatives were ruled out


def test_ignore_ties_variant_is_a_reverse_tie_order():
    """A stable sort reversed: ties in reverse gallery order, linear gains, every rank discounted by
    log2(r + 1).  That is trec_eval's nDCG since 9.0.4 (spec §9 preset=trec: ties by name
    descending, §7 discount=log2), so the verdict is the trec preset with no difference; under
    trec_eval 9.0a3's discount it would not match (``ndcg_trec_eval_9_0a3`` does)."""
    report, ident = _ident("sklearn_ndcg_style:ndcg_score_ignore_ties", "sklearn-ndcg")
    assert ident.matched, report.text()
    best = _best(ident).conv
    assert best.ties == "reverse" and best.gain == "linear" and best.discount == "log2"
    assert ident.preset == "trec" and ident.differences == {} and ident.bug is None, report.text()


def test_no_verdict_when_nothing_reproduces_the_values():
    """MAP@R divided by the matches found (not by R) is neither a convention nor a modelled bug:
    no cause is named."""
    report, ident = _ident("pml_map_at_r:get_accuracy_dividing_by_matches", "pml")
    assert not ident.matched and report.exit_code == 1
    assert ident.conventions == [] and ident.bug is None
    assert "no known convention or bug reproduces" in ident.text()


# -- check ------------------------------------------------------------------------------------
FLAGGED = [
    # target, adapter, overrides, check that must deviate, the clause it names
    ("ndcg_exponential:ndcg_score", "sklearn-ndcg", {}, "ndcg/graded", "spec §7 gain=linear"),
    ("ndcg_ideal_from_retrieved:ndcg_at_k", "sklearn-ndcg", {"ties": "stable"}, "k/inside", "spec §7 nDCG"),
    ("mrr_counting_junk:mrr", "mrr", {}, "junk/before-first-relevant", "spec §7 MRR"),
    ("recall_hit:recall_at_k", "recall-at-k", {}, "k/inside", "spec §7 recall=fraction"),
    ("ndcg_trec_eval_9_0a3:ndcg_cut", "sklearn-ndcg", {"ties": "reverse"}, "ndcg/graded", "spec §7 discount=log2"),
]


@pytest.mark.parametrize("target,adapter,overrides,check_id,clause", FLAGGED, ids=[f[0] for f in FLAGGED])
def test_buggy_rank_metric_is_flagged_with_its_clause(target, adapter, overrides, check_id, clause):
    report = check(E + target, adapter=adapter, only=[check_id], **overrides, **FAST)
    assert report.exit_code == 1, report.text()
    res = report.result(check_id)
    assert res.status == "deviate" and res.deviation.clauses == [clause], report.text()
    assert "import retrieval_conformance as rc" in res.deviation.snippet


CONFORMING = [
    ("sklearn_ndcg_style:ndcg_score", "sklearn-ndcg", None),
    ("pml_map_at_r:get_accuracy", "pml", None),
    ("mrr_counting_junk:mrr_junk_removed", "mrr", "hashing"),
]


@pytest.mark.parametrize("target,adapter,protocol", CONFORMING, ids=[c[0] for c in CONFORMING])
def test_correct_rank_metric_conforms(target, adapter, protocol):
    report = check(E + target, adapter=adapter, protocol=protocol, **FAST)
    assert report.exit_code == 0, report.text()
    assert sum(r.status == "pass" for r in report.results) >= 8  # golden cases and families really ran


# -- the adapters ------------------------------------------------------------------------------
def test_rank_adapters_are_registered():
    assert {"sklearn-ndcg", "pml", "mrr", "recall-at-k"} <= set(ADAPTERS)


def test_pml_embeddings_keep_the_order_and_the_ties():
    """The pml adapter's embeddings: ±1 vectors of a width 4^j, whose Euclidean distances (also
    after normalisation) rank exactly like the case's distances, ties included."""
    d = np.array([[2, 0, 1, 1, 3], [0, 0, 2, 1, 1]], dtype=np.float64)
    rel = np.array([[1, 0, 1, 0, 0], [1, 0, 1, 0, 0]], dtype=bool)
    adapter = get_adapter("pml", lambda q, ql, r, rl: 0.0)
    call = adapter.calls(Case("t", d, rel), rel, np.zeros_like(rel), "numpy")[0]
    query, q_labels, ref, r_labels = call.args
    width = query.shape[1]
    assert width & (width - 1) == 0 and (width.bit_length() - 1) % 2 == 0  # a power of four
    qn = query / np.linalg.norm(query, axis=1, keepdims=True)
    rn = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    e = np.sqrt(((qn[:, None, :] - rn[None, :, :]) ** 2).sum(-1))
    for q in range(2):
        assert (np.sign(d[q][:, None] - d[q][None, :]) == np.sign(e[q][:, None] - e[q][None, :])).all()
    assert ((q_labels[:, None] == r_labels[None, :]) == rel).all()


def test_ndcg_adapter_passes_grades_and_skips_what_it_cannot_express():
    adapter = get_adapter("sklearn-ndcg", lambda y_true, y_score, k=None: 0.0)
    d = np.array([[0, 1, 1]], dtype=np.float64)
    grades = np.array([[0, 3, 1]])
    case = Case("t", d, grades > 0, grades=grades, k=2)
    call = adapter.calls(case, grades > 0, np.zeros((1, 3), bool), "numpy")[0]
    assert call.args[0].tolist() == [[0, 3, 1]] and call.kwargs == {"k": 2}
    assert call.args[1][0, 0] > call.args[1][0, 1] == call.args[1][0, 2]  # similarities: larger is closer
    from retrieval_conformance.conformance.harness.adapters.base import Skip

    with pytest.raises(Skip):
        adapter.calls(Case("one", d[:, :1], grades[:, :1] > 0), grades[:, :1] > 0, np.zeros((1, 1), bool), "numpy")


# -- scikit-learn itself ------------------------------------------------------------------------
def test_real_sklearn_ndcg_score_is_identified_as_sklearn_ndcg():
    metrics = pytest.importorskip("sklearn.metrics")
    report, ident = _ident(metrics.ndcg_score, "sklearn-ndcg")
    assert ident.matched and report.exit_code == 0, report.text()
    assert ident.preset == "sklearn-ndcg" and ident.differences == {} and ident.bug is None, report.text()
    best = _best(ident)
    assert best.conv.ties == "expected" and best.conv.gain == "linear" and best.conv.empty == "zero"
    assert "equally consistent" not in ident.text()


# -- pytorch-metric-learning itself --------------------------------------------------------------
def real_pml_get_accuracy(query, query_labels, reference, reference_labels):
    """pytorch-metric-learning's AccuracyCalculator as a user calls it (k-NN by its torch
    Euclidean distance, so faiss is not needed), returning its dict."""
    import torch
    from pytorch_metric_learning.distances import LpDistance
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator
    from pytorch_metric_learning.utils.inference import CustomKNN

    calculator = AccuracyCalculator(
        include=("mean_average_precision_at_r", "r_precision", "precision_at_1"),
        knn_func=CustomKNN(LpDistance(normalize_embeddings=False)),
        device=torch.device("cpu"),
    )
    t = [torch.as_tensor(np.asarray(a)) for a in (query, query_labels, reference, reference_labels)]
    return calculator.get_accuracy(t[0].float(), t[1], t[2].float(), t[3], ref_includes_query=False)


def test_real_pml_map_at_r_is_identified_as_pml():
    """pml's MAP@R, R-precision and precision_at_1 are the pml preset's on every input; its k-NN
    (torch.topk) orders tied distances by no tie policy, which identify reports as unstable ties
    (spec §13 pytorch-metric-learning: "ties in k-NN order") rather than naming a policy."""
    pytest.importorskip("pytorch_metric_learning")
    pytest.importorskip("torch")
    report, ident = _ident(real_pml_get_accuracy, "pml")
    assert ident.preset == "pml" and ident.differences == {"ties": "unstable"}, report.text()
    assert ident.bug is None and "equally consistent" not in ident.text(), report.text()
    assert "every value lies between the extreme tie orders" in ident.text()
