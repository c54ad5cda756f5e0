"""Compare retrieval runs with paired significance tests: "is run B really better than run A?".

Every run is evaluated on the same queries, so each query gives one *paired* observation
per metric: its value under the baseline, ``a_i``, and under the other run, ``b_i``.  The
tests work on the per-query differences ``d_i = b_i - a_i`` over the queries counted in
both runs, which removes the (large) variation between queries that an unpaired test
would have to fight.

>>> import retrieval_conformance as rc
>>> cmp = rc.compare({"A": rc.evaluate(**run_a), "B": rc.evaluate(**run_b)})
>>> print(cmp.to_text())
>>> cmp.regressions(margin=0.01)      # rows where B is worse than A beyond 0.01, significantly

Command line (``retrieval-conformance compare``)::

    retrieval-conformance compare base.npz new.npz --shared ids_and_cams.npz --protocol reid \\
        --metrics map rank1 --fail-if-worse map:0.01

This module is the place to import from; the work is done in modules that import each
other only downward, in this order:

* :mod:`~retrieval_conformance.comparison.stats`: the paired tests, :func:`holm`, and the
  names of the tests and corrections;
* :mod:`~retrieval_conformance.comparison.arguments`: the checks of the arguments, the
  metric names, every run's per-query values;
* :mod:`~retrieval_conformance.comparison.tables`: :class:`ComparisonRow`,
  :class:`Comparison` and their text, markdown, LaTeX and JSON output;
* :mod:`~retrieval_conformance.comparison.runs`: :func:`compare`;
* :mod:`~retrieval_conformance.comparison.cli`: :func:`compare_main`, the command line.
"""
from __future__ import annotations

import sys

from retrieval_conformance.comparison.arguments import METRICS
from retrieval_conformance.comparison.cli import compare_main
from retrieval_conformance.comparison.runs import compare
from retrieval_conformance.comparison.stats import CORRECTIONS, TESTS, holm
from retrieval_conformance.comparison.tables import Comparison, ComparisonRow

__all__ = ["Comparison", "ComparisonRow", "compare", "compare_main", "holm", "CORRECTIONS", "METRICS", "TESTS"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(compare_main())
