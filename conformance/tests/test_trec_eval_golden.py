"""``evaluate_run`` against trec_eval 9.0.8 and 10.0 built from source (``golden/trec_eval.json``),
every measure it prints for runs, per query and for ``all``, to trec_eval's printed digits, with
every implementation; and against the outputs trec_eval ships with its own test files.

trec_eval's test files are not part of this project: the tests that read them look in
``$RC_TREC_EVAL_TESTDATA``, then ``../shared/data/trec_eval/`` (next to the checkout), and skip
when neither holds them.
"""

from __future__ import annotations

import json
import os
import re
from importlib.resources import files
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
from retrieval_conformance.conformance.support.checkout import find_checkout
from retrieval_conformance.conformance.support.requirements import implementation_params, require_implementation
from retrieval_conformance.golden.trec_inputs import BOUNDARY, boundary, generate
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run

GOLDEN_DIR = files("retrieval_conformance.golden")
GOLDEN = json.loads(GOLDEN_DIR.joinpath("trec_eval.json").read_text(encoding="utf-8"))
GENERATED = Path(str(GOLDEN_DIR / "data" / "trec"))
#: trec_eval 9.0.8 stores scores as C float (trec_format.h), 10.0 as double
SCORE_DTYPE = {"trec_eval 9.0.8": "float32", "trec_eval 10.0": "float64"}
#: measures printed as integers
COUNTS = ("num_q", "num_ret", "num_rel", "num_rel_ret")


def _testdata() -> Optional[Path]:
    for where in (
        os.environ.get("RC_TREC_EVAL_TESTDATA"),
        Path(__file__).resolve().parents[2].parent / "shared" / "data" / "trec_eval",
        (find_checkout() or Path("/nonexistent-checkout")).parent / "shared" / "data" / "trec_eval",
    ):
        if where and (Path(where) / "qrels.test").is_file():
            return Path(where)
    return None


TESTDATA = _testdata()
NO_TESTDATA = (
    "trec_eval's test files (qrels.test, results.test, out.test.*) are not committed: set "
    "RC_TREC_EVAL_TESTDATA to trec_eval's test/ folder or copy it to ../shared/data/trec_eval/"
)


def parse_command(command: str) -> Tuple[Dict[str, object], List[str], str, str]:
    """trec_eval's command line -> (evaluate_run options, measure specs, qrels, run)."""
    words = command.split()[1:]
    options: Dict[str, object] = {}
    measures: List[str] = []
    i = 0
    while i < len(words) - 2:
        word = words[i]
        if word == "-q":
            pass
        elif word == "-c":
            options["complete"] = True
        elif word == "-J":
            options["judged_only"] = True
        elif word in ("-l", "-M", "-m"):
            i += 1
            value = words[i]
            if word == "-m" and value.startswith("ndcg.") and "=" in value:  # a gain map: ndcg.1=3,2=9
                options["gains"] = {int(g): float(v) for g, v in (pair.split("=") for pair in value[5:].split(","))}
            elif word == "-m":
                measures.append(value)
            else:
                options["relevance_level" if word == "-l" else "depth"] = int(value)
        else:
            raise AssertionError(f"an option the test does not map: {word} in {command}")
        i += 1
    return options, measures, words[-2], words[-1]


def cutoffs_of(names) -> List[int]:
    return sorted({int(m.group(1)) for name in names if (m := re.search(r"_(\d+)$", name))})


def ours(run, qrels, cutoffs, implementation, **options) -> Dict[str, Dict[str, float]]:
    """{qid or "all": {trec_eval name: value}} from evaluate_run (one call without a cut-off,
    one with every cut-off).  trec_eval applies a gain map (``-m ndcg.1=3``) to ``ndcg`` only,
    evaluate_run to ``ndcg_cut_k`` as well: with ``gains``, ``ndcg`` comes from a call with
    them and every other measure from one without."""
    gains = options.pop("gains", None)
    out: Dict[str, Dict[str, float]] = {}
    results = [evaluate_run(run, qrels, implementation=implementation, **options)]
    results += list(evaluate_run(run, qrels, k=tuple(cutoffs), implementation=implementation, **options).values())
    if gains is not None:
        with_gains = evaluate_run(run, qrels, implementation=implementation, gains=gains, **options)
        assert "ndcg" in with_gains.extras["trec_eval"]
        results.append(with_gains)  # last: its ndcg replaces the one without gains
    for res in results:
        out.setdefault("all", {}).update(res.extras["trec_eval"])
        for name, column in res.extras["trec_eval_per_query"].items():
            for qid, value in zip(res.extras["query_ids"], column.tolist()):
                out.setdefault(qid, {})[name] = value
    return out


