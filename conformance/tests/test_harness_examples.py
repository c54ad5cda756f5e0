"""The harness on our own lab-style examples: every bug flagged with its clause, every correct
function passes, ``identify`` names the right preset or the right difference."""

from __future__ import annotations

import pytest
from retrieval_conformance.conformance.harness import check, identify

E = "retrieval_conformance.conformance.examples."
FAST = dict(max_examples=20)


def _clauses_of(report, check_id):
    res = report.result(check_id)
    assert res.status == "deviate", f"{check_id} did not deviate:\n{report.text()}"
    return res.deviation.clauses


BUGGY = [
    # target, adapter, protocol, check that must deviate, clause it must name
    ("unstable_ties:calc_top_map", "hashing-codes", "hashing", "ties/tie-heavy", "spec §4 ties=stable"),
    ("reversed_ties:calc_top_map", "hashing-codes", "hashing", "ties/tie-heavy", "spec §4 ties=stable"),
    ("divided_by_k:calc_top_map", "hashing-codes", "hashing", "k/inside", "spec §6 ap_at_k=hits"),
    ("empty_dropped:calc_top_map", "hashing-codes", "hashing", "empty/no-relevant", "spec §8 empty=zero"),
    ("off_by_one:calc_top_map", "hashing-codes", "hashing", "mean/one-query", "spec §5 ranks start at 1"),
    ("topk_ignored:calc_top_map", "hashing-codes", "hashing", "k/inside", "spec §6 the cut-off k"),
    (
        "last_item_dropped:calc_top_map",
        "hashing-codes",
        "hashing",
        "ap/relevant-last",
        "spec §6 k=None (whole gallery)",
    ),
    ("seed003_break:calc_map_k", "hashing-codes", "dcmh", "mean/many-queries", "spec §8 mean over all queries"),
    ("trapezoid:mean_ap", "distances-relevance", "hashing", "ap/relevant-last", "spec §5 ap_rule=precision_sum"),
    (
        "prev_hit_trapezoid:mean_ap",
        "distances-relevance",
        "reid-matlab",
        "ap/relevant-last",
        "spec §5 ap_rule=trapezoid (precision at the previous rank)",
    ),
    ("grouped_ap:average_precision", "sklearn", "hashing", "ties/tie-heavy", "spec §4 ties=stable"),
]


@pytest.mark.parametrize("target,adapter,protocol,check_id,clause", BUGGY, ids=[b[0].split(":")[0] for b in BUGGY])
def test_buggy_example_is_flagged_with_its_clause(target, adapter, protocol, check_id, clause):
    report = check(E + target, adapter=adapter, protocol=protocol, only=[check_id], **FAST)
    assert report.exit_code == 1
    assert _clauses_of(report, check_id) == [clause], report.text()
    dev = report.result(check_id).deviation
    assert dev.mismatches and "reproduce" not in dev.snippet  # the snippet is code, the text says "reproduce"
    assert "import retrieval_conformance as rc" in dev.snippet


CORRECT = [
    ("hashing_correct:calc_top_map", "hashing-codes", "hashing"),
    ("dcmh_correct:calc_map_k", "hashing-codes", "dcmh"),
    ("reid_correct:evaluate_rank", "reid", "reid"),
    ("trapezoid:mean_ap", "distances-relevance", "reid-matlab"),
]


@pytest.mark.parametrize("target,adapter,protocol", CORRECT, ids=[c[0].split(":")[0] for c in CORRECT])
def test_correct_example_conforms(target, adapter, protocol):
    report = check(E + target, adapter=adapter, protocol=protocol, max_examples=15)
    assert report.exit_code == 0, report.text()
    assert not report.deviations
    ran = [r for r in report.results if r.status == "pass"]
    assert len(ran) >= 5  # golden cases and families really ran


