"""The benchmark command: run the benchmarks (with the regression gate), summarise, plot history.

::

    retrieval-conformance bench run [--compare-fail median:10%] [--save pass|always|never]
                                    [--storage .benchmarks] [--json OUT] [--no-memory] [-k EXPR]
    retrieval-conformance bench report [RUN.json ...]      # default: the latest saved run
    retrieval-conformance bench plot [--out bench-history.png]

(also ``python -m retrieval_conformance.conformance.bench_report ...``).

``run`` runs ``pytest --pyargs retrieval_conformance.conformance -m benchmark`` with
``RC_BENCH=1`` and prints the summary.  The gate: when the storage already holds a saved run
for this machine, ``--benchmark-compare --benchmark-compare-fail=median:10%`` is added (a
median more than 10% slower than the last saved run fails the command); when it holds none,
the run becomes the baseline (pytest-benchmark treats a compare-fail without a saved run as
a usage error).  With ``--save pass`` (default) the run is saved only when it passed, so a
regression never becomes the next baseline.

``report`` prints, per workload (benchmark group), each candidate's median time, its speed
ratio to the baselines of the same run (``loop`` = seed 000's per-query loop, ``full-matrix``
= torchreid's design) and its time relative to a bare ``np.argsort``, the peak extra memory
measured in a child process, and the issue's targets with PASS/MISS.

Peak extra memory (:func:`measure_peak_memory`): a fresh Python process loads the saved
workload, resets the kernel's high-water mark (``/proc/self/clear_refs``), runs the candidate
once and reports ``VmHWM`` minus the resident size before the call, which counts C and numpy
allocations alike (tracemalloc would miss C mallocs).  Memory-mapped inputs make file pages
resident too, so for them the anonymous memory (``resident - shared`` from
``/proc/self/statm``, sampled every millisecond) is reported instead.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

MiB = 2**20

#: the issue's acceptance targets: (description, workload, candidate, kind, reference, bound)
#: kind "speedup": reference median / candidate median >= bound; "time_ratio": candidate
#: median / reference median <= bound; "memory": peak extra MiB < bound
TARGETS: List[Tuple[str, str, str, str, Optional[str], float]] = [
    ("C >= 50x the per-query loop at CIFAR-10 scale (mAP@ALL)", "cifar10-all", "c", "speedup", "loop", 50.0),
    ("C >= 50x the per-query loop at CIFAR-10 scale (mAP@1000)", "cifar10-1000", "c", "speedup", "loop", 50.0),
    ("C >= 30x the per-query loop at NUS-WIDE scale (mAP@5000)", "nuswide-5000", "c", "speedup", "loop", 30.0),
    ("C <= 0.5x a bare np.argsort at Market-1501 scale", "market1501", "c", "time_ratio", "argsort", 0.5),
    ("C >= 4x faster than the torchreid-style evaluator (Market-1501)", "market1501", "c", "speedup",
     "full-matrix", 4.0),
    ("C peak extra memory < 200 MB at Market-1501 scale", "market1501", "c", "memory", None, 200e6 / MiB),
    ("MSMT17 scale completes with < 1 GB extra memory (C)", "msmt17", "c", "memory", None, 1e9 / MiB),
]


# ---------------------------------------------------------------------------------------------
# peak memory of one candidate, in a child process
# ---------------------------------------------------------------------------------------------
def _status() -> Dict[str, int]:
    """Bytes of VmRSS, VmHWM, RssAnon, RssFile from /proc/self/status."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                out[key] = int(rest.split()[0]) * 1024
    return out


class _AnonSampler(threading.Thread):
    """Samples anonymous resident memory (resident - shared pages of /proc/self/statm)."""

    def __init__(self, interval: float = 0.001):
        super().__init__(daemon=True)
        self.interval = interval
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.peak = self.read()
        self.stop = threading.Event()

    def read(self) -> int:
        with open("/proc/self/statm") as fh:
            fields = fh.read().split()
        return (int(fields[1]) - int(fields[2])) * self.page

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, self.read())
            time.sleep(self.interval)


