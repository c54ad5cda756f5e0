"""``bench run``: the benchmarks with the regression gate.

``run`` runs ``pytest --pyargs retrieval_conformance.conformance -m benchmark`` with
``RC_BENCH=1`` and prints the summary.  The gate: when the storage already holds a saved run
for this machine, ``--benchmark-compare --benchmark-compare-fail=median:10%`` is added (a
median more than 10% slower than the last saved run fails the command); when it holds none,
the run becomes the baseline (pytest-benchmark treats a compare-fail without a saved run as
a usage error).  With ``--save pass`` (default) the run is saved only when it passed, so a
regression never becomes the next baseline.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from retrieval_conformance.conformance.bench.report import format_report
from retrieval_conformance.conformance.bench.runs import load_run, machine_id, save_run, saved_runs


def gated_run(args) -> int:
    """``bench run``: the benchmarks through pytest, the summary, the gate, the save; the exit status."""
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
            path = save_run(storage, data)
            print(f"saved as {path}")
        elif args.save == "pass" and status != 0:
            print("not saved: the run failed (the last good run stays the baseline)")
    finally:
        os.unlink(json_path)
    return status
