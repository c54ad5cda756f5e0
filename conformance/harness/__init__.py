"""The harness that checks a user's own metric function against the reference.

>>> from retrieval_conformance.conformance.harness import check, identify
>>> report = check(calc_map_k, adapter="hashing-codes", protocol="dcmh")
>>> report.exit_code          # 0 conforms, 1 deviates, 2 could not be loaded or called
>>> print(report.text())      # broken clauses, smallest input, both values, a snippet
>>> print(identify(calc_map_k).text())   # "matches `dcmh` except: only the first query ..."

Every check is named by an id (``golden/seed003-dcmh-full``, ``ties/tie-heavy``, ...) that a
known-deviations file can list.  The flow: :mod:`.session` (calling the function through
:mod:`.runner`), :mod:`.checks` (the checks), :mod:`.candidates`, :mod:`.predict` and
:mod:`.eliminate` (what a function might compute and how candidates are ruled out),
:mod:`.analysis` (elimination over everything it returned), :mod:`.engine` (field by field, the
causes a deviation may name, the evidence per ruled-out candidate, impossible values),
:mod:`.probes` (further calls that test a claim), :mod:`.describe` and :mod:`.identify` (verdicts
in words), :mod:`.findings` (raising, determinism, modified inputs); :mod:`.adapters` and :mod:`.adapters_rank` (nDCG,
MAP@R, MRR, Recall@k) for the signatures, :mod:`.rank_bugs` for the nDCG and MRR bug models,
:mod:`.cases` for the inputs (:mod:`.inputs`, :mod:`.golden_inputs`, :mod:`.families`, :mod:`.generate`).
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

__all__ = ["check", "identify", "check_main", "add_check_arguments", "run_check_args", "Report", "Identification",
           "Session", "Checker", "ADAPTERS", "FAMILIES", "UsageError", "load_function", "read_known_deviations"]
