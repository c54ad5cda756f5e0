"""The summary of a benchmark run and the plot of the saved runs' history.

:func:`format_report` prints, per workload (benchmark group), each candidate's median time,
its speed ratio to the baselines of the same run (``loop`` = seed 000's per-query loop,
``full-matrix`` = torchreid's design) and its time relative to a bare ``np.argsort``, its
median ratio to the interleaved anchor with the run's noise (what the ratio gate reads,
:mod:`.ratio`), the peak extra memory measured in a child process (:mod:`.memory`), the load
average during the run, the exponent a of ``time ~ N**a`` over the scaling series
(:func:`scaling_fits`), and the speed goals with PASS/MISS.  :func:`markdown_page` writes the
same report as a documentation page (``bench report --markdown FILE``), so published results are
generated from the saved runs rather than written by hand.  :func:`plot_history` draws the median
times of the saved runs.
"""

from __future__ import annotations

import math
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from retrieval_conformance.conformance.bench.memory import MiB
from retrieval_conformance.conformance.bench.ratio import load_range
from retrieval_conformance.conformance.bench.runs import load_run

#: the order of the candidates in a table and their colours in the plot
CANDIDATE_ORDER = [
    "c",
    "torch",
    "numpy",
    "reference",
    "full-matrix",
    "loop",
    "plain-numpy",
    "sklearn",
    "torchmetrics",
    "ranx",
    "faiss",
    "argsort",
]

#: the speed goals: (description, workload, candidate, kind, reference, bound)
#: kind "speedup": reference median / candidate median >= bound; "time_ratio": candidate
#: median / reference median <= bound; "memory": peak extra MiB < bound
TARGETS: List[Tuple[str, str, str, str, Optional[str], float]] = [
    ("C >= 50x the per-query loop at CIFAR-10 scale (mAP@ALL)", "cifar10-all", "c", "speedup", "loop", 50.0),
    ("C >= 50x the per-query loop at CIFAR-10 scale (mAP@1000)", "cifar10-1000", "c", "speedup", "loop", 50.0),
    ("C >= 30x the per-query loop at NUS-WIDE scale (mAP@5000)", "nuswide-5000", "c", "speedup", "loop", 30.0),
    ("C <= 0.5x a bare np.argsort at Market-1501 scale", "market1501", "c", "time_ratio", "argsort", 0.5),
    (
        "C >= 4x faster than the torchreid-style evaluator (Market-1501)",
        "market1501",
        "c",
        "speedup",
        "full-matrix",
        4.0,
    ),
    ("C peak extra memory < 200 MB at Market-1501 scale", "market1501", "c", "memory", None, 200e6 / MiB),
    ("MSMT17 scale completes with < 1 GB extra memory (C)", "msmt17", "c", "memory", None, 1e9 / MiB),
]


def _candidate(bench: Dict[str, Any]) -> str:
    cand = (bench.get("extra_info") or {}).get("candidate")
    if cand:
        return cand
    name = bench.get("name", "")
    return name[name.rfind("-") + 1 :].rstrip("]") if "[" in name else name


def _workload(bench: Dict[str, Any]) -> str:
    return (bench.get("extra_info") or {}).get("workload") or (bench.get("group") or "?").split()[0]


def summarise(data: Dict[str, Any]) -> Dict[str, Dict[str, Dict[str, Any]]]:
    """{group: {candidate: {median, rounds, peak_extra_mib, workload, title, role, map, metric}}}.

    ``map`` is the run's headline value and ``metric`` names it (``extra_info["value"]`` and
    ``["metric"]``; runs saved before them carry ``extra_info["map"]``, the mAP).
    """
    groups: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for bench in data["benchmarks"]:
        info = bench.get("extra_info") or {}
        groups.setdefault(bench.get("group") or "?", {})[_candidate(bench)] = {
            "median": bench["stats"]["median"],
            "rounds": bench["stats"]["rounds"],
            "peak_extra_mib": info.get("peak_extra_mib"),
            "memory_queries": info.get("memory_queries"),
            "workload": _workload(bench),
            "title": info.get("title", ""),
            "role": info.get("role", ""),
            "map": info.get("value", info.get("map")),
            "metric": info.get("metric") or "map",
            "queries": info.get("queries"),
            "gallery": info.get("gallery"),
            "ratio": info.get("ratio_median"),
            "noise": info.get("ratio_noise"),
        }
    return groups


def _fmt_time(t: float) -> str:
    return f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"


def _fmt_anchor(ratio: Optional[float], noise: Optional[float]) -> str:
    if ratio is None:
        return "-"
    shown = f"{ratio:.3g}"
    return shown + ("" if noise is None else f" ±{noise:.0%}")


