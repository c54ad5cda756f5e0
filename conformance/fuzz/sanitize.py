"""Run the cross-implementation and fuzz tests against the C library built with ASan + UBSan.

    python -m retrieval_conformance.conformance.fuzz.sanitize [--quick] [--threads 1,2,7] [pytest args...]

Steps (``tox -e sanitize`` runs the ``--quick`` version):

1. Build the C units ``csrc/*.c`` (shipped as package data with their header ``csrc/rc_core.h``)
   with ``-fsanitize=address,undefined -fno-sanitize-recover=all`` into a temporary folder, and
   check that the result calls the ASan and UBSan runtimes (:mod:`.sanitized_library`).
2. Prove the sanitizers are live: a canary library (written here) reads one element past a
   heap block, another overflows a signed int; each is called in a child process under the
   same environment as the tests, and each must be killed with its sanitizer's report.  If
   either survives: ``sanitizer not active: ...`` and exit 3.
3. Run pytest in a child process with ``LD_PRELOAD=<libasan>`` (ASan's runtime must be the
   first library of the process), ``RC_C_LIBRARY=<the sanitized library>``,
   ``RC_REQUIRE=c,numpy`` (a C library that does not load fails the tests instead of
   skipping them) and ``RC_SANITIZED=1``, once per thread count (``RC_NUM_THREADS``).

Tests: ``test_sanitizer_setup`` (the C backend really loaded the sanitized library),
``test_cross_implementation``, ``test_c_backend*``, ``test_c_codes_avx512`` (the AVX-512 pass
of codes, where the CPU has it), ``test_c_codes_avx2`` (the AVX2 pass, AVX-512 masked off),
``test_c_float_paths`` (the prefix path of
cut-offs, scores read in C), ``test_c_float_place`` (the AVX2 pass of whole float32 rows),
``test_c_float_thresh`` (its threshold pass, few distinct relevant distances),
``test_hardening``, ``test_streaming``, ``test_curves_fast`` (the
curves of codes), ``test_metrics_subset`` (the values skipped by ``metrics=``) and
``test_fuzz`` when it exists (its campaign's worker processes inherit the environment, so
they run the sanitized library too), and the fuzz targets whose cases reach C: ``test_fuzz_curves``
(every curve kind through ``c``) and ``test_fuzz_dtypes_and_ranks`` (Accumulator blocks and
search results; the distributed ranks where gloo is installed).  Tests parametrized over implementations keep only ``c``
(the numpy, torch and reference variants never call the C code), and ``DESELECT`` below is
left out.  torch is not needed: the tox env does not install it and its tests skip; where it
is installed it works under ASan, only slower (the fuzz tests also run it).  ``--quick`` (the CI
version, a few minutes on two cores): ``HYPOTHESIS_PROFILE=ci`` unless set, every test at 7
threads (more threads than cores: per-thread workspaces are exercised), and ``test_c_backend``
plus ``test_fuzz`` at 1 and 2 threads.  Without ``--quick``: every test at every thread count.
Extra arguments go to every pytest run (e.g. ``-k expected -x``).

ASan writes its reports to files (``log_path``), so a report from a forked child or from a
subprocess whose stderr a test captures is not lost; they are printed at the end.  UBSan
ignores ``log_path`` next to ASan: its reports are found in pytest's stderr (copied through;
pytest runs with ``--capture=sys`` so that they reach it).
Exit status: 0 clean; 1 test failures or sanitizer findings; 2 the library cannot be built
here (no compiler, or no ``libasan``); 3 the sanitizers are not active.
"""

from __future__ import annotations

import argparse
import importlib.resources
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence, Tuple

from .sanitized_library import (
    NotActive,
    SetupError,
    asan_runtime,
    build,
    check_canaries,
    compiler,
    sanitizer_env,
    show_reports,
    source_paths,
    take_reports,
)

