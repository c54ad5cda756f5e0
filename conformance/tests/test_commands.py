"""Every command works from a plain install: each one run as a user runs it, in a subprocess.

In CI this module runs in both tox environments, so ``minimal`` (installed without the torch
and plot extras, and without a compiler) proves that ``pip install retrieval-conformance``
alone makes every command work.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = "retrieval_conformance.conformance.examples.hashing_correct:calc_top_map"
GOLDEN_DATA = Path(str(resources.files("retrieval_conformance.golden"))) / "data"


def run(*args: str, cwd=None, timeout: float = 900) -> subprocess.CompletedProcess:
    """``retrieval-conformance ARGS`` in a fresh interpreter (the installed package, as a user has it)."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run(
        [sys.executable, "-m", "retrieval_conformance.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    rng = np.random.default_rng(0)
    labels = dict(query_labels=rng.integers(0, 5, 40), db_labels=rng.integers(0, 5, 300))
    scores = rng.normal(size=(40, 300))
    better = scores + 2.0 * (labels["query_labels"][:, None] == labels["db_labels"][None, :])
    np.savez(folder / "labels.npz", **labels)
    np.savez(folder / "a.npz", scores=scores)
    np.savez(folder / "b.npz", scores=better)
    np.savez(folder / "ab.npz", scores=scores, **labels)
    return folder


def test_golden():
    out = run("golden", "--random", "20")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "PASSED: 0 mismatch(es)" in out.stdout


def test_evaluate(runs):
    out = run("evaluate", "--npz", str(runs / "ab.npz"), "--k", "5,10", "--json")
    assert out.returncode == 0, out.stderr
    assert '"k=5"' in out.stdout and '"k=10"' in out.stdout


def test_compare(runs):
    out = run(
        "compare",
        str(runs / "a.npz"),
        str(runs / "b.npz"),
        "--shared",
        str(runs / "labels.npz"),
        "--resamples",
        "200",
        "--fail-if-worse",
        "map:0.01",
    )
    assert out.returncode == 0, out.stderr  # b is better: no regression
    assert "mAP" in out.stdout
    out = run(
        "compare",
        str(runs / "b.npz"),
        str(runs / "a.npz"),
        "--shared",
        str(runs / "labels.npz"),
        "--resamples",
        "200",
        "--fail-if-worse",
        "map:0.01",
    )
    assert out.returncode == 1 and "worse: a mAP" in out.stderr


def test_check_and_identify():
    out = run("check", EXAMPLE, "--adapter", "hashing-codes", "--max-examples", "10")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    out = run("identify", EXAMPLE, "--adapter", "hashing-codes")  # identify runs its own inputs
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "hashing" in out.stdout


def test_bench_oxford5k(tmp_path):
    out = run(
        "bench",
        "run",
        "-k",
        "oxford5k and not reference",
        "--no-memory",
        "--save",
        "never",
        "--storage",
        str(tmp_path / "bench"),
        cwd=tmp_path,
        timeout=1800,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "oxford5k" in out.stdout


def test_compute_ap():
    """The real Oxford5k files: all_souls_1 in one of the shipped runs, against compute_ap.cpp's AP.txt."""
    query = GOLDEN_DATA / "oxford5k" / "gt" / "all_souls_1"
    run_dir = GOLDEN_DATA / "oxford5k" / "runs" / "result-orb-knn-top100"
    out = run("compute-ap", str(query), str(run_dir / "all_souls_1_top.txt"))
    assert out.returncode == 0, out.stderr
    printed = {
        Path(line.split()[0]).name: line.split()[-1]
        for line in (run_dir / "AP.txt").read_text().splitlines()
        if line.strip()
    }
    assert out.stdout.strip() == printed["all_souls_1"]  # 0.0237602, as the C++ program printed it


def test_explain_presets_and_help():
    assert run("presets").returncode == 0
    assert run("explain").returncode == 0
    out = run("--help")
    assert out.returncode == 0
    for name in ("golden", "evaluate", "compare", "check", "identify", "bench", "compute-ap", "presets", "explain"):
        assert name in out.stdout, name


def test_a_missing_extra_is_named_with_its_install_command(runs):
    try:
        import torch  # noqa: F401
    except ImportError:
        out = run("evaluate", "--npz", str(runs / "ab.npz"), "--implementation", "torch")
        assert out.returncode == 2
        assert "pip install 'retrieval-conformance[torch]'" in out.stderr
    else:
        pytest.skip("torch is installed here; the minimal environment runs this test")
