"""trec_eval's sets and ``-m`` selections (``trec_eval_measures``) against trec_eval 9.0.8 and 10.0
built from source: ``trec_eval -q`` with no ``-m`` (its default set) and ``-m all_trec``, with
``-c``, ``-l 2``, ``-M 7`` and ``-J`` (``golden/trec_eval.json``, the ``sets-`` cases).

Every value both print agrees to trec_eval's printed digits, per query and for ``all``; the
families trec_eval prints that are not computed here are exactly the ones the module names and
refuses.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import pytest
from retrieval_conformance.conformance.tests.test_trec_eval_golden import parse_command
from retrieval_conformance.reference.protocols.trec.measure_sets import (
    FAMILIES,
    NOT_COMPUTED,
    parse_selection,
    shown,
    trec_eval_text,
)
from retrieval_conformance.reference.protocols.trec.trec_eval_measures import trec_eval_measures

GOLDEN_DIR = files("retrieval_conformance.golden")
GOLDEN = json.loads(GOLDEN_DIR.joinpath("trec_eval.json").read_text(encoding="utf-8"))
GENERATED = Path(str(GOLDEN_DIR / "data" / "trec"))
SET_CASES = [case for case in GOLDEN["cases"] if case["id"].startswith("sets-")]


def options_of(command: str):
    """trec_eval's command line -> (options, -m words (``official`` when none), qrels, run)."""
    options, measures, qrels, run = parse_command(command)
    return options, measures or ["official"], qrels, run


def family_of(name: str) -> str:
    for family in sorted(set(FAMILIES) | set(NOT_COMPUTED), key=len, reverse=True):
        if name == family or name.startswith(family + "_"):
            return family
    return name.rsplit("_", 1)[0] if name[-1].isdigit() else name


@pytest.mark.parametrize("case", SET_CASES, ids=[case["id"] for case in SET_CASES])
def test_sets_print_as_trec_eval_prints_them(case):
    options, measures, qrels, run = options_of(case["command"])
    version = case["program"].split()[-1]
    table = trec_eval_measures(GENERATED / run, GENERATED / qrels, measures, version=version, **options)
    ours = table.as_dict()
    problems, not_ours, compared = [], set(), 0
    for qid, printed in case["values"].items():
        for name, text in printed.items():
            if name == "runid":
                continue
            if name not in ours.get(qid, {}):
                not_ours.add(family_of(name))
                continue
            value = ours[qid][name]
            compared += 1
            if shown(value) != text:
                problems.append(f"{qid} {name}: trec_eval {text}, ours {value!r}")
    assert problems[:20] == []
    assert not_ours == set(), not_ours
    # and nothing of ours that trec_eval did not print
    extra = {(q, n) for q, values in ours.items() for n in values if n not in case["values"].get(q, {})}
    assert extra == set()
    assert compared > 200


def test_the_text_is_trec_evals_layout():
    case = next(c for c in SET_CASES if c["id"] == "sets-10.0-official")
    options, measures, qrels, run = options_of(case["command"])
    table = trec_eval_measures(GENERATED / run, GENERATED / qrels, measures, **options)
    lines = trec_eval_text(table, per_query=True).splitlines()
    expected = [
        f"{name:<22}\t{qid}\t{value}"
        for qid in [q for q in case["values"] if q != "all"] + ["all"]
        for name, value in case["values"][qid].items()
        if name != "runid"
    ]
    assert lines == expected


def test_selection_words_and_their_errors():
    assert parse_selection(["P.10,5", "map"]) == {"map": (None, None), "P": ((5, 10), "10,5")}
    assert list(parse_selection(["official"]))[:4] == ["num_ret", "num_rel", "num_rel_ret", "map"]
    assert parse_selection(["ndcg.1=3,2=9"]) == {"ndcg": ({1: 3.0, 2: 9.0}, "1=3,2=9")}
    for word, said in (
        ("yaap", "yaap is not computed here: it reads trec_eval's multi-judge qrels"),
        ("prefs_simp", "preference judgments"),
        ("mapp", "not a trec_eval measure"),
        ("P.5,5", "distinct"),
        ("P.x", "expected positive integer cut-offs"),
        ("map.3", "takes no parameters"),
        ("utility.1,2", "4 coefficients"),
    ):
        with pytest.raises(ValueError, match=said):
            parse_selection([word])


