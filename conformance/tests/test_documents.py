"""The documents stay true: the README's tour and the user guides' examples run as pasted, every
shell command of the README and the docs runs as pasted (or is named here with why it is not run),
and every path ARCHITECTURE.md names exists.

These read the checkout (README.md, docs/, ARCHITECTURE.md), found from the working directory
upwards (tox and CI run from the checkout); installed elsewhere without one, they are skipped.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import pathlib
import re
import shlex

import pytest
from retrieval_conformance.conformance.support.checkout import checkout

#: documents whose ```python blocks run, in order, in one namespace per document
RUNNABLE = (
    "README.md",
    "docs/guide/hashing.md",
    "docs/guide/reid.md",
    "docs/guide/landmark.md",
    "docs/guide/ir.md",
    "docs/conventions.md",
    "docs/metrics-subset.md",
)
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: documents whose ```python blocks are snippets over the reader's own arrays or services, not
#: tours: why each is not run (their blocks are compiled, so a syntax error still fails)
SNIPPETS = {
    "docs/audit.md": "audits the reader's distances D (the README's tour builds such arrays)",
    "docs/benchmarks.md": "times the reader's own metric function (mylab)",
    "docs/compare.md": "compares the reader's runs (files and per-query arrays)",
    "docs/formats.md": "reads the reader's files and DataFrames (pandas)",
    "docs/guide/distributed.md": "runs under torchrun, one process per rank",
    "docs/guide/runs.md": "uses the arrays of the ReID and hashing guides, named there (D, M, q, g)",
    "docs/implementations.md": "connects to the reader's dask scheduler",
    "docs/metrics-subset.md": "evaluates the README tour's codes qB, rB, qL, rL; one line shows an error",
    "docs/trec_eval.md": "reads the reader's run and qrels files",
}
#: the documents whose shell commands are checked
DOCUMENTS = ("README.md", "docs/*.md", "docs/guide/*.md")
SHELL = re.compile(r"^```(?:bash|sh|shell)\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: commands not run, by their first words (the program's file name): why
NOT_RUN = {
    ("python3", "-m", "venv"): "makes a virtual environment",
    ("pip",): "installs packages",
    ("pre-commit",): "installs the git hook",
    ("tox",): "runs the whole suite or the benchmarks (minutes)",
    ("pytest",): "runs a test suite against the reader's function or tests",
    ("retrieval-conformance", "golden"): "the main job: every implementation on every golden case (minutes)",
    ("retrieval-conformance", "bench", "run"): "benchmarks at dataset scale (minutes)",
    ("retrieval-conformance", "bench", "features"): "the feature benchmarks at dataset scale (minutes)",
    ("python", "-m"): "a long job (the fuzz campaign, the audit's cost at full scale, the trec_eval goldens "
    "from trec_eval binaries); the module must exist",
}
#: commands that run, and may stop at the reader's data they need (exit 2): what that data is
NEEDS_SAVED_RUNS = {("retrieval-conformance", "bench", "report"), ("retrieval-conformance", "bench", "plot")}


def python_blocks(text: str):
    return [m.group(1) for m in BLOCK.finditer(text)]


def test_block_extraction_finds_fenced_python_only():
    text = "a\n```python\nx = 1\n```\n```bash\nls\n```\n```python\ny = x + 1\n```\n"
    assert python_blocks(text) == ["x = 1\n", "y = x + 1\n"]


@pytest.mark.parametrize("document", RUNNABLE)
def test_python_examples_run_as_pasted(document, tmp_path, monkeypatch):
    pytest.importorskip("numpy")
    path = checkout() / document
    blocks = python_blocks(path.read_text(encoding="utf-8"))
    assert blocks, f"{document} has no python block"
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    namespace = {"__name__": "__readme__"}
    for number, block in enumerate(blocks, 1):
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(compile(block, f"{document} block {number}", "exec"), namespace)
            except Exception as exc:  # name the block, then fail with its traceback
                raise AssertionError(f"{document}, python block {number} fails as pasted: {exc!r}") from exc


def _documents():
    root = checkout()
    paths = sorted({p for glob in DOCUMENTS for p in root.glob(glob)})
    return [(p.relative_to(root).as_posix(), p.read_text(encoding="utf-8")) for p in paths]


def test_every_document_with_python_runs_or_says_why_not():
    for name, text in _documents():
        blocks = python_blocks(text)
        if not blocks:
            continue
        assert name in RUNNABLE or name in SNIPPETS, (
            f"{name} has python blocks: add it to RUNNABLE (its blocks run as pasted) or to SNIPPETS with why not"
        )
        for number, block in enumerate(blocks, 1):
            compile(block, f"{name} block {number}", "exec")  # a snippet still parses


def shell_commands(text: str):
    """(the command as written, its words, the exit status its comment promises or None) for every
    command of the ```bash blocks; ``a && b`` is two commands, continuation lines are joined."""
    for block in SHELL.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            promised = re.search(r"#.*\bexit (\d+)", line)
            words = shlex.split(line, comments=True)
            while words:
                cut = words.index("&&") if "&&" in words else len(words)
                command, words = words[:cut], words[cut + 1 :]
                while command and re.fullmatch(r"[A-Z_]+=\S*", command[0]):  # RC_FUZZ=long python ...
                    command = command[1:]
                if command:
                    command[0] = os.path.basename(command[0])  # .venv/bin/pip is pip
                    yield line, command, int(promised.group(1)) if promised else None


def test_shell_command_extraction():
    text = "```bash\nA=1 .venv/bin/pip install x && tox  # exit 1\nrc check m:f \\\n    --adapter reid\n```\n"
    assert [c for _, c, _ in shell_commands(text)] == [
        ["pip", "install", "x"],
        ["tox"],
        ["rc", "check", "m:f", "--adapter", "reid"],
    ]
    assert [p for _, _, p in shell_commands(text)] == [1, 1, None]