def _memory_child(argv: Sequence[str]) -> int:
    """Child process: load a saved workload, run one candidate once, print JSON."""
    import gc

    import numpy as np
    from retrieval_conformance.conformance import workloads as W

    directory, candidate, limit = argv
    w = W.Workload.load(directory)
    if limit != "all":
        w = w.subset(np.arange(min(int(limit), w.n_queries)))
    if candidate in W.IMPLEMENTATIONS:
        from retrieval_conformance.implementations import registry

        registry.get(candidate)  # load the library / import torch before measuring
    run = W.make_runner(w, candidate)
    gc.collect()
    before = _status()
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset VmHWM to the current resident size (Linux >= 4.0)
        hwm_reset = True
    except OSError:
        hwm_reset = False
    sampler = _AnonSampler()
    anon_before = sampler.read()
    sampler.start()
    t0 = time.perf_counter()
    result = run()
    elapsed = time.perf_counter() - t0
    sampler.stop.set()
    sampler.join()
    sampler.peak = max(sampler.peak, sampler.read())
    after = _status()
    del result
    out = {
        "peak_hwm_extra_mib": (after["VmHWM"] - before["VmRSS"]) / MiB if hwm_reset else None,
        "peak_anon_extra_mib": (sampler.peak - anon_before) / MiB,
        "memory_mapped": bool(w.memory_mapped),
        "memory_queries": int(w.n_queries),
        "memory_run_seconds": elapsed,
    }
    print(json.dumps(out))
    return 0


def measure_peak_memory(directory: str, candidate: str, query_limit: Optional[int] = None,
                        timeout: float = 3600.0) -> Dict[str, Any]:
    """Peak extra memory of one run of ``candidate`` on the workload saved in ``directory``.

    Returns ``peak_extra_mib`` (what the summary shows: the high-water mark, or the sampled
    anonymous memory for memory-mapped inputs), the two raw measurements, and
    ``memory_queries`` (the queries run: all, or ``query_limit``).
    """
    cmd = [sys.executable, "-c",
           "import sys; from retrieval_conformance.conformance.bench_report import _memory_child; "
           "sys.exit(_memory_child(sys.argv[1:]))",
           directory, candidate, "all" if query_limit is None else str(int(query_limit))]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        return {"peak_extra_mib": None, "memory_error": (proc.stderr or proc.stdout)[-2000:]}
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    if data["memory_mapped"] or data["peak_hwm_extra_mib"] is None:
        data["peak_extra_mib"] = data["peak_anon_extra_mib"]
        data["memory_method"] = "anonymous resident memory, sampled every 1 ms (file pages excluded)"
    else:
        data["peak_extra_mib"] = data["peak_hwm_extra_mib"]
        data["memory_method"] = "VmHWM after clear_refs minus VmRSS before"
    return data


# ---------------------------------------------------------------------------------------------
# reading runs
# ---------------------------------------------------------------------------------------------
def machine_id() -> str:
    """pytest-benchmark's folder name for this machine (``Linux-CPython-3.11-64bit``)."""
    try:
        from pytest_benchmark.utils import get_machine_id

        return get_machine_id()
    except Exception:  # pragma: no cover - pytest-benchmark missing
        import platform

        return "{}-{}-{}-{}".format(platform.system(), platform.python_implementation(),
                                    ".".join(platform.python_version_tuple()[:2]), platform.architecture()[0])


def saved_runs(storage: str = ".benchmarks", machine: Optional[str] = None) -> List[str]:
    """Saved runs (``NNNN_*.json``) in ``storage`` for ``machine`` (default: this one), oldest first."""
    machine = machine or machine_id()
    return sorted(glob.glob(os.path.join(storage, machine, "[0-9][0-9][0-9][0-9]_*.json")))


def load_run(path: str) -> Dict[str, Any]:
    with open(path) as fh:
        data = json.load(fh)
    if "benchmarks" not in data:
        raise ValueError(f"{path}: not a pytest-benchmark JSON file (no 'benchmarks' key)")
    return data


def _candidate(bench: Dict[str, Any]) -> str:
    cand = (bench.get("extra_info") or {}).get("candidate")
    if cand:
        return cand
    name = bench.get("name", "")
    return name[name.rfind("-") + 1:].rstrip("]") if "[" in name else name


def _workload(bench: Dict[str, Any]) -> str:
    return (bench.get("extra_info") or {}).get("workload") or (bench.get("group") or "?").split()[0]


