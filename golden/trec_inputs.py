"""The generated TREC run and qrels that trec_eval 9.0.8 and 10.0 were run on (``golden/trec_eval.json``).

A small deterministic generator of ours (a splitmix64 stream, so the text never depends on
Python's ``random``), written to be hard on an evaluator:

* scores from a handful of values, so that tie groups straddle the cut-offs 1, 3, 5, 10, 20;
* pairs of scores equal to 12 significant digits (``0.123456789012`` and ``0.123456789013``):
  distinct as float64 (trec_eval 10.0) and equal as float32 (9.0.8 stores C ``float``);
* string docnos whose byte order is not their numeric order (``doc10`` < ``doc9``), mixed
  case and punctuation, one UTF-8 docno;
* graded judgments 0 to 3, negative grades (in the pool, unjudged), unjudged retrieved
  documents, relevant documents never retrieved;
* a query only in the run, queries only in the qrels, a query whose judgments hold no
  relevant document, a query whose run has a document named like the query.

``python -m retrieval_conformance.golden.trec_inputs DIR`` writes ``generated.run`` and
``generated.qrels`` to DIR, with the rounding-boundary collections of :data:`BOUNDARY`
(``boundary-NAME.run``, ``boundary-NAME.qrels``); the committed copies under ``golden/data/trec/`` are that output
(a test regenerates and compares them).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List, Tuple

SEED = 25
_MASK = (1 << 64) - 1


class _Stream:
    """splitmix64: the same numbers on every platform and Python version."""

    def __init__(self, seed: int) -> None:
        self.state = seed & _MASK

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        return self.next() % n

    def pick(self, items):
        return items[self.below(len(items))]


#: score texts: few distinct values (ties), and pairs equal in float32 but not in float64
SCORES = (
    "9",
    "7.5",
    "7.5",
    "3.25",
    "3.25",
    "3.25",
    "1",
    "0.5",
    "0.123456789012",
    "0.123456789013",
    "-2.0000000001",
    "-2.0000000002",
    "12.000001",
    "12.0000011",
)
GRADES = (0, 0, 0, 1, 1, 2, 3, -1)
NAMES = ("doc{n}", "DOC{n}", "d-{n:03d}", "x.{n}", "Doc_{n}")


def _docno(stream: _Stream, q: int, n: int) -> str:
    return stream.pick(NAMES).format(n=n) if n % 11 else f"FT{q}-é{n}"


def generate(seed: int = SEED) -> Tuple[str, str]:
    """(run text, qrels text)."""
    s = _Stream(seed)
    run: List[str] = []
    qrels: List[str] = []
    qids = [f"{q}" for q in range(101, 113)] + ["7", "70", "Q-a"]
    for index, qid in enumerate(qids):
        q = index + 1
        names: Dict[int, str] = {}
        pool = list(range(1, 18 + s.below(30)))
        for n in pool:
            names[n] = _docno(s, q, n)
        in_run = qid != "112" and qid != "70"  # 112 and 70: judged, never retrieved
        judged = qid != "111"  # 111: retrieved, never judged
        if in_run:
            depth = len(pool) - s.below(6)
            for rank, n in enumerate(pool[:depth], 1):
                score = s.pick(SCORES)
                run.append(f"{qid} Q0 {names[n]} {rank} {score} gen{seed}")
            if qid == "105":  # a document named like its query (a self-match)
                run.append(f"{qid} Q0 {qid} {depth + 1} 12.0000011 gen{seed}")
        if judged:
            for n in pool:
                if s.below(4) == 0:
                    continue  # retrieved but unjudged
                grade = 0 if qid == "104" else s.pick(GRADES)  # 104: nothing relevant
                qrels.append(f"{qid} 0 {names[n]} {grade}")
            for extra in range(s.below(4)):  # relevant documents never retrieved
                qrels.append(f"{qid} 0 missing{q}-{extra} {1 + s.below(3) if qid != '104' else 0}")
    return "\n".join(run) + "\n", "\n".join(qrels) + "\n"


#: small collections whose exact means lie on a ``.00005`` rounding boundary, where trec_eval's
#: running float64 sums print the other digit (found by comparing trec_eval's output with exact
#: means on random collections).  Per query: the grades of the ranked documents (None: not
#: judged), the grades of relevant documents never retrieved, and how many more documents are
#: judged non-relevant.
BOUNDARY = {
    # one query: AP = 71/160 = 0.44375 exactly, trec_eval's sum 0.44375000000000003 prints 0.4438
    "ap": [([0, 1, 1, 1, 1, 1], [1, 1, 1], 2)],
    # bpref's mean 407/800 = 0.50875
    "bpref": [
        ([2, 0, None, 1], [1, 2], 3),
        ([1, 1, 0, 1, 1, 1, 2, 0, 1, 0, 0, None], [1, 1, 2], 1),
    ],
    # map's mean 27/160 = 0.16875
    "map": [
        ([0, None, None, 2, 1, 0, None, 1], [2], 2),
        ([0, 0], [], 3),
        ([None, 1, 0, 1], [2, 2], 1),
    ],
    # map_cut_5's mean 59/160 = 0.36875
    "map_cut": [
        ([1, 1, 1, 0, 0, 2, 0, 0, 0], [1], 1),
        ([0, 2, 2, 2, 2, 2, 1], [1, 2], 1),
        ([1, 0, 0, None, None, 2, 0, 0, 0, None, 1, 2], [1, 1], 3),
    ],
}


def boundary(name: str) -> Tuple[str, str]:
    """(run text, qrels text) of one collection of :data:`BOUNDARY`: scores 100, 99, ... so the
    ranking is the order given."""
    run: List[str] = []
    qrels: List[str] = []
    for q, (ranked, missing, nonrelevant) in enumerate(BOUNDARY[name]):
        qid = f"q{q}"
        for i, grade in enumerate(ranked):
            run.append(f"{qid} Q0 d{i:02d} {i + 1} {100 - i} {name}")
            if grade is not None:
                qrels.append(f"{qid} 0 d{i:02d} {grade}")
        qrels += [f"{qid} 0 u{j} {grade}" for j, grade in enumerate(missing)]
        qrels += [f"{qid} 0 n{j} 0" for j in range(nonrelevant)]
    return "\n".join(run) + "\n", "\n".join(qrels) + "\n"


def main(argv: List[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m retrieval_conformance.golden.trec_inputs DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    run, qrels = generate()
    (out / "generated.run").write_text(run, encoding="utf-8")
    (out / "generated.qrels").write_text(qrels, encoding="utf-8")
    for name in BOUNDARY:
        run, qrels = boundary(name)
        (out / f"boundary-{name}.run").write_text(run, encoding="utf-8")
        (out / f"boundary-{name}.qrels").write_text(qrels, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
