"""The golden rank-metric cases (``golden/rank_metrics.json``): nDCG@k, MRR@k, MAP@R, Recall@k.

Every expected value is derived three ways, none of them through this package's code:

1. the hand formula the case records (``formula``), evaluated here in exact fractions, with
   ``d(r)`` the float64 nearest to ``1 / log2(r + 1)`` computed here with 50-digit ``decimal``
   arithmetic (spec §7 nDCG: the discount *is* that float, so an nDCG is an exact rational);
2. a small oracle written in this file from the definitions of spec §4 and §7 (concrete tie
   orders sorted by hand, ``ties="expected"`` by brute force over every order of every tie
   group, ``ties="grouped"`` by the group end ranks);
3. for the scikit-learn cases, the numbers ``sklearn.metrics.ndcg_score`` printed (``printed``).

Then every implementation must reproduce the values: the reference exactly (``Fraction``), the
others as floats equal to ``float(Fraction)`` per query, and means equal to the correctly
rounded mean of those floats (what spec §8's exact aggregation gives).

Note: ``1 / math.log2(r + 1)`` is *not* always the nearest float (it rounds twice): for
r = 2, 5, 8, 17, 19, ... it is one ulp off, so the discounts below come from ``decimal``.
"""

from __future__ import annotations

import ast
import itertools
import math
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Dict, List, Optional, Sequence

import pytest
import retrieval_conformance as rc
from retrieval_conformance import golden
from retrieval_conformance.conformance.support.requirements import require_implementation
from retrieval_conformance.reference.contract import registry

FILE = "rank_metrics.json"
CASES = [c for c in golden.load_cases() if c["file"] == FILE]
IDS = [c["id"] for c in CASES]
SOURCE = golden.load_file(FILE)

#: expected keys that are means over the counted queries, and their per-query keys
MEAN_OF = {"ndcg_at_k": "ndcg", "mrr": "rr", "map_at_r": "ap_at_r", "recall_at_k": "recall_at_k", "map": "ap"}
PER_QUERY = ("ndcg", "rr", "ap_at_r")

#: scikit-learn computes ``1 / np.log2(arange(n) + 2)`` (two roundings: its d(2), d(5), d(8) are one
#: ulp off the nearest float), takes a tie group's discount sum as a difference of a running cumsum,
#: and divides float sums: the values it printed here are 0 to 2 ulps from the exact ones
#: (measured on the two cases).  The tolerance is relative, 2**-49 (8 to 16 ulps for these values),
#: far below any difference a convention makes (ties=stable moves these values by > 1e-2).
SKLEARN_RTOL = 2.0**-49


# -- discounts -------------------------------------------------------------------------------
def nearest_discount(r: int) -> float:
    """The float64 nearest to ``1 / log2(r + 1)``, from 50 significant digits.

    ``float(Decimal)`` rounds correctly; the assertion makes sure the 50-digit value is far
    from a midpoint between two floats, so that the rounding is the one of the true value.
    """
    with localcontext() as ctx:
        ctx.prec = 50
        x = Decimal(2).ln() / Decimal(r + 1).ln()
        nearest = float(x)
        for neighbour in (math.nextafter(nearest, 0.0), math.nextafter(nearest, 2.0)):
            mid = (Decimal(nearest) + Decimal(neighbour)) / 2
            assert abs(x - mid) > x * Decimal("1e-40"), r
    return nearest


def d(r: int) -> Fraction:
    """spec §7 discount=log2, exactly."""
    return Fraction(nearest_discount(r))


def d_trec(r: int) -> Fraction:
    """spec §7 discount=trec_eval_9.0a3, as trec_eval 9.0a3's m_ndcg.c: rank 1 undiscounted, then
    1/log2(r) = d(r - 1)."""
    return Fraction(1) if r == 1 else d(r - 1)


DISCOUNTS = {"log2": d, "trec_eval_9.0a3": d_trec}


# -- the hand formulas -----------------------------------------------------------------------
def formula_value(text: Optional[str]) -> Optional[Fraction]:
    """Evaluate a hand formula (integers, + - * /, parentheses, ``d(r)``) in exact fractions."""
    if text is None:
        return None

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return Fraction(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = walk(node.left), walk(node.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b, ast.Div: lambda: a / b}
            return ops[type(node.op)]()
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "d"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant)
        ):
            return d(int(node.args[0].value))
        raise ValueError(f"unsupported formula element {ast.dump(node)} in {text!r}")

    return walk(ast.parse(text, mode="eval"))


