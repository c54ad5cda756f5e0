"""Saved benchmark runs: pytest-benchmark's storage folder (one JSON file per run, per machine), and
the runs of ``bench features`` in its ``features`` folder (:mod:`.features`)."""

from __future__ import annotations

import glob
import json
import os
import time
from typing import Any, Dict, List, Optional

from retrieval_conformance.reference.readers.text import read_text_file


def machine_id() -> str:
    """pytest-benchmark's folder name for this machine (``Linux-CPython-3.11-64bit``)."""
    try:
        from pytest_benchmark.utils import get_machine_id

        return get_machine_id()
    except Exception:  # pragma: no cover - pytest-benchmark missing
        import platform

        return "{}-{}-{}-{}".format(
            platform.system(),
            platform.python_implementation(),
            ".".join(platform.python_version_tuple()[:2]),
            platform.architecture()[0],
        )


def saved_runs(storage: str = ".benchmarks", machine: Optional[str] = None) -> List[str]:
    """Saved runs (``NNNN_*.json``) in ``storage`` for ``machine`` (default: this one), oldest first."""
    machine = machine or machine_id()
    return sorted(glob.glob(os.path.join(storage, machine, "[0-9][0-9][0-9][0-9]_*.json")))


def load_run(path: str) -> Dict[str, Any]:
    data = json.loads(read_text_file(path))  # bounded: a FIFO, /dev/zero or non-UTF-8 is a named ValueError
    if not isinstance(data, dict) or "benchmarks" not in data:
        hint = (
            " (a feature run: report it with --features)"
            if isinstance(data, dict) and data.get("kind") == "feature-benchmarks"
            else ""
        )
        raise ValueError(f"{path}: not a pytest-benchmark JSON file (no 'benchmarks' key){hint}")
    return data


def save_run(storage: str, data: Dict[str, Any]) -> str:
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


#: the folder, under a machine's folder of the storage, of the saved feature runs
FEATURE_FOLDER = "features"


def saved_feature_runs(storage: str = ".benchmarks", machine: Optional[str] = None) -> List[str]:
    """Saved feature runs (``bench features``) in ``storage`` for ``machine``, oldest first."""
    folder = os.path.join(storage, machine or machine_id(), FEATURE_FOLDER)
    return sorted(glob.glob(os.path.join(folder, "[0-9][0-9][0-9][0-9]_*.json")))


def load_feature_run(path: str) -> Dict[str, Any]:
    """A run saved by ``bench features``; ``ValueError`` naming the file when it is something else."""
    data = json.loads(read_text_file(path))
    if not isinstance(data, dict) or data.get("kind") != "feature-benchmarks":
        hint = (
            " (a pytest-benchmark run: report it without --features)"
            if isinstance(data, dict) and "benchmarks" in data
            else ""
        )
        raise ValueError(
            f"{path}: not a feature run of 'retrieval-conformance bench features' (no "
            f'"kind": "feature-benchmarks"){hint}'
        )
    return data


def save_feature_run(storage: str, data: Dict[str, Any]) -> str:
    """Store a feature run as ``<storage>/<machine>/features/NNNN_<datetime>.json``; its path."""
    folder = os.path.join(storage, machine_id(), FEATURE_FOLDER)
    os.makedirs(folder, exist_ok=True)
    existing = saved_feature_runs(storage)
    number = int(os.path.basename(existing[-1]).split("_")[0]) + 1 if existing else 1
    stamp = str(data.get("datetime") or time.strftime("%Y-%m-%dT%H:%M:%S"))
    stamp = stamp.split(".")[0].replace(":", "").replace("-", "").replace("T", "_")
    path = os.path.join(folder, f"{number:04d}_{stamp}.json")
    with open(path, "w") as fh:
        json.dump(data, fh, indent=2)
    return path
