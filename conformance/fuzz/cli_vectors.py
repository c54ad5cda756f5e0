"""Argument vectors for the command line: a random subcommand, random flags, random values
(garbage included), run in this process with the output captured.

What every vector must end in (the table of ``reference/contract/command_line.py``): an exit
status the commands document, no exception out of ``main`` and no traceback on stderr, and on
status 2 a last stderr line that starts with ``error:``.  Anything else is a finding.

``python -m retrieval_conformance.conformance.fuzz --target cli --cases N`` runs N vectors.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import signal
import tempfile
import traceback
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
from retrieval_conformance.reference.contract.command_line import EXIT_STATUSES, EXIT_USAGE

HUGE = "9" * 30
#: a value of no use anywhere: empty, negative, not a number, huge, control characters, a flag
GARBAGE = [
    "",
    "-1",
    "0",
    "nan",
    "inf",
    "-inf",
    "1e400",
    HUGE,
    "x",
    "\x00",
    "\u00e9\u2603",
    "--",
    "-",
    "--help",
    "1,2,,3",
    "all",
    " 5 ",
    "0x10",
    "1.5",
    "/dev/null",
    "/no/such/file",
]

#: subcommand -> option -> values to draw from ("FILE:..." are resolved to files made for the run)
FLAGS: Dict[str, Dict[str, Sequence[str]]] = {
    "golden": {
        "--implementations": ["reference", "numpy", "nmupy", "c"],
        "--require": ["reference", "cee"],
        "--random": ["0", "1", "-1"],
        "--seed": ["0", "3", "-1"],
    },
    "evaluate": {
        "--npz": ["FILE:run", "FILE:garbage", "FILE:dir"],
        "--run": ["FILE:trec", "FILE:garbage"],
        "--qrels": ["FILE:qrels", "FILE:garbage", "FILE:missing"],
        "--relevance-level": ["1", "-2", "x"],
        "--protocol": ["hashing", "reid", "nope"],
        "--k": ["1", "5", "all", "1,5", "0"],
        "--max-rank": ["1", "5", "0", "-3"],
        "--ties": ["stable", "average", "bogus"],
        "--ap-rule": ["precision_sum", "bogus"],
        "--empty": ["zero", "exclude", "bogus"],
        "--radius": ["1", "-1", "nan"],
        "--gain": ["linear", "bogus"],
        "--recall": ["fraction", "hit", "bogus"],
        "--discount": ["log2", "trec", "bogus"],
        "--implementation": ["numpy", "reference", "nmupy"],
        "--json": [],
        "--quiet": [],
        "--per-query": ["text", "json", "csv", "xml"],
        "--max-array-bytes": ["1", "100000", "-1"],
        "--device": ["cpu", "cuda:7", "tpu"],
    },
    "compare": {
        "--protocol": ["hashing", "nope"],
        "--k": ["1", "all", "0"],
        "--implementation": ["numpy", "dask"],
        "--metrics": ["map", "rank1", "bogus"],
        "--json": [],
        "--markdown": [],
        "--latex": [],
        "--fail-if-worse": ["map:0.01", "map:-1", "bogus"],
        "--alpha": ["0.05", "0", "2", "nan"],
        "--resamples": ["50", "0", "-2"],
        "--seed": ["0", "-1"],
        "--confidence": ["0.9", "1"],
        "--names": ["a b", "a a"],
        "--shared": ["FILE:garbage"],
        "--qrels": ["FILE:qrels", "FILE:garbage"],
        "--pairs": ["all", "baseline", "bogus"],
        "--relevance-level": ["1", "-1", "x"],
        "--complete": [],
        "--correction": ["holm", "bogus"],
        "--plus-minus": [],
        "--baseline": ["a", "nope"],
    },
    "check": {
        "--adapter": ["hashing-codes", "reid", "nope"],
        "--protocol": ["hashing", "nope"],
        "--ties": ["stable", "bogus"],
        "--timeout": ["5", "0", "-1", "nan"],
        "--max-examples": ["1", "0", "-5"],
        "--only": ["nothing-matches*", "call/*"],
        "--isolation": ["thread", "none", "bogus"],
        "--arrays": ["numpy", "bogus"],
        "--junit-xml": ["FILE:out.xml", "/no/such/folder/out.xml"],
        "--identify": [],
        "--known-deviations": ["FILE:missing"],
        "--random": [],
        # the declared functions (no target): the campaign's folder declares none
        "--config": ["FILE:garbage", "FILE:missing"],
        "--summary": ["FILE:out.md", "/no/such/folder/out.md"],
        "--json": ["FILE:out.json"],
        "--jobs": ["1", "0", "x"],
        "--changed": [],
    },
    "identify": {
        "--adapter": ["hashing-codes", "nope"],
        "--timeout": ["5", "0", "nan"],
        "--max-examples": ["3"],
        "--isolation": ["thread", "bogus"],
    },
    "bench": {
        "gate": ["FILE:garbage", "FILE:missing"],
        "report": ["FILE:garbage"],
        "--depth": ["0", "2"],
        "--floor": ["nan", "0.1"],
        "--storage": ["FILE:dir"],
    },
    "audit": {
        "--npz": ["FILE:run", "FILE:garbage"],
        "--protocol": ["hashing", "nope"],
        "--k": ["1", "all", "0"],
        "--max-cost": ["0", "2", "-1"],
        "--format": ["text", "json", "xml"],
        "--reported": ["map=0.5", "x"],
        "--fail-if": ["map<0.5", "bogus"],
        "--output": ["FILE:out.xml", "/no/such/folder/r.txt"],
        "--max-rank": ["1", "0"],
        "--run": ["FILE:trec", "FILE:garbage", "FILE:missing"],
        "--qrels": ["FILE:qrels", "FILE:garbage"],
        "--depth": ["5", "0", "x"],
        "--judged-only": [],
        "--complete": [],
        "--score-dtype": ["float32", "bogus"],
        "--float-grades": ["truncate", "bogus"],
        "--gains": ["1=3,2=9", "x"],
        "--relevance-level": ["2", "0"],
        "--ties": ["trec_eval", "bogus"],
        "--ignore-identical-ids": [],
    },
    "compute-ap": {},
    "presets": {},
    "explain": {},
}
#: positional words a subcommand may take
POSITIONALS: Dict[str, Sequence[str]] = {
    "check": ["TARGET", "no_such_module:f", "garbage", ""],
    "identify": ["TARGET", "no_such_module:f"],
    "compare": ["FILE:run", "FILE:run2", "FILE:garbage", "FILE:missing", "FILE:trec"],
    "compute-ap": ["FILE:missing", "FILE:garbage", "x"],
    "explain": ["ties=stable", "4", "nonsense", "§99"],
}
#: a function the harness checks quickly (an example, with few inputs: see TARGET_LIMITS)
TARGET = "retrieval_conformance.conformance.examples.dcmh_correct:calc_map_k"
TARGET_LIMITS = ["--only", "call/deterministic", "--max-examples", "2", "--isolation", "thread"]


@dataclass
class Finding:
    argv: List[str]
    status: object
    detail: str


class _Timeout(BaseException):
    pass


def draw_argv(rng: random.Random, files: Dict[str, str]) -> List[str]:
    """One argument vector: a subcommand (or none), some of its flags, values or garbage."""
    if rng.random() < 0.03:
        return [rng.choice(GARBAGE + ["--version", "--help", "nonsense"])]
    command = rng.choice(sorted(FLAGS))
    argv = [command]
    flags = FLAGS[command]
    if command == "bench":  # never "bench run" or "bench features": they run the benchmarks
        sub = rng.choice(["gate", "report", "plot", "run --help", "features --help", "report --features"])
        argv += sub.split()
    for _ in range(rng.randrange(0, 3)):
        if command in POSITIONALS:
            argv.append(rng.choice(POSITIONALS[command]))
    for _ in range(rng.randrange(0, 5)):
        if not flags:
            break
        flag = rng.choice(sorted(flags))
        if command == "bench" and not flag.startswith("--"):
            continue
        argv.append(flag)
        values = flags[flag]
        if values or rng.random() < 0.1:
            argv.append(rng.choice(GARBAGE) if (not values or rng.random() < 0.2) else rng.choice(values))
    if rng.random() < 0.05:
        argv.insert(rng.randrange(1, len(argv) + 1), rng.choice(GARBAGE))
    if "TARGET" in argv and "--only" not in argv and "--max-examples" not in argv:
        argv += TARGET_LIMITS
    if command == "golden" and "--random" not in argv:  # its default: 200 problems per implementation
        argv += ["--random", "0"]
    if command == "golden":  # a huge count is honoured (it runs for ages), not an edge: keep the run short
        argv = ["3" if word == HUGE and argv[i - 1] == "--random" else word for i, word in enumerate(argv)]
    return [TARGET if word == "TARGET" else files.get(word, word) for word in argv]


def make_files(folder: str) -> Dict[str, str]:
    """The files the vectors name: two small runs, garbage, a folder, a missing path."""
    rng = np.random.default_rng(0)
    files = {}
    for key in ("run", "run2"):
        path = os.path.join(folder, f"{key}.npz")
        np.savez(path, distances=rng.random((4, 6)), query_labels=np.arange(4) % 2, db_labels=np.arange(6) % 2)
        files["FILE:" + key] = path
    trec, qrels = os.path.join(folder, "run.trec"), os.path.join(folder, "qrels.txt")
    with open(trec, "w", encoding="utf-8") as f:
        f.write("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d1 1 0.5 t\n")
    with open(qrels, "w", encoding="utf-8") as f:
        f.write("q1 0 d2 1\nq2 0 d3 2\n")
    files.update({"FILE:trec": trec, "FILE:qrels": qrels})
    garbage = os.path.join(folder, "garbage.npz")
    with open(garbage, "wb") as f:
        f.write(b"PK\x03\x04 not a zip \xff\xfe")
    files.update(
        {
            "FILE:garbage": garbage,
            "FILE:dir": folder,
            "FILE:missing": os.path.join(folder, "missing"),
            "FILE:out.xml": os.path.join(folder, "out.xml"),
            "FILE:out.md": os.path.join(folder, "out.md"),
            "FILE:out.json": os.path.join(folder, "out.json"),
        }
    )
    return files


def run_argv(argv: List[str], seconds: float = 120.0) -> Optional[Finding]:
    """Run ``retrieval-conformance ARGV`` in this process; the finding, or None when it ended as documented."""
    from retrieval_conformance.cli import main

    out, err = io.StringIO(), io.StringIO()

    def expire(signum, frame):
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(argv))
            except SystemExit as exc:  # argparse's exits, as the console script would see them
                status = 0 if exc.code is None else exc.code
    except _Timeout:
        return Finding(argv, None, f"still running after {seconds:g} s")
    except BaseException:  # noqa: BLE001 - an escaped exception is exactly what is looked for
        return Finding(argv, None, traceback.format_exc(limit=6)[-1500:])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    text = err.getvalue()
    lines = text.strip().splitlines()
    if status not in EXIT_STATUSES:
        return Finding(argv, status, f"undocumented exit status; stderr {text[-400:]!r}")
    if "Traceback (most recent call last)" in text:
        return Finding(argv, status, f"a traceback on stderr: {text[-800:]!r}")
    if status == EXIT_USAGE and not (lines and lines[-1].startswith("error:")):
        return Finding(argv, status, f"status 2 without a last line 'error: ...'; stderr {text[-400:]!r}")
    return None


def run_cli_campaign(
    cases: int, seed: int = 0, seconds: float = 120.0, progress: Optional[Callable[[int, int], None]] = None
) -> List[Finding]:
    """``cases`` vectors drawn from ``seed``; every finding."""
    rng = random.Random(seed)
    findings = []
    with tempfile.TemporaryDirectory() as folder:
        files = make_files(folder)
        for i in range(cases):
            finding = run_argv(draw_argv(rng, files), seconds)
            if finding is not None:
                findings.append(finding)
            if progress is not None:
                progress(i + 1, cases)
    return findings