def printed_digits_agree(value: float, printed: str) -> bool:
    """``value`` prints as trec_eval printed it (``%.4f``): the floats are trec_eval's doubles, so
    the digits agree on every ``.00005`` boundary too (no tolerance)."""
    return f"{value:.4f}" == printed


def compare(expected: Dict[str, Dict[str, str]], got: Dict[str, Dict[str, float]], names=None) -> List[str]:
    problems = []
    for qid, measures in expected.items():
        for printed_name, printed in measures.items():
            name = printed_name.split("_")[0] if "=" in printed_name else printed_name  # ndcg_1=3,2=9: ndcg
            if names is not None and name not in names:
                continue
            if qid not in got or name not in got[qid]:
                problems.append(f"{qid} {name}: trec_eval printed {printed}, we have no value")
                continue
            value = got[qid][name]
            if name in COUNTS:
                if int(value) != int(printed):
                    problems.append(f"{qid} {name}: trec_eval {printed}, we {value}")
            elif not printed_digits_agree(value, printed):
                problems.append(f"{qid} {name}: trec_eval {printed}, we {value!r}")
    return problems


def test_generated_inputs_are_the_generators_output():
    run, qrels = generate()
    assert (GENERATED / "generated.run").read_text(encoding="utf-8") == run
    assert (GENERATED / "generated.qrels").read_text(encoding="utf-8") == qrels
    for name in BOUNDARY:
        run, qrels = boundary(name)
        assert (GENERATED / f"boundary-{name}.run").read_text(encoding="utf-8") == run
        assert (GENERATED / f"boundary-{name}.qrels").read_text(encoding="utf-8") == qrels


def test_boundary_cases_print_the_digit_the_exact_mean_does_not():
    """Each boundary collection's exact mean, rounded once, prints another digit than trec_eval did:
    these cases fail unless the floats are trec_eval's running sums."""
    for case in (c for c in GOLDEN["cases"] if c["id"].startswith("boundary-")):
        _, _, qrels, run = parse_command(case["command"])
        name = case["id"].split("-")[1]
        measure = {"ap": "map", "map_cut": "map_cut_5"}.get(name, name)
        res = evaluate_run(
            GENERATED / run, GENERATED / qrels, k=5 if measure == "map_cut_5" else None, implementation="reference"
        )
        exact = res.extras["trec_eval_exact"][measure]
        exact_mean = sum(exact) / len(exact)
        assert f"{float(exact_mean):.4f}" != case["values"]["all"][measure], case["id"]
        assert f"{res.extras['trec_eval'][measure]:.4f}" == case["values"]["all"][measure], case["id"]


