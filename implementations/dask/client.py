"""The client a dask evaluation runs on: finding it, and what its loss raises.

``implementation="dask"`` runs on the client the caller started and never starts one.  A client
closed during an evaluation makes distributed raise its own errors (``ClosedClientError``,
``RuntimeError: IOLoop is closed``, cancelled futures): they reach the caller as
:class:`DaskEvaluationError`, never as they are.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Callable, Optional, Tuple, TypeVar

from retrieval_conformance.reference.contract.install_hints import install_hint
from retrieval_conformance.reference.contract.registry import ImplementationUnavailable

INSTALL = install_hint("dask")
NOT_INSTALLED = f"dask.distributed is not installed; {INSTALL}"
NO_CLIENT = (
    "no dask.distributed client is running; start one before evaluating (from distributed import "
    "Client; client = Client() for a local cluster, or Client('scheduler-address:8786')): "
    "implementation='dask' never starts a cluster itself"
)

#: what the function run on the cluster returns (per-query values, a scattered gallery)
Outcome = TypeVar("Outcome")


class DaskEvaluationError(RuntimeError):
    """A chunk of queries could not be computed on the cluster (not an error of the queries)."""


def current_client() -> Tuple[Optional[object], Optional[str]]:
    """(the current ``dask.distributed`` client, None), or (None, why there is none).

    Never imports ``distributed``: before it is imported no client can exist."""
    module = sys.modules.get("distributed")
    if module is None:
        try:
            installed = importlib.util.find_spec("distributed") is not None
        except (ImportError, ValueError):
            installed = False
        return None, NO_CLIENT if installed else NOT_INSTALLED
    try:
        client = module.default_client()
    except (ValueError, AttributeError):
        return None, NO_CLIENT
    status = getattr(client, "status", "running")
    if status != "running":
        return None, f"the current dask.distributed client is {status!r}, not running; start a new Client"
    return client, None


def require_client(state=None):
    """The current client; :class:`ImplementationUnavailable` without one, or
    :class:`DaskEvaluationError` when ``state`` (a gallery this evaluation scattered) shows that the
    client it started with has gone since."""
    client, reason = current_client()
    if client is None:
        if state is not None:
            raise DaskEvaluationError(f"{CLOSED} ({reason}); no partial result is returned")
        raise ImplementationUnavailable(f"implementation 'dask' is unavailable: {reason}")
    return client


#: what a client closed during an evaluation raises (as DaskEvaluationError)
CLOSED = "implementation 'dask': the dask.distributed client was closed during the evaluation"


def closed(client) -> bool:
    return getattr(client, "status", "running") != "running"


def on_cluster(client, run: Callable[[], Outcome]) -> Outcome:
    """``run()``, with what a client closed meanwhile makes distributed raise (``ClosedClientError``,
    ``RuntimeError: IOLoop is closed``, a cancelled future) raised as :class:`DaskEvaluationError`;
    the queries' own errors, on a running client, pass as they are."""
    try:
        return run()
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 (distributed's errors have no common base class)
        if not closed(client):
            raise
        cause = exc.__cause__ if isinstance(exc, DaskEvaluationError) and exc.__cause__ is not None else exc
        raise DaskEvaluationError(
            f"{CLOSED} ({type(cause).__name__}: {str(cause)[:200]}); no partial result is returned"
        ) from cause


def cancel_pending(client, futures: list) -> None:
    """Cancel the unfinished ``futures`` (cleanup: a closed client has nothing left to cancel)."""
    pending = [f for f in futures if not f.done()]
    if not pending or closed(client):
        return
    try:
        client.cancel(pending)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception:  # noqa: BLE001 (closed while cancelling: the error being raised matters, not this)
        if not closed(client):
            raise
