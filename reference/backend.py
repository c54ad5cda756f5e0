"""The reference as an implementation: plain Python per query, exact ``Fraction`` values."""

from __future__ import annotations

from typing import Callable, List, Optional

import numpy as np
from retrieval_conformance.reference.contract.cutoffs import within_gallery
from retrieval_conformance.reference.contract.problem import OPTIONAL_FIELDS, VALUE_FIELDS, Options, PerQuery, Problem
from retrieval_conformance.reference.contract.registry import Implementation
from retrieval_conformance.reference.distances import query_distances
from retrieval_conformance.reference.per_query import QueryValues, query_values
from retrieval_conformance.reference.ranking import tie_groups
from retrieval_conformance.reference.relevance import query_grades, query_junk, query_relevance


def reference_query(problem: Problem, options: Options, q: int) -> QueryValues:
    """Query ``q`` through the whole pipeline: distances -> ties -> relevance/junk -> metrics."""
    groups = tie_groups(
        query_distances(problem, q), query_relevance(problem, q), query_junk(problem, q), query_grades(problem, q)
    )
    return query_values(groups, options, q)


def per_query_from_values(values: List[QueryValues], options: Options) -> PerQuery:
    """Pack exact per-query values into float64 arrays, keeping the Fractions in ``exact``."""

    def column(name: str) -> np.ndarray:
        return np.array([float(getattr(v, name)) for v in values], dtype=np.float64)

    exact = {name: [getattr(v, name) for v in values] for name in PerQuery.FIELDS}
    pq = PerQuery(
        n_relevant=np.array([v.n_relevant for v in values], dtype=np.int64),
        cmc=np.array([[float(c) for c in v.cmc] for v in values], dtype=np.float64).reshape(
            len(values), options.max_rank
        ),
        exact=exact,
        **{name: column(name) for name in VALUE_FIELDS},
    )
    if options.radius is not None:
        for name in OPTIONAL_FIELDS:
            setattr(pq, name, column(name))
            exact[name] = [getattr(v, name) for v in values]
    return pq


class ReferenceImplementation(Implementation):
    """Plain, exact, slow: the yardstick every other implementation is checked against."""

    name = "reference"
    speed_rank = 1000

    @within_gallery
    def compute(
        self, problem: Problem, options: Options, progress: Optional[Callable[[int, int], None]] = None
    ) -> PerQuery:
        values = []
        for q in range(problem.n_queries):
            values.append(reference_query(problem, options, q))
            if progress is not None:
                progress(q + 1, problem.n_queries)
        return per_query_from_values(values, options)
