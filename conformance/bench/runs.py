"""Saved benchmark runs: pytest-benchmark's storage folder (one JSON file per run, per machine)."""
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

        return "{}-{}-{}-{}".format(platform.system(), platform.python_implementation(),
                                    ".".join(platform.python_version_tuple()[:2]), platform.architecture()[0])


def saved_runs(storage: str = ".benchmarks", machine: Optional[str] = None) -> List[str]:
    """Saved runs (``NNNN_*.json``) in ``storage`` for ``machine`` (default: this one), oldest first."""
    machine = machine or machine_id()
    return sorted(glob.glob(os.path.join(storage, machine, "[0-9][0-9][0-9][0-9]_*.json")))


def load_run(path: str) -> Dict[str, Any]:
    data = json.loads(read_text_file(path))  # bounded: a FIFO, /dev/zero or non-UTF-8 is a named ValueError
    if "benchmarks" not in data:
        raise ValueError(f"{path}: not a pytest-benchmark JSON file (no 'benchmarks' key)")
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
