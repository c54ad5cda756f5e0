"""``check`` and ``identify``: a user's function through a :class:`.session.Session`, into a report.

Re-exported by the package (``from retrieval_conformance.conformance.harness import check``).
"""

from __future__ import annotations

import textwrap
from typing import Callable, Optional, Sequence, Union

from retrieval_conformance.conformance.harness.adapters.base import UsageError
from retrieval_conformance.conformance.harness.adapters.registry import adapter_names_text
from retrieval_conformance.conformance.harness.calling.loading import load_function
from retrieval_conformance.conformance.harness.checks import Checker
from retrieval_conformance.conformance.harness.identify import identify as _identify_session
from retrieval_conformance.conformance.harness.report.results import Report
from retrieval_conformance.conformance.harness.session import PROTOCOL_DETAIL, Session
from retrieval_conformance.reference.contract import options_table


def _session(func, adapter, protocol, **kw) -> Session:
    target = kw.pop("target", None)
    if isinstance(func, str):
        target = target or func
        func = load_function(func)
    return Session(func, adapter, protocol, target=target, **kw)


def _with_adapters(function: Callable) -> Callable:
    """Fill the ``{adapters}`` slot of ``function``'s docstring with every adapter of the registry."""
    if function.__doc__ is not None:  # python -OO drops docstrings
        text = textwrap.fill(
            f"The function's signature: {adapter_names_text()}.",
            88,
            initial_indent=" " * 8,
            subsequent_indent=" " * 8,
            break_long_words=False,
            break_on_hyphens=False,
        )
        function.__doc__ = function.__doc__.replace(" " * 8 + "{adapters}", text)
    return function


@_with_adapters
@options_table.documented("check", protocol=PROTOCOL_DETAIL)
def check(
    func: Union[Callable, str],
    adapter: str = "hashing-codes",
    protocol: Optional[str] = None,
    *,
    ties: Optional[str] = None,
    ap_rule: Optional[str] = None,
    ap_at_k: Optional[str] = None,
    empty: Optional[str] = None,
    gain: Optional[str] = None,
    recall: Optional[str] = None,
    discount: Optional[str] = None,
    arrays: str = "auto",
    max_examples: int = 60,
    timeout: float = 10.0,
    isolation: str = "auto",
    known_deviations: Sequence[str] = (),
    only: Sequence[str] = (),
    derandomize: bool = True,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    target: Optional[str] = None,
    warmup_timeout: Optional[float] = None,
) -> Report:
    """Check ``func`` against the reference under ``protocol``.

    Parameters
    ----------
    func : callable or "module:function"
    adapter : str
        {adapters}
    {options}
    arrays : {"auto", "numpy", "torch"}
        What the function receives; ``auto`` switches to torch tensors when numpy arrays make
        the first call fail and torch is installed.
    max_examples : int
        Generated inputs per property check before it passes (hypothesis).
    timeout : float
        Seconds allowed per call; a hang is reported with its input.
    warmup_timeout : float, optional
        Seconds allowed for the first call in a worker (one-time compilation or loading, e.g.
        numba); default ``max(60, 6 * timeout)``.
    isolation : {"auto", "process", "thread", "none"}
        ``process`` (``auto`` where ``fork`` exists): a worker process, whose process tree
        (a pool, a ``DataLoader``'s workers) is killed when it stops; ``thread``: a thread of
        this process; ``none``: a plain call without a time limit.
    known_deviations : sequence of str
        Check ids or glob patterns (or clause texts) whose deviations are accepted.
    only : sequence of str
        Glob patterns: run only the matching checks.
    derandomize : bool
        Reproducible hypothesis runs (default).
    atol, rtol : float
        Tolerance of the comparison with the exact reference: ``|yours - ref| <= atol + rtol |ref|``.

    Returns
    -------
    Report
        ``exit_code`` (0 conforms, 1 deviates, 2 usage error), ``text()``, ``junit_xml()``.
    """
    try:
        with _session(
            func,
            adapter,
            protocol,
            ties=ties,
            ap_rule=ap_rule,
            ap_at_k=ap_at_k,
            empty=empty,
            gain=gain,
            recall=recall,
            discount=discount,
            arrays=arrays,
            timeout=timeout,
            isolation=isolation,
            max_examples=max_examples,
            atol=atol,
            rtol=rtol,
            derandomize=derandomize,
            known_deviations=known_deviations,
            only=only,
            target=target,
            warmup_timeout=warmup_timeout,
        ) as s:
            return Checker(s).check()
    except UsageError as exc:
        return Report(target or str(func), adapter, protocol or "-", "-", arrays, usage_error=str(exc))


def identify(
    func: Union[Callable, str],
    adapter: str = "hashing-codes",
    protocol: Optional[str] = None,
    *,
    arrays: str = "auto",
    timeout: float = 10.0,
    isolation: str = "auto",
    per_family: int = 5,
    target: Optional[str] = None,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    warmup_timeout: Optional[float] = None,
    **overrides,
) -> Report:
    """Name what ``func`` computes, by elimination.

    The function runs on the golden cases and a fixed sample of every input family; every
    candidate (tie policy incl. "unstable" x AP rule x AP@k denominator x empty-query policy x
    CMC length rule, or the options the adapter's values depend on, such as nDCG's gain, with up
    to two known bugs of spec §11) that does not reproduce every
    returned value is removed, simpler candidates first; further inputs on which the survivors
    disagree are searched for and run before answering (:mod:`.identify`).  The report's
    ``identification`` names the nearest preset and what differs, or says that nothing
    reproduces the values; exit status 2 when nothing could be compared.
    """
    try:
        with _session(
            func,
            adapter,
            protocol,
            arrays=arrays,
            timeout=timeout,
            isolation=isolation,
            target=target,
            atol=atol,
            rtol=rtol,
            warmup_timeout=warmup_timeout,
            **overrides,
        ) as s:
            ident = _identify_session(s, per_family=per_family)
            rep = Report(s.target, s.adapter.name, s.protocol, s.convention_text, s.arrays, identification=ident)
            rep.notes.extend(s.notes)
            if s.runner is not None and s.runner.calls and s._success_count == 0 and not ident.uncheckable:
                rep.usage_error = "the function could not be called successfully on any input: " + ident.text()
            return rep
    except UsageError as exc:
        return Report(target or str(func), adapter, protocol or "-", "-", arrays, usage_error=str(exc))