# -- an independent oracle of spec §4 and §7 ------------------------------------------------------
def _gain(g: int, rule: str) -> int:
    return g if rule == "linear" else 2**g - 1


def _concrete(grades: Sequence[int], k: Optional[int], rule: str, disc=d) -> Dict[str, Fraction]:
    """Per-query values of one concrete ranking (grades in rank order, R >= 1)."""
    n = len(grades)
    K = n if k is None else min(k, n)
    ranks = [r for r, g in enumerate(grades, 1) if g > 0]
    R = len(ranks)
    dcg = sum((_gain(g, rule) * disc(r) for r, g in enumerate(grades[:K], 1)), Fraction(0))
    ideal = sorted((g for g in grades if g > 0), reverse=True)[:K]
    idcg = sum((_gain(g, rule) * disc(i) for i, g in enumerate(ideal, 1)), Fraction(0))
    hits = sum(1 for r in ranks if r <= K)
    return {
        "ndcg": dcg / idcg,
        "rr": Fraction(1, ranks[0]) if ranks[0] <= K else Fraction(0),
        "ap_at_r": sum((Fraction(i, r) for i, r in enumerate(ranks, 1) if r <= R), Fraction(0)) / R,
        "ap": sum((Fraction(i, r) for i, r in enumerate(ranks, 1)), Fraction(0)) / R,
        "fraction": Fraction(hits, R),
        "hit": Fraction(int(ranks[0] <= K)),
    }


def _groups(scores: Sequence[float]) -> List[List[int]]:
    """Item indices grouped by equal score, groups from the highest score, items in index order."""
    return [[i for i in range(len(scores)) if scores[i] == s] for s in sorted(set(scores), reverse=True)]


def _grouped(groups: List[List[int]], grades: Sequence[int], k: Optional[int], rule: str, disc=d):
    """spec §4 ties=grouped: every item of a group takes the group's end rank c + n."""
    n_items = sum(len(g) for g in groups)
    K = n_items if k is None else min(k, n_items)
    ends, end = [], 0
    for g in groups:
        end += len(g)
        ends.append(end)
        assert end <= K or end - len(g) >= K, "k inside a tie group is an error under grouped"
    R = sum(1 for g in grades if g > 0)
    m = [sum(1 for i in g if grades[i] > 0) for g in groups]
    dcg = sum((sum(_gain(grades[i], rule) for i in g) * disc(e) for g, e in zip(groups, ends) if e <= K), Fraction(0))
    ideal = sorted((g for g in grades if g > 0), reverse=True)[:K]
    idcg = sum((_gain(g, rule) * disc(i) for i, g in enumerate(ideal, 1)), Fraction(0))
    first_end = next(e for e, mm in zip(ends, m) if mm)
    terms = [(mm * Fraction(h + mm, e), e) for mm, h, e in zip(m, itertools.accumulate([0] + m), ends) if mm]
    return {
        "ndcg": dcg / idcg,
        "rr": Fraction(1, first_end) if first_end <= K else Fraction(0),
        "ap_at_r": sum((t for t, e in terms if e <= R), Fraction(0)) / R,
        "ap": sum((t for t, _ in terms), Fraction(0)) / R,
        "fraction": Fraction(sum(mm for mm, e in zip(m, ends) if e <= K), R),
        "hit": Fraction(int(first_end <= K)),
    }


def oracle_query(
    scores: Sequence[float], grades: Sequence[int], ties: str, k: Optional[int], rule: str, discount: str = "log2"
) -> Optional[Dict[str, Fraction]]:
    """Per-query values under a tie policy; None for a query without a relevant item."""
    if not any(g > 0 for g in grades):
        return None
    groups = _groups(scores)
    disc = DISCOUNTS[discount]
    if ties == "stable":
        return _concrete([grades[i] for g in groups for i in g], k, rule, disc)
    if ties == "reverse":
        return _concrete([grades[i] for g in groups for i in reversed(g)], k, rule, disc)
    if ties == "grouped":
        return _grouped(groups, grades, k, rule, disc)
    assert ties == "expected", ties
    orders = list(itertools.product(*(itertools.permutations(g) for g in groups)))
    total: Dict[str, Fraction] = {}
    for order in orders:
        for key, value in _concrete([grades[i] for g in order for i in g], k, rule, disc).items():
            total[key] = total.get(key, Fraction(0)) + value
    return {key: value / len(orders) for key, value in total.items()}


