"""What :func:`retrieval_conformance.compare` returns, and its tables.

:class:`ComparisonRow` holds one run against the baseline on one metric; :class:`Comparison`
holds every row with the settings of the call, decides regressions and writes the rows as
plain text, markdown, a LaTeX (booktabs) table or a JSON-ready dict.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Set, Tuple

import numpy as np
from retrieval_conformance.comparison.arguments import (
    canonical_metric,
    check_choice,
    check_digits,
    check_level,
    check_names,
    check_non_negative,
)
from retrieval_conformance.comparison.stats import TEST_LABELS, TESTS

__all__ = ["Comparison", "ComparisonRow", "format_p", "json_ready"]


# -- rows and the comparison ---------------------------------------------------------------
@dataclass(frozen=True)
class ComparisonRow:
    """One paired comparison: one run against the baseline, on one metric.

    Attributes
    ----------
    metric, label : str
        The metric's name (``"map"``, ``"rank1"``, ...) and how tables show it (``"mAP@100"``).
    run, baseline : str
        The compared run and the baseline, as named in ``runs``.
    n_queries : int
        n, the queries counted in both runs (the paired observations).
    mean_baseline, mean_run : float
        ``(1/n) sum a_i`` and ``(1/n) sum b_i`` over those n queries.
    difference : float
        ``mean_run - mean_baseline`` (positive: the run scores higher than the baseline).
    ci_low, ci_high : float
        Bootstrap confidence interval of the mean difference (NaN when n < 2).
    ci_method : str
        ``"BCa"``, ``"percentile"`` (BCa was degenerate), or ``"none"`` (n < 2).
    p_permutation, p_t : float or None
        Two-sided p-values of the paired permutation test and the paired t-test (None when
        that test was not asked for, NaN when it cannot be computed, n < 2).
    p_permutation_adjusted, p_t_adjusted : float or None
        The same after the multiple-comparison correction (equal to the raw ones when
        ``correction`` is None).  Significance and regressions use these.
    permutation_exact : bool
        True when the permutation test enumerated all ``2**n`` sign flips.
    notes : tuple of str
        What was done about a degenerate case (all differences 0, BCa degenerate, ...).
    """

    metric: str
    label: str
    run: str
    baseline: str
    n_queries: int
    mean_baseline: float
    mean_run: float
    difference: float
    ci_low: float
    ci_high: float
    ci_method: str
    p_permutation: Optional[float]
    p_t: Optional[float]
    p_permutation_adjusted: Optional[float]
    p_t_adjusted: Optional[float]
    permutation_exact: bool
    notes: Tuple[str, ...] = ()

    def p_value(self, test: str = "permutation", adjusted: bool = True) -> Optional[float]:
        """The p-value of ``test`` (``"permutation"`` or ``"t"``), corrected unless ``adjusted=False``."""
        check_choice("test", test, TESTS)
        return getattr(self, f"p_{test}" + ("_adjusted" if adjusted else ""))

    def significant(self, alpha: float = 0.05, test: str = "permutation") -> bool:
        """Whether the (corrected) p-value of ``test`` is below ``alpha``."""
        p = self.p_value(test)
        return p is not None and not math.isnan(p) and p < alpha


@dataclass
class Comparison:
    """What :func:`retrieval_conformance.compare` returns: one :class:`ComparisonRow` per run and metric.

    Attributes
    ----------
    rows : list of ComparisonRow
        Every run but the baseline, against the baseline, for every metric (runs in the
        order given, metrics in the order asked).
    baseline : str
    runs : tuple of str
        Every run, the baseline included, in the order given.
    metrics : dict
        Metric name -> display label, in the order asked.
    means : dict
        Run -> metric -> the run's own mean over the queries *it* counts (what ``evaluate``
        reports); the tables of runs (:meth:`to_latex`) show these.
    n_queries : int
        Queries of every run (counted or not).
    tests, n_resamples, confidence, seed, correction
        The settings of the call.
    """

    rows: List[ComparisonRow]
    baseline: str
    runs: Tuple[str, ...]
    metrics: Dict[str, str]
    means: Dict[str, Dict[str, float]]
    n_queries: int
    tests: Tuple[str, ...]
    n_resamples: int
    confidence: float
    seed: Optional[int]
    correction: Optional[str] = None

    @property
    def _primary(self) -> str:
        """The test behind the markers: the permutation test if run, else the t-test."""
        return "permutation" if "permutation" in self.tests or not self.tests else self.tests[0]

    def _metric_key(self, metric: str) -> str:
        return metric if metric in self.metrics else canonical_metric(metric)

    def __str__(self) -> str:
        return self.to_text()

    def row(self, run: str, metric: str) -> ComparisonRow:
        """The row of ``run`` against the baseline on ``metric``."""
        key = self._metric_key(metric)
        for r in self.rows:
            if r.run == run and r.metric == key:
                return r
        raise KeyError(f"no row for run {run!r} and metric {metric!r}; runs compared: "
                       f"{[n for n in self.runs if n != self.baseline]}, metrics: {list(self.metrics)}")

    # -- decisions --------------------------------------------------------------------
    def regressions(self, margin: float, alpha: float = 0.05,
                    metric: Optional[Any] = None) -> List[ComparisonRow]:
        """Rows where a run is worse than the baseline by more than ``margin``, significantly.

        A row is a regression when ``difference < -margin`` and the (corrected)
        permutation-test p-value is below ``alpha``.  Every metric here is "higher is
        better" (for per-query arrays given directly, that is assumed).

        Parameters
        ----------
        margin : float
            Tolerated loss, >= 0, in the metric's units (0.01 = one point of mAP in [0, 1]).
        alpha : float
            Significance level, in (0, 1).
        metric : str or sequence of str, optional
            Only these metrics (default: every metric compared).
        """
        margin = check_non_negative("margin", margin)
        alpha = check_level("alpha", alpha)
        if "permutation" not in self.tests:
            raise ValueError(f"regressions: need the permutation test, but compare() ran tests={self.tests}; "
                             "call compare(..., tests=('permutation', 't'))")
        wanted = set(self.metrics) if metric is None else {self._metric_key(m) for m in check_names("metric", metric)}
        unknown = wanted - set(self.metrics)
        if unknown:
            raise ValueError(f"metric: {sorted(unknown)} not compared; compared metrics: {list(self.metrics)}")
        return [r for r in self.rows if r.metric in wanted and r.difference < -margin
                and r.significant(alpha, "permutation")]

    # -- output -----------------------------------------------------------------------
    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready summary: the settings, every run's means and every row (NaN as None)."""
        return json_ready({
            "baseline": self.baseline,
            "runs": list(self.runs),
            "metrics": dict(self.metrics),
            "queries": self.n_queries,
            "tests": list(self.tests),
            "n_resamples": self.n_resamples,
            "confidence": self.confidence,
            "seed": self.seed,
            "correction": self.correction,
            "means": self.means,
            "rows": [asdict(r) for r in self.rows],
        })

    def _header(self) -> List[str]:
        lines = [f"Paired comparison with baseline {self.baseline!r}: {self.n_queries} queries; each row uses "
                 "the queries counted in both runs (column n)."]
        tests = []
        if "permutation" in self.tests:
            floor = format_p(min(1.0, 2 / (self.n_resamples + 1)))
            tests.append(f"paired {TEST_LABELS['permutation'].name} (sign flips, two-sided, "
                         f"{self.n_resamples} resamples or exact, seed {self.seed}; a resampled p is at least "
                         f"{floor})")
        if "t" in self.tests:
            tests.append(f"paired {TEST_LABELS['t'].name} (two-sided)")
        if tests:
            holm_text = f", Holm-adjusted over {self._family_size()} tests" if self.correction == "holm" else ""
            lines.append("p-values: " + "; ".join(tests) + holm_text + ".")
        lines.append(f"CI: {_percent(self.confidence)} bootstrap interval of the mean difference (BCa, "
                     f"{self.n_resamples} resamples, seed {self.seed}).")
        return lines

    def _family_size(self) -> int:
        """How many rows have a p-value of the test behind the markers (the family Holm adjusts over)."""
        raw = [r.p_value(self._primary, adjusted=False) for r in self.rows]
        return sum(1 for p in raw if p is not None and not math.isnan(p))

    def _table(self, digits: int, alpha: float) -> Tuple[List[str], List[List[str]]]:
        """The header and the cells of the table of :meth:`to_text` and :meth:`to_markdown`."""
        head = ["run", "metric", "n", "baseline", "run mean", "difference", f"{_percent(self.confidence)} CI"]
        head += [TEST_LABELS[t].column for t in self.tests]
        if self.tests:
            head.append("sig.")
        body = []
        for r in self.rows:
            ci = "-" if r.ci_method == "none" else f"[{r.ci_low:+.{digits}f}, {r.ci_high:+.{digits}f}]"
            cells = [r.run, r.label, str(r.n_queries), f"{r.mean_baseline:.{digits}f}",
                     f"{r.mean_run:.{digits}f}", f"{r.difference:+.{digits}f}", ci]
            cells += [format_p(r.p_value(t)) for t in self.tests]
            if self.tests:
                cells.append("*" if r.significant(alpha, self._primary) else "")
            if r.notes:
                cells[1] += f" [{self._note_number(r)}]"
            body.append(cells)
        return head, body

    def _noted_rows(self) -> List[ComparisonRow]:
        """The rows with notes; the footer numbers them from 1, in this order."""
        return [r for r in self.rows if r.notes]

    def _note_number(self, row: ComparisonRow) -> int:
        return self._noted_rows().index(row) + 1

    def _footer(self, alpha: float) -> List[str]:
        lines = []
        if self.tests:
            adjusted = " (Holm-adjusted)" if self.correction else ""
            lines.append(f"* {TEST_LABELS[self._primary].name} p < {alpha:g}{adjusted}.")
        for i, r in enumerate(self._noted_rows(), 1):
            lines.append(f"[{i}] {r.run} {r.label}: " + "; ".join(r.notes))
        return lines

    def to_text(self, digits: int = 4, alpha: float = 0.05) -> str:
        """Plain-text table: one line per run and metric, with the settings and notes.

        ``digits``: decimals of the means, differences and interval; ``alpha``: the level
        behind the ``*`` of the ``sig.`` column (the permutation test's corrected p-value,
        or the t-test's when only it was run).
        """
        alpha = check_level("alpha", alpha)
        head, body = self._table(check_digits(digits), alpha)
        widths = [max(len(row[j]) for row in [head] + body) for j in range(len(head))]
        right = _right_aligned(len(head))

        def line(cells):
            return "  ".join(c.rjust(w) if j in right else c.ljust(w)
                             for j, (c, w) in enumerate(zip(cells, widths))).rstrip()

        out = self._header() + ["", line(head), line(["-" * w for w in widths])]
        out += [line(row) for row in body]
        return "\n".join(out + [""] + self._footer(alpha)).rstrip() + "\n"

    def to_markdown(self, digits: int = 4, alpha: float = 0.05) -> str:
        """GitHub-flavoured markdown: the table of :meth:`to_text`, with the settings below it."""
        alpha = check_level("alpha", alpha)
        head, body = self._table(check_digits(digits), alpha)
        right = _right_aligned(len(head))
        out = ["| " + " | ".join(head) + " |",
               "|" + "|".join("---:" if j in right else "---" for j in range(len(head))) + "|"]
        out += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in body]
        notes = [_md_escape(line) for line in self._header() + self._footer(alpha)]
        return "\n".join(out) + "\n\n" + "\n\n".join(notes) + "\n"

    def to_latex(self, alpha: float = 0.05, test: Optional[str] = None, digits: Optional[int] = None,
                 percent: bool = False, marker: str = r"\dagger") -> str:
        r"""A booktabs table for papers: runs as rows, metrics as columns.

        Each cell is the run's mean (its own, as ``evaluate`` reports it); a run's cell
        carries ``$^{\dagger}$`` when it differs significantly from the baseline on that
        metric: the (corrected) p-value of ``test`` is below ``alpha``.  A footnote row says
        which test, alpha and correction.  Needs ``\usepackage{booktabs}``.

        Parameters
        ----------
        alpha : float
            Significance level of the marker.
        test : {"permutation", "t"}, optional
            Default: the permutation test if it was run, else the t-test.
        digits : int, optional
            Decimals (default 4, or 2 with ``percent``).
        percent : bool
            Show values times 100.
        marker : str
            LaTeX math for the marker (``r"\dagger"``, ``"*"``, ...).
        """
        alpha = check_level("alpha", alpha)
        test = self._primary if test is None else check_choice("test", test, self.tests)
        digits = check_digits((2 if percent else 4) if digits is None else digits)
        scale = 100.0 if percent else 1.0
        cols = len(self.metrics) + 1
        lines = [r"\begin{tabular}{l" + "c" * len(self.metrics) + "}", r"\toprule",
                 " & ".join(["Run"] + [_latex_escape(lab) + (r" (\%)" if percent else "")
                                       for lab in self.metrics.values()]) + r" \\",
                 r"\midrule"]
        for run in self.runs:
            name = _latex_escape(run) + (" (baseline)" if run == self.baseline else "")
            cells = [name]
            for metric in self.metrics:
                value = self.means[run][metric]
                cell = "--" if math.isnan(value) else f"{value * scale:.{digits}f}"
                if run != self.baseline and self.tests and self.row(run, metric).significant(alpha, test):
                    cell += f"$^{{{marker}}}$"
                cells.append(cell)
            lines.append(" & ".join(cells) + r" \\")
        lines.append(r"\bottomrule")
        if self.tests:
            name = f"paired {TEST_LABELS[test].name}"
            holm_text = ", Holm--Bonferroni corrected" if self.correction == "holm" else ""
            pairs = sorted({r.n_queries for r in self.rows})
            over = (f"{pairs[0]} queries" if len(pairs) == 1 else "the queries counted in both runs")
            lines.append(rf"\multicolumn{{{cols}}}{{l}}{{\footnotesize ${{}}^{{{marker}}}$ significantly "
                         rf"different from {_latex_escape(self.baseline)} ({name}, two-sided, "
                         rf"$p < {alpha:g}${holm_text}; {over}).}} \\")
        lines.append(r"\end{tabular}")
        return "\n".join(lines) + "\n"


# -- formatting helpers ----------------------------------------------------------------
def _right_aligned(n_columns: int) -> Set[int]:
    """The columns of numbers in :meth:`Comparison._table`: n, the means, the difference, p-values, sig."""
    return {2, 3, 4, 5} | set(range(7, n_columns))


def _percent(confidence: float) -> str:
    return f"{100 * confidence:g}%"


def format_p(p: Optional[float]) -> str:
    """A p-value in a table: ``-`` when missing or NaN, 4 decimals, or 2 digits below 0.001."""
    if p is None or math.isnan(p):
        return "-"
    if p == 0:
        return "0"
    return f"{p:.4f}" if p >= 1e-3 else f"{p:.1e}"


def _md_escape(text: str) -> str:
    return text.replace("|", r"\|").replace("*", r"\*")


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


def json_ready(value: Any) -> Any:
    """NaN and inf as None, tuples as lists, numpy scalars as Python numbers."""
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