PACKAGE = "retrieval_conformance.conformance.tests"
PLUGIN = "retrieval_conformance.conformance.fuzz.sanitize"  # this module, loaded by pytest with -p
TEST_MODULES = (
    "test_sanitizer_setup",
    "test_cross_implementation",
    "test_c_backend",
    "test_c_backend_numerics",
    "test_c_backend_threads",
    "test_c_backend_inputs",
    "test_c_codes_avx512",
    "test_c_codes_avx2",
    "test_c_float_paths",
    "test_c_float_place",
    "test_c_float_thresh",
    "test_hardening",
    "test_streaming",
    "test_curves_fast",
    "test_metrics_subset",
    "test_fuzz",
    "test_fuzz_curves",
    "test_fuzz_dtypes_and_ranks",
)
#: modules run at the other thread counts under --quick
QUICK_THREAD_MODULES = (
    "test_c_backend",
    "test_c_backend_numerics",
    "test_c_backend_threads",
    "test_c_backend_inputs",
    "test_fuzz",
)
THREADS = (7, 1, 2)
#: tests left out of the sanitizer run: the campaign's self-test runs only reference and numpy (never
#: the C code) and waits out a 20 s hang
DESELECT = {"test_the_campaign_reports_crashes_hangs_and_its_own_failures"}

#: lines of a sanitizer report on stderr
REPORT_MARKERS = (
    "ERROR: AddressSanitizer",
    "runtime error:",
    "SUMMARY: AddressSanitizer",
    "SUMMARY: UndefinedBehaviorSanitizer",
)


# -- pytest plugin (loaded with -p in the child process) -----------------------------------------
def pytest_configure(config):
    """Under RC_SANITIZED=1: load the suite's hypothesis profile (HYPOTHESIS_PROFILE, or ci/dev:
    no deadline) before any test runs; a run of modules that do not import ``strategies``
    themselves would otherwise keep hypothesis's 200 ms deadline, which ASan's slowdown exceeds."""
    if os.environ.get("RC_SANITIZED") == "1":
        import retrieval_conformance.conformance.support.strategies  # noqa: F401  (registers and loads the profile)


def pytest_collection_modifyitems(config, items):
    """Under RC_SANITIZED=1: drop the tests that never call the C code, and DESELECT."""
    if os.environ.get("RC_SANITIZED") != "1":
        return
    from retrieval_conformance.reference.contract import registry

    others = set(registry.names()) - {"c"}
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        name = getattr(item, "originalname", None) or item.name.split("[")[0]
        if name in DESELECT or params.get("name") in others:
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_runtest_logstart(nodeid, location):
    """Record the running test: a sanitizer ends the process without a pytest report."""
    path = os.environ.get("RC_SANITIZE_CURRENT")
    if path and os.environ.get("RC_SANITIZED") == "1":
        with open(path, "w") as f:
            f.write(nodeid)


# -- test runs -----------------------------------------------------------------------------------
def existing_modules(names: Sequence[str]) -> List[str]:
    out = []
    for name in names:
        module = f"{PACKAGE}.{name}"
        if importlib.util.find_spec(module) is not None:
            out.append(module)
    return out


def plan(quick: bool, threads: Sequence[int]) -> List[Tuple[int, List[str]]]:
    """(thread count, test modules) of each pytest run."""
    every = existing_modules(TEST_MODULES)
    if not quick:
        return [(t, every) for t in threads]
    runs = [(threads[0], every)]
    subset = existing_modules(QUICK_THREAD_MODULES)
    return runs + [(t, subset) for t in threads[1:]]


def run_pytest(cmd: List[str], env: Dict[str, str]) -> Tuple[int, List[str]]:
    """Run ``cmd``; its stderr is copied to ours as it comes, and the sanitizer lines in it kept."""
    found = []
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True, errors="replace", bufsize=1)
    assert proc.stderr is not None
    for line in proc.stderr:
        sys.stderr.write(line)
        sys.stderr.flush()
        if any(marker in line for marker in REPORT_MARKERS):
            found.append(line.rstrip())
    return proc.wait(), found


