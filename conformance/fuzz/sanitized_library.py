"""The C library built with ASan + UBSan for :mod:`.sanitize`, and the proof that the sanitizers are live.

The C units of the package are compiled with the sanitizers into a temporary folder; two canary
functions (a heap read one past the end, a signed overflow) must each end their process with
their sanitizer's report under the environment the tests run in, or the run stops.
"""

from __future__ import annotations

import importlib.resources
import os
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Sequence, Tuple

SANITIZE_FLAGS = [
    "-shared",
    "-fPIC",
    "-O1",
    "-g",
    "-fno-omit-frame-pointer",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
    "-std=c99",
    "-fopenmp",
]


# python leaks at exit by design: no leak checking; the first report ends the process
ASAN_OPTIONS = "detect_leaks=0:abort_on_error=1:halt_on_error=1"


UBSAN_OPTIONS = "halt_on_error=1:abort_on_error=1:print_stacktrace=1"


CANARY_SOURCE = r"""
#include <limits.h>
#include <stdlib.h>

/* reads a[n], one element past a heap block of n ints */
int rc_canary_heap_overflow(int n)
{
    volatile int *a = malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) a[i] = i;
    int v = a[n];
    free((void *)a);
    return v;
}

/* x + 1 overflows for x = INT_MAX */
int rc_canary_signed_overflow(int x)
{
    volatile int y = x;
    return y + 1;
}

int rc_canary_ok(int x) { return x + 1; }
"""


# each canary: (function, argument, text its report must contain)
CANARIES = (
    ("rc_canary_heap_overflow", "8", "AddressSanitizer: heap-buffer-overflow"),
    ("rc_canary_signed_overflow", "2147483647", "runtime error: signed integer overflow"),
)


class SetupError(Exception):
    """The sanitized library cannot be built here (exit 2)."""


class NotActive(Exception):
    """The sanitizers do not catch the canaries (exit 3)."""


# -- build ---------------------------------------------------------------------------------------
def compiler() -> str:
    cc = (os.environ.get("CC") or "gcc").split()[0]
    path = shutil.which(cc)
    if path is None:
        raise SetupError(f"no C compiler: {cc!r} is not on PATH (set CC, or install gcc)")
    return path


def asan_runtime(cc: str) -> str:
    """The path of the ASan runtime the compiler links against (for LD_PRELOAD)."""
    res = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True)
    path = res.stdout.strip()
    if res.returncode != 0 or not os.path.isabs(path) or not os.path.exists(path):
        raise SetupError(
            f"no libasan for {cc} ({cc} -print-file-name=libasan.so gave {path!r}); "
            "install the compiler's sanitizer runtime (e.g. libasan8 for gcc 12)"
        )
    return os.path.realpath(path)


#: the C sources in the package: units ``*.c`` and their header, one folder
CSRC = "csrc"


def source_paths(folder: str) -> Tuple[List[str], str]:
    """The C units (sorted) as shipped in the package and the folder of their header (the
    include path); copied to ``folder/csrc`` if the package folder is not plain files."""
    resource = importlib.resources.files("retrieval_conformance.implementations") / CSRC
    names = sorted(r.name for r in resource.iterdir() if r.is_file()) if resource.is_dir() else []
    if not any(n.endswith(".c") for n in names) or not any(n.endswith(".h") for n in names):
        raise SetupError(
            f"the C sources retrieval_conformance/implementations/{CSRC}/*.c and *.h are not "
            "installed (package data missing)"
        )
    include = str(resource)
    if not all(os.path.isfile(os.path.join(include, n)) for n in names):
        include = os.path.join(folder, CSRC)
        os.makedirs(include, exist_ok=True)
        for n in names:
            with open(os.path.join(include, n), "wb") as f:
                f.write((resource / n).read_bytes())
    return [os.path.join(include, n) for n in names if n.endswith(".c")], include


def build(cc: str, sources: Sequence[str], target: str, include_dirs: Sequence[str] = ()) -> None:
    cmd = [cc, *SANITIZE_FLAGS, *(f"-I{d}" for d in include_dirs), *sources, "-o", target]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise SetupError(f"building with the sanitizers failed:\n  {' '.join(cmd)}\n{res.stderr.strip()}")
    with open(target, "rb") as f:
        data = f.read()
    # the instrumentation calls these runtime entry points (names in the dynamic symbol table)
    missing = [sym for sym in ("__asan_init", "__ubsan_handle_") if sym.encode() not in data]
    if missing:
        raise NotActive(f"{target} was built without instrumentation (no {', '.join(missing)} symbols)")


# -- environment and reports -----------------------------------------------------------------
def sanitizer_env(libasan: str, library: str, reports: str, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ if base is None else base)
    preload = [p for p in env.get("LD_PRELOAD", "").split() if p]
    env["LD_PRELOAD"] = " ".join([libasan] + [p for p in preload if p != libasan])  # ASan first
    env["ASAN_OPTIONS"] = f"{ASAN_OPTIONS}:log_path={os.path.join(reports, 'asan')}"
    env["UBSAN_OPTIONS"] = UBSAN_OPTIONS  # (UBSan next to ASan ignores log_path: its reports go to stderr)
    env["RC_C_LIBRARY"] = library
    env["RC_REQUIRE"] = "c,numpy"
    env["RC_SANITIZED"] = "1"
    env["PYTHONUNBUFFERED"] = "1"  # what a test printed before a sanitizer ended the process is not lost
    env["RC_SANITIZE_CURRENT"] = os.path.join(os.path.dirname(reports), "current-test")
    return env


def take_reports(reports: str) -> List[Tuple[str, str]]:
    """(file, text) of every sanitizer report written so far; the files are removed."""
    out = []
    for name in sorted(os.listdir(reports)):
        path = os.path.join(reports, name)
        with open(path, errors="replace") as f:
            out.append((name, f.read()))
        os.remove(path)
    return out


def show_reports(found: Sequence[Tuple[str, str]]) -> None:
    for name, text in found:
        print(f"\n==== sanitizer report {name} ====\n{text.rstrip()}", file=sys.stderr)


# -- canaries ------------------------------------------------------------------------------------
def check_canaries(cc: str, folder: str, env: Dict[str, str], reports: str) -> None:
    """Raise NotActive unless each canary dies with its sanitizer's report under ``env``."""
    source = os.path.join(folder, "canary.c")
    with open(source, "w") as f:
        f.write(CANARY_SOURCE)
    lib = os.path.join(folder, "canary.so")
    build(cc, [source], lib)
    call = "import ctypes, sys; print(ctypes.CDLL(sys.argv[1])[sys.argv[2]](int(sys.argv[3])))"
    ok = subprocess.run(
        [sys.executable, "-c", call, lib, "rc_canary_ok", "1"], env=env, capture_output=True, text=True, timeout=120
    )
    take_reports(reports)
    if ok.returncode != 0 or ok.stdout.strip() != "2":
        raise NotActive(
            f"the canary library cannot even be called under the sanitizer environment "
            f"(exit {ok.returncode}):\n{ok.stderr.strip()}"
        )
    for func, arg, expected in CANARIES:
        res = subprocess.run(
            [sys.executable, "-c", call, lib, func, arg], env=env, capture_output=True, text=True, timeout=120
        )
        text = res.stderr + "".join(t for _, t in take_reports(reports))
        if res.returncode == 0 or expected not in text:
            raise NotActive(
                f"{func}({arg}) was not caught: exit {res.returncode}, no {expected!r} in its report "
                f"(LD_PRELOAD={env.get('LD_PRELOAD')!r})\n--- stderr ---\n{res.stderr.strip()}"
            )
