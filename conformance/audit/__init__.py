"""Audit an evaluation (``rc.audit``, ``retrieval-conformance audit``).

On the same inputs as ``evaluate``: every headline metric under every preset and convention
axis with its tie interval (:mod:`.table`), the conventions and known bugs that reproduce
published numbers (:mod:`.reported`, through the harness's candidates in :mod:`.harness_link`),
and what in the data makes the numbers fragile, each with its measured effect
(:mod:`.findings`).  Reports as text, JSON and one self-contained HTML file
(:mod:`.report_text`, :mod:`.report_html`); ``--fail-if`` conditions for CI (:mod:`.fail_if`);
the command line (:mod:`.cli`).  :mod:`.inputs` holds the data and the cached evaluations,
:mod:`.metrics` the metric names every part shares, :mod:`.result` the :class:`Audit` every
audit returns.  A TREC run and its qrels are audited by the subpackage :mod:`.trec` (trec_eval's
measures under every order of tied documents and every trec_eval option that moves them).
"""

from __future__ import annotations

from retrieval_conformance.conformance.audit.result import Audit
from retrieval_conformance.conformance.audit.run import audit

__all__ = ["Audit", "audit"]