def test_versions_differ_where_trec_eval_does():
    """iprec_at_recall's recall points: R = 3 and f = 0.4 are 1 document in 10.0 (1.2, rounded) and
    2 in 9.0.8 (1.2 + 0.9, truncated); relevant documents at ranks 1 and 4 give 1.0 and 0.5."""
    run = {"q": {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}}
    qrels = {"q": {"a": 1, "b": 0, "c": 0, "d": 1, "z": 1}}
    old = trec_eval_measures(run, qrels, "iprec_at_recall.0.4", version="9.0.8").as_dict()["q"]
    new = trec_eval_measures(run, qrels, "iprec_at_recall.0.4", version="10.0").as_dict()["q"]
    assert old["iprec_at_recall_0.40"] == 0.5 and new["iprec_at_recall_0.40"] == 1.0


def test_evaluate_run_prints_trec_evals_output(capsys):
    """``evaluate --run`` without ``--k`` prints what trec_eval prints (less its runid line); with
    ``--per-query text`` what ``trec_eval -q`` prints, measure selection in trec_eval's words."""
    from retrieval_conformance.cli import main

    run, qrels = str(GENERATED / "generated.run"), str(GENERATED / "generated.qrels")
    for case_id, argv in (
        ("sets-10.0-official", ["--complete"]),
        ("sets-10.0-all_trec-l2", ["--complete", "--relevance-level", "2", "-m", "all_trec", "--per-query", "text"]),
        ("sets-9.0.8-official-J", ["--judged-only", "--trec-eval-version", "9.0.8", "--per-query", "text"]),
    ):
        case = next(c for c in SET_CASES if c["id"] == case_id)
        assert main(["evaluate", "--run", run, "--qrels", qrels, *argv]) == 0
        printed = capsys.readouterr().out.splitlines()
        qids = [q for q in case["values"] if q != "all"] if "--per-query" in argv else []
        # trec_eval's lines in its order, less its runid and the families not computed here
        expected = [
            f"{name:<22}\t{qid}\t{value}"
            for qid in qids + ["all"]
            for name, value in case["values"][qid].items()
            if name != "runid" and family_of(name) not in NOT_COMPUTED
        ]
        assert printed == expected
    assert main(["evaluate", "--run", run, "--qrels", qrels, "-m", "map", "-m", "P.5,10", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["trec_eval"]
    assert list(summary) == ["num_q", "map", "P_5", "P_10"]


@pytest.mark.parametrize(
    "argv, said",
    [
        (["-m", "P_avgjg"], "-m P_avgjg: trec_eval's P_avgjg is not computed here"),
        (["-m", "rbp", "--trec-eval-version", "9.0.8"], "-m rbp: trec_eval 9.0.8 has no rbp"),
        (["-m", "P.0"], "cut-offs must be positive"),
        (["--k", "5", "-m", "map"], "-m: selects trec_eval's measures of a --run without --k"),
        (["--implementation", "c"], "--implementation: trec_eval's measures"),
    ],
)
def test_evaluate_run_refuses_selections_by_name(argv, said, capsys):
    from retrieval_conformance.cli import main

    run, qrels = str(GENERATED / "generated.run"), str(GENERATED / "generated.qrels")
    assert main(["evaluate", "--run", run, "--qrels", qrels, *argv]) == 2
    assert said in capsys.readouterr().err


def test_evaluate_run_names_an_unknown_trec_eval_version(capsys):
    from retrieval_conformance.cli import main

    run, qrels = str(GENERATED / "generated.run"), str(GENERATED / "generated.qrels")
    with pytest.raises(SystemExit) as exit_:
        main(["evaluate", "--run", run, "--qrels", qrels, "--trec-eval-version", "8.1"])
    assert exit_.value.code == 2 and "--trec-eval-version: invalid choice: '8.1'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, keywords, measures",
    [
        (["--depth", "7"], {"depth": 7}, ["official"]),
        (["--judged-only"], {"judged_only": True}, ["official"]),
        (["--ignore-identical-ids"], {"ignore_identical_ids": True}, ["official"]),
        (["--gains", "1=3,2=9.5", "-m", "map"], {}, ["map", "ndcg.1=3.0,2=9.5"]),
    ],
)
def test_run_flags_reach_trec_evals_selection(argv, keywords, measures, capsys):
    """Without --k the run's flags go to trec_eval_measures (--gains as ndcg's gain map)."""
    from retrieval_conformance.cli import main

    run, qrels = GENERATED / "generated.run", GENERATED / "generated.qrels"
    assert main(["evaluate", "--run", str(run), "--qrels", str(qrels), "--json", *argv]) == 0
    printed = json.loads(capsys.readouterr().out)["trec_eval"]
    assert printed == dict(trec_eval_measures(run, qrels, measures, **keywords).summary)