def _not_run(command) -> "str | None":
    return next((why for words, why in NOT_RUN.items() if tuple(command[: len(words)]) == words), None)


def _missing_input(command, message: str, folder: pathlib.Path) -> bool:
    """Whether a usage error names an input of the command that is not there: the reader's file or module."""
    if re.search(r"unrecognized arguments|invalid choice|expected one argument|not an option", message):
        return False  # argparse's words for a flag or value the command does not take
    if "no [[tool.retrieval-conformance.check]] table found" in message:
        return True  # check with no target: the reader's declared functions (their pyproject.toml)
    for word in command[1:]:
        name = word.split(":")[0]  # mylab/eval.py:evaluate
        looks_like_input = "/" in name or re.search(r"\.[A-Za-z]", name)  # run.npz, mylab.eval
        if looks_like_input and not name.startswith("-") and name in message and not (folder / name).exists():
            return True
    return False


def test_shell_commands_run_as_pasted(tmp_path, monkeypatch, capsys):
    """Each ``retrieval-conformance`` command runs in an empty folder: it stops with exit status 2 at
    an input the reader brings (their run, qrels or module; every flag was taken by then), or it
    exits as its comment says (0 or 1 without one); a flag or value that does not exist is a usage
    error that names no such input, and fails (a value a command checks only after reading its
    inputs is not reached). Commands that take minutes or install things are in NOT_RUN."""
    from retrieval_conformance.cli import main

    documents = _documents()
    monkeypatch.chdir(tmp_path)
    failures, ran = [], 0
    for name, text in documents:
        for line, command, promised in shell_commands(text):
            why = _not_run(command)
            if why is not None:
                if command[:2] == ["python", "-m"] and importlib.util.find_spec(command[2]) is None:
                    failures.append(f"{name}: {line.strip()}: no module {command[2]}")
                continue
            if command[0] != "retrieval-conformance":
                failures.append(f"{name}: {line.strip()}: neither run here nor in NOT_RUN with why not")
                continue
            try:
                status = main(command[1:])
            except SystemExit as exc:  # argparse's usage errors leave through SystemExit
                status = exc.code
            ran += 1
            error = (capsys.readouterr().err.strip().splitlines() or [""])[-1]
            if status == 2 and (_missing_input(command, error, tmp_path) or tuple(command[:3]) in NEEDS_SAVED_RUNS):
                continue  # it stopped at the reader's data, after taking every flag
            if promised is not None and status != promised:
                failures.append(f"{name}: {line.strip()}: exit {status}, the comment says {promised}: {error}")
            elif status not in (0, 1):
                failures.append(f"{name}: {line.strip()}: exit {status}: {error}")
    assert ran > 10, f"only {ran} commands ran: is the extraction broken?"
    assert not failures, "\n".join(failures)


def test_readme_tour_prints_what_it_says():
    """The numbers the tour quotes in its comments are what it computes."""
    pytest.importorskip("numpy")
    readme = (checkout() / "README.md").read_text(encoding="utf-8")
    tour = python_blocks(readme)[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(tour, "README tour", "exec"), {"__name__": "__readme__"})
    printed = out.getvalue()
    for quoted in re.findall(r"#\s.*?(0\.\d{4})\.\.\.", tour):
        assert quoted in printed, f"the tour quotes {quoted}... but prints:\n{printed}"


#: where a path ARCHITECTURE.md names may be relative to (it says `contract/evaluate.py` inside
#: the reference's row, `csrc/rc_float.c` inside the implementations')
BASES = (
    "",
    "reference",
    "reference/contract",
    "reference/protocols",
    "reference/protocols/trec",
    "implementations",
    "conformance",
    "conformance/harness",
    "conformance/bench",
    "conformance/fuzz",
    "conformance/support",
    "conformance/problems",
    "api",
    "golden",
    "golden/tools",
    "implementations/csrc",
    "implementations/dask",
    "implementations/vector",
)
PATH = re.compile(r"`([\w.-]+(?:/[\w.-]+)*\.(?:py|c|h|md|json|cpp)|[\w.-]+(?:/[\w.-]+)*/)`")


def test_architecture_names_only_paths_that_exist():
    root = checkout()
    text = (root / "ARCHITECTURE.md").read_text(encoding="utf-8")
    named = {m.group(1).split(":")[0] for m in PATH.finditer(text)}
    assert len(named) > 20, f"ARCHITECTURE.md names too few paths to check: {sorted(named)}"
    missing = sorted(n for n in named if not any((root / base / n).exists() for base in BASES))
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"