PRESETS = {  # spec §9: the values of the options these cases read
    "hashing": dict(ties="stable", empty="zero", gain="linear", recall="fraction", discount="log2"),
    "pml": dict(ties="stable", empty="skip", gain="linear", recall="hit", discount="log2"),
    "trec": dict(ties="reverse", empty="zero", gain="linear", recall="fraction", discount="log2"),
    "sklearn-ndcg": dict(ties="expected", empty="zero", gain="linear", recall="fraction", discount="log2"),
}


def _options(case) -> Dict[str, object]:
    call = dict(case["call"])
    opts = dict(PRESETS[call.pop("protocol", "hashing")])
    opts.update({key: call[key] for key in ("ties", "empty", "gain", "recall", "discount") if key in call})
    opts["k"] = call.get("k")
    return opts


def oracle_per_query(case) -> Dict[str, List[Optional[Fraction]]]:
    """The oracle's per-query values of every metric (None for a query left out of the means)."""
    opts = _options(case)
    scores, grades = case["input"]["scores"], case["input"]["relevance"]
    per_query = [
        oracle_query(s, g, opts["ties"], opts["k"], opts["gain"], opts["discount"]) for s, g in zip(scores, grades)
    ]
    counted = [v is not None or opts["empty"] == "zero" for v in per_query]
    out = {}
    for field in ("ndcg", "rr", "ap_at_r", "ap", "recall_at_k"):
        key = opts["recall"] if field == "recall_at_k" else field
        out[field] = [None if not c else (v[key] if v is not None else Fraction(0)) for v, c in zip(per_query, counted)]
    return out


def mean(values: List[Optional[Fraction]]) -> Fraction:
    chosen = [v for v in values if v is not None]
    return sum(chosen, Fraction(0)) / len(chosen)


def oracle(case) -> Dict[str, object]:
    """Every expected key of a case, from the oracle: per-query lists and means."""
    per_query = oracle_per_query(case)
    return {key: per_query[key] if key in PER_QUERY else mean(per_query[MEAN_OF[key]]) for key in case["expected"]}


def expected_of(case) -> Dict[str, object]:
    return {
        key: [golden.parse_value(v) for v in text] if isinstance(text, list) else golden.parse_value(text)
        for key, text in case["expected"].items()
    }


# -- the file and its derivations ---------------------------------------------------------------
def test_file_is_complete():
    assert SOURCE["schema"] == 1 and SOURCE["source"]
    assert len(CASES) >= 25
    assert len(set(IDS)) == len(IDS)
    for case in CASES:
        assert case["provenance"].strip() and case["clauses"] and case["expected"], case["id"]
        assert set(case["formula"]) == set(case["expected"]), case["id"]
        assert set(case["input"]) == {"scores", "relevance"}, case["id"]


def test_recorded_discounts_are_the_nearest_floats():
    """The discounts the file lists (hex) are the float64 numbers nearest to 1/log2(r + 1);
    d(1), d(3), d(15) are exactly 1, 1/2, 1/4, and d(7) is the float nearest to 1/3."""
    table = SOURCE["discounts"]
    assert table, "no discounts recorded"
    for rank, text in table.items():
        assert float.fromhex(text) == nearest_discount(int(rank)), rank
    assert [d(r) for r in (1, 3, 15)] == [1, Fraction(1, 2), Fraction(1, 4)]
    assert d(7) == Fraction(1 / 3) == Fraction(1, 3) - Fraction(1, 3 * 2**54)  # 1/3 is no float
    used = {int(r) for case in CASES for text in _formulas(case) for r in _ranks_in(text)}
    assert used <= {int(r) for r in table}, sorted(used - {int(r) for r in table})


def _formulas(case) -> List[str]:
    out = []
    for value in case["formula"].values():
        out.extend(v for v in (value if isinstance(value, list) else [value]) if v is not None)
    return out


def _ranks_in(text: str) -> List[int]:
    return [int(node.args[0].value) for node in ast.walk(ast.parse(text, mode="eval")) if isinstance(node, ast.Call)]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_hand_formulas_give_the_expected_values(case):
    for key, want in expected_of(case).items():
        formula = case["formula"][key]
        got = [formula_value(f) for f in formula] if isinstance(formula, list) else formula_value(formula)
        assert got == want, (key, formula)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_independent_oracle_gives_the_expected_values(case):
    assert oracle(case) == expected_of(case)


SKLEARN_CASES = [c for c in CASES if "sklearn" in c]


