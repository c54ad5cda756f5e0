"""``evaluate --run --qrels`` prints its summary as trec_eval prints it: every line of the command
line's table equals the line trec_eval 10.0 printed for that measure (``golden/trec_eval.json``),
``%-22s\\tall\\t%.4f`` with counts as integers, each measure once."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

from retrieval_conformance.cli import main

GOLDEN = files("retrieval_conformance.golden")
GENERATED = Path(str(GOLDEN / "data" / "trec"))


def _case(case_id: str) -> dict:
    cases = json.loads((GOLDEN / "trec_eval.json").read_text(encoding="utf-8"))["cases"]
    return next(c for c in cases if c["id"] == case_id)


def test_the_summary_lines_are_trec_evals(capsys):
    case = _case("generated-10.0")  # trec_eval -q -c ... on generated.qrels generated.run
    argv = [
        "evaluate",
        "--run",
        str(GENERATED / "generated.run"),
        "--qrels",
        str(GENERATED / "generated.qrels"),
        "--complete",
        "--k",
        "1,3,5,10,20,100",
    ]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split("\t")[0].rstrip() for line in lines]
    assert len(names) == len(set(names)), "a measure printed twice"
    printed = {name: line for name, line in zip(names, lines)}
    compared = 0
    for name, value in case["values"]["all"].items():
        if name in printed:
            assert printed[name] == f"{name:<22}\tall\t{value}", name
            compared += 1
    assert compared >= 35, f"only {compared} measures compared"