def summarise(data: Dict[str, Any]) -> Dict[str, Dict[str, Dict[str, Any]]]:
    """{group: {candidate: {median, rounds, peak_extra_mib, workload, title, role, map}}}."""
    groups: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for bench in data["benchmarks"]:
        info = bench.get("extra_info") or {}
        groups.setdefault(bench.get("group") or "?", {})[_candidate(bench)] = {
            "median": bench["stats"]["median"], "rounds": bench["stats"]["rounds"],
            "peak_extra_mib": info.get("peak_extra_mib"), "memory_queries": info.get("memory_queries"),
            "workload": _workload(bench), "title": info.get("title", ""), "role": info.get("role", ""),
            "map": info.get("map"), "queries": info.get("queries"),
        }
    return groups


def _fmt_time(t: float) -> str:
    return f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"


def _fmt_ratio(x: Optional[float]) -> str:
    if x is None:
        return "-"
    return f"{x:.0f}x" if x >= 100 else f"{x:.1f}x" if x >= 10 else f"{x:.2f}x"


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
    head = (f"  {'candidate':<13}{'median':>11}{'rounds':>7}{'vs loop':>10}{'vs full-matrix':>16}"
            f"{'time/argsort':>14}{'peak extra':>13}   mAP")
    for group in sorted(groups):
        rows = groups[group]
        first = next(iter(rows.values()))
        lines.append("")
        lines.append(f"{group}: {first['title']}" if first["title"] else group)
        lines.append(head)
        loop = rows.get("loop", {}).get("median")
        full = rows.get("full-matrix", {}).get("median")
        arg = rows.get("argsort", {}).get("median")
        order = ["c", "torch", "numpy", "reference", "full-matrix", "loop", "argsort"]
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
                f"{_fmt_ratio(med / arg if arg and cand != 'argsort' else None):>14}{mem_s:>13}"
                f"   {'' if r['map'] is None else format(r['map'], '.4f')}".rstrip())
    lines.append("")
    lines.append("vs loop / vs full-matrix: how many times faster than that baseline in this run; "
                 "time/argsort: median divided by a bare np.argsort(distances, axis=1); "
                 "* memory measured on fewer queries (a slow candidate: 100 for the loop, two query blocks "
                 "for an implementation; the peak does not grow with the number of queries)")
    target_lines = check_targets(groups)
    if target_lines:
        lines.append("")
        lines.append("targets (issue 6):")
        lines.extend(target_lines)
    return "\n".join(lines)


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
    fixed = ["c", "torch", "numpy", "reference", "full-matrix", "loop", "argsort"]

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
    for ax in list(axes.flat)[len(groups):]:
        ax.axis("off")
    fig.suptitle("benchmark history (saved runs, oldest left): a slowdown is a step up")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


# ---------------------------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="retrieval-conformance bench",
                                description="Speed benchmarks at dataset scale, their summary and history.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the benchmarks (pytest-benchmark) with the regression gate")
    run.add_argument("--storage", default=".benchmarks", help="saved runs folder (default .benchmarks)")
    run.add_argument("--compare-fail", default="median:10%", metavar="EXPR",
                     help="pytest-benchmark --benchmark-compare-fail expression against the last saved run "
                          "(default median:10%%; 'none' to switch the gate off)")
    run.add_argument("--save", choices=("pass", "always", "never"), default="pass",
                     help="save the run into the storage: only when it passed (default), always, never")
    run.add_argument("--json", help="also write the run's JSON here")
    run.add_argument("--no-memory", action="store_true", help="skip the peak-memory child processes")
    run.add_argument("-k", dest="select", help="pytest -k expression (e.g. 'market1501')")
    run.add_argument("pytest_args", nargs="*", help="further pytest arguments (after --)")
    rep = sub.add_parser("report", help="summarise a run: median, ratios to the baselines, peak memory")
    rep.add_argument("paths", nargs="*", help="pytest-benchmark JSON files (default: the latest saved run)")
    rep.add_argument("--storage", default=".benchmarks")
    plot = sub.add_parser("plot", help="plot the history of the saved runs (needs matplotlib: the 'plot' extra)")
    plot.add_argument("--storage", default=".benchmarks")
    plot.add_argument("--out", default="bench-history.png")
    return p


