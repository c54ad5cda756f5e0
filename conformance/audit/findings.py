"""Section 3 of an audit: what in the data makes a number fragile, each with its measured effect.

Every finding says what was found (counts and shares) and, where the data can be evaluated
without it, the headline metric with and without it (``effect``): ties (the tie interval),
self-matches and duplicate gallery items (evaluated again with them as junk), queries without
a relevant item (the mean under each empty-query policy), ReID junk and distractors (with and
without the junk rules), and label rows that cannot match anything.

Tie statistics read the distance rows of at most ``SAMPLED_ROWS`` queries, spread evenly over
the queries; the report says how many.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np
from retrieval_conformance.conformance.audit.inputs import AuditData, Evaluator
from retrieval_conformance.conformance.audit.metrics import Metric

SAMPLED_ROWS = 256
#: decimals a rounded float input is tested for (``%.3f`` in a run file: 3)
ROUNDING_DECIMALS = (1, 2, 3, 4)


def distance_rows(data: AuditData, rows: np.ndarray) -> np.ndarray:
    """Distances (smaller is closer) of the query ``rows`` to every gallery item, float64."""
    a = data.arrays
    if data.kind in ("distances", "scores"):
        block = np.asarray(a[data.kind][rows], dtype=np.float64)
        return -block if data.kind == "scores" else block
    if data.kind == "codes":
        q = np.asarray(a["query_codes"])[rows] > 0
        d = np.asarray(a["db_codes"]) > 0
        # Hamming distance as q.(1-d) + (1-q).d: exact in float64 for any code length we accept
        qf, df = q.astype(np.float64), d.astype(np.float64)
        return qf @ (1 - df).T + (1 - qf) @ df.T
    from retrieval_conformance.reference.contract.embeddings import embedding_distances

    return np.asarray(
        embedding_distances(np.asarray(a["query_embeddings"])[rows], a["db_embeddings"], a.get("metric", "euclidean")),
        dtype=np.float64,
    )


def _sampled(n_q: int) -> np.ndarray:
    return np.unique(np.linspace(0, n_q - 1, min(n_q, SAMPLED_ROWS)).astype(np.int64))


def _effect(metric: Metric, with_it, without_it, what: str) -> Optional[Dict[str, Any]]:
    if isinstance(with_it, str) or isinstance(without_it, str):
        return None
    a, b = metric.value(with_it), metric.value(without_it)
    return {
        "metric": metric.name,
        "with": a,
        "without": b,
        "with_means": "as given",
        "without_means": what,
        "change": None if a is None or b is None else a - b,
    }


def tie_findings(
    data: AuditData, intervals: Dict[str, Any], movers: Dict[str, Any], metric: Metric
) -> List[Dict[str, Any]]:
    n_q, n_g = data.shape
    rows = _sampled(n_q)
    dist = distance_rows(data, rows)
    largest, tied_share, distinct = 0, [], []
    for row in dist:
        values, counts = np.unique(row, return_counts=True)
        largest = max(largest, int(counts.max()))
        tied_share.append(float(counts[counts > 1].sum()) / n_g)
        distinct.append(values.size)
    iv = intervals[metric.name]
    out = [
        {
            "kind": "ties",
            "title": "tie order",
            "detail": (
                f"{movers['moved']} of {movers['queries']} queries ({movers['moved'] / movers['queries']:.1%}) "
                f"have a {metric.title} that depends on tie order"
                + (
                    f", {movers['straddling']} of them with a tie group across the cut-off"
                    if movers["straddling"]
                    else ""
                )
                + f"; largest tie group {largest} items; on average {np.mean(tied_share):.1%} of a row's items "
                f"share their distance with another ({len(rows)} queries read)"
            ),
            "count": movers["moved"],
            "share": movers["moved"] / movers["queries"],
            "largest_tie_group": largest,
            "tied_share": float(np.mean(tied_share)),
            "distinct_per_row": float(np.median(distinct)),
            "rows_read": int(len(rows)),
            "effect": {
                "metric": metric.name,
                "with": iv["high"],
                "without": iv["low"],
                "with_means": "optimistic order",
                "without_means": "pessimistic order",
                "change": iv["width"],
            },
        }
    ]
    precision = _low_precision(data, dist)
    if precision:
        out.append(
            {
                "kind": "low_precision",
                "title": "low-precision input",
                "detail": precision,
                "count": int(np.median(distinct)),
                "share": None,
                "effect": out[0]["effect"],
            }
        )
    return out


def _low_precision(data: AuditData, dist: np.ndarray) -> Optional[str]:
    """Whether ties come from how the input was stored: a half-precision dtype, or decimals."""
    if data.kind == "codes":
        return None
    key = data.kind if data.kind in ("distances", "scores") else "query_embeddings"
    dtype = data.dtypes.get(key, "")
    if dtype in ("float16", "bfloat16"):
        return f"{key} are {dtype} (11 or 8 significant bits): nearby values collapse into ties"
    if data.kind in ("distances", "scores"):
        finite = dist[np.isfinite(dist)]
        if finite.size and np.any(finite != np.round(finite)):
            for d in ROUNDING_DECIMALS:
                # a few thousand values rule most roundings out before all are read
                if all(_on_grid(part, d) for part in (finite[:4096], finite)):
                    return (
                        f"{key} are rounded to {d} decimal{'s' if d > 1 else ''} (as a run file printed "
                        f"with %.{d}f): "
                        "items closer than that tie"
                    )
    return None


def _on_grid(values: np.ndarray, decimals: int) -> bool:
    """Whether every value is a multiple of 10**-decimals (up to the float error of printing it)."""
    scaled = values * 10**decimals
    return bool(np.all(np.abs(scaled - np.round(scaled)) <= 1e-6 * np.maximum(1, np.abs(scaled))))


def leakage_findings(ev: Evaluator, protocol: str, options: Dict[str, Any], metric: Metric) -> List[Dict[str, Any]]:
    """Self-matches (a query found in the gallery) and duplicate gallery items, with their effect."""
    data = ev.data
    n_q, n_g = data.shape
    out = []
    junk0 = np.asarray(data.arrays["junk"], bool) if "junk" in data.arrays else np.zeros((n_q, n_g), bool)
    self_mask = _self_matches(data)
    base = ev.run(protocol, **options)
    if self_mask is not None and self_mask.any():
        ev.variants["no-self-matches"] = {"junk": junk0 | self_mask}
        hit_queries = int(self_mask.any(1).sum())
        how = "identical embedding" if data.kind == "embeddings" else "distance 0"
        out.append(
            {
                "kind": "self_matches",
                "title": "queries found in the gallery",
                "detail": f"{hit_queries} of {n_q} queries have a gallery item at {how} "
                f"({int(self_mask.sum())} pairs): the query itself, or a copy of it",
                "count": hit_queries,
                "share": hit_queries / n_q,
                "effect": _effect(
                    metric,
                    base,
                    ev.run(protocol, "no-self-matches", **options),
                    "with those gallery items removed as junk",
                ),
            }
        )
    elif self_mask is not None:
        out.append(
            {
                "kind": "self_matches",
                "title": "queries found in the gallery",
                "count": 0,
                "share": 0.0,
                "detail": "no query has a gallery item at distance 0 or with an identical embedding",
                "effect": None,
            }
        )
    dupes = _duplicate_items(data)
    if dupes is not None and dupes.any():
        ev.variants["no-duplicates"] = {"junk": junk0 | dupes[None, :]}
        note = (
            "; in hashing equal codes are usually different images (they tie), so this measures how much "
            "of the number rests on repeated codes"
            if data.kind == "codes"
            else ""
        )
        out.append(
            {
                "kind": "duplicates",
                "title": "identical gallery items",
                "detail": f"{int(dupes.sum())} of {n_g} gallery items repeat an earlier item exactly "
                f"(identical {data.kind}){note}",
                "count": int(dupes.sum()),
                "share": float(dupes.mean()),
                "effect": _effect(
                    metric,
                    base,
                    ev.run(protocol, "no-duplicates", **options),
                    "with every repeat removed (first copy kept)",
                ),
            }
        )
    return out


def _self_matches(data: AuditData) -> Optional[np.ndarray]:
    """(Q, N) bool: query and gallery item are the same point (None: not decidable from codes,
    where equal codes are ordinary ties, or from similarity scores, which have no zero)."""
    a = data.arrays
    if data.kind == "distances":
        d = a["distances"]
        return np.concatenate([np.asarray(d[i : i + 1024]) == 0 for i in range(0, d.shape[0], 1024)])
    if data.kind == "embeddings":
        q, g = np.asarray(a["query_embeddings"]), np.asarray(a["db_embeddings"])
        _, ids = np.unique(np.concatenate([q, g]), axis=0, return_inverse=True)
        ids = ids.reshape(-1)
        return ids[: len(q), None] == ids[None, len(q) :]
    return None


def _duplicate_items(data: AuditData) -> Optional[np.ndarray]:
    """(N,) bool: the gallery item equals an earlier one (codes or embeddings)."""
    key = {"codes": "db_codes", "embeddings": "db_embeddings"}.get(data.kind)
    if key is None:
        return None
    g = np.asarray(data.arrays[key])
    _, first = np.unique(g, axis=0, return_index=True)
    out = np.ones(g.shape[0], bool)
    out[first] = False
    return out


def empty_findings(rows: List[Dict[str, Any]], per_query, metric: Metric) -> List[Dict[str, Any]]:
    n_rel = np.asarray(per_query.n_relevant)
    empty = int((n_rel == 0).sum())
    if not empty:
        return [
            {
                "kind": "empty_queries",
                "title": "queries without a relevant item",
                "count": 0,
                "share": 0.0,
                "detail": "every query has a relevant gallery item",
                "effect": None,
            }
        ]
    by_policy = {r["value"]: (r["values"] or {}).get(metric.name) for r in rows if r["axis"] == "empty"}
    shown = ", ".join(f"{p}: {'-' if v is None else f'{v:.4f}'}" for p, v in by_policy.items())
    return [
        {
            "kind": "empty_queries",
            "title": "queries without a relevant item",
            "count": empty,
            "share": empty / n_rel.size,
            "by_policy": by_policy,
            "detail": f"{empty} of {n_rel.size} queries have no relevant (non-junk) gallery item; "
            f"{metric.title} under each empty-query policy: {shown} (empty='error' refuses the data)",
            "effect": {
                "metric": metric.name,
                "with": by_policy.get("zero"),
                "without": by_policy.get("skip"),
                "with_means": "empty='zero'",
                "without_means": "empty='skip'",
                "change": None
                if None in (by_policy.get("zero"), by_policy.get("skip"))
                else by_policy["zero"] - by_policy["skip"],
            },
        }
    ]


def reid_findings(ev: Evaluator, rows: List[Dict[str, Any]], metric: Metric) -> List[Dict[str, Any]]:
    data = ev.data
    a = data.arrays
    q, g = np.asarray(a["query_labels"]).ravel(), np.asarray(a["db_labels"]).ravel()
    out = []
    missing = ~np.isin(q, g)
    gallery_only = np.setdiff1d(np.unique(g), np.unique(q))
    out.append(
        {
            "kind": "ids_one_side",
            "title": "ids on one side only",
            "count": int(missing.sum()),
            "share": float(missing.mean()),
            "effect": None,
            "detail": f"{int(missing.sum())} queries have an id absent from the gallery; "
            f"{gallery_only.size} gallery ids never appear as a query",
        }
    )
    junk_rows = {r["value"]: (r["values"] or {}).get(metric.name) for r in rows if r["axis"] == "junk"}
    if data.has_cams:
        qc, gc = np.asarray(a["query_cams"]).ravel(), np.asarray(a["db_cams"]).ravel()
        same = q[:, None] == g[None, :]
        junk = same & (qc[:, None] == gc[None, :])
        share = float(junk.sum() / max(same.sum(), 1))
        out.append(
            {
                "kind": "junk",
                "title": "same id, same camera (junk)",
                "count": int(junk.sum()),
                "share": share,
                "detail": f"{int(junk.sum())} query-gallery pairs share id and camera: {share:.1%} of the "
                "same-id pairs, removed as junk by the ReID presets",
                "effect": {
                    "metric": metric.name,
                    "with": junk_rows.get("same_id_cam"),
                    "without": junk_rows.get("none"),
                    "with_means": "junk removed",
                    "without_means": "no junk rule",
                    "change": _diff(junk_rows.get("same_id_cam"), junk_rows.get("none")),
                },
            }
        )
    for pid, what in ((-1, "junk images (Market-1501's -1)"), (0, "distractors (Market-1501's 0000)")):
        n = int((g == pid).sum())
        if n:
            effect = None
            if pid == -1:
                effect = {
                    "metric": metric.name,
                    "with": junk_rows.get("same_id_cam"),
                    "without": junk_rows.get("same_id_cam+minus_one"),
                    "with_means": "id -1 ranked as non-relevant",
                    "without_means": "id -1 removed as junk (reid-matlab)",
                    "change": _diff(junk_rows.get("same_id_cam"), junk_rows.get("same_id_cam+minus_one")),
                }
            out.append(
                {
                    "kind": f"id_{pid}".replace("-", "minus_"),
                    "title": f"gallery id {pid}",
                    "count": n,
                    "share": n / g.size,
                    "effect": effect,
                    "detail": f"{n} gallery items have id {pid}: {what}",
                }
            )
    return out


def label_findings(data: AuditData) -> List[Dict[str, Any]]:
    a = data.arrays
    if "query_labels" not in a:
        return []
    q, g = np.asarray(a["query_labels"]), np.asarray(a["db_labels"])
    out = []
    if q.ndim == 2:
        nq, ng = int((~(q != 0).any(1)).sum()), int((~(g != 0).any(1)).sum())
        if nq or ng:
            out.append(
                {
                    "kind": "no_label",
                    "title": "multi-hot rows with no label",
                    "count": nq + ng,
                    "share": (nq + ng) / (len(q) + len(g)),
                    "effect": None,
                    "detail": f"{nq} queries and {ng} gallery items carry no label: they match nothing",
                }
            )
        per_class = (g != 0).sum(0)
    else:
        _, per_class = np.unique(g, return_counts=True)
    single = int((per_class == 1).sum())
    if single:
        out.append(
            {
                "kind": "single_item_classes",
                "title": "classes with one gallery item",
                "count": single,
                "share": single / per_class.size,
                "effect": None,
                "detail": f"{single} of {per_class.size} classes have exactly one gallery item: their queries' "
                "AP is 1 or 1/r, all or nothing",
            }
        )
    return out


def _diff(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return None if a is None or b is None else a - b
