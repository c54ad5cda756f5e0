"""The fuzz campaign for ``retrieval-conformance evaluate`` argument vectors.

A case (:func:`draw_argv_case`) is an argument vector built from the drawer's choices: an input
(arrays in an ``.npz`` or ``.npy`` files, a TREC run and qrels, a search ``.npz``, a missing or
hostile file, or none) and a handful of options with valid, garbage or contradictory values.

What a correct command does (:func:`classify_argv_case`):

* it exits 0 with output, or 2 with exactly one line on stderr that starts with ``error: ``;
  argparse's own usage errors (exit 2, ``usage:`` then ``error:``) count as named; any other
  exit status or an exception escaping ``main`` is an ``unnamed_error``;
* ``--json`` output parses with a strict JSON parser (no ``NaN``).

Run with ``python -m retrieval_conformance.conformance.fuzz --target evaluate-argv --cases N``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import warnings
from dataclasses import dataclass
from typing import List

import numpy as np

from .classify import Outcome

__all__ = ["ArgvCase", "classify_argv_case", "draw_argv_case"]

_VALUES = {
    "--protocol": ("hashing", "reid", "trec", "nope", ""),
    "--ties": ("stable", "optimistic", "expected", "grouped", "x"),
    "--ap-rule": ("standard", "interpolated", "x"),
    "--ap-at-k": ("min_r_k", "hits", "x"),
    "--empty": ("zero", "skip", "nan", "error", "x"),
    "--radius": ("1.5", "-1", "nan", "x"),
    "--gain": ("linear", "exponential", "x"),
    "--recall": ("fraction", "hit", "x"),
    "--discount": ("log2", "trec", "x"),
    "--device": ("cpu", "cuda:7", "x"),
    "--k": ("1", "5", "1,5,10", "all", "0", "-1", "x", "1,,2", "99999999999999999999"),
    "--max-rank": ("1", "50", "0", "-3", "x"),
    "--max-array-bytes": ("0", "10", "1000000", "-1"),
    "--implementation": ("auto", "reference", "numpy", "c", "nmupy"),
    "--relevance-level": ("1", "2", "0", "-1", "x"),
    "--float-grades": ("exact", "truncate", "refuse", "x"),
    "--search-metric": ("l2", "inner_product", "cosine"),
    "--per-query": ("text", "json", "csv", "xml"),
}
_FLAGS = ("--json", "--quiet", "--progress", "--complete")


@dataclass
class ArgvCase:
    argv: List[str]  # with {dir} where the case's folder goes
    change: str = "argv"


def draw_argv_case(d) -> ArgvCase:
    """An argument vector: an input, then 0 to 4 options."""
    source = d.choice(("npz", "npy", "run", "search", "missing", "fifo", "none", "run-only", "no-relevant"))
    argv = ["evaluate"]
    if source == "npz":
        argv += ["--npz", "{dir}/arrays.npz"]
    elif source == "npy":
        argv += ["--distances", "{dir}/distances.npy", "--relevance", "{dir}/relevance.npy"]
    elif source in ("run", "run-only"):
        argv += ["--run", "{dir}/a.run"] + (["--qrels", "{dir}/a.qrels"] if source == "run" else [])
    elif source == "no-relevant":  # every mean NaN under --empty nan: what --json must still print as JSON
        argv += ["--npz", "{dir}/no_relevant.npz", "--empty", d.choice(("nan", "zero", "skip"))]
    elif source == "search":
        argv += ["--search", "{dir}/search.npz"]
    elif source == "missing":
        argv += ["--npz", "{dir}/missing.npz"]
    elif source == "fifo":
        argv += [d.choice(("--npz", "--run", "--qrels", "--query-ids")), "{dir}/fifo"]
    for _ in range(d.integer(0, 4)):
        if d.chance(0.15):
            argv += d.choice((["--json"], ["--per-query", "json"]))
        elif d.chance(0.25):
            argv.append(d.choice(_FLAGS))
        elif d.chance(0.1):
            argv += ["--query-ids", d.choice(("{dir}/ids.txt", "{dir}/fifo", "/dev/zero", "{dir}/bad.txt"))]
        else:
            option = d.choice(sorted(_VALUES))
            argv += [option, d.choice(_VALUES[option])]
    return ArgvCase(argv, change=source)


def _files(folder: str) -> None:
    np.savez(
        os.path.join(folder, "arrays.npz"),
        distances=np.array([[0.1, 0.2, 0.3], [0.3, 0.1, 0.2]]),
        relevance=np.array([[0, 1, 1], [0, 0, 0]]),
    )
    np.savez(os.path.join(folder, "no_relevant.npz"), distances=np.array([[0.1, 0.2]]), relevance=np.array([[0, 0]]))
    np.save(os.path.join(folder, "distances.npy"), np.array([[0.1, 0.1, 0.3]]))
    np.save(os.path.join(folder, "relevance.npy"), np.array([[1, 0, 1]]))
    np.savez(
        os.path.join(folder, "search.npz"),
        D=np.array([[0.1, 0.2]]),
        I=np.array([[1, 0]]),
        query_labels=np.array([3]),
        db_labels=np.array([3, 4]),
    )
    with open(os.path.join(folder, "a.run"), "w") as fh:
        fh.write("q1 Q0 d1 1 0.9 t\nq1 Q0 d2 2 0.5 t\nq2 Q0 d9 1 1.0 t\n")
    with open(os.path.join(folder, "a.qrels"), "w") as fh:
        fh.write("q1 0 d2 1\nq1 0 d1 0.5\nq2 0 d9 1\n")  # 0.5: read by --float-grades
    with open(os.path.join(folder, "ids.txt"), "w") as fh:
        fh.write("a\nb\n")
    with open(os.path.join(folder, "bad.txt"), "wb") as fh:
        fh.write(b"\xff\xfe\n")
    os.mkfifo(os.path.join(folder, "fifo"))


def classify_argv_case(case: ArgvCase) -> Outcome:
    """Run ``evaluate`` with the case's arguments in this process and classify its exit (module doc)."""
    from retrieval_conformance.cli import main

    with tempfile.TemporaryDirectory(prefix="rc-fuzz-argv-") as folder:
        _files(folder)
        argv = [a.replace("{dir}", folder) for a in case.argv]
        out, err = io.StringIO(), io.StringIO()
        try:
            # warnings are the API's documented ones (no query counted, low precision): kept off stderr
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings(record=True):
                status = main(argv)
        except SystemExit as exc:  # argparse: a usage error
            status = exc.code
            if status == 2 and "error:" in err.getvalue():
                return Outcome("named_error")
            return Outcome("unnamed_error", f"SystemExit {status}: {err.getvalue()[-300:]}")
        except Exception as exc:
            return Outcome("unnamed_error", f"{type(exc).__name__}: {str(exc)[:300]} for {argv}")
    stderr = err.getvalue()
    if status == 2:
        lines = [line for line in stderr.splitlines() if line.strip()]
        if len(lines) == 1 and lines[0].startswith("error: "):
            return Outcome("named_error")
        return Outcome("unnamed_error", f"exit 2 with stderr {stderr[-300:]!r} for {argv}")
    if status != 0:
        return Outcome("unnamed_error", f"exit status {status!r}: {stderr[-300:]!r} for {argv}")
    if not out.getvalue():
        return Outcome("unnamed_error", f"exit 0 without output for {argv}")
    if "--json" in argv or ("--per-query" in argv and argv[argv.index("--per-query") + 1 :][:1] == ["json"]):

        def refuse(constant):
            raise ValueError(constant)

        try:
            json.loads(out.getvalue(), parse_constant=refuse)
        except ValueError as exc:
            return Outcome("unnamed_error", f"--json output is not strict JSON ({exc}) for {argv}")
    return Outcome("value")