def test_there_are_sklearn_cases():
    assert len(SKLEARN_CASES) >= 2


@pytest.mark.parametrize("case", SKLEARN_CASES, ids=[c["id"] for c in SKLEARN_CASES])
def test_sklearn_printed_values_are_the_exact_values(case):
    """What scikit-learn printed agrees with the exact value to ``SKLEARN_RTOL``."""
    exact = Fraction(case["expected"]["ndcg_at_k"])
    printed = float(case["sklearn"]["printed"])
    assert abs(printed - float(exact)) <= SKLEARN_RTOL * float(exact)
    per_query = [float(v) for v in case["sklearn"]["printed_per_query"]]
    want = [Fraction(v) for v in case["expected"]["ndcg"]]
    assert all(abs(p - float(w)) <= SKLEARN_RTOL * float(w) for p, w in zip(per_query, want))


@pytest.mark.parametrize("case", SKLEARN_CASES, ids=[c["id"] for c in SKLEARN_CASES])
def test_sklearn_still_prints_the_recorded_values(case):
    """Re-run ``ndcg_score`` where scikit-learn is installed (the provenance, not a dependency)."""
    metrics = pytest.importorskip("sklearn.metrics")
    import numpy as np

    y_true = np.asarray(case["input"]["relevance"])
    y_score = np.asarray(case["input"]["scores"])
    k = case["call"].get("k")
    got = metrics.ndcg_score(y_true, y_score, k=k)
    assert abs(got - float(case["sklearn"]["printed"])) <= SKLEARN_RTOL * got
    rows = [metrics.ndcg_score(y_true[q : q + 1], y_score[q : q + 1], k=k) for q in range(y_true.shape[0])]
    for row, printed in zip(rows, case["sklearn"]["printed_per_query"]):
        assert abs(row - float(printed)) <= SKLEARN_RTOL * max(row, 1e-300)


# -- every implementation -----------------------------------------------------------------------
def _run(case, name):
    return rc.evaluate(**golden.evaluate_kwargs(case), implementation=name)


def _reference_values(result, key):
    """Exact values of the reference: per-query lists (None where not counted) or the mean."""
    field = key if key in PER_QUERY else MEAN_OF[key]
    exact = result.per_query.exact[field]
    counted = [bool(c) for c in result.counted]
    if key in PER_QUERY:
        return [v if c else None for v, c in zip(exact, counted)]
    chosen = [v for v, c in zip(exact, counted) if c]
    return sum(chosen, Fraction(0)) / len(chosen)


def _float_values(result, key):
    field = key if key in PER_QUERY else MEAN_OF[key]
    values = getattr(result.per_query, field).tolist()
    counted = [bool(c) for c in result.counted]
    if key in PER_QUERY:
        return [v if c else None for v, c in zip(values, counted)]
    return getattr(result, key)


def _correctly_rounded_mean(per_query_exact: List[Optional[Fraction]]) -> float:
    """The mean spec §8 gives from correctly rounded per-query floats: exact sum, one rounding."""
    chosen = [Fraction(float(v)) for v in per_query_exact if v is not None]
    return float(sum(chosen, Fraction(0)) / len(chosen))


@pytest.mark.parametrize("name", registry.names())
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_implementation_reproduces_golden(case, name):
    """The reference exactly; the others bit for bit: each per-query value is float(exact), each
    mean the correctly rounded mean of those floats (spec §8), within 1e-12 of the exact mean."""
    require_implementation(name)
    result = _run(case, name)
    per_query_exact = oracle_per_query(case)
    problems = []
    for key, want in expected_of(case).items():
        if name == "reference":
            got = _reference_values(result, key)
            if got != want:
                problems.append(f"{key}: expected {want}, got {got}")
            continue
        got = _float_values(result, key)
        if isinstance(want, list):
            wanted = [None if w is None else float(w) for w in want]
            same = len(got) == len(wanted) and all(
                (w is None and (g is None or math.isnan(g))) or g == w for g, w in zip(got, wanted)
            )
        else:
            wanted = _correctly_rounded_mean(per_query_exact[MEAN_OF[key]])
            same = got == wanted and abs(wanted - float(want)) <= golden.FLOAT_TOLERANCE
        if not same:
            problems.append(f"{key}: expected {wanted!r} (exact {want}), got {got!r}")
    assert problems == [], f"{name} on {case['id']}"
    assert golden.mismatches(case, result, exact=(name == "reference")) == []
