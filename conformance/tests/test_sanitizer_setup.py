"""The sanitizer run's own setup (``python -m retrieval_conformance.conformance.fuzz.sanitize``).

* ``RC_C_LIBRARY`` pointing to a file that cannot be loaded makes ``c`` unavailable with a
  reason naming that path; it never falls back to the installed library (checked in a child
  process, so this process's cached library is untouched).
* Under ``RC_SANITIZED=1`` (set by the driver): this process has ASan's runtime and the C
  backend loaded the sanitized library of ``RC_C_LIBRARY``, not the installed one.
* The canary check fails when the sanitizer runtime is not preloaded (skipped without gcc and
  libasan).
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest
from retrieval_conformance.conformance.fuzz import sanitize, sanitized_library
from retrieval_conformance.conformance.support.requirements import require_implementation

SANITIZED = os.environ.get("RC_SANITIZED") == "1"

PROBE = """
import json
from retrieval_conformance.reference.contract import registry
print(json.dumps({"reason": registry.unavailable_reason("c"), "available": registry.available()}))
"""


def _probe(library: str) -> dict:
    env = dict(os.environ, RC_C_LIBRARY=library)
    res = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind", ["missing", "not-a-library"])
def test_unloadable_c_library_override_makes_c_unavailable(tmp_path, kind):
    path = tmp_path / ("missing.so" if kind == "missing" else "garbage.so")
    if kind == "not-a-library":
        path.write_bytes(b"this is not an ELF file\n")
    got = _probe(str(path))
    assert "c" not in got["available"]
    reason = got["reason"]
    assert reason is not None and f"RC_C_LIBRARY={path}" in reason
    assert ("does not exist" if kind == "missing" else "cannot be loaded") in reason
    assert "unset RC_C_LIBRARY" in reason


def _mapped_files() -> set:
    with open("/proc/self/maps") as f:
        return {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}


@pytest.mark.skipif(not SANITIZED, reason="only in the sanitizer run (RC_SANITIZED=1)")
def test_sanitized_run_uses_the_sanitized_library():
    require_implementation("c")
    from retrieval_conformance.implementations.c import backend as c_backend

    library = os.environ.get("RC_C_LIBRARY", "")
    assert library, "RC_SANITIZED=1 without RC_C_LIBRARY"
    assert c_backend._load() is not None, c_backend._LOAD_ERROR
    assert os.path.samefile(c_backend._LIB._name, library)
    # ASan's runtime is in this process (preloaded), the sanitized library is mapped, and the
    # installed library is not
    assert hasattr(ctypes.CDLL(None), "__asan_init"), "ASan runtime not loaded in the test process"
    mapped = _mapped_files()
    assert os.path.realpath(library) in mapped
    assert any("libasan" in os.path.basename(m) for m in mapped)
    spec = importlib.util.find_spec(c_backend.MODULE)
    if spec is not None and spec.origin and os.path.exists(spec.origin):
        assert os.path.realpath(spec.origin) not in mapped, "the installed C library was loaded too"


def _toolchain():
    try:
        cc = sanitized_library.compiler()
        return cc, sanitized_library.asan_runtime(cc)
    except sanitized_library.SetupError as exc:
        pytest.skip(f"no sanitizer toolchain here: {exc}")


def test_canaries_are_caught_only_with_the_runtime_preloaded(tmp_path):
    cc, libasan = _toolchain()
    reports = tmp_path / "reports"
    reports.mkdir()
    base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env = sanitized_library.sanitizer_env(libasan, str(tmp_path / "unused.so"), str(reports), base=base)
    sanitized_library.check_canaries(cc, str(tmp_path), env, str(reports))  # raises NotActive if missed
    env.pop("LD_PRELOAD")
    with pytest.raises(sanitized_library.NotActive):
        sanitized_library.check_canaries(cc, str(tmp_path), env, str(reports))


def test_plan_runs_every_module_at_the_first_thread_count():
    runs = sanitize.plan(quick=True, threads=[7, 1, 2])
    assert [t for t, _ in runs] == [7, 1, 2]
    assert "retrieval_conformance.conformance.tests.test_c_backend" in runs[0][1]
    assert "retrieval_conformance.conformance.tests.test_cross_implementation" in runs[0][1]
    assert set(runs[1][1]) <= set(runs[0][1])
    assert all(modules == runs[0][1] for _, modules in sanitize.plan(quick=False, threads=[1, 2]))


def test_missing_compiler_is_a_setup_error(monkeypatch):
    monkeypatch.setenv("CC", "no-such-compiler-rc")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(sanitized_library.SetupError, match="no C compiler"):
        sanitized_library.compiler()


def test_reports_on_stderr_are_found(capfd):
    code = "import sys; print('x.c:1:2: runtime error: signed integer overflow', file=sys.stderr)"
    returncode, found = sanitize.run_pytest([sys.executable, "-c", code], dict(os.environ))
    assert returncode == 0
    assert found == ["x.c:1:2: runtime error: signed integer overflow"]
    assert "runtime error" in capfd.readouterr().err  # copied through


def test_the_shipped_c_units_and_their_header_are_found(tmp_path):
    sources, include = sanitized_library.source_paths(str(tmp_path))
    assert sources and all(s.endswith(".c") and os.path.isfile(s) for s in sources)
    assert sources == sorted(sources)
    assert os.path.isfile(os.path.join(include, "rc_core.h"))
    assert all(os.path.dirname(s) == include for s in sources)
