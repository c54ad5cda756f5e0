"""The text ``retrieval-conformance evaluate`` prints for one result: the metrics computed."""

from __future__ import annotations


def print_result(res) -> None:
    """The metrics of one result as text: those computed (every one, unless --metrics chose some)."""
    o = res.options
    print(f"protocol {res.protocol} (implementation {res.implementation})")
    print(f"  ties={o.ties} ap_rule={o.ap_rule} k={o.k} ap_at_k={o.ap_at_k} empty={o.empty}")
    print(f"  queries: {res.counted.shape[0]}, counted: {res.n_counted}")
    at_k = "" if o.k is None else "@" + str(o.k)
    if res.has("map"):
        exact = f"  (exact {res.exact.map})" if res.exact is not None and res.exact.map is not None else ""
        print(f"  mAP{at_k}: {res.map:.6f}{exact}")
    if o.k is not None:  # without a cut-off P@k and R@k have no value
        pair = [
            f"{label}: {getattr(res, name):.6f}"
            for name, label in (("precision_at_k", f"P@{o.k}"), ("recall_at_k", f"R@{o.k}"))
            if res.has(name)
        ]
        if pair:
            print("  " + "   ".join(pair))
    if res.has("cmc"):
        ranks = [r for r in (1, 5, 10, 20, 50) if r <= res.cmc.shape[0]]
        print("  CMC: " + "  ".join(f"Rank-{r} {res.cmc[r - 1]:.4f}" for r in ranks))
    for line in (
        (("minp", "mINP"), ("r_precision", "R-precision")),
        (("ndcg_at_k", f"nDCG{at_k}"), ("mrr", f"MRR{at_k}"), ("map_at_r", "MAP@R")),
    ):
        shown = [f"{label}: {getattr(res, name):.6f}" for name, label in line if res.has(name)]
        if shown:
            print("  " + "   ".join(shown))
    if o.radius is not None and (res.has("precision_at_radius") or res.has("recall_at_radius")):
        shown = [
            f"{word} {getattr(res, name):.6f}"
            for name, word in (("precision_at_radius", "precision"), ("recall_at_radius", "recall"))
            if res.has(name)
        ]
        print(f"  within radius {o.radius:g}: {', '.join(shown)}")
