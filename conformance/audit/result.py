"""The result of an audit (:class:`Audit`): every number it found, and its text, JSON and HTML reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List

from retrieval_conformance.conformance.audit import fail_if, report_html, report_text
from retrieval_conformance.conformance.audit.metrics import METRICS


@dataclass
class Audit:
    """What :func:`audit` found; ``to_dict()`` holds every number (the JSON report)."""

    protocol: str
    declared: Dict[str, Any]
    shape: tuple
    kind: str
    metrics: List[str]
    rows: List[Dict[str, Any]]
    tie_intervals: Dict[str, Dict[str, Any]]
    movers: Dict[str, Any]
    reproduced: Dict[str, Any]
    findings: List[Dict[str, Any]]
    evaluations: int
    seconds: float
    implementation: str
    notes: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        from retrieval_conformance.reference.contract.spec import SPEC_VERSION

        return {
            "specification_version": SPEC_VERSION,
            "protocol": self.protocol,
            "declared": self.declared,
            "data": {"kind": self.kind, "queries": self.shape[0], "gallery": self.shape[1]},
            "metrics": {name: METRICS[name].label(self.declared["k"]) for name in self.metrics},
            "conventions": self.rows,
            "tie_intervals": self.tie_intervals,
            "per_query": self.movers,
            "reproduced": self.reproduced,
            "findings": self.findings,
            "cost": {"evaluations": self.evaluations, "seconds": self.seconds, "implementation": self.implementation},
            "notes": self.notes,
        }

    def to_text(self) -> str:
        return report_text.render(self.to_dict())

    def to_html(self) -> str:
        return report_html.render(self.to_dict())

    def failures(self, conditions) -> List[str]:
        """The ``fail_if`` conditions this audit meets (see :mod:`.fail_if`)."""
        return fail_if.failures(self.to_dict(), conditions)
