"""trec_eval's nDCG discount: every rank r divided by log2(r + 1) since trec_eval 9.0.4 (spec §7
discount=log2), the 2008 rule kept as ``discount="trec_eval_9.0a3"``, and the retired name
``"trec"`` refused in every entry point with both replacements named."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.cli import main
from retrieval_conformance.conformance.support.requirements import implementation_params, require_implementation
from retrieval_conformance.reference.contract.discounts import discount_table
from retrieval_conformance.reference.contract.presets import PRESETS
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run

D2 = Fraction(float(discount_table(2)[1]))  # the float64 nearest to 1 / log2(3)


@pytest.mark.parametrize("implementation", implementation_params())
def test_grades_0_then_1_give_trec_eval_9_0_8s_ndcg(implementation):
    """Two documents, grades 0 and 1, ranked in that order: trec_eval 9.0.8 prints ndcg_cut_5
    0.6309 (= 1 / log2(3)); the 2008 rule gave 1."""
    require_implementation(implementation)
    res = evaluate_run({"q": {"a": 2.0, "b": 1.0}}, {"q": {"a": 0, "b": 1}}, k=5, implementation=implementation)
    assert f"{res.extras['trec_eval']['ndcg_cut_5']:.4f}" == "0.6309"
    assert res.ndcg_at_k == pytest.approx(float(D2), abs=1e-15)
    full = evaluate_run({"q": {"a": 2.0, "b": 1.0}}, {"q": {"a": 0, "b": 1}}, implementation=implementation)
    assert f"{full.extras['trec_eval']['ndcg']:.4f}" == "0.6309"
    if implementation == "reference":
        assert res.per_query.exact["ndcg"] == [D2] and full.per_query.exact["ndcg"] == [D2]


def test_trec_preset_discounts_every_rank():
    assert PRESETS["trec"].discount == "log2"
    res = rc.evaluate(scores=[[2.0, 1.0]], relevance=[[0, 1]], protocol="trec", implementation="reference")
    assert res.per_query.exact["ndcg"][0] == D2


@pytest.mark.parametrize("implementation", implementation_params())
def test_the_2008_rule_is_kept_under_its_own_name(implementation):
    require_implementation(implementation)
    res = rc.evaluate(
        scores=[[2.0, 1.0]],
        relevance=[[0, 1]],
        protocol="trec",
        discount="trec_eval_9.0a3",
        implementation=implementation,
    )
    assert res.ndcg_at_k == 1.0


def _names_both(message: str) -> bool:
    return "'log2'" in message and "'trec_eval_9.0a3'" in message and "'trec'" in message


def test_retired_name_is_refused_by_evaluate():
    with pytest.raises(ValueError, match="discount") as err:
        rc.evaluate(scores=[[2.0, 1.0]], relevance=[[0, 1]], discount="trec")
    assert _names_both(str(err.value)), err.value


def test_retired_name_is_refused_by_the_accumulator():
    with pytest.raises(ValueError, match="discount") as err:
        rc.Accumulator(discount="trec")
    assert _names_both(str(err.value)), err.value


def test_retired_name_is_refused_by_the_command_line(tmp_path, capsys):
    path = tmp_path / "run.npz"
    np.savez(path, scores=np.array([[2.0, 1.0]]), relevance=np.array([[0, 1]]))
    with pytest.raises(SystemExit) as stop:  # argparse refuses a value outside the conventions table
        main(["evaluate", "--npz", str(path), "--discount", "trec"])
    assert stop.value.code == 2
    assert _names_both(capsys.readouterr().err)