def _fmt_ratio(x: Optional[float]) -> str:
    if x is None:
        return "-"
    return f"{x:.0f}x" if x >= 100 else f"{x:.1f}x" if x >= 10 else f"{x:.2f}x"


#: column heading of a headline metric
_METRIC_LABELS = {"map": "mAP", "ndcg_at_k": "nDCG@k", "mrr": "MRR", "map_at_r": "MAP@R"}


def format_report(data: Dict[str, Any]) -> str:
    """The summary table of one run, then the targets."""
    groups = summarise(data)
    lines = []
    machine = data.get("machine_info", {})
    cpu = (machine.get("cpu") or {}).get("brand_raw") or machine.get("processor") or ""
    lines.append(f"benchmark run {data.get('datetime', '')}  {machine.get('node', '')} {cpu}".rstrip())
    commit = data.get("commit_info") or {}
    if commit.get("id"):
        lines.append(f"commit {commit['id'][:12]}{' (dirty)' if commit.get('dirty') else ''}")
    load = load_range(data)
    if load is not None:
        lines.append(
            f"load average (1 min) during the run: {load[0]:.2f} .. {load[1]:.2f} on {os.cpu_count() or '?'} cores"
        )
    head = (
        f"  {'candidate':<13}{'median':>11}{'rounds':>7}{'vs loop':>10}{'vs full-matrix':>16}"
        f"{'time/argsort':>14}{'/anchor ±noise':>16}{'peak extra':>13}   "
    )
    for group in sorted(groups):
        rows = groups[group]
        first = next(iter(rows.values()))
        lines.append("")
        lines.append(f"{group}: {first['title']}" if first["title"] else group)
        lines.append(head + _METRIC_LABELS.get(first["metric"], first["metric"]))
        loop = rows.get("loop", {}).get("median")
        full = rows.get("full-matrix", {}).get("median")
        arg = rows.get("argsort", {}).get("median")
        order = CANDIDATE_ORDER
        for cand in sorted(rows, key=lambda c: (order.index(c) if c in order else len(order), c)):
            r = rows[cand]
            med = r["median"]
            mem = r["peak_extra_mib"]
            mem_s = "-" if mem is None else f"{mem:.0f} MiB"
            if mem is not None and r.get("memory_queries") and r.get("queries") and r["memory_queries"] < r["queries"]:
                mem_s += "*"
            lines.append(
                f"  {cand:<13}{_fmt_time(med):>11}{r['rounds']:>7}"
                f"{_fmt_ratio(loop / med if loop and cand != 'loop' else None):>10}"
                f"{_fmt_ratio(full / med if full and cand != 'full-matrix' else None):>16}"
                f"{_fmt_ratio(med / arg if arg and cand != 'argsort' else None):>14}"
                f"{_fmt_anchor(r.get('ratio'), r.get('noise')):>16}{mem_s:>13}"
                f"   {'' if r['map'] is None else format(r['map'], '.4f')}".rstrip()
            )
    lines.append("")
    lines.append(
        "vs loop / vs full-matrix: how many times faster than that baseline in this run; "
        "time/argsort: median divided by a bare np.argsort of the distance (or score) matrix; "
        "/anchor: median over the rounds of the candidate's time divided by the anchor's (np.argsort of "
        "2**20 values of the same input, timed before each round) ± the run's noise (half-width of the "
        "95% bootstrap interval; none with fewer than 3 rounds), what the ratio gate compares; "
        "* memory measured on fewer queries (a slow candidate: 100 for the loop, two query blocks "
        "for an implementation; the peak does not grow with the number of queries)"
    )
    fits = scaling_fits(groups)
    if fits:
        lines.append("")
        lines.append(
            "scaling (time ~ N**a, least squares in log-log over the gallery sizes run; peak extra memory per size):"
        )
        for (family, cand), fit in sorted(fits.items()):
            mem = ", ".join("-" if m is None else f"{m:.0f}" for m in fit["memory_mib"])
            lines.append(
                f"  {family:<16}{cand:<13} a = {fit['exponent']:.2f}  "
                f"(N = {', '.join(_fmt_size(n) for n in fit['sizes'])}; MiB: {mem})"
            )
    target_lines = check_targets(groups)
    if target_lines:
        lines.append("")
        lines.append("speed goals:")
        lines.extend(target_lines)
    return "\n".join(lines)


def markdown_page(runs: Sequence[Tuple[str, Dict[str, Any]]]) -> str:
    """A Markdown page of saved runs: per run its machine, commit and load, then the report.

    ``runs`` holds (name, pytest-benchmark JSON) pairs, newest last.
    """
    parts = [
        "# Benchmark results",
        "",
        "Generated by `retrieval-conformance bench report --markdown` from saved runs of "
        "`retrieval-conformance bench run`; the columns are explained under each table.",
        "",
    ]
    for name, data in runs:
        parts += [f"## {name}", "", "```text", format_report(data), "```", ""]
    return "\n".join(parts)


