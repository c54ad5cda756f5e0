"""The Oxford/Paris protocol to the printed digit: ``oxford_ap`` and our own ``compute_ap``.

Three independent witnesses must agree on the printed string of every AP:

* ``AP.txt`` of 11 real Oxford5k runs (605 lists), printed by the original VGG
  ``compute_ap.cpp`` (golden/data/PROVENANCE.md);
* the suite's own C++ ``compute_ap`` (golden/tools/compute_ap.cpp), built from source here
  with the system compiler -- skipped without a compiler unless ``RC_REQUIRE_COMPUTE_AP=1``;
* :func:`oxford_ap`, the float32 emulation in Python.

This module holds the data, the seeded adversarial cases, and the checks of
:func:`oxford_ap` (formatting, edge cases, the real lists, ``evaluate_landmark``); the checks
of the built program, of float32 against exact arithmetic and of the command line are in
``test_landmark_compute_ap``.
"""

from __future__ import annotations

import json
import math
import re
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest
from retrieval_conformance.reference.protocols.landmark import (
    evaluate_landmark,
    format_cpp_float,
    normalize_cpp_float_text,
    oxford_ap,
)
from retrieval_conformance.reference.readers import read_gt_folder, read_ranked_list

GOLDEN = files("retrieval_conformance.golden")
DATA = Path(str(GOLDEN / "data" / "oxford5k"))
OXFORD_JSON = json.loads((GOLDEN / "landmark_oxford.json").read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- data
def _ap_txt(run: str):
    """(query -> printed value) and the MAP line of a run's AP.txt."""
    text = (DATA / "runs" / run / "AP.txt").read_text()
    values = {}
    for line in text.splitlines():
        if line.startswith("./data/"):
            path, value = line.split()
            values[path.rsplit("/", 1)[1]] = value
    m = re.search(r"MAP =\s*(\d\.\d+?)(?=5063it|\s|$)", text)
    return values, (m.group(1) if m else None)


RUNS = sorted(p.name for p in (DATA / "runs").iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def gt():
    return read_gt_folder(DATA / "gt")


@pytest.fixture(scope="module")
def real_cases(gt):
    """(run, query, ranked, gt query, AP.txt value) for all 605 real lists."""
    out = []
    for run in RUNS:
        values, _ = _ap_txt(run)
        for q, value in values.items():
            ranked = read_ranked_list(DATA / "runs" / run / f"{q}_top.txt")
            out.append((run, q, ranked, gt[q], value))
    return out


# --------------------------------------------------------------------------- adversarial
def adversarial_cases(seed: int = 20240521, n: int = 420):
    """Seeded adversarial cases covering every compute_ap edge case.

    Mixed in: tiny vocabularies (names ranked many times, AP > 1), names with ``\\r``,
    trailing spaces, the empty name, non-ASCII names, good/ok overlap and duplicates,
    positives that are also junk, empty positive sets, all-junk lists, empty lists, lists
    of up to 5,000 items, and up to 2,500 positives.
    """
    rng = np.random.default_rng(seed)
    names = [f"img_{j:06d}" for j in range(8100)]
    odd_names = ["", " ", "a\r", "a", "a ", "\r", "é", "x\ty", "A"]

    def pick(seq, size, replace=False):
        idx = rng.choice(len(seq), size=size, replace=replace) if size else []
        return [seq[i] for i in idx]

    cases = []
    for i in range(n):
        kind = i % 12
        if kind == 0:
            length = int(rng.integers(0, 4))
        elif kind in (1, 2, 3, 4):
            length = int(rng.integers(1, 61))
        elif kind in (5, 6, 7):
            length = int(rng.integers(100, 1501))
        elif kind in (8, 9):
            length = int(rng.integers(2000, 5001))
        else:
            length = 5000
        if kind in (3, 9) or rng.random() < 0.1:
            vocab = [f"n{j}" for j in range(int(rng.integers(1, 7)))]  # repeats galore
        else:
            vocab = names[: int(length * rng.uniform(1.0, 1.6)) + 5]
        if rng.random() < 0.4:
            vocab += odd_names
        if len(vocab) >= length and rng.random() < 0.7:
            ranked = pick(vocab, length)
        else:
            ranked = pick(vocab, length, replace=True)
        pool = list(dict.fromkeys(vocab + ranked))
        if kind == 10:  # many positives
            n_pos = min(len(pool), int(rng.integers(500, 2501)))
        else:
            n_pos = int(rng.choice([0, 1, 2, 3, 5, 10, 40, 200])) if rng.random() < 0.95 else 0
            n_pos = min(n_pos, len(pool))
        chosen = pick(pool, min(len(pool), n_pos + 50))
        positives, others = chosen[:n_pos], chosen[n_pos:]
        split = int(rng.integers(0, n_pos + 1))
        good, ok = positives[:split], positives[split:]
        if positives and rng.random() < 0.3:  # overlap and duplicates
            good += pick(positives, min(3, len(positives)))
            ok += pick(positives, min(2, len(positives)))
        junk = others[: int(rng.choice([0, 0, 1, 3, 10, 50]))]
        if positives and rng.random() < 0.3:  # positives that are also junk
            junk += pick(positives, min(2, len(positives)))
        if kind == 11 and rng.random() < 0.5:  # everything junk
            junk = list(dict.fromkeys(ranked))
        if rng.random() < 0.05:
            good, ok = [], []
        cases.append((ranked, good, ok, junk))
    # pinned extremes
    cases.append(([f"x{j}" for j in range(4999)] + ["p"], ["p", "q", "r"], [], []))
    cases.append((["p"] * 5000, ["p"], [], []))
    cases.append(([f"p{j}" for j in range(5000)], [f"p{j}" for j in range(5000)], [], []))
    cases.append(
        ([f"p{j}" for j in range(5000)], [f"p{j}" for j in range(0, 5000, 2)], [], [f"p{j}" for j in range(1, 5000, 4)])
    )
    return cases


@pytest.fixture(scope="module")
def adversarial():
    return adversarial_cases()


def _stepwise_oxford_ap(ranked, good, ok, junk):
    """Literal transliteration of the program's loop, every step in numpy float32.

    ``oxford_ap`` skips the steps that cannot change the sum; this one does not, so the
    two agreeing shows the shortcut is exact.
    """
    f32 = np.float32
    pos, amb = set(good) | set(ok), set(junk)
    ap, old_recall, old_precision = f32(0), f32(0), f32(1)
    hits = j = 0
    with np.errstate(invalid="ignore", divide="ignore"):
        for name in ranked:
            if name in amb:
                continue
            if name in pos:
                hits += 1
            recall = f32(hits) / f32(len(pos))
            precision = f32(hits / (j + 1.0))
            term = float(recall - old_recall) * (float(old_precision + precision) / 2.0)
            ap = f32(float(ap) + term)
            old_recall, old_precision = recall, precision
            j += 1
    return float(ap)


# --------------------------------------------------------------------------- formatting
@pytest.mark.parametrize(
    "value, text",
    [
        (0.0, "0"),
        (1.0, "1"),
        (2.0, "2"),
        (0.5, "0.5"),
        (1 / 6, "0.166667"),
        (0.0237602, "0.0237602"),
        (6.96767e-05, "6.96767e-05"),
        (0.0001, "0.0001"),
        (0.00009999, "9.999e-05"),
        (123456.0, "123456"),
        (1234567.0, "1.23457e+06"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (math.copysign(math.nan, -1), "-nan"),
        (math.copysign(math.nan, 1), "nan"),
        (-0.0, "-0"),
    ],
)
def test_format_cpp_float(value, text):
    assert format_cpp_float(value) == text


def test_format_rounds_to_float32_first():
    # 0.1 as a float32 is 0.100000001490116..., still '0.1'; 1/3 prints the same either
    # way; but 16777217 is not a float32 (rounds to 16777216).
    assert format_cpp_float(0.1) == "0.1"
    assert format_cpp_float(16777217.0) == "1.67772e+07"
    assert format_cpp_float(np.float32(1) / np.float32(3)) == "0.333333"


def test_normalize_windows_exponent():
    assert normalize_cpp_float_text("6.96767e-005") == "6.96767e-05"
    assert normalize_cpp_float_text(" 0.0237602\n") == "0.0237602"
    assert normalize_cpp_float_text("1.5e+010") == "1.5e+10"
    assert normalize_cpp_float_text("1e-100") == "1e-100"  # a real 3-digit exponent stays


# --------------------------------------------------------------------------- oxford_ap
@pytest.mark.parametrize("case", OXFORD_JSON["edge_cases"], ids=lambda c: c["name"])
def test_oxford_ap_reproduces_golden_edge_cases(case):
    got = oxford_ap(case["ranked"], case["good"], case["ok"], case["junk"])
    assert format_cpp_float(got) == case["printed"]


def test_edge_case_values_by_hand():
    """A few golden strings re-derived by hand, independent of any program."""
    golden = {c["name"]: c["printed"] for c in OXFORD_JSON["edge_cases"]}
    # x, x2, a with one positive: (1/3 - 0) * (0 + 1/3)/2 ... recall 1 * (0/2 + 1/3)/2 = 1/6
    assert golden["hit_at_rank_three"] == "0.166667"
    # a\r, b vs {a, b}: b hits at rank 2: 1/2 * (0 + 1/2)/2 = 1/8
    assert golden["carriage_return_does_not_match"] == "0.125"
    # a positive that is junk is skipped but counted in |P|: b at rank 1: 1/2 * 1 = 0.5
    assert golden["positive_also_junk"] == "0.5"
    # a ranked twice vs {a}: recall 1 then 2, precision 1: AP 2
    assert golden["repeated_name_counts_twice"] == "2"
    assert golden["empty_positives_something_ranked"] == "-nan"
    assert golden["empty_positives_only_junk_ranked"] == "0"
    assert golden["empty_ranked"] == "0"


def test_oxford_ap_edge_cases_directly():
    nan = oxford_ap(["x"], [], [], [])
    assert math.isnan(nan) and math.copysign(1, nan) < 0
    assert oxford_ap([], [], [], []) == 0.0
    assert oxford_ap(["j"], [], [], ["j"]) == 0.0
    assert oxford_ap(["a", "b"], ["a", "b"], [], ["a"]) == 0.5
    assert oxford_ap(["a", "a", "a"], ["a"], [], []) == 3.0
    assert oxford_ap(["a\r"], ["a"], [], []) == 0.0
    assert oxford_ap([""], [""], [], []) == 1.0
    # numpy arrays and tuples are accepted
    assert oxford_ap(np.array(["a", "b"]), ("b",), [], []) == 0.25


@pytest.mark.parametrize(
    "bad, exc",
    [
        (dict(ranked="abc"), TypeError),
        (dict(good="a"), TypeError),
        (dict(ranked={"a", "b"}), TypeError),
        (dict(ranked=[["a"]]), TypeError),
        (dict(ranked=np.array([["a"]])), ValueError),
    ],
)
def test_oxford_ap_rejects_bad_input(bad, exc):
    args = dict(ranked=["a"], good=["a"], ok=[], junk=[])
    args.update(bad)
    with pytest.raises(exc, match="ranked|good"):
        oxford_ap(**args)


def test_oxford_ap_matches_literal_stepwise_loop(adversarial):
    small = [c for c in adversarial if len(c[0]) <= 1500]
    assert len(small) > 250
    for ranked, good, ok, junk in small:
        a = oxford_ap(ranked, good, ok, junk)
        b = _stepwise_oxford_ap(ranked, good, ok, junk)
        assert format_cpp_float(a) == format_cpp_float(b)
        assert (math.isnan(a) and math.isnan(b)) or a == b


# --------------------------------------------------------------------------- real data
def test_real_data_is_complete(real_cases):
    assert RUNS and len(RUNS) == 11
    assert len(real_cases) == 605
    lengths = {len(c[2]) for c in real_cases}
    assert min(lengths) <= 50 and max(lengths) >= 1999  # top-50 ... top-2000 lists
    assert "6.96767e-005" in {c[4] for c in real_cases}  # the Windows-printed entry


def test_oxford_ap_reproduces_every_ap_txt_value(real_cases):
    bad = []
    for run, q, ranked, g, printed in real_cases:
        got = format_cpp_float(oxford_ap(ranked, g.good, g.ok, g.junk))
        if got != normalize_cpp_float_text(printed):
            bad.append((run, q, got, printed))
    assert bad == []


def test_golden_json_runs_equal_ap_txt():
    """The JSON written by our program equals what the original program printed."""
    assert sorted(OXFORD_JSON["runs"]) == RUNS
    for run in RUNS:
        values, _ = _ap_txt(run)
        expected = {q: normalize_cpp_float_text(v) for q, v in values.items()}
        assert OXFORD_JSON["runs"][run] == expected


def test_map_of_each_run_is_the_mean(real_cases, gt):
    for run in RUNS:
        values, map_line = _ap_txt(run)
        ranked = {q: read_ranked_list(DATA / "runs" / run / f"{q}_top.txt") for q in values}
        res = evaluate_landmark(ranked, {q: gt[q] for q in values}, protocol="oxford")
        assert res.printed == [normalize_cpp_float_text(values[q]) for q in res.queries]
        assert res.map == math.fsum(res.ap) / 55
        assert res.n_counted == 55
        printed = [float(values[q]) for q in values]
        # six significant digits: each printed value is within 5e-7 of the float32 one
        assert abs(res.map - sum(printed) / 55) <= 5e-7
        if map_line is not None:
            # The project's own MAP line dropped its first query (all_souls_1): it equals the
            # Python sum of the printed values of queries 2..55 divided by 54, exactly.
            assert float(map_line) == sum(printed[1:]) / 54
            assert float(map_line) != sum(printed) / 55


# --------------------------------------------------------------------------- evaluate
def test_evaluate_landmark_oxford_errors(gt):
    q = "all_souls_1"
    with pytest.raises(ValueError, match="k"):
        evaluate_landmark({q: []}, {q: gt[q]}, protocol="oxford", k=10)
    with pytest.raises(ValueError, match="protocol"):
        evaluate_landmark({q: []}, {q: gt[q]}, protocol="paris")
    with pytest.raises(ValueError, match="lacks queries"):
        evaluate_landmark({}, {q: gt[q]})
    with pytest.raises(ValueError, match="not in ground_truth"):
        evaluate_landmark({q: [], "other": []}, {q: gt[q]})
    with pytest.raises(ValueError, match="roxford"):
        evaluate_landmark([[1]], [{"easy": [1], "hard": [], "junk": []}], protocol="oxford")
    with pytest.raises(TypeError, match="mapping"):
        evaluate_landmark([[]], {q: gt[q]})
    with pytest.raises(ValueError, match="no query"):
        evaluate_landmark([], [])


def test_evaluate_landmark_oxford_nan_query_makes_map_nan():
    res = evaluate_landmark([["a"], ["x"]], [{"good": ["a"]}, {"good": [], "junk": []}])
    assert res.printed == ["1", "-nan"]
    assert math.isnan(res.map) and res.ap[0] == 1.0
    assert res.summary()["queries"] == 2
