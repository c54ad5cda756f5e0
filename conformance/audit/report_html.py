"""The audit as one self-contained HTML file: inline CSS and SVG, no script, nothing fetched.

Every value of the report dict written into the page (ids, docnos, labels, metric names,
reported texts, numbers) goes through one helper, :func:`_e`, because a TREC topic id or a
label is whatever the user's file holds (``<script>...``); and the page carries a
Content-Security-Policy that runs no script and fetches nothing, should anything slip past it.

Sections as in the text report: the tie-interval chart per metric (the interval from the
pessimistic to the optimistic order, every other tie policy marked inside, the declared one
ringed), the table of every preset and convention axis, the histogram of per-query tie
spreads, the reproduced-number table, and the findings with their measured effect.
"""

from __future__ import annotations

import html
from typing import Any, Dict, List, Optional

from retrieval_conformance.conformance.audit.report_text import pct

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#1d2430}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dee8;padding-bottom:4px}
.meta{color:#5a6475}table{border-collapse:collapse;margin:6px 0;font-variant-numeric:tabular-nums}
th,td{padding:3px 9px;border-bottom:1px solid #e6e9ef;text-align:right}th{background:#f3f5f9}
td.l,th.l{text-align:left}tr.declared td{background:#fff5d6;font-weight:600}
.err{color:#a33;text-align:left}.ok{color:#176b3a}.bad{color:#a33}.note{color:#5a6475;font-size:13px}
svg text{font:11px system-ui,sans-serif;fill:#1d2430}.legend span{margin-right:14px}
"""
#: marker shape and colour per tie policy
MARKERS = {
    "trec_eval": ("circle", "#cf222e"),
    "docno_ascending": ("square", "#57606a"),
    "stable": ("circle", "#1f6feb"),
    "reverse": ("triangle", "#8250df"),
    "expected": ("diamond", "#1a7f37"),
    "grouped": ("square", "#bf8700"),
}


#: no script, no fetch: only the inline CSS (the ``<style>`` block and the legend's colours) and inline SVG
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


def _e(text: Any) -> str:
    """``text`` as HTML text or a quoted attribute value: ``& < > " '`` escaped (the one escaping helper)."""
    return html.escape(str(text), quote=True)


def _marker(shape: str, x: float, y: float, colour: str, ring: bool) -> str:
    stroke = ' stroke="#000" stroke-width="2"' if ring else ""
    if shape == "circle":
        return f'<circle cx="{x:.1f}" cy="{y}" r="5" fill="{colour}"{stroke}/>'
    if shape == "square":
        return f'<rect x="{x - 4.5:.1f}" y="{y - 4.5}" width="9" height="9" fill="{colour}"{stroke}/>'
    if shape == "diamond":
        return (
            f'<polygon points="{x:.1f},{y - 6} {x + 6:.1f},{y} {x:.1f},{y + 6} {x - 6:.1f},{y}" '
            f'fill="{colour}"{stroke}/>'
        )
    return f'<polygon points="{x:.1f},{y - 6} {x + 6:.1f},{y + 5} {x - 6:.1f},{y + 5}" fill="{colour}"{stroke}/>'


def tie_chart(d: Dict[str, Any]) -> str:
    """One row per metric, each on its own scale (the interval is often a few points of a 0-100
    axis): the interval bar from the pessimistic to the optimistic order and the policies' markers,
    the scale's ends under the row and the interval in a column on the right."""
    names = [m for m in d["metrics"] if d["tie_intervals"][m]["low"] is not None]
    width, left, plot, row = 900, 110, 600, 44
    height = 16 + row * len(names)
    declared = d["declared"]["ties"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="tie intervals">'
    ]
    for i, name in enumerate(names):
        iv = d["tie_intervals"][name]
        shown = [v for v in [iv["low"], iv["high"], *iv["values"].values()] if v is not None]
        lo, hi = min(shown), max(shown)
        pad = max((hi - lo) * 0.08, 0.002)
        lo, hi = max(0.0, lo - pad), min(1.0, hi + pad)

        def x(v: float, lo=lo, hi=hi) -> float:
            return left + plot * (v - lo) / (hi - lo)

        y = 20 + i * row
        parts.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{_e(d["metrics"][name])}</text>')
        parts.append(f'<line x1="{left}" y1="{y}" x2="{left + plot}" y2="{y}" stroke="#e6e9ef"/>')
        parts.append(
            f'<rect x="{x(iv["low"]):.1f}" y="{y - 7}" width="{max(x(iv["high"]) - x(iv["low"]), 1.5):.1f}" '
            f'height="14" fill="#dbe7fb" stroke="#7aa2e3"><title>{_e(d["metrics"][name])}: '
            f"{pct(iv['low'])} .. {pct(iv['high'])}</title></rect>"
        )
        for policy, (shape, colour) in MARKERS.items():
            v = iv["values"].get(policy)
            if v is not None:
                parts.append(_marker(shape, x(v), y, colour, policy == declared))
        parts.append(
            f'<text x="{left}" y="{y + 20}" fill="#5a6475">{100 * lo:.2f}</text>'
            f'<text x="{left + plot}" y="{y + 20}" text-anchor="end">{100 * hi:.2f}</text>'
        )
        width_text = "" if iv["width"] is None else f" ({100 * iv['width']:.2f} points)"
        parts.append(
            f'<text x="{left + plot + 16}" y="{y + 4}">{pct(iv["low"])} .. {pct(iv["high"])}{width_text}</text>'
        )
    parts.append("</svg>")
    policies = {p for m in names for p in d["tie_intervals"][m]["values"]}
    legend = "".join(f'<span style="color:{c}">&#9679; {p}</span>' for p, (_, c) in MARKERS.items() if p in policies)
    return (
        "".join(parts) + f'<div class="legend note">bar: pessimistic .. optimistic order (each row on its '
        f"own scale); {legend}<span>ringed: the declared policy ({_e(declared)})</span></div>"
    )


def histogram(values: List[float], title: str, bins: int = 20, top: Optional[float] = None) -> str:
    """Counts of per-query values in equal bins from 0 to ``top`` (default: their maximum), an SVG bar chart."""
    width, height, left, bottom = 900, 180, 50, 30  # x axis in points of the metric
    if top is None:
        top = max(values) if values else 0.0
    if not values or top <= 0:
        return f'<p class="note">{_e(title)}: {"no query" if not values else "every value is 0"}.</p>'
    counts = [0] * bins
    for v in values:
        counts[min(int(v / top * bins), bins - 1)] += 1
    peak = max(counts)
    bar = (width - left - 10) / bins
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{_e(title)}">'
    ]
    for i, c in enumerate(counts):
        h = (height - bottom - 10) * c / peak
        parts.append(
            f'<rect x="{left + i * bar + 1:.1f}" y="{height - bottom - h:.1f}" width="{bar - 2:.1f}" '
            f'height="{h:.1f}" fill="#7aa2e3"><title>{_e(c)} queries</title></rect>'
        )
    for i in range(0, bins + 1, 5):
        anchor = "end" if i == bins else "middle"
        parts.append(
            f'<text x="{left + i * bar:.1f}" y="{height - 12}" text-anchor="{anchor}">{100 * top * i / bins:.1f}</text>'
        )
    parts.append(
        f'<text x="{left - 6}" y="16" text-anchor="end">{peak}</text>'
        f'<text x="{left - 6}" y="{height - bottom}" text-anchor="end">0</text></svg>'
    )
    return f'<p class="note">{_e(title)}</p>' + "".join(parts)


def _conventions_table(d: Dict[str, Any]) -> str:
    names = list(d["metrics"])
    head = "".join(f"<th>{_e(d['metrics'][m])}</th>" for m in names)
    rows = []
    for r in d["conventions"]:
        cls = ' class="declared"' if r["declared"] else ""
        cells = (
            f'<td class="err" colspan="{len(names)}">{_e(r["error"])}</td>'
            if r["error"]
            else "".join(f"<td>{pct(r['values'].get(m))}</td>" for m in names)
        )
        rows.append(f'<tr{cls}><td class="l">{_e(r["axis"])}</td><td class="l">{_e(r["value"])}</td>{cells}</tr>')
    return f'<table><tr><th class="l">axis</th><th class="l">value</th>{head}</tr>{"".join(rows)}</table>'


def _reproduced(r: Dict[str, Any]) -> str:
    if not r.get("reported"):
        return '<p class="note">No reported numbers were given (<code>--reported map=0.6026,rank1=88.2%</code>).</p>'
    wanted = ", ".join(f"{x['metric']}={x['text']}" for x in r["reported"])
    entries = r["matches"] or ([r["nearest"]] if r.get("nearest") else [])
    if r["matches"]:
        lead = (
            f'<p class="ok">{_e(r["n_matches"])} of {_e(r["searched"])} candidates reproduce {_e(wanted)} '
            "(simplest first).</p>"
        )
    else:
        lead = f'<p class="bad">None of {_e(r["searched"])} candidates reproduces {_e(wanted)}; the nearest:</p>'
    metric_names = [x["metric"] for x in r["reported"]]
    head = "".join(f"<th>{_e(m)}</th>" for m in metric_names)
    rows = []
    for e in entries:
        cells = "".join(f"<td>{_e(e['values'][m]['shown'])}</td>" for m in metric_names)
        why = "<br>".join(_e(w) for w in e["meanings"])
        rows.append(
            f'<tr><td class="l">{_e(e["label"])}<div class="note">{why}</div></td>{cells}'
            f'<td class="l note">{_e("; ".join(e["clauses"]))}</td></tr>'
        )
    more = f'<p class="note">... and {_e(r["more"])} more in the JSON report.</p>' if r.get("more") else ""
    if r.get("uninformative"):
        more += (
            f'<p class="note">{_e(r["uninformative"])} candidates only bound the number by [0, 1] (an unstable '
            "order whose hits in the top k change with it) and are not listed.</p>"
        )
    return (
        lead
        + f'<table><tr><th class="l">candidate</th>{head}<th class="l">clauses</th></tr>'
        + "".join(rows)
        + "</table>"
        + more
    )


def _findings(d: Dict[str, Any]) -> str:
    rows = []
    for f in d["findings"]:
        e: Optional[Dict[str, Any]] = f.get("effect")
        effect = ""
        if e and e.get("change") is not None:
            effect = (
                f"{_e(d['metrics'].get(e['metric'], e['metric']))} {pct(e['with'])} ({_e(e['with_means'])}) "
                f"vs {pct(e['without'])} ({_e(e['without_means'])}): <b>{100 * e['change']:+.2f}</b> points"
            )
        rows.append(
            f'<tr><td class="l">{_e(f["title"])}</td><td class="l">{_e(f["detail"])}</td>'
            f'<td class="l">{effect}</td></tr>'
        )
    return (
        '<table><tr><th class="l">finding</th><th class="l">what</th><th class="l">measured effect</th></tr>'
        + "".join(rows)
        + "</table>"
    )


def _by_convention(conv: Dict[str, Any], title: str) -> str:
    shares = ", ".join(f"{_e(axis)} {_e(n)}" for axis, n in conv["by_axis"].items())
    rows = "".join(
        f"<tr><td>{_e(q['query'])}</td><td>{pct(q['declared'])}</td><td>{pct(q['low'])} .. {pct(q['high'])}"
        f'</td><td class="l">{_e(q["axis"])}</td><td class="l">{_e(q["why"])}</td></tr>'
        for q in conv["top"]
    )
    empty = (
        (
            f'<p class="note">{_e(conv["n_empty"])} queries without a relevant item '
            f"({_e(', '.join(map(str, conv['empty'])))}{', ...' if conv['n_empty'] > len(conv['empty']) else ''}): "
            f"{_e(conv['empty_why'])}.</p>"
        )
        if conv["n_empty"]
        else ""
    )
    values = histogram(
        conv["declared_values"],
        f"Per-query {title} under the declared protocol (queries with a relevant item), in percent",
        top=1.0,
    )
    return (
        values + f'<p class="note">By any convention axis: {_e(conv["moved_by_any"])} of {_e(conv["queries"])} '
        f"queries move ({shares}). The queries that move most:</p><table><tr><th>query</th><th>declared</th>"
        f'<th>range</th><th class="l">axis</th><th class="l">why</th></tr>{rows}</table>{empty}'
    )


def _meta(d: Dict[str, Any]) -> str:
    """What was audited and the declared protocol, one paragraph."""
    if d.get("declared_text"):  # a TREC run
        return f"{_e(d['data']['summary'])}; {_e(d['declared_text'])}."
    dec = d["declared"]
    return (
        f"{_e(format(d['data']['queries'], ','))} queries &times; "
        f"{_e(format(d['data']['gallery'], ','))} gallery items "
        f"({_e(d['data']['kind'])}); declared protocol <b>{_e(d['protocol'])}</b>: k={_e(dec['k'])}, "
        f"ties={_e(dec['ties'])}, ap_rule={_e(dec['ap_rule'])}, ap_at_k={_e(dec['ap_at_k'])}, "
        f"empty={_e(dec['empty'])}, junk={_e(dec['junk'])}."
    )


def render(d: Dict[str, Any]) -> str:
    pq = d["per_query"]
    movers = "".join(
        f"<tr><td>{_e(q['query'])}</td><td>{pct(q['pessimistic'])}</td><td>{pct(q['optimistic'])}</td>"
        f'<td class="l">{_e(q["why"])}</td></tr>'
        for q in pq["top"]
    )
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in d["notes"])
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}"><title>retrieval-conformance audit</title><style>{
        CSS
    }</style></head>
<body>
<h1>Audit of an evaluation</h1>
<p class="meta">{_meta(d)}
Specification {_e(d["specification_version"])}; values in percent.</p>
<h2>1. The number under every convention</h2>
<p class="note">Every order of tied items gives a value inside the bar (spec &sect;4): its width is how much
of the number is tie order alone.</p>
{tie_chart(d)}
{_conventions_table(d)}
<p class="note">Highlighted: the declared protocol. Each axis varies one option with the declared protocol's
others held; presets are evaluated at the declared cut-off.</p>
{
        histogram(
            pq["spread"],
            f"Per-query spread of {d['metrics'][pq['metric']]} between the pessimistic and optimistic "
            f"orders (points); {pq['moved']} of {pq['queries']} queries move",
        )
    }
<table><tr><th>query</th><th>pessimistic</th><th>optimistic</th><th class="l">why it moves</th></tr>{movers}</table>
{_by_convention(pq["by_convention"], d["metrics"][pq["metric"]])}
<h2>2. Which conventions reproduce the reported numbers</h2>
{_reproduced(d["reproduced"])}
<h2>3. What makes the numbers fragile</h2>
{_findings(d)}
<p class="note">{_e(d["cost"]["evaluations"])} evaluations ({_e(d["cost"]["implementation"])}),
{_e(format(d["cost"]["seconds"], ".2f"))} s.</p>
{notes}
</body></html>
"""
