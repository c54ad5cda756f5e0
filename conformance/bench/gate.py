"""``bench run``: the benchmarks with a regression gate.

``run`` runs ``pytest --pyargs retrieval_conformance.conformance -m benchmark`` with
``RC_BENCH=1`` and prints the summary, then applies one of two gates against the runs saved
for this machine:

* ``--gate ratio`` (default, :mod:`.ratio`): every benchmark was timed interleaved with an
  anchor (:mod:`.anchor`); its median candidate/anchor ratio is compared with the median of
  the last ``--depth`` saved runs, and the run fails when it grew by more than
  ``max(--floor, --noise-k x noise)``, the noise measured from the rounds and the history.
  Made for shared machines, where the load moves every time but barely moves the ratio.
* ``--gate median``: pytest-benchmark's own ``--benchmark-compare
  --benchmark-compare-fail=EXPR`` (default ``median:10%``) against the last saved run; right
  only on a quiet, dedicated machine.  ``--compare-fail EXPR`` alone selects it.

The first run on a machine has nothing to compare with and becomes the baseline (for the
median gate pytest-benchmark would call a compare without a saved run a usage error).  With
``--save pass`` (default) the run is saved only when it passed, so a regression never
becomes the next baseline.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile

from retrieval_conformance.conformance.bench import ratio
from retrieval_conformance.conformance.bench.anchor import load_average
from retrieval_conformance.conformance.bench.report import format_report
from retrieval_conformance.conformance.bench.runs import load_run, machine_id, save_run, saved_runs
from retrieval_conformance.reference.contract.install_hints import install_hint


def gate_kind(args) -> str:
    """``ratio``, ``median`` or ``none``: ``--gate``, else what ``--compare-fail`` implies, else ratio."""
    if getattr(args, "gate", None):
        return args.gate
    expr = getattr(args, "compare_fail", None)
    if expr is None:
        return "ratio"
    return "none" if expr.lower() == "none" else "median"


def gated_run(args) -> int:
    """``bench run``: the benchmarks through pytest, the summary, the gate, the save; the exit status."""
    missing = [name for name in ("pytest", "pytest_benchmark") if importlib.util.find_spec(name) is None]
    if missing:  # the bench extra's tools: said before any work, with the command that brings them
        print(f"error: bench run needs {' and '.join(missing)}: {install_hint('bench')}", file=sys.stderr)
        return 2
    storage = os.path.abspath(args.storage)
    previous = saved_runs(storage)
    fd, json_path = tempfile.mkstemp(prefix="rc-bench-", suffix=".json")
    os.close(fd)
    os.unlink(json_path)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "retrieval_conformance.conformance",
        "-m",
        "benchmark",
        "--benchmark-enable",
        f"--benchmark-storage=file://{storage}",
        f"--benchmark-json={json_path}",
        "-p",
        "no:cacheprovider",
    ]
    kind = gate_kind(args)
    compare_fail = getattr(args, "compare_fail", None) or "median:10%"
    if kind == "median" and previous:
        cmd += ["--benchmark-compare", f"--benchmark-compare-fail={compare_fail}"]
        print(f"gate: comparing with the last saved run {os.path.basename(previous[-1])} ({compare_fail})")
    elif kind == "ratio" and previous:
        print(
            f"gate: ratio to the anchor, against the last {args.depth} saved runs of {len(previous)} "
            f"(floor {args.floor:.0%}, {args.noise_k:g} x noise)"
        )
    elif kind != "none":
        print(
            f"gate: no saved run for {machine_id()} in {storage}: this run becomes the baseline; "
            "later runs are compared with it"
        )
    load = load_average()
    if load is not None:
        print(f"load average at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min)")
    if args.select:
        cmd += ["-k", args.select]
    cmd += list(args.pytest_args)
    # the benchmarks' own pytest: not an xdist worker's, even when this runs inside one (pytest-benchmark
    # disables itself when PYTEST_XDIST_WORKER is set, and no JSON would be written)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    env["RC_BENCH"] = "1"
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
        if kind == "ratio" and previous and data["benchmarks"]:
            history = [load_run(p) for p in previous]
            verdicts = ratio.ratio_gate(data, history, args.floor, args.noise_k, args.depth)
            print()
            print(ratio.format_verdicts(verdicts, data, args.floor, args.noise_k))
            if status == 0 and any(v.status == "FAIL" for v in verdicts):
                status = 1
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(data, fh, indent=2)
        if data["benchmarks"] and (args.save == "always" or (args.save == "pass" and status == 0)):
            path = save_run(storage, data)
            print(f"saved as {path}")
        elif args.save == "pass" and status != 0:
            print("not saved: the run failed (the last good run stays the baseline)")
    finally:
        os.unlink(json_path)
    return status
