"""The audit's findings on data with planted fragility: self-matches, duplicates, junk, empty
queries, half-precision input, and the per-query movers, each with the effect measured
independently (the gallery evaluated with the planted items deleted).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import retrieval_conformance as rc


def test_planted_self_matches_and_duplicates_found_with_their_effect():
    rng = np.random.default_rng(4)
    ids_q, ids_g = rng.integers(0, 8, 15), rng.integers(0, 8, 60)
    q, g = rng.normal(size=(15, 6)) + ids_q[:, None], rng.normal(size=(60, 6)) + ids_g[:, None]
    planted = [1, 4, 9]  # these queries' own embeddings go into the gallery
    dupes = [2, 7, 30, 31, 50]  # these gallery items are repeated
    g_all = np.concatenate([g, q[planted], g[dupes]])
    ids_all = np.concatenate([ids_g, ids_q[planted], ids_g[dupes]])
    a = rc.audit(query_embeddings=q, db_embeddings=g_all, query_labels=ids_q, db_labels=ids_all, reported=None)
    found = {f["kind"]: f for f in a.findings}
    assert found["self_matches"]["count"] == 3
    # each query evaluated alone against the gallery without its own copy (the others keep it)
    aps = []
    for i in range(len(q)):
        keep = np.ones(len(g_all), bool)
        if i in planted:
            keep[len(g) + planted.index(i)] = False
        aps.append(
            rc.evaluate(
                query_embeddings=q[i : i + 1],
                db_embeddings=g_all[keep],
                query_labels=ids_q[i : i + 1],
                db_labels=ids_all[keep],
            ).map
        )
    assert found["self_matches"]["effect"]["without"] == pytest.approx(np.mean(aps), abs=1e-12)
    assert found["self_matches"]["effect"]["change"] > 0
    assert found["duplicates"]["count"] == len(dupes)
    dedup = rc.evaluate(
        query_embeddings=q,
        db_embeddings=np.concatenate([g, q[planted]]),
        query_labels=ids_q,
        db_labels=np.concatenate([ids_g, ids_q[planted]]),
    )
    assert found["duplicates"]["effect"]["without"] == pytest.approx(dedup.map, abs=1e-12)
    assert a.failures("self_matches>0") and not a.failures("self_matches>3")


def test_reid_findings_and_empty_queries():
    rng = np.random.default_rng(6)
    q_ids, g_ids = rng.integers(1, 10, 20), rng.integers(-1, 10, 120)
    q_ids[0] = 99  # an id the gallery lacks: an empty query
    q_cams, g_cams = rng.integers(0, 3, 20), rng.integers(0, 3, 120)
    dist = np.round(rng.random((20, 120)), 2)  # as printed with %.2f: ties
    a = rc.audit(
        distances=dist, query_labels=q_ids, db_labels=g_ids, query_cams=q_cams, db_cams=g_cams, protocol="reid"
    )
    found = {f["kind"]: f for f in a.findings}
    assert found["ids_one_side"]["count"] == 1
    junk = (q_ids[:, None] == g_ids[None, :]) & (q_cams[:, None] == g_cams[None, :])
    assert found["junk"]["count"] == int(junk.sum())
    assert found["id_minus_1"]["count"] == int((g_ids == -1).sum())
    assert "2 decimals" in found["low_precision"]["detail"]
    empty = found["empty_queries"]
    assert empty["count"] >= 1
    zero = rc.evaluate(
        distances=dist,
        query_labels=q_ids,
        db_labels=g_ids,
        query_cams=q_cams,
        db_cams=g_cams,
        protocol="reid",
        empty="zero",
    )
    assert empty["by_policy"]["zero"] == pytest.approx(zero.map, abs=1e-12)
    junk_rows = {r["value"]: r for r in a.rows if r["axis"] == "junk"}
    assert set(junk_rows) == {"none", "same_id_cam", "same_id_cam+minus_one"}
    assert junk_rows["same_id_cam"]["declared"]


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
    a = rc.audit(
        distances=dist, query_labels=q_ids, db_labels=g_ids, query_cams=q_cams, db_cams=g_cams, protocol="reid"
    )
    conv = a.movers["by_convention"]
    first = conv["top"][0]
    assert first["query"] == 3 and first["axis"] == "junk" and "5 gallery items" in first["why"]
    assert conv["by_axis"]["ties"] == 0 and conv["n_empty"] == 1 and conv["empty"] == [9]
    assert "query      3" in a.to_text()


def test_duplicate_codes_found_with_the_effect_of_deleting_them():
    rng = np.random.default_rng(9)
    qB, dB = rng.choice([-1, 1], (8, 32)), rng.choice([-1, 1], (50, 32))
    qL, dL = np.eye(4)[rng.integers(0, 4, 8)], np.eye(4)[rng.integers(0, 4, 50)]
    repeat = [3, 3, 17, 40]  # item 3 twice more, 17 and 40 once more
    a = rc.audit(
        query_codes=qB,
        db_codes=np.concatenate([dB, dB[repeat]]),
        query_labels=qL,
        db_labels=np.concatenate([dL, dL[repeat]]),
    )
    found = {f["kind"]: f for f in a.findings}
    assert found["duplicates"]["count"] == len(repeat)
    clean = rc.evaluate(query_codes=qB, db_codes=dB, query_labels=qL, db_labels=dL)
    assert found["duplicates"]["effect"]["without"] == pytest.approx(clean.map, abs=1e-12)
    assert "self_matches" not in found  # equal codes are ties, not copies of a query
    assert a.to_html().count("<svg") == 3  # the tie chart and two per-query histograms


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


def test_reid_protocol_without_cameras_is_refused_as_evaluate_refuses_it():
    rng = np.random.default_rng(3)
    ids_q, ids_g = rng.integers(0, 5, 6), rng.integers(0, 5, 30)
    dist = rng.random((6, 30))
    with pytest.raises(ValueError, match="query_cams"):
        rc.audit(distances=dist, query_labels=ids_q, db_labels=ids_g, protocol="reid")
    a = rc.audit(distances=dist, query_labels=ids_q, db_labels=ids_g)  # hashing: the ReID presets need cameras
    assert not any(r["axis"] == "junk" or r["value"].startswith("reid") for r in a.rows)
    explicit = rc.audit(
        distances=dist, query_labels=ids_q, db_labels=ids_g, protocol="reid", junk=np.zeros((6, 30), bool)
    )
    assert any(r["axis"] == "junk" for r in explicit.rows)
