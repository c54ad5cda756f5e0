"""One options table behind every entry point (``reference/contract/options_table.py``).

Every option of the table is taken by every entry point, or refused by name there; a command
line's flags, choices and help come from the table; and a value given to any entry point is
honoured: the same numbers as ``rc.evaluate`` with that value, on an input where the option
changes them.
"""
from __future__ import annotations

import argparse
import inspect
import json

import numpy as np
import pytest
from retrieval_conformance.reference.contract import conventions, options_table
from retrieval_conformance.reference.contract.options_table import NOT_TAKEN, OPTIONS_TABLE, taken_by
from retrieval_conformance.reference.contract.presets import PRESETS

# an input on which every convention option changes a number: tied scores across the cut-off,
# graded relevance, a query without a relevant item
SCORES = np.array([[0.9, 0.5, 0.5, 0.5, 0.1, 0.1], [0.3, 0.3, 0.3, 0.2, 0.2, 0.1], [0.5, 0.4, 0.3, 0.2, 0.1, 0.0]])
GRADES = np.array([[0, 2, 0, 1, 3, 0], [1, 0, 2, 0, 0, 1], [0, 0, 0, 0, 0, 0]])
K = 3
#: the result fields that show each option
SHOWN_BY = {"ties": "map", "ap_rule": "map", "ap_at_k": "map", "empty": "map", "gain": "ndcg_at_k",
            "discount": "ndcg_at_k", "recall": "recall_at_k"}


def _parameters(func) -> set:
    return set(inspect.signature(func).parameters)


def python_entry_points():
    import retrieval_conformance as rc
    from retrieval_conformance.conformance.harness.entry import check
    from retrieval_conformance.conformance.harness.session import Session
    from retrieval_conformance.reference.contract.evaluate import evaluate

    return {"evaluate": [rc.evaluate, evaluate], "accumulator": [rc.Accumulator.__init__],
            "check": [check, Session.__init__]}


def test_every_entry_point_is_in_the_table():
    assert set(NOT_TAKEN) == {"evaluate", "accumulator", "evaluate-cli", "check", "check-cli", "pytest-plugin"}


@pytest.mark.parametrize("entry_point", ["evaluate", "accumulator", "check"])
def test_python_entry_points_take_exactly_the_options_of_the_table(entry_point):
    for func in python_entry_points()[entry_point]:
        params = _parameters(func)
        missing = [o.name for o in taken_by(entry_point) if o.name not in params]
        assert not missing, f"{func.__qualname__} lacks options of the table: {missing}"
        refused = [name for name in NOT_TAKEN[entry_point] if name in params]
        assert not refused, f"{func.__qualname__} takes {refused}, which the table says it refuses"


def test_identify_passes_every_convention_option_to_the_session():
    from retrieval_conformance.conformance.harness.entry import identify

    # identify takes the overrides as **overrides and hands them to the same Session as check
    assert inspect.getfullargspec(identify).varkw == "overrides"


def _flags(parser: argparse.ArgumentParser) -> dict:
    return {a.option_strings[0]: a for a in parser._actions if a.option_strings}


def _evaluate_parser():
    from retrieval_conformance.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["evaluate"]


def _check_parser():
    from retrieval_conformance.conformance.harness.cli import check_parser

    return check_parser()


@pytest.mark.parametrize("entry_point", ["evaluate-cli", "check-cli"])
def test_command_lines_have_a_flag_per_option_with_the_tables_values(entry_point):
    parser = _evaluate_parser() if entry_point == "evaluate-cli" else _check_parser()
    flags = _flags(parser)
    for option in taken_by(entry_point):
        assert option.flag in flags, f"{entry_point} lacks {option.flag}"
        if option.choices is not None and not (entry_point == "check-cli" and option.name == "protocol"):
            assert tuple(flags[option.flag].choices) == option.values(), option.name
        assert flags[option.flag].help, option.flag
    for name in NOT_TAKEN[entry_point]:
        assert options_table.BY_NAME[name].flag not in flags


