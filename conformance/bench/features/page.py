"""The Markdown page of a saved feature run: the run (scale, machine, load average), then per
section its figures, each next to its target and whether it is met, or why the section has none.

Targets are judged at full scale only: the smoke scale checks the machinery on small inputs,
whose times say nothing of the dataset sizes the targets are set for.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from retrieval_conformance.conformance.bench.features.figures import (
    check_figures,
    format_amount,
    format_number,
    judge,
    parse_target,
)
from retrieval_conformance.conformance.bench.features.registry import SCALES, STATUSES

#: how the page writes an operator of a target
_SYMBOLS = {">=": "≥", "<=": "≤", ">": ">", "<": "<"}
#: what the page says of each scale
SCALE_TEXT = {
    "full": "full: the dataset sizes named in each section",
    "smoke": "smoke: small inputs that check the machinery; the figures do not describe the dataset "
    "sizes, and no target is judged",
}


def _cell(text: Any) -> str:
    """Text that stays inside one cell of a Markdown table."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _load(values: Optional[Sequence[float]]) -> str:
    return "not recorded" if not values else ", ".join(f"{v:.2f}" for v in values)


def _machine(m: Dict[str, Any]) -> str:
    cores = m.get("cores")
    usable = m.get("usable_cores")
    core_text = f"{cores} cores" + (f" ({usable} usable by this process)" if usable and usable != cores else "")
    parts = [
        m.get("processor") or "processor unknown",
        core_text,
        m.get("system") or "",
        f"Python {m['python']}" if m.get("python") else "",
        f"numpy {m['numpy']}" if m.get("numpy") else "",
    ]
    return ", ".join(p for p in parts if p)


def _target(figure: Dict[str, Any]) -> str:
    if figure.get("target") is None:
        return "–"
    operator, bound = parse_target(figure["target"], figure["unit"])
    return f"{_SYMBOLS[operator]} {format_amount(bound, figure['unit'])}"


def _baseline(baseline: Any, unit: str) -> str:
    if baseline is None:
        return "–"
    if isinstance(baseline, str):
        return baseline
    if isinstance(baseline, dict):
        return f"{baseline['name']}: {format_amount(baseline['value'], baseline.get('unit', ''))}"
    return format_amount(float(baseline), unit)


def _verdict(figure: Dict[str, Any], judged: bool) -> str:
    met = judge(figure)
    if met is None:
        return "–"
    return ("met" if met else "**missed**") if judged else "not judged"


def tally(run: Dict[str, Any]) -> Dict[str, int]:
    """Counts of figures meeting and missing their targets, and without one (or without a value)."""
    counts = {"met": 0, "missed": 0, "no target": 0}
    for section in run.get("sections", []):
        for figure in (section.get("figures") or {}).values():
            met = judge(figure)
            counts["no target" if met is None else "met" if met else "missed"] += 1
    return counts


def _run_table(run: Dict[str, Any], judged: bool) -> List[str]:
    load = run.get("load_average") or {}
    sections = run.get("sections", [])
    statuses = [s.get("status") for s in sections]
    counts = tally(run)
    targets = (
        f"{counts['met']} met, {counts['missed']} missed, {counts['no target']} figures without a target"
        if judged
        else "not judged at this scale"
    )
    commit = run.get("commit") or {}
    record = [run.get("datetime") or "date not recorded"]
    if commit.get("id"):
        record.append(f"commit {commit['id'][:12]}" + (" with local changes" if commit.get("dirty") else ""))
    record.append(f"machine folder {(run.get('machine') or {}).get('id', 'not recorded')}")
    rows = [
        ("scale", SCALE_TEXT.get(run.get("scale"), str(run.get("scale")))),
        ("machine", _machine(run.get("machine") or {})),
        (
            "load average (1, 5, 15 min)",
            f"{_load(load.get('start'))} at the start; {_load(load.get('end'))} at the end",
        ),
        (
            "sections",
            ", ".join(f"{statuses.count(s)} {s}" for s in ("measured", "not measured", "failed") if statuses.count(s))
            or "none",
        ),
        ("targets", targets),
        ("run record", ", ".join(record)),
    ]
    return ["| the run | |", "|---|---|"] + [f"| {name} | {_cell(value)} |" for name, value in rows]