def test_golden_names_its_programs_and_every_measure():
    assert set(GOLDEN["programs"]) == {"9.0.8", "10.0"}
    for program in GOLDEN["programs"].values():
        assert re.fullmatch(r"[0-9a-f]{40}", program["commit"]) and program["tag"].startswith("v")
    wanted = {"num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "recip_rank", "bpref"}
    wanted |= {f"{m}_{k}" for m in ("P", "recall", "map_cut", "ndcg_cut", "success") for k in (1, 5, 10)}
    for case in GOLDEN["cases"]:
        if case["id"].startswith("sets-"):  # trec_eval's own sets: test_trec_eval_sets.py
            continue
        gains = [name for name in case["values"]["all"] if name.startswith("ndcg_") and "=" in name]
        assert ("ndcg" in case["values"]["all"]) != bool(gains), case["id"]
        assert case["command"].startswith("trec_eval -q ") and case["program"] in SCORE_DTYPE, case["id"]
        assert wanted <= set(case["values"]["all"]), (case["id"], wanted - set(case["values"]["all"]))


def test_float32_and_float64_scores_give_different_numbers():
    """The generated scores equal to 12 digits tie in 9.0.8 (float) and not in 10.0 (double):
    the two programs print different numbers on the same command line."""
    by_id = {case["id"]: case["values"] for case in GOLDEN["cases"]}
    old, new = by_id["generated-9.0.8-c"], by_id["generated-10.0"]
    assert old["all"]["map"] != new["all"]["map"]
    assert sum(old[q] != new[q] for q in old if q != "all") >= 2


#: the generated collection, and the collections whose exact means lie on a .00005 rounding boundary
GENERATED_CASES = [case for case in GOLDEN["cases"] if case["id"].startswith(("generated-", "boundary-"))]


@pytest.mark.parametrize("implementation", implementation_params())
@pytest.mark.parametrize("case", GENERATED_CASES, ids=[case["id"] for case in GENERATED_CASES])
def test_generated_runs_match_trec_eval(case, implementation):
    require_implementation(implementation)
    options, _, qrels, run = parse_command(case["command"])
    got = ours(
        GENERATED / run,
        GENERATED / qrels,
        cutoffs_of(case["values"]["all"]),
        implementation,
        score_dtype=SCORE_DTYPE[case["program"]],
        **options,
    )
    assert compare(case["values"], got) == []


TEST_FILE_CASES = [case for case in GOLDEN["cases"] if case["id"].startswith("trec_eval-test-")]


@pytest.mark.skipif(TESTDATA is None, reason=NO_TESTDATA)
@pytest.mark.parametrize("implementation", implementation_params())
@pytest.mark.parametrize("case", TEST_FILE_CASES, ids=[case["id"] for case in TEST_FILE_CASES])
def test_trec_eval_test_files_match_the_golden(case, implementation):
    require_implementation(implementation)
    options, _, qrels, run = parse_command(case["command"])
    got = ours(
        TESTDATA / run,
        TESTDATA / qrels,
        cutoffs_of(case["values"]["all"]),
        implementation,
        score_dtype=SCORE_DTYPE[case["program"]],
        **options,
    )
    assert compare(case["values"], got) == []


#: trec_eval's shipped outputs (its Makefile's quicktest) -> the command line that printed them
SHIPPED = {
    "out.test.aq": "trec_eval -q qrels.test results.test",
    "out.test.aqc": "trec_eval -q -c qrels.test results.trunc",
    "out.test.aqcM": "trec_eval -q -c -M 100 qrels.test results.trunc",
    "out.test.aql": "trec_eval -q -l 2 qrels.rel_level results.test",
}
#: the measures of ours that the shipped outputs (-m all_trec) print
SHIPPED_NAMES = re.compile(
    r"(num_q|num_ret|num_rel|num_rel_ret|map|Rprec|recip_rank|ndcg|bpref"
    r"|(P|recall|map_cut|ndcg_cut|success)_\d+)$"
)


@pytest.mark.skipif(TESTDATA is None, reason=NO_TESTDATA)
@pytest.mark.parametrize("implementation", implementation_params())
@pytest.mark.parametrize("output", sorted(SHIPPED))
def test_trec_eval_shipped_outputs(output, implementation):
    require_implementation(implementation)
    expected: Dict[str, Dict[str, str]] = {}
    for line in (TESTDATA / output).read_text().splitlines():
        name, qid, value = (part.strip() for part in line.split("\t"))
        if SHIPPED_NAMES.fullmatch(name):
            expected.setdefault(qid, {})[name] = value
    assert {"map", "ndcg", "bpref", "P_5", "map_cut_5", "ndcg_cut_5", "success_1"} <= set(expected["all"])
    options, _, qrels, run = parse_command(SHIPPED[output])
    got = ours(TESTDATA / run, TESTDATA / qrels, cutoffs_of(expected["all"]), implementation, **options)
    assert compare(expected, got) == []
