"""The golden cases as harness inputs: every ``evaluate`` case of ``retrieval_conformance.golden``,
or the seeds' worked examples (spec §10) when no golden data is installed.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from retrieval_conformance.conformance.harness.inputs.case import Case, case_from_inputs, fingerprint

SEED000 = dict(
    query_codes=[[1, -1, 1, 1], [-1, 1, -1, -1], [1, -1, -1, -1]],
    db_codes=[
        [1, -1, -1, -1],
        [-1, 1, 1, -1],
        [1, 1, 1, -1],
        [-1, -1, 1, 1],
        [1, 1, -1, -1],
        [1, 1, 1, -1],
        [-1, 1, -1, -1],
    ],
    query_labels=[[1, 0, 0], [1, 1, 0], [0, 0, 1]],
    db_labels=[[0, 1, 0], [1, 1, 0], [1, 0, 1], [0, 0, 1], [0, 1, 0], [0, 0, 1], [1, 1, 0]],
)
SEED003 = dict(
    query_codes=[[1, -1, 1, 1], [-1, -1, -1, 1], [1, 1, -1, 1], [1, 1, 1, -1]],
    db_codes=[[1, -1, 1, -1], [-1, -1, 1, -1], [-1, -1, 1, -1], [1, 1, -1, -1], [-1, 1, -1, -1], [1, 1, -1, 1]],
    query_labels=[[0, 1, 0, 0], [1, 1, 0, 0], [1, 0, 0, 1], [0, 1, 0, 1]],
    db_labels=[[1, 0, 0, 1], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 0], [1, 0, 0, 0], [0, 0, 1, 0]],
)


def builtin_cases() -> List[Case]:
    """The seeds' worked examples (spec §10), used when no golden data is installed."""
    return [
        case_from_inputs("golden/seed000-k5", SEED000, k=5),
        case_from_inputs("golden/seed000-full", SEED000, k=None),
        case_from_inputs("golden/seed003-dcmh-full", SEED003, k=None),
    ]


def golden_cases() -> List[Case]:
    """Every golden case of ``retrieval_conformance.golden`` (kind "evaluate") as a Case.

    The golden file's inputs, ``k`` and ``max_rank`` are used; its protocol is not (the
    harness evaluates every input under the protocol being checked).  Falls back to the
    built-in seed cases when the golden package has no loader.
    """
    try:
        from retrieval_conformance.golden import load_cases
    except ImportError:
        return builtin_cases()
    out = []
    for raw in load_cases():
        inputs = raw.get("input", {})
        call = raw.get("call", {})
        usable = {
            key: inputs[key]
            for key in (
                "distances",
                "scores",
                "query_codes",
                "db_codes",
                "relevance",
                "query_labels",
                "db_labels",
                "query_cams",
                "db_cams",
                "junk",
            )
            if key in inputs and inputs[key] is not None
        }
        try:
            case = case_from_inputs(
                f"golden/{raw['id']}",
                usable,
                k=call.get("k"),
                max_rank=int(call.get("max_rank", 10)),
                golden=raw,
                family="golden",
            )
        except (KeyError, ValueError, TypeError):
            continue  # an input form the harness does not use (e.g. embeddings)
        out.append(case)
    return dedupe(out) or builtin_cases()


def dedupe(cases: List[Case]) -> List[Case]:
    """One case per distinct input (golden files repeat an input under several protocols)."""
    seen: Dict[Tuple, Case] = {}
    for c in cases:
        seen.setdefault(fingerprint(c), c)
    return list(seen.values())
