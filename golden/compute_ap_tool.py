"""Regenerate the Oxford golden values with the suite's own ``compute_ap``.

The Oxford golden values are the output of a C++ program the suite builds from source with
the system compiler (:mod:`retrieval_conformance.golden.compute_ap_build`), so anyone can
regenerate them::

    python -m retrieval_conformance.golden.compute_ap_tool build        # print the binary path
    python -m retrieval_conformance.golden.compute_ap_tool regenerate   # rewrite the JSON
    python -m retrieval_conformance.golden.compute_ap_tool regenerate --check
    python -m retrieval_conformance.golden.compute_ap_tool run GTQUERY RANKEDLIST

Building and running the program (the compiler, the binary cache, :class:`CompilerUnavailable`
and :class:`CompileError`) is :mod:`~retrieval_conformance.golden.compute_ap_build`'s; its
names are re-exported here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from retrieval_conformance.golden.compute_ap_build import (
    REQUIRE_ENV,
    Case,
    CompileError,
    CompilerUnavailable,
    build,
    compiler_identity,
    find_compiler,
    golden_dir,
    require_build,
    run,
    run_case,
    run_cases,
    source_path,
)

OXFORD_GOLDEN = "landmark_oxford.json"

__all__ = [
    "CompileError",
    "CompilerUnavailable",
    "Case",
    "REQUIRE_ENV",
    "build",
    "edge_cases",
    "find_compiler",
    "golden_dir",
    "oxford_golden",
    "real_lists",
    "require_build",
    "run",
    "run_case",
    "run_cases",
    "source_path",
]


# --------------------------------------------------------------------------- golden data
def _data_dir() -> Path:
    return Path(str(golden_dir() / "data" / "oxford5k"))


def real_lists() -> List[Tuple[str, str, Path, Path]]:
    """(run, query, gt prefix, ranked-list path) for every copied Oxford5k list, sorted."""
    data = _data_dir()
    out = []
    for run_dir in sorted(p for p in (data / "runs").iterdir() if p.is_dir()):
        for ranked in sorted(run_dir.glob("*_top.txt")):
            q = ranked.name[: -len("_top.txt")]
            out.append((run_dir.name, q, data / "gt" / q, ranked))
    return out


def edge_cases() -> List[Dict[str, object]]:
    """Small hand-written cases covering every compute_ap edge case (spec §5).

    Each is a dict with ``name``, ``ranked``, ``good``, ``ok``, ``junk``; the golden file
    adds ``printed``, the program's output.
    """
    c = []

    def add(name, ranked, good, ok=(), junk=()):
        c.append({"name": name, "ranked": list(ranked), "good": list(good), "ok": list(ok), "junk": list(junk)})

    add("perfect", ["a", "b", "c"], ["a", "b"])
    add("single_hit_first", ["a", "x", "y"], ["a"])
    add("single_hit_last", ["x", "y", "a"], ["a"])
    add("nothing_found", ["x", "y"], ["a"])
    add("empty_ranked", [], ["a"])
    add("empty_ranked_empty_gt", [], [])
    add("empty_positives_something_ranked", ["x"], [])
    add("empty_positives_only_junk_ranked", ["j"], [], junk=["j"])
    add("empty_positives_junk_then_item", ["j", "x"], [], junk=["j"])
    add("good_ok_union", ["a", "x", "b"], ["a"], ok=["b"])
    add("good_ok_overlap_deduplicated", ["a", "b"], ["a", "b"], ok=["a"])
    add("duplicates_in_good", ["a", "x", "b"], ["a", "a", "b", "b"])
    add("junk_skipped", ["j", "a", "j2", "b"], ["a", "b"], junk=["j", "j2"])
    add("positive_also_junk", ["a", "b"], ["a", "b"], junk=["a"])
    add("positive_also_junk_never_found", ["b", "x"], ["a", "b"], junk=["a"])
    add("repeated_name_counts_twice", ["a", "a"], ["a"])
    add("repeated_name_ap_above_one", ["a", "a", "a", "b"], ["a", "b"])
    add("repeated_junk", ["j", "j", "a"], ["a"], junk=["j"])
    add("carriage_return_does_not_match", ["a\r", "b"], ["a", "b"])
    add("carriage_return_matches_carriage_return", ["a\r", "b\r"], ["a\r"])
    add("trailing_space_does_not_match", ["a ", "a"], ["a"])
    add("empty_line_is_a_name", ["", "a"], ["a"])
    add("empty_line_positive", ["", "x"], [""])
    add("empty_line_junk", ["", "a"], ["a"], junk=[""])
    add("unicode_names", ["é", "ü", "x"], ["ü"])
    add("tiny_value_exponent", ["x%d" % i for i in range(5000)] + ["a"], ["a", "m0", "m1"])
    add(
        "many_positives_late",
        ["x%d" % i for i in range(50)] + ["p%d" % i for i in range(50)],
        ["p%d" % i for i in range(100)],
    )
    add("alternating", [("p%d" if i % 2 else "x%d") % i for i in range(200)], ["p%d" % i for i in range(1, 200, 2)])
    add("hit_at_rank_three", ["x", "x2", "a"], ["a"])
    add(
        "recall_steps_of_one_seventh",
        ["a", "x", "b", "y", "c", "d", "z", "e", "f", "g"],
        ["a", "b", "c", "d", "e", "f", "g"],
    )
    return c


def _program_output(exe: Path, prefix: Path, ranked: Path) -> str:
    proc = run(str(prefix), str(ranked), exe=exe)
    if proc.returncode != 0:
        raise RuntimeError(f"compute_ap failed on {ranked}: {proc.stderr!r}")
    return proc.stdout.decode("ascii").rstrip("\n")


def oxford_golden(exe: Optional[Path] = None) -> Dict[str, object]:
    """Compute the content of ``golden/landmark_oxford.json`` with the built program."""
    exe = exe or build()
    cases = edge_cases()
    printed = run_cases([(c["ranked"], c["good"], c["ok"], c["junk"]) for c in cases], exe=exe)
    for c, p in zip(cases, printed):
        c["printed"] = p
    runs: Dict[str, Dict[str, str]] = {}
    lists = real_lists()
    with ThreadPoolExecutor(max_workers=min(8, (os.cpu_count() or 2) * 2)) as pool:
        outs = list(pool.map(lambda t: _program_output(exe, t[2], t[3]), lists))
    for (run_name, q, _, _), out in zip(lists, outs):
        runs.setdefault(run_name, {})[q] = out
    src = source_path().read_bytes()
    return {
        "schema": 1,
        "source": "the suite's own compute_ap built from golden/tools/compute_ap.cpp",
        "description": "Oxford protocol golden values: the output of the suite's own "
        "compute_ap (golden/tools/compute_ap.cpp) on hand-written edge cases "
        "and on every copied real Oxford5k ranked list.",
        "provenance": {
            "generator": "python -m retrieval_conformance.golden.compute_ap_tool regenerate",
            "program": "golden/tools/compute_ap.cpp, built with `<CXX> -O2`",
            "source_sha256": hashlib.sha256(src).hexdigest(),
            "compiler": compiler_identity(),
            "data": "golden/data/oxford5k (see golden/data/PROVENANCE.md); the real lists "
            "also have the values recorded by the original VGG compute_ap in "
            "runs/<run>/AP.txt, which these equal after normalising the one "
            "Windows-printed exponent (6.96767e-005 -> 6.96767e-05)",
            "format": "edge_cases: ranked/good/ok/junk are the lines of each file (written "
            "with a newline after every name); printed is the program's stdout "
            "without its newline. runs: run -> query -> printed.",
        },
        "edge_cases": cases,
        "runs": runs,
    }


def _golden_path() -> Path:
    return Path(str(golden_dir() / OXFORD_GOLDEN))


def dump_golden(doc: Dict[str, object]) -> str:
    """Compact, diff-friendly JSON: one line per edge case and per run."""

    def j(v):
        return json.dumps(v, ensure_ascii=False, separators=(", ", ": "))

    lines = ["{", f' "schema": {doc["schema"]},', f' "source": {j(doc["source"])},']
    lines.append(f' "description": {j(doc["description"])},')
    lines.append(f' "provenance": {json.dumps(doc["provenance"], ensure_ascii=False, indent=2)},')
    cases = doc["edge_cases"]
    lines.append(' "edge_cases": [')
    lines.extend("  " + j(c) + ("," if i + 1 < len(cases) else "") for i, c in enumerate(cases))
    lines.append(" ],")
    runs = doc["runs"]
    lines.append(' "runs": {')
    lines.extend(f"  {j(name)}: {j(runs[name])}" + ("," if i + 1 < len(runs) else "") for i, name in enumerate(runs))
    lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _strip_volatile(doc: Dict[str, object]) -> Dict[str, object]:
    d = json.loads(json.dumps(doc))
    d.get("provenance", {}).pop("compiler", None)
    return d


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m retrieval_conformance.golden.compute_ap_tool",
        description="Build/run the suite's compute_ap and regenerate the Oxford golden JSON.",
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("build", help="build (or reuse) the binary and print its path")
    reg = sub.add_parser("regenerate", help=f"rewrite golden/{OXFORD_GOLDEN} from the program")
    reg.add_argument("--output", help="write here instead of the package's golden folder")
    reg.add_argument("--check", action="store_true", help="do not write; exit 1 if the committed file differs")
    r = sub.add_parser("run", help="run compute_ap GTQUERY RANKEDLIST")
    r.add_argument("gtquery")
    r.add_argument("ranked_list")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "build":
            print(build())
            return 0
        if args.cmd == "run":
            proc = run(args.gtquery, args.ranked_list)
            sys.stdout.buffer.write(proc.stdout)
            sys.stderr.buffer.write(proc.stderr)
            return proc.returncode
        doc = oxford_golden()
        text = dump_golden(doc)
        if args.check:
            current = json.loads(_golden_path().read_text(encoding="utf-8"))
            if _strip_volatile(current) != _strip_volatile(doc):
                print(f"{_golden_path()} differs from the program's output", file=sys.stderr)
                return 1
            print(f"{_golden_path()} is up to date")
            return 0
        out = Path(args.output) if args.output else _golden_path()
        out.write_text(text, encoding="utf-8")
        print(
            f"wrote {out} ({len(doc['edge_cases'])} edge cases, {sum(len(v) for v in doc['runs'].values())} real lists)"
        )
        return 0
    except (CompilerUnavailable, CompileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
