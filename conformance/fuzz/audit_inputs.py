"""The fuzz campaign for the audit: arrays, ``.npz`` files and TREC runs, every ``--fail-if`` form, hostile ids.

A case (:func:`draw_audit_case`) is one audit: small data with many ties and sometimes queries
without a relevant item (NaN values under ``empty=nan``), given as arrays to ``rc.audit``, as an
``.npz`` to ``retrieval-conformance audit``, or as a TREC run and qrels whose topic ids and
docnos are hostile (``<script>``, ``"><svg/onload=...>``, ``javascript:``, ``=HYPERLINK``); with
a declared protocol, a cut-off, sometimes reported numbers, one to three ``--fail-if``
conditions of every form (valid or not) and a report format; sometimes an option or a file
that must be refused (``--k 1_0``, a 5,000-digit number, bare ``\\r`` line ends, JSON Lines
nested deep or with a repeated key).

What a correct audit does (:func:`classify_audit_case`):

* the command exits 0 or 1, or 2 with a last stderr line ``error: ...`` naming an option or the
  file it read (``rc.audit`` raises a ``ValueError``/``TypeError`` whose message starts with an
  argument's name); anything else is an ``unnamed_error``;
* the exit status is 1 exactly when a condition holds, judged from ``rc.evaluate`` (or
  ``evaluate_run``), not from the audit's own tables: ``METRIC op x`` from the declared
  protocol's value, ``tie_interval:METRIC op x`` from the optimistic minus the pessimistic value;
  a missing or NaN value fails every operator, and so does ``reproduced`` without reported
  numbers (a ``wrong_number`` otherwise);
* ``--format json`` parses as strict JSON; ``--format html`` has no element or attribute that
  could run script (:func:`~.html_check.script_hazards`).

Run with ``python -m retrieval_conformance.conformance.fuzz --target audit --cases N``.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import operator
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

from .classify import Outcome
from .html_check import script_hazards

__all__ = ["AuditCase", "classify_audit_case", "draw_audit_case"]

HOSTILE_IDS = (
    "<script>alert(1)</script>",
    "<img/src=x/onerror=alert(1)>",
    '"><svg/onload=alert(1)>',
    "'onmouseover='alert(1)'",
    "javascript:alert(1)",
    "</style><script>x</script>",
    '=HYPERLINK("http://x")',
    "<!--",
    "&amp;<b>",
    "q1",
    "301",
)
_OPERATORS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": operator.eq}
_OPERATORS["!="] = operator.ne
_ARRAY_METRICS = ("map", "rank1", "minp", "ndcg", "mrr")
_TREC_METRICS = ("map", "P_2", "ndcg_cut_2", "recip_rank", "Rprec")
_FINDINGS = ("ties", "self_matches", "empty_queries", "duplicates", "unjudged_top_k", "no_relevant_topics")
#: options that must be refused: (flag, value)
_BAD_OPTIONS = (
    ("--k", "1_0"),
    ("--k", "\u0665"),
    ("--k", str(2**63)),
    ("--k", "0"),
    ("--reported", "map=0." + "1" * 5000),
    ("--reported", "map=x"),
    ("--max-rank", "1_0"),
    ("--max-cost", "7"),
    ("--max-rank", str(2**63 - 1)),
    ("--ties", "random"),
    ("--float-grades", "round"),
    ("--fail-if", "map>>1"),
    ("--fail-if", "nothing<1"),
)
#: TREC files that must be refused: (which, bytes)
_BAD_FILES = (
    ("run", b"q1 Q0 d1 1 0.5 t\rq1 Q0 d2 2 0.4 t\r"),
    ("qrels", b"q1 0 d1 " + b"1" * 5000 + b"\n"),
    ("run.jsonl", b"[" * 100_000 + b"\n"),
    ("run.jsonl", b'{"qid": "q1", "docid": "d1", "score": 1, "score": 2}\n'),
)


@dataclass
class AuditCase:
    kind: str  # arrays, npz or trec
    data: Dict[str, Any]  # arrays, or {"run": bytes, "qrels": bytes, "run_name": str}
    options: Dict[str, Any]  # protocol, k, empty, reported (None: not given)
    fail_if: List[str]
    fmt: str = "text"
    bad: Optional[tuple] = None  # an option or a file that must be refused
    change: str = ""
    notes: List[str] = field(default_factory=list)

    def describe(self) -> str:
        return f"{self.kind}: {self.options}, fail_if {self.fail_if}, format {self.fmt}, bad {str(self.bad)[:80]}"


def _condition(d, metrics) -> str:
    op = d.choice(tuple(_OPERATORS))
    limit = d.choice(("0", "0.5", "1", "50%", "0.25", "-1"))
    form = d.integer(0, 5)
    if form == 0:
        return f"{d.choice(metrics)}{op}{limit}"
    if form == 1:
        return f"tie_interval:{d.choice(metrics)}{op}{limit}"
    if form == 2:
        return f"{d.choice(_FINDINGS)}{op}{limit}"
    if form == 3:
        return f"{d.choice(_FINDINGS)}.share{op}{limit}"
    if form == 4:
        return f"reproduced{op}{limit}"
    return d.choice(("map>>1", "bogus>0", "tie_interval:nope>0", "map<", "rank1<0.5;;map>=0"))


def _arrays(d) -> Dict[str, Any]:
    rng = np.random.default_rng(d.integer(0, 2**31))
    n_q, n_g = d.integer(1, 4), d.integer(2, 7)
    distances = rng.integers(0, d.integer(1, 3), size=(n_q, n_g)).astype(np.float64)  # few values: ties
    relevance = (rng.random((n_q, n_g)) < d.choice((0.0, 0.0, 0.3, 0.6))).astype(np.int64)  # 0.0: NaN values
    return {"distances": distances, "relevance": relevance}


def _trec(d) -> Dict[str, Any]:
    topics = [d.choice(HOSTILE_IDS) for _ in range(d.integer(1, 3))]
    docs = [d.choice(HOSTILE_IDS) + str(i) for i in range(d.integer(2, 4))]
    run, qrels = [], []
    for topic in dict.fromkeys(topics):
        for rank, doc in enumerate(docs, 1):
            run.append(f"{topic} Q0 {doc} {rank} {d.choice((1, 1, 0.5, 2))} tag")
            if d.chance(0.6):
                qrels.append(f"{topic} 0 {doc} {d.choice((0, 1, 2))}")
    return {"run": ("\n".join(run) + "\n").encode(), "qrels": ("\n".join(qrels) + "\n").encode(), "run_name": "run"}


def draw_audit_case(d) -> AuditCase:
    """One audit: data, declared options, conditions, a format, and sometimes something to refuse."""
    kind = d.choice(("arrays", "npz", "trec", "trec"))
    metrics = _TREC_METRICS if kind == "trec" else _ARRAY_METRICS
    data = _trec(d) if kind == "trec" else _arrays(d)
    options: Dict[str, Any] = {"k": d.choice((None, 2, 3))}
    if kind != "trec":
        options["empty"] = d.choice((None, "nan", "nan", "zero", "skip"))
    if d.chance(0.3):
        options["reported"] = f"{d.choice(metrics)}={d.choice(('0.5', '0.25', '100%'))}"
    case = AuditCase(kind, data, options, [_condition(d, metrics) for _ in range(d.integer(1, 3))])
    case.fmt = d.choice(("text", "json", "html")) if kind != "arrays" else "html"
    if kind != "arrays" and d.chance(0.15):
        case.bad = d.choice(_BAD_OPTIONS)
    elif kind == "trec" and d.chance(0.1):
        case.bad = d.choice(_BAD_FILES)
    case.change = kind + ("-bad" if case.bad else "")
    return case


# ------------------------------------------------------------------------------ the oracle
def _mean(result, name: str) -> Optional[float]:
    """The declared protocol's value of an array metric, from ``rc.evaluate``'s result (None: missing)."""
    if name.startswith("rank"):
        return float(result.cmc[int(name[4:]) - 1]) if result.cmc.shape[0] >= int(name[4:]) else None
    value = getattr(result, {"ndcg": "ndcg_at_k"}.get(name, name))
    return None if value is None else float(value)


def _oracle(case: AuditCase, folder: str, quantity: str) -> Any:
    """The value ``quantity`` must be judged on: a float, None (missing), or ... (not modelled here)."""
    import retrieval_conformance as rc

    if quantity == "reproduced":
        return ... if case.options.get("reported") else None
    tie = quantity.startswith("tie_interval:")
    name = quantity.split(":", 1)[1] if tie else quantity
    if name not in _ARRAY_METRICS + _TREC_METRICS:
        return ...
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if case.kind == "trec":
            if tie:
                return ...  # the orders of tied documents are the audit's own (trec_eval's docno order...)
            run, qrels = (os.path.join(folder, n) for n in ("run", "qrels"))
            cutoffs = [case.options["k"] or 10]  # the audit's, and a reported measure's own (P_2: 2)
            reported = case.options.get("reported") or ""
            if reported.split("=")[0][-2:] == "_2":
                cutoffs.append(2)
            measures: Dict[str, Any] = {}
            for cutoff in cutoffs:
                measures.update(rc.evaluate_run(run, qrels, k=cutoff).extras["trec_eval"])
            value = measures.get(name)
            return None if value is None else float(value)
        declared = {key: case.options[key] for key in ("k", "empty") if case.options.get(key) is not None}

        def value(**ties: str) -> Optional[float]:
            return _mean(rc.evaluate(**case.data, protocol="hashing", **declared, **ties), name)

        if not tie:
            return value()
        low, high = value(ties="pessimistic"), value(ties="optimistic")
        return None if low is None or high is None else high - low


def _expected(case: AuditCase, folder: str) -> Dict[str, Optional[bool]]:
    """Per condition: whether it must hold (None: not modelled by this oracle, or on its limit)."""
    from retrieval_conformance.conformance.audit import fail_if

    out: Dict[str, Optional[bool]] = {}
    for text in fail_if.conditions(case.fail_if):
        quantity, op, limit = fail_if.parse(text)
        value = _oracle(case, folder, quantity)
        if value is ...:
            out[text] = None
        elif value is None or math.isnan(value):
            out[text] = True  # a missing or NaN value fails every operator
        else:
            out[text] = None if abs(value - limit) < 1e-9 else _OPERATORS[op](value, limit)  # on it: rounding
    return out


# ------------------------------------------------------------------------------ running it
def _write(case: AuditCase, folder: str) -> List[str]:
    """The case's files, and the command's arguments (without --fail-if)."""
    if case.kind == "npz":
        path = os.path.join(folder, "data.npz")
        np.savez(path, **case.data)
        argv = ["--npz", path]
    else:
        for name in ("run", "qrels"):
            with open(os.path.join(folder, name), "wb") as fh:
                fh.write(case.data[name])
        run, qrels = os.path.join(folder, "run"), os.path.join(folder, "qrels")
        if case.bad is not None and case.bad[0] in ("run", "qrels", "run.jsonl"):
            bad = os.path.join(folder, case.bad[0])
            with open(bad, "wb") as fh:
                fh.write(case.bad[1])
            run = bad if case.bad[0] != "qrels" else run
        argv = ["--run", run, "--qrels", qrels]
    for key in ("k", "empty", "reported"):
        if case.options.get(key) is not None:
            argv += ["--" + key, str(case.options[key])]
    if case.bad is not None and case.bad[0].startswith("--"):
        argv += list(case.bad)
    return argv + ["--format", case.fmt]


def _check_report(case: AuditCase, text: str) -> Optional[str]:
    if case.fmt == "json":

        def refuse(constant: str) -> None:
            raise ValueError(f"{constant} is not JSON")

        try:
            json.loads(text, parse_constant=refuse)
        except ValueError as exc:
            return f"--format json is not strict JSON ({str(exc)[:100]})"
    if case.fmt == "html":
        hazards = script_hazards(text)
        if hazards:
            return "HTML that could run script: " + "; ".join(hazards[:3])
    return None


def _run_api(case: AuditCase, folder: str) -> Outcome:
    import retrieval_conformance as rc

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            audit = rc.audit(
                **case.data, protocol="hashing", **{k: v for k, v in case.options.items() if v is not None}
            )
    except (ValueError, TypeError) as exc:
        if str(exc).split(":", 1)[0].replace("_", "").isalnum():
            return Outcome("named_error")
        return Outcome("unnamed_error", f"rc.audit: {str(exc)[:300]}")
    problem = _check_report(case, audit.to_html())
    if problem:
        return Outcome("unnamed_error", problem)
    try:
        met = audit.failures(case.fail_if)
    except ValueError:
        return Outcome("named_error")
    return _judge(case, folder, met, 1 if met else 0)


def _judge(case: AuditCase, folder: str, met: List[str], status: int) -> Outcome:
    """``met``: the conditions the audit says hold (its ``fail-if: CONDITION: ...`` lines)."""
    for text, expected in _expected(case, folder).items():
        said = any(line.startswith(text + ": ") for line in met)
        if expected is not None and expected != said:
            return Outcome("wrong_number", f"--fail-if {text!r}: {'met' if said else 'not met'}, expected the opposite")
    if status != (1 if met else 0):
        return Outcome("wrong_number", f"exit status {status} with {len(met)} condition(s) met")
    return Outcome("value")


def classify_audit_case(case: AuditCase) -> Outcome:
    """Run the audit (the API for arrays, the command otherwise) and classify what it did (module doc)."""
    from retrieval_conformance.conformance.audit.cli import audit_main
    from retrieval_conformance.reference.contract.command_line import run_command

    with tempfile.TemporaryDirectory(prefix="rc-fuzz-audit-") as folder:
        if case.kind == "arrays":
            return _run_api(case, folder)
        argv = _write(case, folder) + [a for c in case.fail_if for a in ("--fail-if", c)]
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                status = run_command(audit_main, argv)
        except SystemExit as exc:  # argparse's usage errors; any other exit (SIGTERM's 143) ends the campaign
            if exc.code != 2:
                raise
            status = exc.code
        except Exception as exc:
            return Outcome("unnamed_error", f"{type(exc).__name__}: {str(exc)[:300]}")
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        if status == 2:
            last = lines[-1] if lines else ""
            # the error names what to fix: an option, or the file (and line) it read
            named = last.startswith("error: ") and ("--" in last or folder in last)
            if named and "Traceback" not in err.getvalue():
                return Outcome("named_error")
            return Outcome("unnamed_error", f"exit 2 with stderr {err.getvalue()[-300:]!r}")
        if case.bad is not None:
            return Outcome("unnamed_error", f"{case.bad[0]} {str(case.bad[1])[:40]!r}: accepted (exit {status})")
        if status not in (0, 1):
            return Outcome("unnamed_error", f"exit status {status!r}: {err.getvalue()[-300:]!r}")
        problem = _check_report(case, out.getvalue())
        if problem:
            return Outcome("unnamed_error", problem)
        met = [line[len("fail-if: ") :] for line in lines if line.startswith("fail-if: ")]
        return _judge(case, folder, met, status)
