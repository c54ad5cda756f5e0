"""The audit (``rc.audit``) on problems built so that the answer is known.

* a published-style number made under a known convention, or with a known bug, is traced
  back to it (the number is computed here by hand from a stable argsort, not by the audit);
* planted self-matches and duplicate gallery items are found, and their effect equals an
  evaluation of the gallery with them deleted;
* the tie interval equals [pessimistic, optimistic] computed here from a lexsort, and every
  order of the tied items (stable, reverse, numpy's default sort, random) lies inside it;
* the seed documents' 0.5944 and 0.6026 traced to their conventions;
* the fast path of the audit's candidates agrees with the harness's exact predictions.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import retrieval_conformance as rc
from retrieval_conformance.conformance.audit import fail_if
from retrieval_conformance.conformance.audit.harness_link import Values, needs_exact, stages
from retrieval_conformance.conformance.audit.inputs import AuditData, Evaluator
from retrieval_conformance.conformance.audit.metrics import METRICS
from retrieval_conformance.conformance.audit.reported import parse


def _seed000(case_id: str):
    from retrieval_conformance import golden

    with open(os.path.join(os.path.dirname(golden.__file__), "seed000.json"), encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    case = next(c for c in cases if c["id"] == case_id)
    return {key: np.array(value) for key, value in case["input"].items()}


def _ap_by_hand(order_rel: np.ndarray, k=None, divide_by=None) -> float:
    """Precision-sum AP of a ranked relevance row: sum of i / r_i over the hits (in the top k),
    over the hits, or over ``divide_by``."""
    rel = order_rel if k is None else order_rel[:k]
    ranks = np.flatnonzero(rel) + 1
    if ranks.size == 0:
        return 0.0
    total = sum((i + 1) / r for i, r in enumerate(ranks))
    return total / (divide_by if divide_by is not None else ranks.size)


def _tied_problem(seed=3, n_q=12, n_g=40, levels=5):
    rng = np.random.default_rng(seed)
    dist = rng.integers(0, levels, (n_q, n_g)).astype(np.float64)
    rel = rng.random((n_q, n_g)) < 0.25
    rel[:, 0] = True  # every query has a relevant item
    return dist, rel


# -- section 2: a number traced back to its convention --------------------------------------

def test_seed_numbers_traced_to_their_conventions():
    for case_id, k, printed in (("seed000-map-at-5", 5, "0.5944"), ("seed000-map-all", None, "0.6026")):
        a = rc.audit(**_seed000(case_id), protocol="hashing", k=k, reported=f"map={printed}")
        labels = [m["label"] for m in a.reproduced["matches"]]
        assert labels and labels[0].startswith("preset hashing, ties=stable, ap_rule=precision_sum"), labels
        assert all("ties=stable" in label for label in labels)  # the golden provenance: only stable ties give it
        assert not any(m["bugs"] for m in a.reproduced["matches"])


def test_unstable_order_traced_to_an_unstable_sort():
    # the seed's full mAP under numpy >= 1.25's AVX-512 sort (spec §4): no tie policy gives it
    a = rc.audit(**_seed000("seed000-map-all"), reported="map=0.5915")
    matches = a.reproduced["matches"]
    assert matches and all(m["options"]["ties"] == "unstable" for m in matches)
    assert a.reproduced["stages"] == 2


def test_known_convention_traced_back():
    dist, rel = _tied_problem()
    k = 10
    # made by hand: stable order, AP@k divided by R (every relevant item), empty queries none
    order = np.argsort(dist, axis=1, kind="stable")
    aps = [_ap_by_hand(rel[q, order[q]], k, divide_by=rel[q].sum()) for q in range(len(dist))]
    published = f"{np.mean(aps):.4f}"
    a = rc.audit(distances=dist, relevance=rel, k=k, reported={"map": published})
    best = a.reproduced["matches"][0]
    assert best["options"]["ties"] == "stable" and best["options"]["ap_at_k"] == "r" and not best["bugs"]


def _previous_hit_trapezoid(order_rel: np.ndarray) -> float:
    """The trapezoid whose left side is the precision at the previous hit (1 before the first)."""
    ranks = np.flatnonzero(order_rel) + 1
    old, total = 1.0, 0.0
    for i, r in enumerate(ranks, start=1):
        total += (old + i / r) / 2
        old = i / r
    return total / ranks.size if ranks.size else 0.0


@pytest.mark.parametrize("bug", ["divided-by-k", "last-item-dropped", "previous-hit-trapezoid"])
def test_known_bug_traced_back(bug):
    dist, rel = _tied_problem(seed=5)
    order = np.argsort(dist, axis=1, kind="stable")
    n_q, n_g = dist.shape
    if bug == "divided-by-k":
        k = 10
        aps = [_ap_by_hand(rel[q, order[q]], k, divide_by=k) for q in range(n_q)]
    elif bug == "last-item-dropped":  # gnd[0:-1]: the last ranked item never counts
        k = None
        aps = [_ap_by_hand(rel[q, order[q]][:-1]) for q in range(n_q)]
    else:  # modelled on the ranks: the harness's exact prediction, on data this small
        k = None
        aps = [_previous_hit_trapezoid(rel[q, order[q]]) for q in range(n_q)]
    published = f"{np.mean(aps):.5f}"
    a = rc.audit(distances=dist, relevance=rel, k=k, reported=f"map={published}")
    assert a.reproduced["n_matches"] >= 1
    assert all(m["cost"] >= 1 for m in a.reproduced["matches"])  # no plain convention reproduces it
    first = a.reproduced["matches"][0]  # simplest first: the bug on the declared protocol
    assert first["bugs"] == [bug] and first["options"]["ties"] == "stable", first["label"]


def test_several_numbers_narrow_the_set_and_none_is_said_plainly():
    dist, rel = _tied_problem(seed=7)
    one = rc.audit(distances=dist, relevance=rel, reported="map=0.0001")
    assert one.reproduced["n_matches"] == 0 and one.reproduced["nearest"] is not None
    assert "none of" in one.to_text()
    # an unstable order with the last item dropped only says "somewhere in [0, 1]": counted, not listed
    assert one.reproduced["uninformative"] > 0 and "bound the number by [0, 1]" in one.to_text()
    res = rc.evaluate(distances=dist, relevance=rel, ties="stable")
    alone = rc.audit(distances=dist, relevance=rel, reported={"map": f"{res.map:.1f}"})
    both = rc.audit(distances=dist, relevance=rel, reported={"map": f"{res.map:.1f}", "mrr": f"{res.mrr:.3f}"})
    labels = {m["label"] for m in alone.reproduced["matches"]}
    narrowed = {m["label"] for m in both.reproduced["matches"]}
    assert narrowed < labels  # a second number keeps only candidates that give both
    assert all("ties=stable" in label for label in narrowed)


def test_percent_and_digits():
    (r,) = parse("map=60.26")
    assert r.percent and abs(r.value - 0.6026) < 1e-12 and abs(r.half - 0.00005) < 1e-15
    (r,) = parse({"rank1": "88.2%"})
    assert r.metric.name == "rank1" and abs(r.half - 0.0005) < 1e-15
    a = rc.audit(**_seed000("seed000-map-all"), reported="map=60.26")
    assert a.reproduced["n_matches"] == 1
    for bad in ("map", "map=abc", "foo=0.5", "map=0.5,map=0.6", "map=150"):
        with pytest.raises(ValueError, match="reported"):
            parse(bad)


# -- section 1: the tie interval ---------------------------------------------------------------

def test_tie_interval_is_pessimistic_to_optimistic_computed_independently():
    dist, rel = _tied_problem(seed=11)
    n_q = len(dist)
    a = rc.audit(distances=dist, relevance=rel)
    iv = a.tie_intervals["map"]
    # relevant last (pessimistic) / first (optimistic) among equal distances, by lexsort
    pess = np.mean([_ap_by_hand(rel[q, np.lexsort((rel[q], dist[q]))]) for q in range(n_q)])
    opt = np.mean([_ap_by_hand(rel[q, np.lexsort((~rel[q], dist[q]))]) for q in range(n_q)])
    assert iv["low"] == pytest.approx(pess, abs=1e-12) and iv["high"] == pytest.approx(opt, abs=1e-12)
    assert iv["width"] > 0
    rng = np.random.default_rng(0)
    for kind in ("stable", "quicksort", "random"):
        if kind == "random":
            orders = [np.lexsort((rng.random(dist.shape[1]), dist[q])) for q in range(n_q)]
        else:
            orders = [np.argsort(dist[q], kind=kind) for q in range(n_q)]
        value = np.mean([_ap_by_hand(rel[q, orders[q]]) for q in range(n_q)])
        assert pess - 1e-12 <= value <= opt + 1e-12
    for policy in ("stable", "reverse", "expected", "grouped"):
        assert iv["low"] - 1e-12 <= iv["values"][policy] <= iv["high"] + 1e-12
    assert a.movers["moved"] == sum(s > 0 for s in a.movers["spread"]) > 0


def test_hashing_example_spread_sorted_database():
    # CIFAR-10-like: 16-bit codes, the database sorted by class (as in DeepHash-pytorch): the stable
    # order favours whichever class comes first among tied items, numpy's default sort lands elsewhere
    rng = np.random.default_rng(2)
    classes, bits, n_q, per_class = 10, 16, 40, 120
    protos = rng.choice([-1.0, 1.0], size=(classes, bits))
    q_cls, db_cls = np.repeat(np.arange(classes), n_q // classes), np.repeat(np.arange(classes), per_class)

    def codes(cls):
        c = protos[cls].copy()
        c[rng.random(c.shape) < 0.2] *= -1
        return c

    qB, dB = codes(q_cls), codes(db_cls)
    qL, dL = np.eye(classes)[q_cls], np.eye(classes)[db_cls]
    k = 100
    a = rc.audit(query_codes=qB, db_codes=dB, query_labels=qL, db_labels=dL, k=k)
    iv = a.tie_intervals["map"]
    ham = (bits - qB @ dB.T) / 2
    rel = qL @ dL.T > 0
    for kind in ("stable", "quicksort"):
        value = np.mean([_ap_by_hand(rel[q, np.argsort(ham[q], kind=kind)], k) for q in range(n_q)])
        assert iv["low"] - 1e-12 <= value <= iv["high"] + 1e-12
        if kind == "stable":
            assert iv["values"]["stable"] == pytest.approx(value, abs=1e-12)
    assert iv["width"] > 0.01  # points of mAP@100 are tie order alone


# -- section 3: planted fragility --------------------------------------------------------------

def test_planted_self_matches_and_duplicates_found_with_their_effect():
    rng = np.random.default_rng(4)
    ids_q, ids_g = rng.integers(0, 8, 15), rng.integers(0, 8, 60)
    q, g = rng.normal(size=(15, 6)) + ids_q[:, None], rng.normal(size=(60, 6)) + ids_g[:, None]
    planted = [1, 4, 9]  # these queries' own embeddings go into the gallery
    dupes = [2, 7, 30, 31, 50]  # these gallery items are repeated
    g_all = np.concatenate([g, q[planted], g[dupes]])
    ids_all = np.concatenate([ids_g, ids_q[planted], ids_g[dupes]])
    a = rc.audit(query_embeddings=q, db_embeddings=g_all, query_labels=ids_q, db_labels=ids_all,
                 reported=None)
    found = {f["kind"]: f for f in a.findings}
    assert found["self_matches"]["count"] == 3
    # each query evaluated alone against the gallery without its own copy (the others keep it)
    aps = []
    for i in range(len(q)):
        keep = np.ones(len(g_all), bool)
        if i in planted:
            keep[len(g) + planted.index(i)] = False
        aps.append(rc.evaluate(query_embeddings=q[i:i + 1], db_embeddings=g_all[keep], query_labels=ids_q[i:i + 1],
                               db_labels=ids_all[keep]).map)
    assert found["self_matches"]["effect"]["without"] == pytest.approx(np.mean(aps), abs=1e-12)
    assert found["self_matches"]["effect"]["change"] > 0
    assert found["duplicates"]["count"] == len(dupes)
    dedup = rc.evaluate(query_embeddings=q, db_embeddings=np.concatenate([g, q[planted]]), query_labels=ids_q,
                        db_labels=np.concatenate([ids_g, ids_q[planted]]))
    assert found["duplicates"]["effect"]["without"] == pytest.approx(dedup.map, abs=1e-12)
    assert a.failures("self_matches>0") and not a.failures("self_matches>3")


def test_reid_findings_and_empty_queries():
    rng = np.random.default_rng(6)
    q_ids, g_ids = rng.integers(1, 10, 20), rng.integers(-1, 10, 120)
    q_ids[0] = 99  # an id the gallery lacks: an empty query
    q_cams, g_cams = rng.integers(0, 3, 20), rng.integers(0, 3, 120)
    dist = np.round(rng.random((20, 120)), 2)  # as printed with %.2f: ties
    a = rc.audit(distances=dist, query_labels=q_ids, db_labels=g_ids, query_cams=q_cams, db_cams=g_cams,
                 protocol="reid")
    found = {f["kind"]: f for f in a.findings}
    assert found["ids_one_side"]["count"] == 1
    junk = (q_ids[:, None] == g_ids[None, :]) & (q_cams[:, None] == g_cams[None, :])
    assert found["junk"]["count"] == int(junk.sum())
    assert found["id_minus_1"]["count"] == int((g_ids == -1).sum())
    assert "2 decimals" in found["low_precision"]["detail"]
    empty = found["empty_queries"]
    assert empty["count"] >= 1
    zero = rc.evaluate(distances=dist, query_labels=q_ids, db_labels=g_ids, query_cams=q_cams, db_cams=g_cams,
                       protocol="reid", empty="zero")
    assert empty["by_policy"]["zero"] == pytest.approx(zero.map, abs=1e-12)
    junk_rows = {r["value"]: r for r in a.rows if r["axis"] == "junk"}
    assert set(junk_rows) == {"none", "same_id_cam", "same_id_cam+minus_one"}
    assert junk_rows["same_id_cam"]["declared"]


# -- the harness link: fast values equal the harness's exact predictions ----------------------

@pytest.mark.parametrize("k", [None, 4])
def test_fast_candidates_agree_with_harness_exact_predictions(k):
    rng = np.random.default_rng(1)
    dist = rng.integers(0, 4, (6, 12)).astype(float)
    rel = rng.random((6, 12)) < 0.3
    rel[2] = False  # an empty query
    data = AuditData.from_arguments(distances=dist, relevance=rel)
    values = Values(Evaluator(data), k, 10)
    compared = 0
    for stage in stages(data, "hashing", k, [METRICS["map"]], 2):
        for found in stage:
            if needs_exact(found):
                continue
            fast = values.fast(found, METRICS["map"])
            if fast is None:
                continue
            exact = values.exact(found, METRICS["map"])
            assert exact is not None and np.allclose(fast, exact, atol=1e-12), found.candidate
            compared += 1
    assert compared > 500


# -- reports, --fail-if, the command -------------------------------------------------------------

def test_fail_if_grammar():
    assert fail_if.parse("tie_interval:map>0.5%") == ("tie_interval:map", ">", 0.005)
    assert fail_if.parse(" self_matches >= 1 ") == ("self_matches", ">=", 1.0)
    for bad in ("tie_interval:foo>1", "map>>1", "nothing", "bogus>0"):
        with pytest.raises(ValueError, match="fail_if"):
            fail_if.parse(bad)
    a = rc.audit(**_seed000("seed000-map-all"))
    assert a.failures("tie_interval:map>0.05") and not a.failures("tie_interval:map>0.1")
    assert a.failures("map<0.61") and not a.failures("map<0.6")
    assert a.failures("reproduced<1")  # no reported numbers: refused as a failure, not passed silently


def test_reports_json_and_self_contained_html():
    a = rc.audit(**_seed000("seed000-map-all"), reported="map=0.6026")
    d = json.loads(json.dumps(a.to_dict(), default=str))
    assert d["specification_version"] and d["reproduced"]["n_matches"] == 1
    page = a.to_html()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<table" in page
    lowered = page.lower()
    assert "<script" not in lowered and "src=" not in lowered and "href=" not in lowered
    assert lowered.count("http") == lowered.count('xmlns="http://www.w3.org/2000/svg"')


def test_command_exit_codes(tmp_path):
    path = tmp_path / "seed.npz"
    np.savez(path, **_seed000("seed000-map-all"))
    cmd = [sys.executable, "-m", "retrieval_conformance.cli", "audit", "--npz", str(path)]
    ok = subprocess.run(cmd + ["--reported", "map=0.6026", "--format", "json"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["reproduced"]["n_matches"] == 1
    failed = subprocess.run(cmd + ["--fail-if", "tie_interval:map>0.5%"], capture_output=True, text=True)
    assert failed.returncode == 1 and "tie_interval:map" in failed.stderr
    bad = subprocess.run(cmd + ["--fail-if", "bogus>0"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --fail-if:")
    bad = subprocess.run(cmd + ["--reported", "map=x"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --reported:")
    bad = subprocess.run(cmd + ["--metric", "cosine"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --metric:")


def test_bad_arguments_are_named():
    args = _seed000("seed000-map-all")
    with pytest.raises(ValueError, match="max_cost"):
        rc.audit(**args, max_cost=5)
    with pytest.raises(ValueError, match="protocol"):
        rc.audit(**args, protocol="nope")
    with pytest.raises(ValueError, match="ties"):
        rc.audit(**args, ties="sideways")
    with pytest.raises(ValueError, match="reported: precision_at_k needs a cut-off"):
        rc.audit(**args, reported="p@k=0.5")
    with pytest.raises(ValueError, match="reported: rank10 needs a gallery of 10"):
        rc.audit(**args, reported="rank10=0.5")
    with pytest.raises(ValueError, match="metric: 'cosine' applies to embeddings"):
        rc.audit(**args, metric="cosine")
    with pytest.raises(ValueError, match="ranking input"):
        rc.audit(relevance=np.ones((2, 2), bool))


def test_audit_cost_workload_runs_and_traces_its_own_number():
    from retrieval_conformance.conformance.bench.audit_cost import AUDITED, measure

    for name, _ in AUDITED:
        row = measure(name, "smoke")
        assert row["evaluations"] > 10 and row["ratio"] > 0
        assert row["reproduced"] >= 1  # the workload's own mAP, printed to 4 digits, is traced to a convention


def test_per_query_movers_name_the_convention_and_the_data():
    rng = np.random.default_rng(8)
    n_q, n_g = 10, 80
    q_ids, g_ids = np.arange(n_q), rng.integers(0, n_q, n_g)
    q_cams, g_cams = np.zeros(n_q, int), np.ones(n_g, int)
    dist = rng.random((n_q, n_g)) + 1.0  # continuous: no ties
    same = np.flatnonzero(g_ids == 3)[:1]
    planted = np.arange(70, 75)
    g_ids[planted], g_cams[planted] = 3, 0  # five same-id same-camera items of query 3 ...
    dist[3, planted] = 0.01  # ... ranked first: relevant without the junk rule, junk with it
    dist[3, same] = 1.9
    q_ids[9] = 99  # no relevant item
    a = rc.audit(distances=dist, query_labels=q_ids, db_labels=g_ids, query_cams=q_cams, db_cams=g_cams,
                 protocol="reid")
    conv = a.movers["by_convention"]
    first = conv["top"][0]
    assert first["query"] == 3 and first["axis"] == "junk" and "5 gallery items" in first["why"]
    assert conv["by_axis"]["ties"] == 0 and conv["n_empty"] == 1 and conv["empty"] == [9]
    assert "query      3" in a.to_text()


def test_trec_runs_are_refused_by_name():
    with pytest.raises(ValueError, match="run: TREC runs"):
        rc.audit(run={"q": {"d": 1.0}}, qrels={"q": {"d": 1}})


def test_duplicate_codes_found_with_the_effect_of_deleting_them():
    rng = np.random.default_rng(9)
    qB, dB = rng.choice([-1, 1], (8, 32)), rng.choice([-1, 1], (50, 32))
    qL, dL = np.eye(4)[rng.integers(0, 4, 8)], np.eye(4)[rng.integers(0, 4, 50)]
    repeat = [3, 3, 17, 40]  # item 3 twice more, 17 and 40 once more
    a = rc.audit(query_codes=qB, db_codes=np.concatenate([dB, dB[repeat]]), query_labels=qL,
                 db_labels=np.concatenate([dL, dL[repeat]]))
    found = {f["kind"]: f for f in a.findings}
    assert found["duplicates"]["count"] == len(repeat)
    clean = rc.evaluate(query_codes=qB, db_codes=dB, query_labels=qL, db_labels=dL)
    assert found["duplicates"]["effect"]["without"] == pytest.approx(clean.map, abs=1e-12)
    assert "self_matches" not in found  # equal codes are ties, not copies of a query
    assert a.to_html().count("<svg") == 3  # the tie chart and two per-query histograms


def test_rank_bugs_beyond_the_exact_budget_are_said_not_searched(monkeypatch):
    from retrieval_conformance.conformance.audit import harness_link

    dist, rel = _tied_problem(seed=5)
    order = np.argsort(dist, axis=1, kind="stable")
    published = f"{np.mean([_previous_hit_trapezoid(rel[q, order[q]]) for q in range(len(dist))]):.5f}"
    monkeypatch.setattr(harness_link, "EXACT_CELLS", 10)
    a = rc.audit(distances=dist, relevance=rel, reported=f"map={published}")
    assert a.reproduced["not_searched"] > 0
    assert not any("previous-hit-trapezoid" in m["label"] for m in a.reproduced["matches"])
    assert any("not searched" in note for note in a.notes) and "not searched" in a.to_text()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_input_is_a_finding(dtype):
    rng = np.random.default_rng(0)
    dist, rel = rng.random((20, 100)), rng.random((20, 100)) < 0.2
    if dtype == "bfloat16":
        torch = pytest.importorskip("torch")
        given = torch.tensor(dist).to(torch.bfloat16)
    else:
        given = dist.astype(np.float16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = rc.audit(distances=given, relevance=rel)
    found = {f["kind"]: f for f in a.findings}
    assert dtype in found["low_precision"]["detail"]
    assert len([w for w in caught if "significant bits" in str(w.message)]) <= 1  # said once, not per evaluation


def test_only_the_harness_link_imports_the_harness():
    import retrieval_conformance.conformance.audit as audit_package

    folder = os.path.dirname(audit_package.__file__)
    importers = sorted(name for name in os.listdir(folder) if name.endswith(".py")
                       and "conformance.harness" in open(os.path.join(folder, name), encoding="utf-8").read())
    assert importers == ["harness_link.py"]


def test_graded_trec_run_ndcg_traced_with_its_discount():
    rng = np.random.default_rng(12)
    scores = np.round(rng.random((15, 60)), 1)  # ties
    grades = rng.integers(0, 4, (15, 60)) * (rng.random((15, 60)) < 0.3)
    grades[:, 0] = 2
    res = rc.evaluate(scores=scores, relevance=grades, protocol="trec")
    a = rc.audit(scores=scores, relevance=grades, protocol="trec", reported={"ndcg": f"{res.ndcg_at_k:.4f}"})
    axes = {(r["axis"], r["value"]) for r in a.rows}
    assert {("discount", "log2"), ("discount", "trec"), ("gain", "linear"), ("gain", "exponential")} <= axes
    declared = next(r for r in a.rows if r["axis"] == "discount" and r["declared"])
    assert declared["value"] == "trec" and declared["values"]["ndcg"] == pytest.approx(res.ndcg_at_k, abs=1e-12)
    first = a.reproduced["matches"][0]
    assert first["options"]["ties"] == "reverse" and not first["bugs"], first["label"]
