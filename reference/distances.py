"""Stage 1 of the pipeline: distances (smaller is closer).

The reference computes Hamming distances itself, per query, in plain Python; float
distances (given, negated scores, or computed from embeddings once for every implementation
by ``contract/embeddings.py``) are used as they are: floats compare exactly, so the
ranking is exact.
"""

from __future__ import annotations

from typing import List, Sequence

from retrieval_conformance.reference.contract.problem import Problem


def hamming_bits(query: Sequence[int], item: Sequence[int]) -> int:
    """Hamming distance of two {0, 1} codes: the number of differing bits, popcount(q XOR r)."""
    return sum(1 for a, b in zip(query, item) if a != b)


def query_distances(problem: Problem, q: int) -> List:
    """Distances of query ``q`` to every gallery item, as exact Python numbers."""
    if problem.distances is not None:
        return [float(v) for v in problem.distances[q]]
    qbits = [int(b) for b in problem.query_bits[q]]
    return [hamming_bits(qbits, [int(b) for b in row]) for row in problem.db_bits]
