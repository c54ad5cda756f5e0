"""The sections of the feature benchmarks and the one run that measures them all.

Each section names a benchmark module and its function ``figures(scale)`` (``scale``: ``"full"``,
the dataset sizes, or ``"smoke"``, small inputs that check the machinery), which returns the
section's figures (:mod:`.figures`).  :func:`run_features` imports and calls each in turn and
records, per section, its figures or why there are none:

* ``measured``: the figures, the seconds the section took and the load average before and after;
* ``not measured``: the module is not part of this installation, or needs a package that is not
  installed (the reason says which);
* ``failed``: the function raised, or returned figures that :func:`.figures.check_figures`
  refuses (the reason holds the error); the run goes on with the next section.

The run record also holds the scale, the machine, the load average at the start and the end, the
date and the commit; :mod:`.page` writes the page from it.
"""

from __future__ import annotations

import datetime
import importlib
import os
import platform
import subprocess
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

import numpy as np
from retrieval_conformance.conformance.bench.anchor import load_average
from retrieval_conformance.conformance.bench.features.figures import check_figures
from retrieval_conformance.conformance.bench.runs import machine_id

#: the scales a section is run at
SCALES = ("full", "smoke")
#: what became of a section
STATUSES = ("measured", "not measured", "failed")
#: the run record's format (its ``format`` field)
RECORD_FORMAT = 1


class Section(NamedTuple):
    """One section of the page: its short name (``--section``), its module and function, its title."""

    name: str
    module: str
    function: str
    title: str


_BENCH = "retrieval_conformance.conformance.bench."
#: the sections, in the page's order
SECTIONS = (
    Section(
        "metrics-subset",
        _BENCH + "metrics_subset",
        "figures",
        "Only the metrics asked for: mAP-only CIFAR-10 against the per-query loop, mAP@100 against argpartition",
    ),
    Section(
        "hashing-pass",
        _BENCH + "hashing_pass",
        "figures",
        "The hashing pass against a bare C microkernel (CIFAR-10, one thread each)",
    ),
    Section(
        "threads",
        _BENCH + "threads",
        "figures",
        "One thread against two: quiet, and with a competing process at normal and low priority",
    ),
    Section(
        "float-pass",
        _BENCH + "float_pass",
        "figures",
        "The C float path against one read pass of its matrix (full mAP, Market-sized ReID; one thread)",
    ),
    Section("curves", _BENCH + "curves", "figures", "Curves at CIFAR-10 scale against one evaluate"),
    Section(
        "distributed",
        _BENCH + "distributed",
        "figures",
        "The distributed accumulator: bytes and time against gathering every embedding",
    ),
)


def section_names(sections: Optional[Sequence[Section]] = None) -> List[str]:
    """The names of ``sections`` (default: :data:`SECTIONS` as it is when called)."""
    return [s.name for s in (SECTIONS if sections is None else sections)]


def select_sections(names: Optional[Sequence[str]], sections: Optional[Sequence[Section]] = None) -> List[Section]:
    """The sections named (all when ``names`` is empty), in the page's order; ``ValueError`` naming
    an unknown one."""
    sections = SECTIONS if sections is None else sections
    if not names:
        return list(sections)
    known = section_names(sections)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(
            f"--section: unknown section(s) {', '.join(map(repr, unknown))}; choose from {', '.join(known)}"
        )
    return [s for s in sections if s.name in names]


def machine() -> Dict[str, Any]:
    """What the page says of the machine: processor, cores, system, Python and numpy."""
    try:
        usable: Optional[int] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not on Linux
        usable = None
    return {
        "id": machine_id(),
        "processor": _processor(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": np.__version__,
    }


def _processor() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _commit() -> Optional[Dict[str, Any]]:
    """The checkout's commit and whether it has changes (None outside a checkout of this project,
    an installed copy inside some other repository included)."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD", "--show-toplevel"], cwd=here, capture_output=True, text=True, timeout=10
        )
        lines = head.stdout.splitlines()
        if (
            head.returncode != 0
            or len(lines) != 2
            or os.path.realpath(os.path.join(lines[1], "conformance", "bench", "features")) != os.path.realpath(here)
        ):
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return {"id": lines[0], "dirty": bool(status.stdout.strip())}


def _missing_module(exc: ImportError, section: Section) -> Optional[str]:
    """Why a section is not measured when importing or running it raised ``exc``; None when the
    error is a failure of the section itself."""
    name = getattr(exc, "name", None) or ""
    if (
        isinstance(exc, ModuleNotFoundError)
        and name
        and (section.module == name or section.module.startswith(name + "."))
    ):
        return f"its benchmark module {section.module} is not part of this installation"
    if isinstance(exc, ModuleNotFoundError) and name and not name.startswith("retrieval_conformance"):
        return f"it needs the package {name.split('.')[0]}, which is not installed"
    return None


def run_section(section: Section, scale: str) -> Dict[str, Any]:
    """One section's record (see the module docstring)."""
    record: Dict[str, Any] = {
        "name": section.name,
        "title": section.title,
        "module": section.module,
        "function": section.function,
    }
    source = f"{section.module}.{section.function}({scale!r})"
    try:
        function: Callable[[str], Any] = getattr(importlib.import_module(section.module), section.function)
    except ImportError as exc:
        reason = _missing_module(exc, section)
        return dict(
            record,
            status="not measured" if reason else "failed",
            reason=reason or f"importing {section.module}: {type(exc).__name__}: {exc}",
        )
    except AttributeError:
        return dict(record, status="failed", reason=f"{section.module} has no function {section.function}(scale)")
    record["load_before"] = load_average()
    start = time.perf_counter()
    try:
        figures = check_figures(function(scale), source)
    except ImportError as exc:
        reason = _missing_module(exc, section)
        return dict(
            record,
            status="not measured" if reason else "failed",
            reason=reason or f"{source}: {type(exc).__name__}: {exc}",
        )
    except Exception as exc:  # noqa: BLE001 (recorded as the section's failure; the run goes on)
        return dict(
            record,
            status="failed",
            reason=f"{source}: {type(exc).__name__}: {exc}",
            seconds=round(time.perf_counter() - start, 3),
            load_after=load_average(),
        )
    return dict(
        record,
        status="measured",
        seconds=round(time.perf_counter() - start, 3),
        load_after=load_average(),
        figures=figures,
    )


def run_features(
    scale: str = "full", sections: Optional[Sequence[Section]] = None, progress: Optional[Callable[[str], None]] = None
) -> Dict[str, Any]:
    """The run record of ``sections`` (default: all) at ``scale``; ``progress`` is told of each
    section as it starts and ends."""
    if scale not in SCALES:
        raise ValueError(f"scale: expected one of {', '.join(SCALES)}, got {scale!r}")
    chosen = list(SECTIONS if sections is None else sections)
    run: Dict[str, Any] = {
        "kind": "feature-benchmarks",
        "format": RECORD_FORMAT,
        "scale": scale,
        "datetime": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": _commit(),
        "machine": machine(),
        "load_average": {"start": load_average()},
        "sections": [],
    }
    for section in chosen:
        if progress:
            progress(f"{section.name}: running {section.module}.{section.function}({scale!r})")
        record = run_section(section, scale)
        run["sections"].append(record)
        if progress:
            took = f" in {record['seconds']:.1f} s" if "seconds" in record else ""
            progress(
                f"{section.name}: {record['status']}{took}" + (f" ({record['reason']})" if record.get("reason") else "")
            )
    run["load_average"]["end"] = load_average()
    return run
