"""``.npz`` files with the array names people already have: torchreid's (``distmat``, ``q_pids``, ...)
and DeepHash's (``qB``, ``rB``, ``queryL``/``query_L``, ...), read as they are by ``evaluate`` and
``audit``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from retrieval_conformance.cli import main


def _evaluate_json(argv, capsys):
    assert main(["evaluate", *argv, "--implementation", "reference", "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_torchreid_names_are_read_as_they_are(tmp_path, capsys):
    # gallery 0 shares the query's id and camera (junk under reid); then ranks 1, 2, 3: miss, hit, hit
    path = tmp_path / "torchreid.npz"
    np.savez(
        path,
        distmat=np.array([[0.05, 0.1, 0.2, 0.3]]),
        q_pids=np.array([1]),
        g_pids=np.array([1, 2, 1, 1]),
        q_camids=np.array([0]),
        g_camids=np.array([0, 1, 1, 1]),
    )
    summary = _evaluate_json(["--npz", str(path), "--protocol", "reid"], capsys)
    assert summary["map_exact"] == "7/12"  # (1/2 + 2/3) / 2


@pytest.mark.parametrize("query_name, db_name", [("queryL", "retrievalL"), ("query_L", "retrieval_L")])
def test_deephash_names_are_read_as_they_are(query_name, db_name, tmp_path, capsys):
    # Hamming distances 0, 4, 1 to the query's code; relevant: gallery 1 and 2 (a shared label)
    path = tmp_path / "deephash.npz"
    arrays = {
        "qB": np.array([[1.0, -1, 1, 1]]),
        "rB": np.array([[1.0, -1, 1, 1], [-1, 1, -1, -1], [1, -1, 1, -1]]),
        query_name: np.array([[1.0, 0]]),
        db_name: np.array([[0.0, 1], [1, 0], [1, 0]]),
    }
    np.savez(path, **arrays)
    summary = _evaluate_json(["--npz", str(path), "--protocol", "hashing"], capsys)
    assert summary["map_exact"] == "7/12"  # ranks 2 and 3: (1/2 + 2/3) / 2


def test_the_audit_reads_them_too(tmp_path, capsys):
    path = tmp_path / "torchreid.npz"
    np.savez(path, distmat=np.array([[0.1, 0.2, 0.3]]), q_pids=np.array([1]), g_pids=np.array([2, 1, 1]))
    assert main(["audit", "--npz", str(path), "--json"]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "arrays, both",
    [
        ({"distances": [[0.1, 0.2]], "distmat": [[0.1, 0.2]], "query_labels": [1], "db_labels": [1, 2]}, "distances"),
        ({"qB": [[1, -1]], "rB": [[1, -1]], "queryL": [[1]], "query_L": [[1]], "retrievalL": [[1]]}, "queryL"),
    ],
)
def test_our_name_and_an_alias_together_is_an_error_naming_both(arrays, both, tmp_path, capsys):
    path = tmp_path / "both.npz"
    np.savez(path, **{k: np.array(v) for k, v in arrays.items()})
    assert main(["evaluate", "--npz", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --npz") and both in err
    if both == "distances":
        assert "'distmat'" in err and "'distances'" in err
    else:
        assert "'queryL'" in err and "'query_L'" in err
