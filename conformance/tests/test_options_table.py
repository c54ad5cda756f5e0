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
SHOWN_BY = {
    "ties": "map",
    "ap_rule": "map",
    "ap_at_k": "map",
    "empty": "map",
    "gain": "ndcg_at_k",
    "discount": "ndcg_at_k",
    "recall": "recall_at_k",
}


def python_entry_points():
    """entry point -> the callables that take its options, and the objects whose docstrings list them"""
    import retrieval_conformance as rc
    from retrieval_conformance.conformance.harness.entry import check
    from retrieval_conformance.conformance.harness.session import Session
    from retrieval_conformance.reference.contract.evaluate import evaluate

    return {
        "evaluate": ([rc.evaluate, evaluate], [evaluate]),
        "accumulator": ([rc.Accumulator.__init__], [rc.Accumulator]),
        "check": ([check, Session.__init__], [check, Session]),
    }


def signature_problems(entry_point: str) -> list:
    """What the signatures of ``entry_point`` get wrong against the table (empty: nothing)."""
    problems = []
    for func in python_entry_points()[entry_point][0]:
        params = inspect.signature(func).parameters
        problems += [
            f"{func.__qualname__} lacks the option {o.name}" for o in taken_by(entry_point) if o.name not in params
        ]
        problems += [
            f"{func.__qualname__} takes {name}, which the table says it refuses"
            for name in NOT_TAKEN[entry_point]
            if name in params
        ]
        # a convention's default is the preset's: None, never a value that would override every preset
        problems += [
            f"{func.__qualname__}: {name} defaults to {params[name].default!r}, not None (the preset's)"
            for name in options_table.CONVENTION_OPTIONS
            if name in params and params[name].default is not None
        ]
    return problems


def _entry_lines(doc: str) -> dict:
    """numpydoc parameter entries of a docstring: name -> its ``name : type`` line"""
    lines = [line.strip() for line in doc.splitlines()]
    return {line.split(" : ")[0]: line for line in lines if " : " in line and line.split(" : ")[0].isidentifier()}


def docstring_problems(entry_point: str) -> list:
    """What the docstrings of ``entry_point`` get wrong against the table: an option taken without its
    entry or one of its values, a refused option documented, a slot left unfilled."""
    problems = []
    for obj in python_entry_points()[entry_point][1]:
        doc, name = obj.__doc__ or "", obj.__qualname__
        entries = _entry_lines(doc)
        if options_table.SLOT in doc:
            problems.append(f"{name}: the {options_table.SLOT} slot is not filled")
        for option in taken_by(entry_point):
            if option.name not in entries:
                problems.append(f"{name}'s docstring has no entry for the option {option.name}")
                continue
            problems += [
                f"{name}'s docstring: {option.name} does not list {value!r}"
                for value in option.documented_values() or ()
                if f'"{value}"' not in entries[option.name]
            ]
        problems += [
            f"{name}'s docstring documents {refused}, which it refuses"
            for refused in NOT_TAKEN[entry_point]
            if refused in entries
        ]
    return problems


def test_every_entry_point_is_in_the_table():
    assert set(NOT_TAKEN) == {"evaluate", "accumulator", "evaluate-cli", "check", "check-cli", "pytest-plugin"}


@pytest.mark.parametrize("entry_point", ["evaluate", "accumulator", "check"])
def test_python_entry_points_take_exactly_the_options_of_the_table(entry_point):
    assert signature_problems(entry_point) == []


@pytest.mark.parametrize("entry_point", ["evaluate", "accumulator", "check"])
def test_docstrings_document_every_option_with_its_values(entry_point):
    assert docstring_problems(entry_point) == []


def test_an_option_added_to_the_table_fails_until_every_entry_point_takes_it(monkeypatch):
    """The mutation the tests above exist for: a new row of the table, and no entry point updated."""
    dummy = options_table.Option("dummy_option", "an option no entry point takes yet", choices=lambda: ("a", "b"))
    monkeypatch.setattr(options_table, "OPTIONS_TABLE", OPTIONS_TABLE + (dummy,))
    monkeypatch.setitem(options_table.BY_NAME, dummy.name, dummy)
    for entry_point in ("evaluate", "accumulator", "check"):
        assert any("lacks the option dummy_option" in p for p in signature_problems(entry_point)), entry_point
        # the docstrings were generated at import, before the row: the check sees the stale ones
        assert any("no entry for the option dummy_option" in p for p in docstring_problems(entry_point)), entry_point

    # what is generated from the table follows it: a docstring slot, the command lines' flags
    @options_table.documented("evaluate")
    def entry(dummy_option="a"):
        """Parameters
        ----------
        {options}
        """

    assert 'dummy_option : {"a", "b"}, default "a"' in entry.__doc__
    assert "--dummy-option {a,b}" in _evaluate_parser().format_help()
    assert "--dummy-option {a,b}" in _check_parser().format_help()
    assert "--dummy-option" in _plugin_options()


def test_a_docstring_without_the_slot_or_with_details_of_a_stranger_is_an_error():
    def no_slot(k=None):
        """Parameters
        ----------
        k : int
        """

    with pytest.raises(ValueError, match="slot"):
        options_table.documented("evaluate")(no_slot)

    def slot(k=None):
        """{options}"""

    with pytest.raises(ValueError, match=r"does not take: \['k'\]"):
        options_table.documented("check", k="the harness draws cut-offs")(slot)


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


def _plugin_options() -> dict:
    """flag -> the keyword arguments the pytest plugin declares it with"""
    from retrieval_conformance.conformance.harness import pytest_plugin

    declared = {}

    class Group:
        def addoption(self, *names, **kwargs):
            declared[names[0]] = kwargs

        add_argument = addoption

    class Parser:
        def getgroup(self, *args, **kwargs):
            return Group()

    pytest_plugin.add_options(Parser())
    return declared


def test_pytest_plugin_declares_every_option_it_takes_with_the_tables_values():
    from retrieval_conformance.conformance.harness.session import LANDMARK_CONVENTIONS

    declared = _plugin_options()
    for option in taken_by("pytest-plugin"):
        assert option.flag in declared, f"the pytest plugin lacks {option.flag}"
        assert declared[option.flag]["help"], option.flag
        if option.choices is not None:
            # --protocol also takes the landmark presets of the oxford adapter
            extra = tuple(LANDMARK_CONVENTIONS) if option.name == "protocol" else ()
            assert set(declared[option.flag]["choices"]) == set(option.values() + extra), option.name
    for name in NOT_TAKEN["pytest-plugin"]:
        assert options_table.BY_NAME[name].flag not in declared


@pytest.mark.parametrize("entry_point", ["evaluate-cli", "check-cli"])
def test_command_line_help_shows_every_option_and_value(entry_point):
    text = (_evaluate_parser() if entry_point == "evaluate-cli" else _check_parser()).format_help()
    for option in taken_by(entry_point):
        assert option.flag in text, f"{entry_point} --help lacks {option.flag}"
        if option.convention:  # the values, and their meanings from the specification
            for value in option.values():
                assert value in text, f"{entry_point} --help: {option.flag} lacks {value}"


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
