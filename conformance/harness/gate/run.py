"""Every declared function checked, each in its own worker process, side by side where cores allow.

A worker (:mod:`.worker`) is a fresh Python run from the lab's root; this module starts them, at
most ``jobs`` at a time, and gathers their outcomes in the file's order.  It also says which
accepted deviations no longer happen (:func:`stale_entries`) and which declared functions a set
of changed files touches (:func:`touched_by`, for pre-commit).
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence

from retrieval_conformance.conformance.harness.gate.config import DeclaredCheck, GateConfig
from retrieval_conformance.conformance.harness.gate.worker import error_outcome, request_json
from retrieval_conformance.conformance.harness.report.known import clause_ids, is_cause

WORKER_MODULE = "retrieval_conformance.conformance.harness.gate.worker"


def default_jobs(n_checks: int) -> int:
    """One worker per core this process may use, never more than there are functions."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        cores = os.cpu_count() or 1
    return max(1, min(n_checks, cores))


def run_all(
    config: GateConfig,
    checks: Sequence[DeclaredCheck],
    jobs: Optional[int] = None,
    derandomize: bool = True,
    isolation: str = "auto",
    verbose: bool = False,
) -> List[Dict[str, Any]]:
    """The outcome of each of ``checks`` (:func:`.worker.outcome`), in their order."""
    jobs = jobs or default_jobs(len(checks))

    def one(declared: DeclaredCheck) -> Dict[str, Any]:
        return _run_worker(config.root, declared, derandomize, isolation, verbose)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, checks))


def _run_worker(root: str, declared: DeclaredCheck, derandomize: bool, isolation: str, verbose: bool):
    from dataclasses import asdict

    spec = asdict(declared)
    fd, out_path = tempfile.mkstemp(prefix="rc-gate-", suffix=".json")
    os.close(fd)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", WORKER_MODULE, out_path],
            input=request_json(declared, derandomize, isolation, verbose),
            cwd=root,
            capture_output=True,
            text=True,
        )
        try:
            with open(out_path, encoding="utf-8") as fh:
                return json.load(fh)
        except (OSError, ValueError):
            tail = " ".join((proc.stderr or proc.stdout or "").strip().splitlines()[-3:])[-400:]
            return error_outcome(spec, f"the worker checking it ended with status {proc.returncode}: {tail}")
    finally:
        os.unlink(out_path)


def stale_entries(outcome: Dict[str, Any]) -> List[str]:
    """The accepted entries of one function that accept no deviation it has today.

    A check-id entry is in use when a check it names deviates; a cause entry when one of today's
    deviations names a cause it covers (accepted or not: it still explains part of a deviation).
    """
    if outcome["verdict"] == "error":
        return []  # nothing was compared: nothing can be called stale
    ids = [d["check_id"] for d in outcome["deviations"]]
    named = {s for d in outcome["deviations"] for cause in d["causes"] for s in cause}
    stale = []
    for entry in outcome["known_entries"]:
        if is_cause(entry):
            try:
                used = bool(clause_ids(entry) & named)
            except KeyError:
                used = False
        else:
            used = any(fnmatch.fnmatch(i, entry) for i in ids)
        if not used:
            stale.append(entry)
    return stale


def watched_paths(declared: DeclaredCheck) -> List[str]:
    """The path globs (relative to the lab's root) whose change runs ``declared``: its target's file
    (a module's too: ``mylab.eval`` is ``mylab/eval.py`` or ``mylab/eval/*``) and its ``files``."""
    module = declared.target.rpartition(":")[0]
    if module.endswith(".py") or "/" in module or os.sep in module:
        own = [os.path.normpath(module).replace(os.sep, "/")]
    else:
        base = module.replace(".", "/")
        own = [base + ".py", base + "/*"]
    return own + list(declared.files)


def touched_by(config: GateConfig, changed: Sequence[str]) -> List[DeclaredCheck]:
    """The declared checks a change of ``changed`` (paths as git gives them) may affect; all of them
    when the file declaring them changed."""
    rel = [_relative(config.root, p) for p in changed]
    if _relative(config.root, config.path) in rel:
        return list(config.checks)
    if declared_known_files(config) & set(rel):
        return list(config.checks)
    return [c for c in config.checks if any(fnmatch.fnmatch(p, g) for p in rel for g in watched_paths(c))]


def declared_known_files(config: GateConfig) -> set:
    return {_relative(config.root, os.path.join(config.root, c.known_file)) for c in config.checks if c.known_file}


def _relative(root: str, path: str) -> str:
    return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
