"""The harness that checks a user's own metric function against the reference.

>>> from retrieval_conformance.conformance.harness import check, identify
>>> report = check(calc_map_k, adapter="hashing-codes", protocol="dcmh")
>>> report.exit_code          # 0 conforms, 1 deviates, 2 could not be loaded or called
>>> print(report.text())      # broken clauses, smallest input, both values, a snippet
>>> print(identify(calc_map_k).text())   # "matches `dcmh` except: only the first query ..."

Every check is named by an id (``golden/seed003-dcmh-full``, ``ties/tie-heavy``, ...) that a
known-deviations file can list.  The entry points sit here: :mod:`.entry` (``check`` and
``identify``), :mod:`.cli`, :mod:`.pytest_plugin`, :mod:`.session` (one function under test),
:mod:`.checks` and :mod:`.explanations` (the checks, and why each deviation happened),
:mod:`.identify` (the verdict in words) and :mod:`.generate` (drawing inputs).  The rest is in
subpackages, each saying what it holds: :mod:`.adapters` (the signatures, and every behaviour that
depends on one), :mod:`.calling` (calling the function safely), :mod:`.inputs` (what it is called
on), :mod:`.candidates` (what it might compute, and what each candidate predicts),
:mod:`.engine` (identification by elimination, shared by ``check`` and ``--identify``) and
:mod:`.report` (what was found, in words).
"""

from __future__ import annotations

from retrieval_conformance.conformance.harness.adapters.base import UsageError
from retrieval_conformance.conformance.harness.adapters.registry import ADAPTERS
from retrieval_conformance.conformance.harness.calling.loading import load_function, read_known_deviations
from retrieval_conformance.conformance.harness.checks import Checker
from retrieval_conformance.conformance.harness.cli import add_check_arguments, check_main, run_check_args
from retrieval_conformance.conformance.harness.entry import check, identify
from retrieval_conformance.conformance.harness.inputs.public import FAMILIES
from retrieval_conformance.conformance.harness.report.results import Identification, Report
from retrieval_conformance.conformance.harness.session import Session

__all__ = [
    "check",
    "identify",
    "check_main",
    "add_check_arguments",
    "run_check_args",
    "Report",
    "Identification",
    "Session",
    "Checker",
    "ADAPTERS",
    "FAMILIES",
    "UsageError",
    "load_function",
    "read_known_deviations",
]