def _fmt_size(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k" if n >= 1000 else str(n)


def scaling_fits(groups: Dict[str, Dict[str, Dict[str, Any]]]) -> Dict[Tuple[str, str], Dict[str, Any]]:
    """{(family, candidate): {exponent, sizes, medians, memory_mib}} over the scaling series.

    The exponent a is the least-squares slope of log(median) against log(N) over the gallery
    sizes of one family (``scaling-floats``, ``scaling-codes``) that the run holds, two at least.
    """
    points: Dict[Tuple[str, str], List[Tuple[int, float, Optional[float]]]] = {}
    for rows in groups.values():
        for cand, r in rows.items():
            workload = str(r["workload"])
            if not workload.startswith("scaling-") or not r.get("gallery") or not r["median"]:
                continue
            family = workload.rpartition("-")[0]
            points.setdefault((family, cand), []).append(
                (int(r["gallery"]), float(r["median"]), r.get("peak_extra_mib"))
            )
    fits = {}
    for key, pts in points.items():
        pts.sort()
        if len({n for n, _, _ in pts}) < 2:
            continue
        xs = [math.log(n) for n, _, _ in pts]
        ys = [math.log(t) for _, t, _ in pts]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        fits[key] = {
            "exponent": slope,
            "sizes": [n for n, _, _ in pts],
            "medians": [t for _, t, _ in pts],
            "memory_mib": [m for _, _, m in pts],
        }
    return fits


def check_targets(groups: Dict[str, Dict[str, Dict[str, Any]]]) -> List[str]:
    """PASS/MISS lines for the targets whose benchmarks are in the run."""
    by_workload: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for rows in groups.values():
        for cand, r in rows.items():
            if "(smoke)" not in r.get("title", "") and not str(r["workload"]).endswith("smoke"):
                by_workload.setdefault(r["workload"], {})[cand] = r
    out = []
    for text, workload, cand, kind, ref, bound in TARGETS:
        rows = by_workload.get(workload, {})
        if cand not in rows or (ref is not None and ref not in rows):
            continue
        if kind == "memory":
            value = rows[cand]["peak_extra_mib"]
            if value is None:
                continue
            ok = value < bound
            shown = f"{value:.0f} MiB = {value * MiB / 1e6:.0f} MB"
        elif kind == "speedup":
            value = rows[ref]["median"] / rows[cand]["median"]
            ok = value >= bound
            shown = f"{value:.1f}x"
        else:
            value = rows[cand]["median"] / rows[ref]["median"]
            ok = value <= bound
            shown = f"{value:.2f}x"
        out.append(f"  {'PASS' if ok else 'MISS'}  {text}: {shown}")
    return out


# ---------------------------------------------------------------------------------------------
# plot of the history
# ---------------------------------------------------------------------------------------------
def plot_history(paths: Sequence[str], out: str) -> str:
    """One panel per benchmark group: median time per saved run (log scale), a line per candidate.

    Raises ``ImportError`` when matplotlib is missing.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def label(path: str) -> str:  # "0003" and the commit's first 7 characters
        parts = os.path.basename(path).split("_")
        return parts[0] + ("\n" + parts[1][:7] if len(parts) > 2 else "")

    runs = [(label(p), load_run(p)) for p in paths]
    fixed = CANDIDATE_ORDER

    def colour(cand: str) -> str:  # the same colour for a candidate in every panel
        i = fixed.index(cand) if cand in fixed else len(fixed) + sum(map(ord, cand)) % 3
        return f"C{i % 10}"

    series: Dict[str, Dict[str, List[Tuple[int, float]]]] = {}
    for i, (_, data) in enumerate(runs):
        for group, rows in summarise(data).items():
            for cand, r in rows.items():
                series.setdefault(group, {}).setdefault(cand, []).append((i, r["median"]))
    groups = sorted(series)
    if not groups:
        raise ValueError("no benchmarks in the saved runs")
    cols = 2 if len(groups) > 1 else 1
    nrows = -(-len(groups) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(7 * cols, 3.2 * nrows), squeeze=False)
    labels = [num for num, _ in runs]
    for ax, group in zip(axes.flat, groups):
        for cand, pts in sorted(series[group].items()):
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker="o", label=cand, color=colour(cand))
        ax.set_yscale("log")
        ax.set_title(group, fontsize=10)
        ax.set_ylabel("median (s)")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=90, fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(groups) :]:
        ax.axis("off")
    fig.suptitle("benchmark history (saved runs, oldest left): a slowdown is a step up")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
