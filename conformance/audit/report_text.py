"""The audit as plain text (the command line's default), from the JSON report's dict."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

#: metrics shown in the text tables (all are in the JSON report)
TEXT_METRICS = ("map", "rank1", "rank5", "rank10", "minp", "ndcg", "mrr")


def pct(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def _declared_line(d: Dict[str, Any]) -> str:
    if d.get("declared_text"):  # a TREC run's declared settings
        return d["declared_text"]
    return (
        f"declared: protocol {d['protocol']}, k={d['declared']['k']}, ties={d['declared']['ties']}, "
        f"ap_rule={d['declared']['ap_rule']}, ap_at_k={d['declared']['ap_at_k']}, "
        f"empty={d['declared']['empty']}, junk={d['declared']['junk']}"
    )


def width_of(shown: List[str], d: Dict[str, Any]) -> int:
    """The widest label of the metrics shown (trec_eval's names run longer than mAP)."""
    return max([10] + [len(d["metrics"][m]) for m in shown])


def render(d: Dict[str, Any]) -> str:
    shown = d.get("shown") or [m for m in TEXT_METRICS if m in d["metrics"]]
    title = d["data"].get("summary") or (
        f"Audit of {d['data']['queries']:,} queries x {d['data']['gallery']:,} gallery items ({d['data']['kind']})"
    )
    lines = [
        f"{title}; specification {d['specification_version']}",
        _declared_line(d),
        "values in percent; * marks the declared protocol",
        "",
    ]
    lines.append("1. The number under every convention")
    lines.append(
        "   tie interval [pessimistic .. optimistic], the other tie policies inside "
        f"(declared: {d['declared']['ties']}):"
    )
    for name in shown:
        iv = d["tie_intervals"][name]
        v = iv["values"]
        inside = "  ".join(f"{t} {pct(v[t])}" for t in v if t not in ("pessimistic", "optimistic"))
        width = "" if iv["width"] is None else f"  (width {100 * iv['width']:.2f} points)"
        label = f"{d['metrics'][name]:<{width_of(shown, d)}}"
        lines.append(f"   {label} {pct(iv['low'])} .. {pct(iv['high'])}{width};  {inside}")
    column = max(10, width_of(shown, d) + 1)
    header = f"   {'axis':<12} {'value':<24}" + "".join(f"{d['metrics'][m]:>{column}}" for m in shown)
    lines += ["", header]
    for row in d["conventions"]:
        mark = "*" if row["declared"] else " "
        cells = (
            ("  " + row["error"][:60])
            if row["error"]
            else "".join(f"{pct(row['values'].get(m)):>{column}}" for m in shown)
        )
        lines.append(f"  {mark}{row['axis']:<12} {row['value']:<24}{cells}")
    pq = d["per_query"]
    lines += [
        "",
        f"   per query: {pq['moved']} of {pq['queries']} queries move with tie order "
        f"({d['metrics'][pq['metric']]}); the most:",
    ]
    for q in pq["top"][:5]:
        lines.append(f"     query {q['query']:>6}: {pct(q['pessimistic'])} .. {pct(q['optimistic'])}  ({q['why']})")
    conv = pq["by_convention"]
    shares = ", ".join(f"{axis} {n}" for axis, n in conv["by_axis"].items())
    lines += [
        f"   per query, by any convention: {conv['moved_by_any']} of {conv['queries']} move ({shares}); the most:"
    ]
    for q in conv["top"][:5]:
        lines.append(f"     query {q['query']:>6}: {pct(q['low'])} .. {pct(q['high'])} by {q['axis']}  ({q['why']})")
    if conv["n_empty"]:
        lines.append(
            f"   {conv['n_empty']} queries ({', '.join(map(str, conv['empty']))}"
            f"{', ...' if conv['n_empty'] > len(conv['empty']) else ''}): {conv['empty_why']}"
        )
    lines += ["", "2. Which conventions reproduce the reported numbers"]
    lines += _reproduced(d["reproduced"])
    lines += ["", "3. What makes the numbers fragile"]
    for f in d["findings"]:
        lines.append(f"   - {f['title']}: {f['detail']}")
        e = f.get("effect")
        if e and e.get("change") is not None:
            lines.append(
                f"       {d['metrics'].get(e['metric'], e['metric'])} {pct(e['with'])} ({e['with_means']}), "
                f"{pct(e['without'])} ({e['without_means']}): {100 * e['change']:+.2f} points"
            )
    lines += [
        "",
        f"{d['cost']['evaluations']} evaluations ({d['cost']['implementation']}), {d['cost']['seconds']:.2f} s",
    ]
    lines += [f"note: {n}" for n in d["notes"]]
    return "\n".join(lines) + "\n"


def _reproduced(r: Dict[str, Any]) -> List[str]:
    if not r.get("reported"):
        return ["   (no reported numbers given: --reported map=0.6026,rank1=88.2%)"]
    return _matches(r) + (
        [
            f"   {r['uninformative']} candidates only bound the number by [0, 1] (an unstable order "
            "whose hits in the top k change with it) and are not listed"
        ]
        if r["uninformative"]
        else []
    )


def _matches(r: Dict[str, Any]) -> List[str]:
    wanted = ", ".join(f"{x['metric']}={x['text']}" for x in r["reported"])
    if not r["matches"]:
        out = [f"   none of {r['searched']} candidates reproduces {wanted}"]
        n = r.get("nearest")
        if n:
            shown = ", ".join(f"{m} {v['shown']}" for m, v in n["values"].items())
            out.append(f"   nearest: {n['label']}: {shown} ({100 * n['gap']:.3f} points from the printed range)")
        return out
    out = [f"   {r['n_matches']} of {r['searched']} candidates reproduce {wanted}, simplest first:"]
    for m in r["matches"][:10]:
        shown = ", ".join(f"{k} {v['shown']}" for k, v in m["values"].items())
        out.append(f"   - {m['label']}: {shown}")
        for what in m["meanings"]:
            out.append(f"       {what}")
    if r["n_matches"] > 10:
        out.append(f"   ... and {r['n_matches'] - 10} more (all in the JSON report)")
    return out
