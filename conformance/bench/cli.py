"""The benchmark command: run the benchmarks (with the regression gate), summarise, plot history.

::

    retrieval-conformance bench run [--gate ratio|median|none] [--floor 0.10] [--noise-k 3] [--depth 5]
                                    [--compare-fail median:10%] [--save pass|always|never]
                                    [--storage .benchmarks] [--json OUT] [--no-memory] [-k EXPR]
    retrieval-conformance bench report [RUN.json ...]      # default: the latest saved run
    retrieval-conformance bench features [--scale full|smoke] [--section NAME ...] [--save always|never]
                                         [--storage .benchmarks] [--json OUT]
    retrieval-conformance bench report --features [RUN.json] [--markdown FILE]   # the feature page
    retrieval-conformance bench gate [RUN.json] [--save]   # the ratio gate on a run of your own tests
    retrieval-conformance bench plot [--out bench-history.png]

(also ``python -m retrieval_conformance.conformance.bench.cli ...``).

``run``: :mod:`.gate` (the ratio gate: :mod:`.anchor`, :mod:`.ratio`); ``report``:
:func:`.report.format_report`; ``features`` and ``report --features``: :mod:`.features`; ``plot``:
:func:`.report.plot_history`; the saved runs: :mod:`.runs`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Optional, Sequence

from retrieval_conformance.conformance.bench import ratio
from retrieval_conformance.conformance.bench.features.page import feature_page
from retrieval_conformance.conformance.bench.features.registry import (
    SCALES,
    run_features,
    section_names,
    select_sections,
)
from retrieval_conformance.conformance.bench.gate import gated_run
from retrieval_conformance.conformance.bench.report import format_report, markdown_page, plot_history
from retrieval_conformance.conformance.bench.runs import (
    FEATURE_FOLDER,
    load_feature_run,
    load_run,
    machine_id,
    save_feature_run,
    save_run,
    saved_feature_runs,
    saved_runs,
)
from retrieval_conformance.reference.contract.command_line import (
    CommandParser,
    exit_with,
    non_negative_number,
    positive_int,
)
from retrieval_conformance.reference.contract.install_hints import install_hint


def _parser() -> argparse.ArgumentParser:
    p = CommandParser(
        allow_abbrev=False,
        prog="retrieval-conformance bench",
        description="Speed benchmarks at dataset scale, their summary and history.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the benchmarks (pytest-benchmark) with the regression gate")
    run.add_argument("--storage", default=".benchmarks", help="saved runs folder (default .benchmarks)")
    run.add_argument(
        "--gate",
        choices=("ratio", "median", "none"),
        default=None,
        help="ratio (default): the candidate/anchor time ratio against the saved history, with a "
        "threshold from the measured noise; median: pytest-benchmark's median comparison with "
        "the last saved run (--compare-fail); none: no gate",
    )
    run.add_argument(
        "--floor",
        type=non_negative_number,
        default=ratio.FLOOR,
        help="ratio gate: the smallest slowdown that can fail (default %(default)s = 10%%)",
    )
    run.add_argument(
        "--noise-k",
        type=non_negative_number,
        default=ratio.K_NOISE,
        help="ratio gate: fail above this many times the measured noise (default %(default)s)",
    )
    run.add_argument(
        "--depth",
        type=positive_int,
        default=ratio.DEPTH,
        help="ratio gate: saved runs whose median ratio is the reference (default %(default)s)",
    )
    run.add_argument(
        "--compare-fail",
        default=None,
        metavar="EXPR",
        help="median gate: pytest-benchmark --benchmark-compare-fail expression against the last "
        "saved run (default median:10%%); given alone it selects the median gate, 'none' "
        "switches the gate off",
    )
    run.add_argument(
        "--save",
        choices=("pass", "always", "never"),
        default="pass",
        help="save the run into the storage: only when it passed (default), always, never",
    )
    run.add_argument("--json", help="also write the run's JSON here")
    run.add_argument("--no-memory", action="store_true", help="skip the peak-memory child processes")
    run.add_argument("-k", dest="select", help="pytest -k expression (e.g. 'market1501')")
    run.add_argument("pytest_args", nargs="*", help="further pytest arguments (after --)")
    gate = sub.add_parser(
        "gate",
        help="the ratio gate on one run (a --benchmark-json file, default the latest "
        "saved run) against the saved runs before it",
    )
    gate.add_argument("path", nargs="?", help="pytest-benchmark JSON file (default: the latest saved run)")
    gate.add_argument("--storage", default=".benchmarks")
    gate.add_argument("--floor", type=non_negative_number, default=ratio.FLOOR)
    gate.add_argument("--noise-k", type=non_negative_number, default=ratio.K_NOISE)
    gate.add_argument("--depth", type=positive_int, default=ratio.DEPTH)
    gate.add_argument(
        "--save",
        action="store_true",
        help="save the run (a JSON file given) into the storage when it passed, as the next run's history",
    )
    rep = sub.add_parser("report", help="summarise a run: median, ratios to the baselines, peak memory")
    rep.add_argument("paths", nargs="*", help="pytest-benchmark JSON files (default: the latest saved run)")
    rep.add_argument("--storage", default=".benchmarks")
    rep.add_argument(
        "--markdown", metavar="FILE", help="write the report as a Markdown page (for the docs) instead of printing it"
    )
    rep.add_argument(
        "--features",
        action="store_true",
        help="report a run of bench features (a JSON file given, default the latest saved one): the "
        "feature page, each figure next to its target",
    )
    feat = sub.add_parser(
        "features",
        help="the feature benchmarks in one run (each section's figures, the load "
        "average, the machine), saved for bench report --features",
    )
    feat.add_argument(
        "--scale",
        choices=SCALES,
        default="full",
        help="full (default): the dataset sizes; smoke: small inputs that check the machinery",
    )
    feat.add_argument(
        "--section",
        action="append",
        choices=section_names(),
        metavar="NAME",
        dest="sections",
        help=f"run only this section (repeat for more; default all): {', '.join(section_names())}",
    )
    feat.add_argument("--storage", default=".benchmarks", help="saved runs folder (default .benchmarks)")
    feat.add_argument(
        "--save",
        choices=("always", "never"),
        default="always",
        help="save the run into the storage's features folder (default always: a failed section is part of the record)",
    )
    feat.add_argument("--json", help="also write the run's JSON here")
    plot = sub.add_parser("plot", help="plot the history of the saved runs (needs matplotlib: the 'plot' extra)")
    plot.add_argument("--storage", default=".benchmarks")
    plot.add_argument("--out", default="bench-history.png")
    for subparser in sub.choices.values():  # a flag is taken by its own name, never by a prefix of it
        subparser.allow_abbrev = False
    return p


def _write(path: str, text: str, what: str) -> bool:
    """``text`` written to ``path``; False (and one error line) when it cannot be."""
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        print(
            f"error: {what} {path}: cannot write it ({exc.strerror or exc}); give a path in a writable folder",
            file=sys.stderr,
        )
        return False
    return True


def _cmd_features(args) -> int:
    """``bench features``: every section (or those named) in one run, saved; 1 when a section failed."""
    folder = os.path.dirname(os.path.abspath(args.json)) if args.json else None
    if folder and not (os.path.isdir(folder) and os.access(folder, os.W_OK)):
        print(
            f"error: --json {args.json}: the folder {folder} does not exist or is not writable; nothing was run",
            file=sys.stderr,
        )
        return 2
    run = run_features(
        args.scale, select_sections(args.sections), progress=lambda line: print(line, file=sys.stderr, flush=True)
    )
    print(feature_page(run))
    status = 1 if any(s["status"] == "failed" for s in run["sections"]) else 0
    if args.save == "always":
        try:
            path = save_feature_run(args.storage, run)
        except OSError as exc:
            print(
                f"error: --storage {args.storage}: cannot save the run there ({exc.strerror or exc})", file=sys.stderr
            )
            return status or 2
        print(
            f"saved as {path}; write the page with: retrieval-conformance bench report --features --markdown FILE",
            file=sys.stderr,
        )
    if args.json and not _write(args.json, json.dumps(run, indent=2), "--json"):
        return status or 2
    return status


def _report_features(args) -> int:
    """``bench report --features``: the page of one feature run."""
    if len(args.paths) > 1:
        print(f"error: bench report --features: give one feature run, got {len(args.paths)} files", file=sys.stderr)
        return 2
    path = args.paths[0] if args.paths else (saved_feature_runs(args.storage)[-1:] or [None])[0]
    if path is None:
        print(
            f"error: no feature run to report: give a file saved by bench features (--json), or save runs in "
            f"{os.path.join(args.storage, machine_id(), FEATURE_FOLDER)} (retrieval-conformance bench features)",
            file=sys.stderr,
        )
        return 2
    try:
        page = feature_page(load_feature_run(path))
    except (OSError, ValueError) as exc:
        print(f"error: {path}: cannot read it as a feature run ({exc})", file=sys.stderr)
        return 2
    if args.markdown:
        if not _write(args.markdown, page, "--markdown"):
            return 2
        print(f"wrote {args.markdown}", file=sys.stderr)
    else:
        print(page, end="")
    return 0


def _cmd_report(args) -> int:
    if args.features:
        return _report_features(args)
    paths = args.paths or saved_runs(args.storage)[-1:]
    if not paths:
        print(
            f"error: no run to report: give a pytest-benchmark JSON file, or save runs in {args.storage} "
            "(retrieval-conformance bench run)",
            file=sys.stderr,
        )
        return 2
    runs = []
    for path in paths:
        try:
            runs.append((os.path.basename(str(path)), load_run(path)))
        except (OSError, ValueError) as exc:
            print(f"error: {path}: cannot read it as a pytest-benchmark JSON file ({exc})", file=sys.stderr)
            return 2
    if args.markdown:
        if not _write(args.markdown, markdown_page(runs), "--markdown"):
            return 2
        print(f"wrote {args.markdown}", file=sys.stderr)
        return 0
    for i, (path, data) in enumerate(zip(paths, (d for _, d in runs))):
        if i:
            print()
        print(f"== {path}")
        print(format_report(data))
    return 0


def _cmd_gate(args) -> int:
    """``bench gate``: exit 1 when a benchmark's ratio to the anchor grew beyond the threshold."""
    saved = saved_runs(args.storage)
    path = args.path or (saved[-1] if saved else None)
    if path is None:
        print(
            f"error: no run to gate: give a pytest-benchmark JSON file, or save runs in {args.storage}", file=sys.stderr
        )
        return 2
    # the saved runs other than the one judged (the latest saved run is judged against those before it)
    history = [p for p in saved if os.path.abspath(p) != os.path.abspath(path)]
    try:
        run = load_run(path)
        previous = [load_run(p) for p in history]
    except (OSError, ValueError) as exc:
        print(f"error: cannot read a run as a pytest-benchmark JSON file ({exc})", file=sys.stderr)
        return 2
    verdicts = ratio.ratio_gate(run, previous, args.floor, args.noise_k, args.depth)
    print(ratio.format_verdicts(verdicts, run, args.floor, args.noise_k))
    if any(v.status == "FAIL" for v in verdicts):
        return 1
    if args.save and args.path:
        print(f"saved as {save_run(args.storage, run)}")
    return 0


def _cmd_plot(args) -> int:
    paths = saved_runs(args.storage)
    if not paths:
        print(
            f"error: no saved runs in {os.path.join(args.storage, machine_id())}: nothing to plot; "
            "save runs with retrieval-conformance bench run",
            file=sys.stderr,
        )
        return 2
    try:
        out = plot_history(paths, args.out)
    except ImportError:
        print(
            "error: bench plot needs matplotlib, which is not installed; install the optional extra: "
            + install_hint("plot"),
            file=sys.stderr,
        )
        return 2
    print(f"wrote {out} ({len(paths)} saved runs)")
    return 0


def bench_main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``retrieval-conformance bench``; returns the exit status."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    commands = {
        "run": gated_run,
        "report": _cmd_report,
        "plot": _cmd_plot,
        "gate": _cmd_gate,
        "features": _cmd_features,
    }
    return commands[args.command](args)


if __name__ == "__main__":  # pragma: no cover
    exit_with(bench_main)