def _cmd_run(args) -> int:
    storage = os.path.abspath(args.storage)
    previous = saved_runs(storage)
    fd, json_path = tempfile.mkstemp(prefix="rc-bench-", suffix=".json")
    os.close(fd)
    os.unlink(json_path)
    cmd = [sys.executable, "-m", "pytest", "--pyargs", "retrieval_conformance.conformance", "-m", "benchmark",
           "--benchmark-enable", f"--benchmark-storage=file://{storage}", f"--benchmark-json={json_path}",
           "-p", "no:cacheprovider"]
    gate = args.compare_fail and args.compare_fail.lower() != "none"
    if gate and previous:
        cmd += ["--benchmark-compare", f"--benchmark-compare-fail={args.compare_fail}"]
        print(f"gate: comparing with the last saved run {os.path.basename(previous[-1])} ({args.compare_fail})")
    elif gate:
        print(f"gate: no saved run for {machine_id()} in {storage}: this run becomes the baseline; "
              "later runs are compared with it")
    if args.select:
        cmd += ["-k", args.select]
    cmd += list(args.pytest_args)
    env = dict(os.environ, RC_BENCH="1")
    if args.no_memory:
        env["RC_BENCH_MEMORY"] = "0"
    print("$ " + " ".join(cmd), flush=True)
    status = subprocess.call(cmd, env=env)
    if not os.path.exists(json_path):
        print(f"no benchmark JSON was written (pytest exit status {status})", file=sys.stderr)
        return status or 1
    try:
        data = load_run(json_path)
        print()
        print(format_report(data))
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(data, fh, indent=2)
        if data["benchmarks"] and (args.save == "always" or (args.save == "pass" and status == 0)):
            path = _save(storage, data)
            print(f"saved as {path}")
        elif args.save == "pass" and status != 0:
            print("not saved: the run failed (the last good run stays the baseline)")
    finally:
        os.unlink(json_path)
    return status


def _save(storage: str, data: Dict[str, Any]) -> str:
    """Store a run like ``--benchmark-autosave`` does: ``NNNN_<commit>_<datetime>.json``."""
    folder = os.path.join(storage, machine_id())
    os.makedirs(folder, exist_ok=True)
    existing = saved_runs(storage)
    number = int(os.path.basename(existing[-1]).split("_")[0]) + 1 if existing else 1
    commit = (data.get("commit_info") or {}).get("id") or "unversioned"
    stamp = (data.get("datetime") or time.strftime("%Y%m%d_%H%M%S")).replace(":", "").replace("-", "")
    stamp = stamp.split(".")[0].replace("T", "_")
    dirty = "-dirty" if (data.get("commit_info") or {}).get("dirty") else ""
    path = os.path.join(folder, f"{number:04d}_{commit[:40]}{dirty}_{stamp}.json")
    with open(path, "w") as fh:
        json.dump(data, fh, indent=4)
    return path


def _cmd_report(args) -> int:
    paths = args.paths or saved_runs(args.storage)[-1:]
    if not paths:
        print(f"no run to report: give a pytest-benchmark JSON file, or save runs in {args.storage} "
              "(retrieval-conformance bench run)", file=sys.stderr)
        return 2
    for i, path in enumerate(paths):
        try:
            data = load_run(path)
        except (OSError, ValueError) as exc:
            print(f"{path}: cannot read ({exc})", file=sys.stderr)
            return 2
        if i:
            print()
        print(f"== {path}")
        print(format_report(data))
    return 0


def _cmd_plot(args) -> int:
    paths = saved_runs(args.storage)
    if not paths:
        print(f"no saved runs in {os.path.join(args.storage, machine_id())}: nothing to plot", file=sys.stderr)
        return 2
    try:
        out = plot_history(paths, args.out)
    except ImportError:
        print("error: bench plot needs matplotlib, which is not installed; install the optional extra: "
              "pip install 'retrieval-conformance[plot]'", file=sys.stderr)
        return 2
    print(f"wrote {out} ({len(paths)} saved runs)")
    return 0


def bench_main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``retrieval-conformance bench``; returns the exit status."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    return {"run": _cmd_run, "report": _cmd_report, "plot": _cmd_plot}[args.command](args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(bench_main())
