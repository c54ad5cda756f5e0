"""The harness's checks as pytest tests, for the function given with ``--impl``.

One test per check id (golden cases, then the generated families); a deviation fails with
the harness's explanation, a check the adapter cannot express is skipped with its reason,
and a deviation listed in ``--known-deviations`` is an xfail.  Without ``--impl`` there is a
single skipped test.
"""

from __future__ import annotations

import pytest
from retrieval_conformance.conformance.harness.report.results import DEVIATE, KNOWN, SKIP


def _ids(config):
    from retrieval_conformance.conformance.harness.checks import every_check_id

    return every_check_id()


def pytest_generate_tests(metafunc):
    if "check_id" in metafunc.fixturenames:
        impl = metafunc.config.getoption("--impl")
        ids = _ids(metafunc.config) if impl else ["no-impl"]
        metafunc.parametrize("check_id", ids, ids=ids)


@pytest.fixture(scope="module")
def impl_session(conformance_options):
    from retrieval_conformance.conformance.harness import Checker, Session, load_function, read_known_deviations
    from retrieval_conformance.conformance.harness.adapters.base import UsageError

    opts = conformance_options
    if not opts["impl"]:
        pytest.skip("no --impl given: pass --impl module:function to check your own metric function")
    if opts["arrays"] == "torch":
        from retrieval_conformance.conformance.harness.calling.runner import torch_available

        reason = torch_available()
        if reason is not None:
            (pytest.fail if opts["require_torch"] else pytest.skip)(f"--arrays torch: {reason}")
    try:
        func = load_function(opts["impl"])
        known = read_known_deviations(opts["known_deviations"]) if opts["known_deviations"] else []
        session = Session(
            func,
            opts["adapter"],
            opts["protocol"],
            arrays=opts["arrays"],
            max_examples=opts["max_examples"],
            timeout=opts["timeout"],
            target=opts["impl"],
            known_deviations=known,
            **opts["overrides"],
        )
    except (UsageError, OSError) as exc:
        pytest.fail(f"--impl {opts['impl']}: {exc}", pytrace=False)
    yield Checker(session)
    session.close()


def test_check(impl_session, check_id):
    from retrieval_conformance.conformance.harness.report.results import Report

    res = impl_session.run_one(check_id)
    session = impl_session.s
    if res.status == SKIP:
        pytest.skip(res.reason)
    if res.status == KNOWN:
        pytest.xfail(f"known deviation: {res.reason}")
    if res.status == DEVIATE:
        rep = Report(
            session.target,
            session.adapter.name,
            session.protocol,
            session.convention_text,
            session.arrays,
            results=[res],
        )
        pytest.fail(rep.text(verbose=True), pytrace=False)
