"""Build and run the suite's own ``compute_ap`` (``golden/tools/compute_ap.cpp``).

The compiler is ``$CXX`` if set, else the first of ``g++``, ``c++``, ``clang++`` on PATH;
the only flag is ``-O2``.  Binaries are cached under ``$RC_CACHE_DIR`` or the user cache
directory (``$XDG_CACHE_HOME`` or ``~/.cache``, ``retrieval-conformance/``; a temp
directory when that is not writable), keyed by a hash of the source, the compiler path and
its version, so a changed source or compiler rebuilds.

No compiler: :class:`CompilerUnavailable`, which the tests turn into a skip unless
``RC_REQUIRE_COMPUTE_AP=1`` (then they fail).  A compiler that fails on the source:
:class:`CompileError` (a real failure).

The command line and the Oxford golden values built with the program are in
:mod:`retrieval_conformance.golden.compute_ap_tool` (``python -m
retrieval_conformance.golden.compute_ap_tool build`` prints the binary's path).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

GOLDEN_PACKAGE = "retrieval_conformance.golden"
SOURCE_NAME = "compute_ap.cpp"
REQUIRE_ENV = "RC_REQUIRE_COMPUTE_AP"

__all__ = [
    "CompileError",
    "CompilerUnavailable",
    "Case",
    "build",
    "compiler_identity",
    "find_compiler",
    "golden_dir",
    "require_build",
    "run",
    "run_case",
    "run_cases",
    "source_path",
]


class CompilerUnavailable(RuntimeError):
    """No C++ compiler was found; the compute_ap golden checks cannot run."""


class CompileError(RuntimeError):
    """A compiler was found but did not build compute_ap.cpp (its stderr is in the message)."""


# --------------------------------------------------------------------------- locations
def golden_dir():
    """The golden data directory (a ``Traversable``; a real folder in editable/wheel installs)."""
    return files(GOLDEN_PACKAGE)


def source_path() -> Path:
    """Path of ``golden/tools/compute_ap.cpp``."""
    return Path(str(golden_dir() / "tools" / SOURCE_NAME))


def _cache_root() -> Path:
    env = os.environ.get("RC_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "retrieval-conformance"


def find_compiler() -> str:
    """The C++ compiler to use: ``$CXX`` or the first of g++, c++, clang++ on PATH.

    Raises
    ------
    CompilerUnavailable
        When none is found (including a ``$CXX`` that does not exist).
    """
    cxx = os.environ.get("CXX")
    if cxx:
        found = shutil.which(cxx)
        if not found:
            raise CompilerUnavailable(f"CXX={cxx!r} is not an executable on PATH")
        return found
    for name in ("g++", "c++", "clang++"):
        found = shutil.which(name)
        if found:
            return found
    raise CompilerUnavailable(
        "no C++ compiler found (tried $CXX, g++, c++, clang++): cannot build "
        "golden/tools/compute_ap.cpp; install g++ or set CXX"
    )


def _compiler_identity(cxx: str) -> str:
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, timeout=60)
        return out.stdout.decode("utf-8", "replace").splitlines()[0] if out.stdout else cxx
    except (OSError, subprocess.SubprocessError) as exc:
        raise CompilerUnavailable(f"the compiler {cxx!r} cannot be run: {exc}") from exc


@lru_cache(maxsize=None)
def _build_cached(cxx: str, source: str) -> Tuple[str, str]:
    src = Path(source).read_bytes()
    ident = _compiler_identity(cxx)
    key = hashlib.sha256(src + b"\0" + cxx.encode() + b"\0" + ident.encode()).hexdigest()[:20]
    exe_name = f"compute_ap-{key}" + (".exe" if os.name == "nt" else "")
    user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    for root in (_cache_root(), Path(tempfile.gettempdir()) / f"retrieval-conformance-{user}"):
        try:
            root.mkdir(parents=True, exist_ok=True)
            if not os.access(root, os.W_OK):
                continue
        except OSError:
            continue
        exe = root / exe_name
        if exe.is_file() and os.access(exe, os.X_OK):
            return str(exe), ident
        # Build to a private name, then rename: concurrent test workers never see a
        # half-written binary.
        fd, tmp = tempfile.mkstemp(prefix=exe_name + ".", dir=str(root))
        os.close(fd)
        try:
            proc = subprocess.run([cxx, "-O2", "-o", tmp, source], capture_output=True, timeout=300)
            if proc.returncode != 0:
                raise CompileError(
                    f"{cxx} -O2 failed on {source} (status {proc.returncode}):\n"
                    + proc.stderr.decode("utf-8", "replace")
                )
            os.chmod(tmp, 0o755)
            os.replace(tmp, exe)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return str(exe), ident
    raise CompilerUnavailable("no writable cache directory for the compute_ap binary (set RC_CACHE_DIR)")


def build() -> Path:
    """Build (or reuse) the compute_ap binary; its path.

    Raises
    ------
    CompilerUnavailable, CompileError
    """
    exe, _ = _build_cached(find_compiler(), str(source_path()))
    return Path(exe)


def compiler_identity() -> str:
    """First line of ``$CXX --version`` for the compiler :func:`build` uses."""
    return _build_cached(find_compiler(), str(source_path()))[1]


def require_build() -> Path:
    """:func:`build`, or a skip-worthy :class:`CompilerUnavailable` unless required.

    With ``RC_REQUIRE_COMPUTE_AP=1`` a missing compiler becomes a ``RuntimeError`` whose
    message says so (the tests then fail instead of skipping).
    """
    try:
        return build()
    except CompilerUnavailable as exc:
        if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
            raise RuntimeError(f"{REQUIRE_ENV} is set but compute_ap cannot be built: {exc}") from exc
        raise


# --------------------------------------------------------------------------- running
def run(
    gtquery: str, ranked_list: str, *, exe: Optional[Path] = None, extra_args: Sequence[str] = ()
) -> subprocess.CompletedProcess:
    """Run ``compute_ap GTQUERY RANKEDLIST``; stdout/stderr as bytes, never raises on status."""
    exe = exe or build()
    return subprocess.run([str(exe), gtquery, ranked_list, *extra_args], capture_output=True, timeout=120)


Case = Tuple[Sequence[str], Sequence[str], Sequence[str], Sequence[str]]


def _write_names(path: str, names: Sequence[str]) -> None:
    # A newline after every name: getline then reads back exactly these names (an empty
    # last name included).
    data = b"".join(n.encode("utf-8", "surrogateescape") + b"\n" for n in names)
    with open(path, "wb") as f:
        f.write(data)


def run_case(
    ranked: Sequence[str],
    good: Sequence[str],
    ok: Sequence[str],
    junk: Sequence[str],
    *,
    exe: Optional[Path] = None,
    workdir: Optional[str] = None,
) -> str:
    """Write one case as files, run the program, return its stdout without the newline.

    Every file is written with a newline after each name, so every name (the empty name
    included) is read back exactly.

    Raises
    ------
    RuntimeError
        When the program exits with a non-zero status.
    """
    exe = exe or build()
    own = workdir is None
    d = tempfile.mkdtemp(prefix="rc-compute-ap-") if own else workdir
    try:
        prefix = os.path.join(d, "q")
        _write_names(prefix + "_good.txt", list(good))
        _write_names(prefix + "_ok.txt", list(ok))
        _write_names(prefix + "_junk.txt", list(junk))
        _write_names(os.path.join(d, "ranked.txt"), list(ranked))
        proc = run(prefix, os.path.join(d, "ranked.txt"), exe=exe)
        if proc.returncode != 0:
            raise RuntimeError(f"compute_ap exited with {proc.returncode}: {proc.stderr.decode('utf-8', 'replace')}")
        out = proc.stdout.decode("ascii")
        if not out.endswith("\n") or out.count("\n") != 1:
            raise RuntimeError(f"unexpected compute_ap output {out!r}")
        return out[:-1]
    finally:
        if own:
            shutil.rmtree(d, ignore_errors=True)


def run_cases(cases: Sequence[Case], *, exe: Optional[Path] = None, jobs: Optional[int] = None) -> List[str]:
    """:func:`run_case` over many cases, a few processes at a time (results in order)."""
    exe = exe or build()
    jobs = jobs or min(8, (os.cpu_count() or 2) * 2)
    with tempfile.TemporaryDirectory(prefix="rc-compute-ap-") as root:

        def one(i_case):
            i, (r, g, o, j) = i_case
            d = os.path.join(root, str(i))
            os.mkdir(d)
            return run_case(r, g, o, j, exe=exe, workdir=d)

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, enumerate(cases)))
