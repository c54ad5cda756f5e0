"""How a :class:`~retrieval_conformance.comparison.tables.Comparison` is written: cells, escapes, LaTeX, JSON.

:func:`latex_table` is the compact table for papers (runs as rows, metrics as columns, each
cell a mean, optionally with ± the half-width of its t interval, and a marker where a run
differs significantly from the baseline); the rest are the cell formats and escapes the
text and markdown tables share.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Dict, Optional

import numpy as np
from retrieval_conformance.comparison.arguments import check_choice, check_digits, check_level
from retrieval_conformance.comparison.stats import TEST_LABELS

if TYPE_CHECKING:  # pragma: no cover
    from retrieval_conformance.comparison.tables import Comparison

__all__ = ["format_p", "json_ready", "latex_table"]


def latex_table(
    cmp: "Comparison",
    alpha: float = 0.05,
    test: Optional[str] = None,
    digits: Optional[int] = None,
    percent: bool = False,
    marker: str = r"\dagger",
    plus_minus: bool = False,
) -> str:
    r"""A booktabs table for papers: runs as rows, metrics as columns (:meth:`Comparison.to_latex`).

    Each cell is the run's mean over the paired queries it counts; with ``plus_minus`` it
    is followed by ``\pm`` the half-width of its t interval (``Comparison.intervals``); a
    run's cell carries ``$^{\dagger}$`` when it differs significantly from the baseline on
    that metric: the (corrected) p-value of ``test`` is below ``alpha``.  A footnote row
    says which test, alpha and correction.  Needs ``\usepackage{booktabs}``.
    """
    alpha = check_level("alpha", alpha)
    test = cmp.primary_test if test is None else check_choice("test", test, cmp.tests)
    digits = check_digits((2 if percent else 4) if digits is None else digits)
    if not isinstance(plus_minus, bool):
        raise TypeError(f"plus_minus: expected True or False, got {type(plus_minus).__name__}")
    scale = 100.0 if percent else 1.0
    cols = len(cmp.metrics) + 1
    lines = [
        r"\begin{tabular}{l" + "c" * len(cmp.metrics) + "}",
        r"\toprule",
        " & ".join(["Run"] + [latex_escape(lab) + (r" (\%)" if percent else "") for lab in cmp.metrics.values()])
        + r" \\",
        r"\midrule",
    ]
    for run in cmp.runs:
        cells = [latex_escape(run) + (" (baseline)" if run == cmp.baseline and len(cmp.runs) > 1 else "")]
        for metric in cmp.metrics:
            value = cmp.means[run][metric]
            cell = "--" if math.isnan(value) else f"{value * scale:.{digits}f}"
            if plus_minus and not math.isnan(value):
                one = cmp.intervals[run][metric]
                half = (one.t_high - one.mean) * scale
                cell += "" if math.isnan(half) else rf" $\pm$ {half:.{digits}f}"
            if run != cmp.baseline and cmp.tests and cmp.row(run, metric).significant(alpha, test):
                cell += f"$^{{{marker}}}$"
            cells.append(cell)
        lines.append(" & ".join(cells) + r" \\")
    lines.append(r"\bottomrule")
    notes = []
    if plus_minus:
        level = percent_text(cmp.confidence).replace("%", r"\%")
        notes.append(rf"$\pm$: half-width of the {level} t interval of the mean over queries.")
    if cmp.tests and len(cmp.runs) > 1:
        name = f"paired {TEST_LABELS[test].name}"
        adjusted: Dict[Optional[str], str] = {
            "holm": ", Holm--Bonferroni corrected",
            "bh": ", Benjamini--Hochberg corrected",
        }
        pairs = sorted({r.n_queries for r in cmp.rows if r.baseline == cmp.baseline})
        over = f"{pairs[0]} queries" if len(pairs) == 1 else "the queries counted in both runs"
        notes.append(
            rf"${{}}^{{{marker}}}$ significantly different from {latex_escape(cmp.baseline)} ({name}, "
            rf"two-sided, $p < {alpha:g}${adjusted.get(cmp.correction, '')}; {over})."
        )
    for note in notes:
        lines.append(rf"\multicolumn{{{cols}}}{{l}}{{\footnotesize {note}}} \\")
    lines.append(r"\end{tabular}")
    return "\n".join(lines) + "\n"


def percent_text(confidence: float) -> str:
    return f"{100 * confidence:g}%"


def format_p(p: Optional[float]) -> str:
    """A p-value in a table: ``-`` when missing or NaN, 4 decimals, or 2 digits below 0.001."""
    if p is None or math.isnan(p):
        return "-"
    if p == 0:
        return "0"
    return f"{p:.4f}" if p >= 1e-3 else f"{p:.1e}"


def md_escape(text: str) -> str:
    return text.replace("|", r"\|").replace("*", r"\*")


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
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
