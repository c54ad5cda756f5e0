"""Section 3 of a run's audit: what in the run and qrels makes the numbers fragile, with the effect.

Each finding counts what it found and, where the run can be evaluated without it, gives the
main measure with and without it (``effect``): score ties (the tie interval), scores printed
with few decimals or equal in float32 (trec_eval 9.0.8), repeated docnos in a topic (the first
line kept against the last, ranx's reading), topics on one side only (``-c``), topics without a
relevant document (counted as 0 or left out), unjudged documents in the top k (``-J``), and
grades that are not integers (read exactly or truncated, as trec_eval's ``atol``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np
from retrieval_conformance.conformance.audit.trec.data import ROUNDED_DECIMALS
from retrieval_conformance.conformance.audit.trec.evaluator import Evaluation, Setting, TrecEvaluator
from retrieval_conformance.conformance.audit.trec.table import float32_ties, tie_groups
from retrieval_conformance.reference.protocols.trec.evaluation import evaluate_run
from retrieval_conformance.reference.protocols.trec.measures import mean

#: topic ids listed in a finding's detail
SHOWN = 5


def _effect(
    name: str, with_it: Optional[float], without_it: Optional[float], with_means: str, without_means: str
) -> Dict[str, Any]:
    change = None if with_it is None or without_it is None else with_it - without_it
    return {
        "metric": name,
        "with": with_it,
        "without": without_it,
        "with_means": with_means,
        "without_means": without_means,
        "change": change,
    }


def _ids(ids: List[str]) -> str:
    return ", ".join(ids[:SHOWN]) + (", ..." if len(ids) > SHOWN else "")


def tie_findings(
    ev: TrecEvaluator, declared: Setting, intervals: Dict[str, Any], movers: Dict[str, Any], main: str
) -> List[Dict[str, Any]]:
    scores = ev.data.scores(declared.score_dtype)
    qrels = ev.data.qrels(declared.float_grades)
    largest = {"size": 0, "query": None}
    tied = retrieved = mixed = 0
    for qid, docs in scores.items():
        for g in tie_groups(docs, qrels.get(qid, {}), ev.level):
            tied += g["size"]
            mixed += 0 < g["relevant"] < g["size"]
            if g["size"] > largest["size"]:
                largest = {"size": g["size"], "query": qid, "score": g["score"]}
        retrieved += len(docs)
    iv = intervals[main]
    where = f" (topic {largest['query']}, score {largest['score']:g})" if largest["query"] is not None else ""
    out = [
        {
            "kind": "ties",
            "title": "score ties",
            "detail": (
                f"{movers['moved']} of {movers['queries']} topics ({movers['moved'] / movers['queries']:.1%}) "
                f"have a {main} that depends on the order of tied documents"
                + (f", {movers['straddling']} with a tie across the cut-off" if movers["straddling"] else "")
                + f"; {tied} of {retrieved} retrieved documents ({tied / max(retrieved, 1):.1%}) share their "
                f"score; {mixed} tie groups mix relevant and other documents; largest tie group "
                f"{largest['size']} documents{where}"
            ),
            "count": movers["moved"],
            "share": movers["moved"] / max(movers["queries"], 1),
            "largest_tie_group": largest["size"],
            "tied_share": tied / max(retrieved, 1),
            "mixed_groups": mixed,
            "effect": _effect(main, iv["high"], iv["low"], "optimistic order", "pessimistic order"),
        }
    ]
    decimals = ev.data.decimals()
    if tied and decimals is not None and decimals <= ROUNDED_DECIMALS:
        how = "printed with" if ev.data.from_file else "rounded to"
        out.append(
            {
                "kind": "low_precision",
                "title": "scores with few decimals",
                "detail": f"every score is {how} at most {decimals} decimal{'s' if decimals != 1 else ''} "
                f"(as %.{decimals}f writes them): documents closer than that tie",
                "count": tied,
                "share": tied / max(retrieved, 1),
                "decimals": decimals,
                "effect": out[0]["effect"],
            }
        )
    collapsed = float32_ties(ev.data.run)
    if collapsed:
        f32 = ev.run(declared.with_(score_dtype="float32")).means[main]
        f64 = ev.run(declared.with_(score_dtype="float64")).means[main]
        out.append(
            {
                "kind": "float32_ties",
                "title": "scores equal in float32",
                "detail": f"{collapsed} documents differ from another of their topic only beyond float32: they "
                "tie in trec_eval 9.0.8 and earlier (scores stored as C float), not in 10.0",
                "count": collapsed,
                "share": collapsed / max(retrieved, 1),
                "effect": _effect(main, f32, f64, "float32 (trec_eval 9.0.8)", "float64 (trec_eval 10.0)"),
            }
        )
    return out


def duplicate_findings(ev: TrecEvaluator, declared: Setting, main: str) -> List[Dict[str, Any]]:
    repeats = ev.data.text.repeats
    if not ev.data.from_file:
        return []
    if not repeats:
        return [
            {
                "kind": "duplicate_docnos",
                "title": "repeated documents in a topic",
                "count": 0,
                "share": 0.0,
                "detail": "no topic lists a document twice",
                "effect": None,
            }
        ]
    topics = sorted({q for q, _, _, _ in repeats})
    q, d, first, again = repeats[0]
    last = evaluate_run(
        ev.data.text.last_kept,
        ev.data.qrels(declared.float_grades),
        relevance_level=ev.level,
        gains=ev.gains_of(declared),
        depth=declared.depth,
        judged_only=declared.judged_only,
        complete=declared.complete,
        score_dtype=declared.score_dtype,
        float_grades="exact",
        ignore_identical_ids=ev.ignore_identical_ids,
        implementation=ev.implementation,
    )
    ev.calls += 1
    first_kept = ev.run(declared.with_(ties="trec_eval")).means[main]
    return [
        {
            "kind": "duplicate_docnos",
            "title": "repeated documents in a topic",
            "count": len(repeats),
            "share": len(topics) / max(len(ev.data.run), 1),
            "detail": f"{len(repeats)} lines repeat a (topic, document) pair in {len(topics)} topics "
            f"({_ids(topics)}; e.g. topic {q} lists {d} on lines {first} and {again}): trec_eval stops "
            "('duplicate docs'), ranx keeps the last line; the audit keeps the first",
            "effect": _effect(
                main,
                float(last.extras["trec_eval"][main]) if main in last.extras["trec_eval"] else None,
                first_kept,
                "last line kept (ranx)",
                "first line kept",
            ),
        }
    ]


def topic_findings(ev: TrecEvaluator, declared: Setting, base: Evaluation, main: str) -> List[Dict[str, Any]]:
    left = base.left_out
    out = [
        {
            "kind": "run_only_topics",
            "title": "topics in the run but not in the qrels",
            "count": len(left["run_only"]),
            "share": len(left["run_only"]) / max(len(ev.data.run), 1),
            "effect": None,
            "detail": (
                f"{len(left['run_only'])} topics ({_ids(left['run_only'])}) have results but no judgments: "
                "trec_eval ignores them without a word"
            )
            if left["run_only"]
            else "every topic of the run is judged",
        }
    ]
    qrels_only = sorted(set(ev.data.qrels(declared.float_grades)) - set(ev.data.run))
    effect = None
    if qrels_only:
        effect = _effect(
            main,
            ev.run(declared.with_(complete=True)).means[main],
            ev.run(declared.with_(complete=False)).means[main],
            "-c: every judged topic counts, 0 without results",
            "topics with results only",
        )
    out.append(
        {
            "kind": "qrels_only_topics",
            "title": "topics in the qrels but not in the run",
            "count": len(qrels_only),
            "share": len(qrels_only) / max(len(ev.data.qrels(declared.float_grades)), 1),
            "effect": effect,
            "detail": (
                f"{len(qrels_only)} judged topics ({_ids(qrels_only)}) have no results: trec_eval 9.0.8 "
                "leaves them out unless -c, 10.0 stops"
            )
            if qrels_only
            else "every judged topic has results",
        }
    )
    n_rel = np.asarray(base.per_query["num_rel"])
    empty = [base.query_ids[i] for i in np.flatnonzero(n_rel == 0)]
    values = base.per_query[main]
    effect = None
    if empty and (n_rel > 0).any():
        effect = _effect(
            main, base.means[main], mean(list(values[n_rel > 0])), "counted as 0 (trec_eval)", "left out of the mean"
        )
    out.append(
        {
            "kind": "no_relevant_topics",
            "title": "topics without a relevant document",
            "count": len(empty),
            "share": len(empty) / max(n_rel.size, 1),
            "effect": effect,
            "detail": (
                f"{len(empty)} of {n_rel.size} evaluated topics ({_ids(empty)}) have no relevant "
                "document in the qrels: trec_eval counts each as 0 in every mean"
            )
            if empty
            else "every evaluated topic has a relevant document",
        }
    )
    return out


def unjudged_findings(ev: TrecEvaluator, declared: Setting, base: Evaluation, main: str) -> List[Dict[str, Any]]:
    if not ev.cutoffs:
        return []
    k = ev.cutoffs[0]
    judged = np.asarray(base.per_query[f"Judged_{k}"], dtype=np.float64)
    # in float64: k may be any cut-off (2**63 overflows int64); Judged_k divides by k, also for short lists,
    # so the judged documents are judged * k, and the unjudged ones of the n_ret retrieved the rest
    n_ret = np.minimum(np.asarray(base.per_query["num_ret"], dtype=np.float64), float(k))
    unjudged = n_ret - np.round(judged * float(k))
    share = float(unjudged.sum() / max(n_ret.sum(), 1))
    topics = int((unjudged > 0).sum())
    j = ev.run(declared.with_(judged_only=True))
    nj = ev.run(declared.with_(judged_only=False))
    ndcg = f"ndcg_cut_{k}"
    return [
        {
            "kind": "unjudged_top_k",
            "title": f"unjudged documents in the top {k}",
            "count": int(unjudged.sum()),
            "share": share,
            "topics": topics,
            "detail": f"{int(unjudged.sum())} of the {int(n_ret.sum())} documents in the top {k} ({share:.1%}) are "
            f"not judged, in {topics} of {len(judged)} topics; they count as non-relevant, and -J drops "
            f"them: {ndcg} {100 * nj.means[ndcg]:.2f} without -J, {100 * j.means[ndcg]:.2f} with it",
            "effect": _effect(
                main, nj.means[main], j.means[main], "unjudged as non-relevant", "-J: judged documents only"
            ),
        }
    ]


def grade_findings(ev: TrecEvaluator, declared: Setting) -> List[Dict[str, Any]]:
    n = ev.data.float_grade_count()
    if not n:
        return []
    total = sum(len(d) for d in ev.data.qrels("exact").values())
    name = "ndcg"
    exact = ev.run(declared.with_(float_grades="exact")).means[name]
    truncated = ev.run(declared.with_(float_grades="truncate")).means[name]
    return [
        {
            "kind": "float_grades",
            "title": "grades that are not integers",
            "count": n,
            "share": n / total,
            "detail": f"{n} of {total} judgments have a grade that is not an integer (2.5): trec_eval reads it "
            "with atol (2); read exactly, it is its own nDCG gain",
            "effect": _effect(name, exact, truncated, "grades read exactly", "truncated (trec_eval)"),
        }
    ]