def run_tests(env: Dict[str, str], reports: str, runs, extra: Sequence[str]) -> int:
    for threads, modules in runs:
        run_env = dict(env, RC_NUM_THREADS=str(threads))
        # --capture=sys: pytest's default fd capture would swallow a UBSan report written to fd 2
        # when the process aborts; with sys capture it reaches run_pytest
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            PLUGIN,
            "-p",
            "no:cacheprovider",
            "--capture=sys",
            "--pyargs",
            *modules,
            *extra,
        ]
        short = " ".join(m.rsplit(".", 1)[1] for m in modules)
        print(f"\n== RC_NUM_THREADS={threads}: pytest {short} {' '.join(extra)}", flush=True)
        start = time.monotonic()
        returncode, on_stderr = run_pytest(cmd, run_env)
        in_files = take_reports(reports)
        took = time.monotonic() - start
        if in_files or on_stderr:
            show_reports(in_files)
            current = env.get("RC_SANITIZE_CURRENT")
            test = "?"
            if current and os.path.exists(current):
                with open(current) as f:
                    test = f.read().strip()
            where = [f"{len(in_files)} report file(s) printed above"] if in_files else []
            if on_stderr:
                where.append("these lines in the output above:\n" + "\n".join(f"  {line}" for line in on_stderr))
            print(
                f"\nsanitize: sanitizer finding at RC_NUM_THREADS={threads} during {test} (pytest exit "
                f"{returncode}, {took:.0f}s): {'; '.join(where)}\nFor the input of a hypothesis test, rerun it "
                "alone with -s --hypothesis-verbosity=verbose: the last 'Test case' printed is the one.",
                file=sys.stderr,
            )
            return 1
        if returncode != 0:
            why = f"killed by signal {-returncode}" if returncode < 0 else f"exit {returncode}"
            print(f"\nsanitize: pytest failed at RC_NUM_THREADS={threads} ({why}, {took:.0f}s)", file=sys.stderr)
            return 1
        print(f"== RC_NUM_THREADS={threads}: clean ({took:.0f}s)", flush=True)
    return 0


def parse_threads(text: str) -> List[int]:
    try:
        values = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        values = []
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got {text!r}")
    return values


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m retrieval_conformance.conformance.fuzz.sanitize",
        description="Build the C library with ASan+UBSan and run the cross-implementation and fuzz tests "
        "against it. Unknown arguments go to pytest.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the short CI version: every test at the first thread count, test_c_backend and "
        "test_fuzz at the others, HYPOTHESIS_PROFILE=ci unless set",
    )
    parser.add_argument(
        "--threads",
        type=parse_threads,
        default=list(THREADS),
        help="RC_NUM_THREADS of each run, comma-separated (default 7,1,2)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the build folder (its path is printed)")
    ns, extra = parser.parse_known_args(argv)

    started = time.monotonic()
    folder = tempfile.mkdtemp(prefix="rc-sanitize-")
    try:
        reports = os.path.join(folder, "reports")
        os.mkdir(reports)
        try:
            cc = compiler()
            libasan = asan_runtime(cc)
            library = os.path.join(folder, "_rc_core_sanitized.so")
            sources, include = source_paths(folder)
            units = ", ".join(os.path.basename(s) for s in sources)
            print(
                f"sanitize: building {include}/{{{units}}} with {os.path.basename(cc)} -fsanitize=address,undefined",
                flush=True,
            )
            build(cc, sources, library, [include])
            env = sanitizer_env(libasan, library, reports)
            if ns.quick:
                env.setdefault("HYPOTHESIS_PROFILE", "ci")
            check_canaries(cc, folder, env, reports)
        except SetupError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except NotActive as exc:
            print(f"sanitizer not active: {exc}", file=sys.stderr)
            return 3
        print(
            f"sanitize: canaries caught (ASan heap-buffer-overflow, UBSan signed overflow); "
            f"LD_PRELOAD={libasan} RC_C_LIBRARY={library}",
            flush=True,
        )
        status = run_tests(env, reports, plan(ns.quick, ns.threads), extra)
        print(f"\nsanitize: {'clean' if status == 0 else 'FAILED'} in {time.monotonic() - started:.0f}s", flush=True)
        return status
    finally:
        if ns.keep:
            print(f"sanitize: build folder kept at {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