def test_seed003_as_written_explains_01458_vs_07042():
    report = check(
        E + "seed003_break:calc_map_k", adapter="hashing-codes", protocol="dcmh", only=["golden/seed003-dcmh-full"]
    )
    assert report.exit_code == 1
    dev = report.result("golden/seed003-dcmh-full").deviation
    assert dev.clauses == ["spec §8 mean over all queries"]
    m = dev.mismatches[0]
    assert round(m.user, 4) == 0.1458 and str(m.reference) == "169/240"
    text = report.text()
    assert "0.145833 (= 7/48)" in text and "169/240 = 0.704167" in text
    assert "stray `break`" in text and "7/12" in text
    # the snippet reproduces it
    ns: dict = {}
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(dev.snippet, "<snippet>", "exec"), ns)
    printed = buf.getvalue().split()
    assert printed[0].startswith("0.14583") and printed[1] == "169/240"


@pytest.mark.parametrize(
    "target,adapter,protocol,preset",
    [
        ("hashing_correct:calc_top_map", "hashing-codes", "hashing", "hashing"),
        ("dcmh_correct:calc_map_k", "hashing-codes", "dcmh", "dcmh"),
        ("reid_correct:evaluate_rank", "reid", "reid", "reid"),
    ],
    ids=["hashing", "dcmh", "reid"],
)
def test_identify_names_the_preset_of_correct_examples(target, adapter, protocol, preset):
    ident = identify(E + target, adapter=adapter, protocol=protocol, per_family=3).identification
    assert ident.matched and ident.preset == preset and ident.differences == {} and ident.bug is None, ident.text()
    assert f"matches `{preset}`" in ident.text()


@pytest.mark.parametrize(
    "target,differences,bug,phrase",
    [
        ("reversed_ties:calc_top_map", {"ties": "reverse"}, None, "matches `hashing` except ties: reverse"),
        ("empty_dropped:calc_top_map", {"empty": "skip"}, None, "matches `hashing` except empty: skip"),
        ("divided_by_k:calc_top_map", {}, "divided-by-k", "AP@k is divided by k"),
        ("seed003_break:calc_map_k", {}, "first-query-only", "only the first query with a relevant item is evaluated"),
    ],
    ids=["reversed", "empty-dropped", "divided-by-k", "seed003-break"],
)
def test_identify_names_the_difference(target, differences, bug, phrase):
    ident = identify(E + target, adapter="hashing-codes", per_family=3).identification
    assert ident.differences == differences and ident.bug == bug, ident.text()
    assert phrase in ident.text()
    if bug == "first-query-only":
        assert ident.preset == "dcmh"


def test_identify_unstable_ties():
    ident = identify(E + "unstable_ties:calc_top_map", per_family=3).identification
    assert not ident.matched and ident.differences == {"ties": "unstable"}, ident.text()
    assert "an order no tie policy gives" in ident.text()


def test_grouped_sklearn_style_example_identified_as_grouped():
    ident = identify(E + "grouped_ap:average_precision", adapter="sklearn", per_family=3).identification
    assert ident.differences == {"ties": "grouped"}, ident.text()


def test_seed003_torch_form_with_torch_tensors(torch_module):
    # numpy arrays make the torch-written function fail: "auto" switches to tensors
    report = check(E + "seed003_break:calc_map_k_torch", protocol="dcmh", only=["golden/seed003-dcmh-full"])
    assert report.arrays == "torch" and report.exit_code == 1
    dev = report.result("golden/seed003-dcmh-full").deviation
    assert dev.clauses == ["spec §8 mean over all queries"]
    assert abs(dev.mismatches[0].user - 7 / 48) < 1e-6
    assert "torch.tensor(" in dev.snippet
    ok = check(
        E + "dcmh_correct:calc_map_k_torch",
        protocol="dcmh",
        arrays="torch",
        max_examples=10,
        only=["golden/*", "mean/*"],
    )
    assert ok.exit_code == 0, ok.text()


def test_sklearn_average_precision_score_is_hashing_with_grouped_ties():
    pytest.importorskip("sklearn")
    rep = identify("sklearn.metrics:average_precision_score", adapter="sklearn", per_family=3)
    ident = rep.identification
    assert ident.preset == "hashing" and ident.differences == {"ties": "grouped"}, ident.text()


@pytest.mark.slow
def test_torchmetrics_retrieval_average_precision():
    pytest.importorskip("torchmetrics")
    rep = identify(
        "torchmetrics.functional.retrieval:retrieval_average_precision", adapter="torchmetrics", per_family=3
    )
    text = rep.identification.text()
    assert "an order no tie policy gives" in text and "#3104" in text, text
