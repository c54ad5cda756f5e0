"""Compare retrieval runs with paired significance tests: "is run B really better than run A?".

The runs are lined up by query id, so each query gives one *paired* observation per
metric: its value under the baseline, ``a_i``, and under the other run, ``b_i``.  The
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
    retrieval-conformance compare bm25.run dense.run --qrels qrels.txt \\
        --metrics map,ndcg_cut_10,recip_rank,P_10 --pairs all --correction holm

This package's face is the place to import from; its modules import each other only
downward, in this order:

* :mod:`~retrieval_conformance.comparison.arguments`: the checks of the settings;
* :mod:`~retrieval_conformance.comparison.resampling`: the vectorised paired permutation test;
* :mod:`~retrieval_conformance.comparison.stats`: the t-test, the bootstrap intervals, the
  effect size, the Holm and Benjamini--Hochberg corrections, and the names of the tests
  and corrections;
* :mod:`~retrieval_conformance.comparison.metrics`: the one lookup from a metric's name to a
  run's per-query values (``evaluate`` and ``evaluate_run`` results, arrays);
* :mod:`~retrieval_conformance.comparison.pairing`: one definition for every run, queries
  paired by id, values screened;
* :mod:`~retrieval_conformance.comparison.formatting` and
  :mod:`~retrieval_conformance.comparison.tables`: :class:`ComparisonRow`,
  :class:`Comparison` and their text, markdown, LaTeX and JSON output;
* :mod:`~retrieval_conformance.comparison.runs`: :func:`compare`;
* :mod:`~retrieval_conformance.comparison.trec_runs`: TREC run files for the command line;
* :mod:`~retrieval_conformance.comparison.cli`: :func:`compare_main`, the command line.
"""

from __future__ import annotations

from retrieval_conformance.comparison.cli import compare_main
from retrieval_conformance.comparison.metrics import run_metrics
from retrieval_conformance.comparison.resampling import permutation_p
from retrieval_conformance.comparison.runs import PAIRS, compare
from retrieval_conformance.comparison.stats import (
    CORRECTIONS,
    TESTS,
    MeanInterval,
    benjamini_hochberg,
    cohens_dz,
    holm,
    mean_intervals,
)
from retrieval_conformance.comparison.tables import Comparison, ComparisonRow

__all__ = [
    "Comparison",
    "ComparisonRow",
    "MeanInterval",
    "benjamini_hochberg",
    "cohens_dz",
    "compare",
    "compare_main",
    "holm",
    "mean_intervals",
    "permutation_p",
    "run_metrics",
    "CORRECTIONS",
    "PAIRS",
    "TESTS",
]