@pytest.mark.parametrize("entry_point", ["evaluate-cli", "check-cli"])
def test_command_lines_take_no_abbreviation_of_a_flag(entry_point, capsys):
    """``check --k 5`` once passed as ``--known-deviations 5``: an option is taken by its own name or
    refused by name, never taken as another's abbreviation."""
    parser = _evaluate_parser() if entry_point == "evaluate-cli" else _check_parser()
    argv = ["m:f"] if entry_point == "check-cli" else []
    for name in NOT_TAKEN[entry_point]:
        with pytest.raises(SystemExit) as exc:
            parser.parse_args(argv + [options_table.BY_NAME[name].flag, "5"])
        assert exc.value.code == 2 and options_table.BY_NAME[name].flag in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # a prefix of a flag that exists
        parser.parse_args(argv + ["--prot", "hashing"])
    assert exc.value.code == 2 and "--prot" in capsys.readouterr().err


def test_convention_flags_list_every_value_with_its_meaning():
    for option in OPTIONS_TABLE:
        if option.convention:
            text = option.help()
            for c in conventions.CONVENTIONS:
                if c.option == option.name:
                    assert f"{c.value}: " in text
            assert f"§{conventions.OPTIONS[option.name][0]}" in text


def test_pytest_plugin_declares_every_option_it_takes():
    from retrieval_conformance.conformance.harness import pytest_plugin

    declared = []

    class Group:
        def addoption(self, *names, **kwargs):
            declared.append(names[0])

        add_argument = addoption

    class Parser:
        def getgroup(self, *args, **kwargs):
            return Group()

    pytest_plugin.add_options(Parser())
    for option in taken_by("pytest-plugin"):
        assert option.flag in declared, f"the pytest plugin lacks {option.flag}"


def test_evaluates_docstring_names_every_preset_and_implementation():
    from retrieval_conformance.reference.contract.evaluate import evaluate

    doc = evaluate.__doc__
    for option in taken_by("evaluate"):
        assert option.name in doc, f"evaluate's docstring does not document {option.name}"
    for name in PRESETS:
        assert f"``{name}``" in doc, f"evaluate's docstring does not list the preset {name}"
    for name in options_table.BY_NAME["implementation"].values():
        assert f'"{name}"' in doc, f"evaluate's docstring does not list the implementation {name}"


def _value_that_shows(option: str):
    """A value of ``option`` other than the hashing preset's that changes a number on the input,
    with that result and the preset's."""
    import retrieval_conformance as rc

    base = rc.evaluate(scores=SCORES, relevance=GRADES, k=K, implementation="reference")
    for value in conventions.values(option):
        if value in (getattr(PRESETS["hashing"], option), "error"):
            continue
        want = rc.evaluate(scores=SCORES, relevance=GRADES, k=K, implementation="reference", **{option: value})
        if getattr(want, SHOWN_BY[option]) != getattr(base, SHOWN_BY[option]):
            return value, want
    raise AssertionError(f"the input shows no value of {option}")


@pytest.mark.parametrize("option", options_table.CONVENTION_OPTIONS)
def test_every_entry_point_honours_a_convention_option(option, tmp_path, capsys):
    import retrieval_conformance as rc
    from retrieval_conformance.cli import main

    value, want = _value_that_shows(option)
    field = SHOWN_BY[option]
    # the Accumulator
    acc = rc.Accumulator(k=K, implementation="numpy", **{option: value})
    acc.update(scores=SCORES[:2], relevance=GRADES[:2])
    acc.update(scores=SCORES[2:], relevance=GRADES[2:])
    assert getattr(acc.compute(), field) == pytest.approx(getattr(want, field), abs=1e-12)
    # the command line
    np.savez(tmp_path / "run.npz", scores=SCORES, relevance=GRADES)
    flag = options_table.BY_NAME[option].flag
    assert main(["evaluate", "--npz", str(tmp_path / "run.npz"), "--k", str(K), flag, value, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["options"][option] == value
    assert printed[field] == pytest.approx(getattr(want, field), abs=1e-12)
