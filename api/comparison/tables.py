"""What :func:`retrieval_conformance.compare` returns, and its tables.

:class:`ComparisonRow` holds one run against another (the baseline) on one metric;
:class:`Comparison` holds every row, every run's mean with its intervals and the settings
of the call, decides regressions and writes plain text, markdown, a LaTeX (booktabs) table
(:mod:`~retrieval_conformance.comparison.formatting`) or a JSON-ready dict.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from retrieval_conformance.comparison.arguments import (
    check_choice,
    check_digits,
    check_level,
    check_names,
    check_non_negative,
)
from retrieval_conformance.comparison.formatting import (
    format_p,
    json_ready,
    latex_table,
    md_escape,
    percent_text,
)
from retrieval_conformance.comparison.metrics import canonical_metric
from retrieval_conformance.comparison.stats import TEST_LABELS, TESTS, MeanInterval

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
    effect_size : float
        Paired Cohen's ``d_z = mean(d) / sd(d)`` of the differences (NaN when undefined).
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
    effect_size: float = float("nan")
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
        Run -> metric -> the run's own mean over the paired queries *it* counts (what
        ``evaluate`` reports when no query was dropped); the tables of runs show these.
    n_queries : int
        Paired queries: those every run answers (counted or not).
    tests, n_resamples, confidence, seed, correction, pairs
        The settings of the call.
    intervals : dict
        Run -> metric -> :class:`~.stats.MeanInterval`: the mean with its t and bootstrap
        intervals.
    dropped : dict
        Run -> how many of its queries were left out because not every run answers them.
    not_counted : dict
        Run -> metric -> paired queries whose per-query value was NaN (not counted).
    query_ids : list or None
        The paired queries' ids (None: paired by position).
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
    pairs: str = "baseline"
    intervals: Dict[str, Dict[str, MeanInterval]] = field(default_factory=dict)
    dropped: Dict[str, int] = field(default_factory=dict)
    not_counted: Dict[str, Dict[str, int]] = field(default_factory=dict)
    query_ids: Optional[List[Any]] = None

    @property
    def primary_test(self) -> str:
        """The test behind the markers: the permutation test if run, else the t-test."""
        return "permutation" if "permutation" in self.tests or not self.tests else self.tests[0]

    def _metric_key(self, metric: str) -> str:
        return metric if metric in self.metrics else canonical_metric(metric)

    def __str__(self) -> str:
        return self.to_text()

    def row(self, run: str, metric: str, baseline: Optional[str] = None) -> ComparisonRow:
        """The row of ``run`` against ``baseline`` (default: the comparison's baseline) on ``metric``."""
        key = self._metric_key(metric)
        against = self.baseline if baseline is None else baseline
        for r in self.rows:
            if r.metric == key and (r.run, r.baseline) in ((run, against), (against, run)):
                return r
        raise KeyError(
            f"no row for run {run!r} against {against!r} and metric {metric!r}; pairs compared: "
            f"{sorted({(r.run, r.baseline) for r in self.rows})}, metrics: {list(self.metrics)}"
        )

    # -- decisions --------------------------------------------------------------------
    def regressions(self, margin: float, alpha: float = 0.05, metric: Optional[Any] = None) -> List[ComparisonRow]:
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
            raise ValueError(
                f"regressions: need the permutation test, but compare() ran tests={self.tests}; "
                "call compare(..., tests=('permutation', 't'))"
            )
        wanted = set(self.metrics) if metric is None else {self._metric_key(m) for m in check_names("metric", metric)}
        unknown = wanted - set(self.metrics)
        if unknown:
            raise ValueError(f"metric: {sorted(unknown)} not compared; compared metrics: {list(self.metrics)}")
        return [
            r
            for r in self.rows
            if r.metric in wanted and r.difference < -margin and r.significant(alpha, "permutation")
        ]

    # -- output -----------------------------------------------------------------------
    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready summary: the settings, every run's means and intervals, every row (NaN as None)."""
        return json_ready(
            {
                "baseline": self.baseline,
                "runs": list(self.runs),
                "metrics": dict(self.metrics),
                "queries": self.n_queries,
                "query_ids": self.query_ids,
                "dropped": self.dropped,
                "not_counted": self.not_counted,
                "pairs": self.pairs,
                "tests": list(self.tests),
                "n_resamples": self.n_resamples,
                "confidence": self.confidence,
                "seed": self.seed,
                "correction": self.correction,
                "means": self.means,
                "intervals": {run: {m: one._asdict() for m, one in per.items()} for run, per in self.intervals.items()},
                "rows": [asdict(r) for r in self.rows],
            }
        )

    def _header(self) -> List[str]:
        level = percent_text(self.confidence)
        if self.query_ids is None:
            pairing = f"{self.n_queries} queries, paired by position"
        else:
            pairing = f"{self.n_queries} queries, paired by query id"
        lines = [f"Runs {', '.join(repr(r) for r in self.runs)}: {pairing}."]
        dropped = {r: d for r, d in self.dropped.items() if d}
        if dropped:
            lines.append(
                "Queries not answered by every run were dropped: "
                + ", ".join(f"{d} from {r!r}" for r, d in dropped.items())
                + "."
            )
        nan = [f"{n} {self.metrics[m]} in {r!r}" for r, per in self.not_counted.items() for m, n in per.items() if n]
        if nan:
            lines.append("NaN per-query values, not counted: " + ", ".join(nan) + ".")
        lines.append(
            f"Each run: mean over the paired queries it counts, ± half-width of the {level} t interval, "
            f"and the {level} bootstrap interval (BCa, {self.n_resamples} resamples, seed {self.seed})."
        )
        if not self.rows:
            return lines
        against = f"baseline {self.baseline!r}" if self.pairs == "baseline" else "every earlier run (column vs)"
        lines.append(
            f"Each row: a run against {against} on the queries counted in both (column n); d_z: paired "
            "Cohen's d, mean difference / its standard deviation."
        )
        tests = []
        if "permutation" in self.tests:
            floor = format_p(min(1.0, 2 / (self.n_resamples + 1)))
            tests.append(
                f"paired {TEST_LABELS['permutation'].name} (sign flips, two-sided, "
                f"{self.n_resamples} resamples or exact, seed {self.seed}; a resampled p is at least "
                f"{floor})"
            )
        if "t" in self.tests:
            tests.append(f"paired {TEST_LABELS['t'].name} (two-sided)")
        if tests:
            adjusted = {"holm": "Holm", "bh": "Benjamini-Hochberg"}
            size = self._family_size()
            family = (
                f" ({adjusted[self.correction]}-adjusted over {size} row{'' if size == 1 else 's'})"
                if self.correction
                else ""
            )
            lines.append(f"p-values{family}: " + "; ".join(tests) + ".")
        lines.append(
            f"CI: {level} bootstrap interval of the mean difference (BCa, "
            f"{self.n_resamples} resamples, seed {self.seed})."
        )
        return lines

    def _family_size(self) -> int:
        """How many rows have a p-value of the test behind the markers (the family adjusted over)."""
        raw = [r.p_value(self.primary_test, adjusted=False) for r in self.rows]
        return sum(1 for p in raw if p is not None and not math.isnan(p))

    def _run_table(self, digits: int) -> Tuple[List[str], List[List[str]], set]:
        """Every run's mean with its intervals: header, cells, right-aligned columns."""
        level = percent_text(self.confidence)
        head = ["run", "metric", "n", "mean", "±", f"{level} t CI", f"{level} bootstrap CI"]
        body = []
        for run in self.runs:
            for metric, label in self.metrics.items():
                one = self.intervals[run][metric]
                half = one.t_high - one.mean
                t_ci = "-" if math.isnan(half) else f"[{one.t_low:.{digits}f}, {one.t_high:.{digits}f}]"
                boot = (
                    "-"
                    if one.bootstrap_method == "none"
                    else f"[{one.bootstrap_low:.{digits}f}, {one.bootstrap_high:.{digits}f}]"
                )
                body.append(
                    [
                        run,
                        label,
                        str(one.n_queries),
                        "-" if math.isnan(one.mean) else f"{one.mean:.{digits}f}",
                        "-" if math.isnan(half) else f"{half:.{digits}f}",
                        t_ci,
                        boot,
                    ]
                )
        return head, body, {2, 3, 4}

    def _table(self, digits: int, alpha: float) -> Tuple[List[str], List[List[str]], set]:
        """The rows against the baseline: header, cells, right-aligned columns."""
        level = percent_text(self.confidence)
        head = ["run", "vs", "metric", "n", "vs mean", "run mean", "difference", f"{level} CI", "d_z"]
        head += [TEST_LABELS[t].column for t in self.tests]
        if self.tests:
            head.append("sig.")
        body = []
        for r in self.rows:
            ci = "-" if r.ci_method == "none" else f"[{r.ci_low:+.{digits}f}, {r.ci_high:+.{digits}f}]"
            cells = [
                r.run,
                r.baseline,
                r.label,
                str(r.n_queries),
                f"{r.mean_baseline:.{digits}f}",
                f"{r.mean_run:.{digits}f}",
                f"{r.difference:+.{digits}f}",
                ci,
                "-" if math.isnan(r.effect_size) else f"{r.effect_size:+.2f}",
            ]
            cells += [format_p(r.p_value(t)) for t in self.tests]
            if self.tests:
                cells.append("*" if r.significant(alpha, self.primary_test) else "")
            if r.notes:
                cells[2] += f" [{self._note_number(r)}]"
            body.append(cells)
        return head, body, {3, 4, 5, 6, 8} | set(range(9, len(head)))

    def _noted_rows(self) -> List[ComparisonRow]:
        """The rows with notes; the footer numbers them from 1, in this order."""
        return [r for r in self.rows if r.notes]

    def _note_number(self, row: ComparisonRow) -> int:
        return self._noted_rows().index(row) + 1

    def _footer(self, alpha: float) -> List[str]:
        lines = []
        if self.tests and self.rows:
            adjusted = " (adjusted)" if self.correction else ""
            lines.append(f"* {TEST_LABELS[self.primary_test].name} p < {alpha:g}{adjusted}.")
        for i, r in enumerate(self._noted_rows(), 1):
            lines.append(f"[{i}] {r.run} vs {r.baseline} {r.label}: " + "; ".join(r.notes))
        return lines

    def _tables(self, digits: int, alpha: float):
        digits = check_digits(digits)
        tables = [self._run_table(digits)]
        if self.rows:
            tables.append(self._table(digits, alpha))
        return tables

    def to_text(self, digits: int = 4, alpha: float = 0.05) -> str:
        """Plain text: every run's mean with its intervals, then one line per pair of runs and metric.

        ``digits``: decimals of the means, differences and intervals; ``alpha``: the level
        behind the ``*`` of the ``sig.`` column (the permutation test's corrected p-value,
        or the t-test's when only it was run).
        """
        alpha = check_level("alpha", alpha)
        out = self._header()
        for head, body, right in self._tables(digits, alpha):
            widths = [max(len(row[j]) for row in [head] + body) for j in range(len(head))]

            def line(cells, widths=widths, right=right):
                return "  ".join(
                    c.rjust(w) if j in right else c.ljust(w) for j, (c, w) in enumerate(zip(cells, widths))
                ).rstrip()

            out += ["", line(head), line(["-" * w for w in widths])] + [line(row) for row in body]
        return "\n".join(out + [""] + self._footer(alpha)).rstrip() + "\n"

    def to_markdown(self, digits: int = 4, alpha: float = 0.05) -> str:
        """GitHub-flavoured markdown: the tables of :meth:`to_text`, with the settings below them."""
        alpha = check_level("alpha", alpha)
        out: List[str] = []
        for head, body, right in self._tables(digits, alpha):
            out += [
                "| " + " | ".join(md_escape(c) for c in head) + " |",
                "|" + "|".join("---:" if j in right else "---" for j in range(len(head))) + "|",
            ]
            out += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in body] + [""]
        notes = [md_escape(line) for line in self._header() + self._footer(alpha)]
        return "\n".join(out) + "\n" + "\n\n".join(notes) + "\n"

    def to_latex(
        self,
        alpha: float = 0.05,
        test: Optional[str] = None,
        digits: Optional[int] = None,
        percent: bool = False,
        marker: str = r"\dagger",
        plus_minus: bool = False,
    ) -> str:
        r"""A booktabs table for papers: runs as rows, metrics as columns.

        Each cell is the run's mean; with ``plus_minus``, ``\pm`` the half-width of its t
        interval; a run's cell carries ``$^{\dagger}$`` when it differs significantly from
        the baseline on that metric (the corrected p-value of ``test`` below ``alpha``).  A
        footnote row says which test, alpha and correction.  Needs ``\usepackage{booktabs}``.

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
        plus_minus : bool
            Follow each mean with ``\pm`` the half-width of its t interval.
        """
        return latex_table(
            self, alpha=alpha, test=test, digits=digits, percent=percent, marker=marker, plus_minus=plus_minus
        )