def _section(section: Dict[str, Any], judged: bool) -> List[str]:
    lines = [f"## {section.get('title') or section.get('name')}", ""]
    status = section.get("status")
    if status != "measured":
        reason = str(section.get("reason") or "no reason recorded").rstrip(".")
        lines.append(f"{'Not measured' if status == 'not measured' else 'Failed'}: {reason}.")
        return lines + [""]
    before = (section.get("load_before") or [None])[0]
    after = (section.get("load_after") or [None])[0]
    load = "" if before is None or after is None else f"; load average (1 min) {before:.2f} before, {after:.2f} after"
    lines += [
        f"Measured in {format_number(section.get('seconds', 0.0))} s{load}.",
        "",
        "| figure | value | target | met | baseline | note |",
        "|---|---|---|---|---|---|",
    ]
    for name, figure in (section.get("figures") or {}).items():
        unit = figure.get("unit", "")
        lines.append(
            "| "
            + " | ".join(
                _cell(c)
                for c in (
                    name,
                    format_amount(figure.get("value"), unit),
                    _target(figure),
                    _verdict(figure, judged),
                    _baseline(figure.get("baseline"), unit),
                    figure.get("note") or "",
                )
            )
            + " |"
        )
    return lines + [""]


def check_record(run: Any) -> None:
    """``ValueError`` naming what is wrong when ``run`` is not a feature run's record (a file
    edited by hand, or written by something else); the figures are checked as when measured."""
    if not isinstance(run, dict) or run.get("kind") != "feature-benchmarks":
        raise ValueError('not a feature run (no "kind": "feature-benchmarks")')
    if run.get("scale") not in SCALES:
        raise ValueError(f"scale: expected one of {', '.join(SCALES)}, got {run.get('scale')!r}")
    sections = run.get("sections")
    if not isinstance(sections, list):
        raise ValueError(f"sections: expected a list, got {type(sections).__name__}")
    for i, section in enumerate(sections):
        if not isinstance(section, dict) or not isinstance(section.get("name"), str):
            raise ValueError(f"sections[{i}]: expected a dict with a name")
        where = f"section {section['name']!r}"
        if section.get("status") not in STATUSES:
            raise ValueError(f"{where}: status must be one of {', '.join(STATUSES)}, got {section.get('status')!r}")
        if section["status"] == "measured":
            check_figures(section.get("figures"), where)
        elif not isinstance(section.get("reason"), str):
            raise ValueError(f"{where}: a section {section['status']} needs its reason (a string)")
    for name in ("machine", "load_average", "commit"):
        if run.get(name) is not None and not isinstance(run[name], dict):
            raise ValueError(f"{name}: expected a dict, got {type(run[name]).__name__}")


def feature_page(run: Dict[str, Any]) -> str:
    """The Markdown page of one feature run (a record of :func:`.registry.run_features`);
    ``ValueError`` from :func:`check_record` for anything else."""
    check_record(run)
    judged = run.get("scale") == "full"
    lines = [
        "# Feature benchmarks",
        "",
        "Generated by `retrieval-conformance bench report --features --markdown FILE` from one saved run of "
        "`retrieval-conformance bench features`: every figure below comes from that run, on the machine and "
        "under the load average it records. Each figure stands next to its target; a section whose "
        "benchmark is not part of the installation says so.",
        "",
    ]
    lines += _run_table(run, judged) + [""]
    for section in run.get("sections", []):
        lines += _section(section, judged)
    return "\n".join(lines).rstrip("\n") + "\n"
