"""A result far below a random order of the same items warns (similarities given as distances, a
reversed ranking); a sound one does not.  The expected AP of a random order is checked against
the exact mean over every permutation."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from retrieval_conformance.reference.contract.random_ranking import below_random_warning, expected_random_ap, worst_ap


def exact_mean_ap(n_items: int, n_relevant: int) -> Fraction:
    """The mean AP over every order of the items, AP summed by hand in fractions."""
    total, count = Fraction(0), 0
    for relevant in itertools.combinations(range(n_items), n_relevant):
        total += sum(Fraction(i + 1, rank + 1) for i, rank in enumerate(relevant)) / n_relevant
        count += 1
    return total / count


@pytest.mark.parametrize("n_items", range(1, 8))
def test_expected_random_ap_is_the_mean_over_every_order(n_items):
    for n_relevant in range(1, n_items + 1):
        assert expected_random_ap(n_items, n_relevant) == float(exact_mean_ap(n_items, n_relevant))
    assert expected_random_ap(n_items, 0) == 0.0


def test_the_worst_order_puts_every_relevant_item_last():
    assert worst_ap(5, 2) == (1 / 4 + 2 / 5) / 2 and worst_ap(3, 3) == 1.0 and worst_ap(4, 0) == 0.0


def test_the_warning_needs_most_queries_below_and_a_mean_nearer_the_worst():
    random, worst = [0.5] * 10, [0.1] * 10
    assert below_random_warning([0.1] * 4, random[:4], worst[:4], "x") is None  # too few queries
    assert below_random_warning([0.1] * 8 + [0.9] * 2, random, worst, "x") is None  # 80% below
    assert below_random_warning([0.35] * 10, random, worst, "x") is None  # nearer random than worst
    said = below_random_warning([0.2] * 10, random, worst, "--distances")
    assert said.startswith("mAP 0.2000 is far below a random order") and said.endswith("--distances")


def _files(tmp_path, reverse: bool):
    rng = np.random.default_rng(3)
    labels_q, labels_db = rng.integers(0, 4, 20), rng.integers(0, 4, 200)
    closeness = (labels_q[:, None] == labels_db[None, :]) + rng.random((20, 200)) * 0.5
    distances = closeness if reverse else -closeness  # reverse: similarities passed as distances
    np.save(tmp_path / "d.npy", distances)
    np.save(tmp_path / "ql.npy", labels_q)
    np.save(tmp_path / "dl.npy", labels_db)
    return ["--distances", str(tmp_path / "d.npy"), "--query-labels", str(tmp_path / "ql.npy")] + [
        "--db-labels",
        str(tmp_path / "dl.npy"),
    ]


@pytest.mark.parametrize("reverse", [True, False])
def test_evaluate_warns_on_similarities_given_as_distances(tmp_path, capsys, reverse):
    from retrieval_conformance.cli import main

    assert main(["evaluate", *_files(tmp_path, reverse)]) == 0
    err = capsys.readouterr().err
    assert ("far below a random order" in err) == reverse


@pytest.mark.parametrize("reverse", [True, False])
def test_evaluate_run_warns_on_a_reversed_run(tmp_path, capsys, reverse):
    from retrieval_conformance.cli import main

    rng = np.random.default_rng(5)
    run, qrels = [], []
    for q in range(8):
        for d in range(30):
            relevant = d < 5
            score = (1.0 if relevant else 0.0) + rng.random() * 0.5
            run.append(f"q{q} Q0 d{d} {d + 1} {-score if reverse else score} r")
            qrels.append(f"q{q} 0 d{d} {int(relevant)}")
    (tmp_path / "a.run").write_text("\n".join(run) + "\n")
    (tmp_path / "a.qrels").write_text("\n".join(qrels) + "\n")
    for extra in ([], ["--k", "10"]):
        assert main(["evaluate", "--run", str(tmp_path / "a.run"), "--qrels", str(tmp_path / "a.qrels"), *extra]) == 0
        assert ("far below a random order" in capsys.readouterr().err) == reverse


@pytest.mark.parametrize("reverse", [True, False])
def test_audit_warns_as_evaluate_does(tmp_path, capsys, reverse):
    from retrieval_conformance.conformance.audit.cli import audit_main

    assert audit_main(_files(tmp_path, reverse)) == 0
    assert ("far below a random order" in capsys.readouterr().err) == reverse
