"""Shared by the C implementation's tests (``test_c_backend*.py``): the library loaded or the test
skipped, and the option names they loop over.  The generated problems are ``problems``'s, the
oracle ``oracle``'s, the comparisons ``crosscheck``'s (``compare_per_query``, ``same_bits``,
``run_both``).
"""

from __future__ import annotations

from retrieval_conformance.conformance.crosscheck import TOLERANCE as TOL  # noqa: F401  (re-exported)
from retrieval_conformance.conformance.support.requirements import require_implementation
from retrieval_conformance.reference.contract.conventions import AP_AT_K_DENOMINATORS as DENOMINATORS  # noqa: F401
from retrieval_conformance.reference.contract.conventions import AP_RULES as RULES  # noqa: F401
from retrieval_conformance.reference.contract.conventions import TIE_POLICIES as TIES  # noqa: F401


def load_c_backend():
    """``implementations.c.backend``; the test is skipped when the library is not built (fails
    with ``RC_REQUIRE=c``)."""
    require_implementation("c")
    from retrieval_conformance.implementations.c import backend as module

    return module


def float_pass_options(rng, ties: str, n: int):
    """The options the float-pass tests compare a row under: no cut-off, k = n/2 (AP@k over R) and
    a small k with dcmh's divisor, each with a drawn CMC length."""
    from retrieval_conformance.reference.contract.problem import Options

    for k, den in ((None, "hits"), (n // 2, "r"), (int(rng.integers(1, 50)), "dcmh")):
        yield Options(ties=ties, k=k, ap_at_k=den, max_rank=int(rng.choice([0, 5, 50])))
