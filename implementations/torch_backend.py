"""The torch implementation: the shared vectorised algorithm on torch tensors, on any device.

This module supplies only what is torch's own: :class:`TorchOps` (the array operations the
shared code in ``vector_*`` calls) and :class:`_TorchSource`, which moves a problem's arrays
to ``device`` (CPU here; the same code runs on CUDA) and builds every block there.  The block
loop, the sort key and the metrics are shared with numpy
(:func:`~.vector.blocks.compute_in_blocks`); per-query results are copied back as float64
numpy arrays per block.

Ties never depend on how ``torch.sort`` orders equal keys (CPU and CUDA differ,
pytorch/pytorch#103909): the shared sort key packs distance, tie key and relevance bit into
one int64 per item and only sorted values are used, never the permutation; float64
distances are sorted with ``stable=True`` (a documented guarantee on every device) on rows
already in tie-key order.  Hamming distances come from a float32 matrix product of {0, 1}
bits (``|q| + |r| - 2 q.r``), exact while the code length stays below 2**24.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable, Optional, cast

import numpy as np
from retrieval_conformance.implementations.vector.blocks import compute_in_blocks
from retrieval_conformance.reference.contract.cutoffs import within_gallery
from retrieval_conformance.reference.contract.install_hints import install_hint
from retrieval_conformance.reference.contract.problem import Options, PerQuery, Problem
from retrieval_conformance.reference.contract.registry import Implementation, ImplementationUnavailable, PreparedGallery

TORCH_VERSION = "2.13.0"
_MISSING = f"torch is not installed (torch=={TORCH_VERSION} is the version tested); {install_hint('torch')}"


def _torch():
    import torch  # noqa: PLC0415  (optional dependency, imported on use)

    return torch


class TorchOps:
    """The array operations of the shared ``vector_*`` code, for torch tensors on ``device``."""

    def __init__(self, device):
        self.torch = _torch()
        self.device = device
        self._tables = {}
        t = self.torch
        self._dtypes = {"f64": t.float64, "i64": t.int64, "bool": t.bool}

    def f64(self, x):
        if isinstance(x, self.torch.Tensor):
            return x.to(self.torch.float64)
        return self.torch.as_tensor(x, dtype=self.torch.float64, device=self.device)

    def i64(self, x):
        return x.to(self.torch.int64)

    def astype(self, x, kind: str):
        """A copy of ``x`` as ``kind`` (the sort key is built in place; ``.to`` alone would
        return ``x`` itself when it has the type already)."""
        return x.to(self._dtypes[kind], copy=True)

    def dtype_name(self, x) -> str:
        return str(x.dtype).replace("torch.", "")

    def bits_i32(self, x):
        return x.view(self.torch.int32)

    def arange(self, n: int):
        return self.torch.arange(n, dtype=self.torch.int64, device=self.device)

    def zeros(self, shape, kind: str):
        return self.torch.zeros(shape, dtype=self._dtypes[kind], device=self.device)

    def full(self, shape, value, kind: str):
        return self.torch.full(shape, value, dtype=self._dtypes[kind], device=self.device)

    def cumsum(self, x, axis: int):
        dtype = self.torch.float64 if x.dtype.is_floating_point else self.torch.int64
        return self.torch.cumsum(x, dim=axis, dtype=dtype)

    def cumprod(self, x, axis: int):
        return self.torch.cumprod(x, dim=axis)

    def flip(self, x, axis: int):
        return self.torch.flip(x, dims=(axis,))

    def sum(self, x, axis: int):
        dtype = self.torch.float64 if x.dtype.is_floating_point else self.torch.int64
        return x.sum(dim=axis, dtype=dtype)

    def nonzero(self, x):
        return self.torch.nonzero(x, as_tuple=True)

    def where(self, cond, a, b):
        return self.torch.where(cond, a, b)

    def clip(self, x, lo=None, hi=None):
        return self.torch.clamp(x, min=lo, max=hi)

    def concat(self, parts):
        return self.torch.cat(parts)

    def hcat(self, parts):
        return self.torch.cat(parts, dim=1)

    def max_int(self, x) -> int:
        return int(x.max()) if x.numel() else 0

    def any(self, x) -> bool:
        return bool(x.any())

    def table(self, name: str, array: np.ndarray):
        if name not in self._tables:
            self._tables[name] = self.torch.as_tensor(array, device=self.device)
        return self._tables[name]

    def searchsorted(self, sorted_1d, values, right: bool = False):
        return self.torch.searchsorted(sorted_1d, values, right=right)

    def cumsum_i32(self, x):
        return self.torch.cumsum(x, dim=0, dtype=self.torch.int32)

    def bincount(self, x, length: int):
        return self.torch.bincount(x, minlength=length)

    def repeat(self, x, counts):
        return self.torch.repeat_interleave(x, counts)

    def cached(self, key, make):
        if key not in self._tables:
            self._tables[key] = make()
        return self._tables[key]

    def key_kind(self, bits: int) -> str:
        return "i64"  # one key type: torch's unsigned types lack shifts and sorts on some devices

    def sort_values(self, key):
        return self.torch.sort(key, dim=1)[0]  # values only: equal keys are equal values

    def low_bit(self, key):
        return (key & 1).to(self.torch.bool)

    def stable_sort(self, x):
        # stable=True is a documented guarantee on every device
        return self.torch.sort(x, dim=1, stable=True)

    def take_rows(self, x, idx):
        return self.torch.gather(x, 1, idx)

    def no_grad(self):
        return self.torch.no_grad()

    def to_numpy(self, x) -> np.ndarray:
        return x.detach().cpu().numpy()


def default_device() -> str:
    """``$RC_TORCH_DEVICE`` if set, else ``cuda`` when available, else ``cpu``."""
    env = os.environ.get("RC_TORCH_DEVICE")
    if env:
        return env
    torch = _torch()
    return "cuda" if torch.cuda.is_available() else "cpu"


def checked_device(device, argument: str, remedy: str):
    """``device`` as a ``torch.device`` this machine can allocate on; else ``ValueError`` (or
    ``TypeError``) naming ``argument``, what was given and ``remedy``."""
    torch = _torch()
    if not isinstance(device, (str, torch.device)):
        raise TypeError(
            f"{argument}: expected a torch device name such as 'cpu' or 'cuda:0' (or a torch.device), "
            f"got {type(device).__name__} {device!r}"
        )
    try:
        place = torch.device(device)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise ValueError(
            f"{argument}: {device!r} is not a torch device ({exc}); expected e.g. 'cpu', 'cuda' or 'cuda:1'; {remedy}"
        ) from None
    if place.type == "meta":  # shapes without data: nothing would be computed
        raise ValueError(f"{argument}: {device!r} holds no data; {remedy}")
    if place.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"{argument}: {device!r} asks for CUDA, but torch {torch.__version__} sees no CUDA device "
            f"on this machine; {remedy}"
        )
    try:
        torch.zeros(1, device=place)  # a device this build or machine lacks fails here, not mid-run
    except (RuntimeError, AssertionError) as exc:
        raise ValueError(f"{argument}: torch cannot allocate on {device!r} here ({str(exc)[:200]}); {remedy}") from None
    return place


@functools.lru_cache(maxsize=8)
def _environment_device_problem(env: str) -> Optional[str]:
    """Why ``RC_TORCH_DEVICE=env`` cannot be used here (None when it can); checked once per value."""
    try:
        checked_device(
            env, "RC_TORCH_DEVICE", "set RC_TORCH_DEVICE=cpu, or unset it (then CUDA if present, else the CPU)"
        )
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None


class _TorchSource:
    """Distances, relevance and junk of query blocks, built on the device."""

    def __init__(self, problem: Problem, gallery: PreparedGallery, device):
        torch = self.torch = _torch()
        self.p, self.device = problem, device

        def dev(a, dtype=None):
            a = np.ascontiguousarray(a)
            # torch wants writable memory even when it only reads, and no negative stride (numpy
            # calls a one-row view with a negative row stride contiguous)
            if not a.flags.writeable or any(step < 0 for step in a.strides):
                a = a.copy()
            t = torch.from_numpy(a).to(device)
            return t if dtype is None else t.to(dtype)

        self.dev = dev
        self.q_bits: Any = None  # tensors (typed Any: torch is not analysed)
        self.db_bits: Any = None
        if problem.distances is None:
            # 0/1 products summed in float32 are exact below 2**24 bits
            dtype = torch.float32 if cast(np.ndarray, problem.query_bits).shape[1] < 2**24 else torch.float64
            self.q_bits = dev(problem.query_bits, dtype)
            self.db_bits = gallery.get("db_bits", lambda: dev(problem.db_bits, dtype))
            self.db_ones = gallery.get("db_ones", lambda: self.db_bits.sum(1))
        self.ql: Any = None
        self.dl: Any = None
        if problem.query_labels is not None:
            if problem.multi_label:
                self.ql = dev(problem.query_labels, torch.float32)
                self.dl = gallery.get("dl", lambda: dev(problem.db_labels, torch.float32))
            else:
                self.ql = dev(problem.query_labels)
                self.dl = gallery.get("dl", lambda: dev(problem.db_labels))
        self.qc = dev(problem.query_cams) if problem.query_cams is not None else None
        self.dc: Any = gallery.get("dc", lambda: dev(problem.db_cams)) if problem.db_cams is not None else None
        self.junk_id_mask = None
        if problem.junk_ids:
            ids = torch.as_tensor(list(problem.junk_ids), dtype=torch.int64, device=device)
            self.junk_id_mask = gallery.get("junk_id_mask", lambda: torch.isin(self.dl, ids))

    def distances(self, s: int, e: int):
        if self.q_bits is None:  # without codes, the distances are set
            d = cast(np.ndarray, self.p.distances)[s:e]
            # validated input is float32/float64; anything else is widened (order kept)
            return self.dev(d if d.dtype in (np.float32, np.float64) else d.astype(np.float64))
        q = self.q_bits[s:e]
        d = q.sum(1)[:, None] + self.db_ones[None, :] - 2 * (q @ self.db_bits.T)
        return self.torch.round(d).to(self.torch.int64)

    def relevance(self, s: int, e: int):
        if self.p.relevance is not None:
            return self.dev(self.p.relevance[s:e])
        if self.p.multi_label:
            return (self.ql[s:e] @ self.dl.T) > 0
        return self.ql[s:e, None] == self.dl[None, :]

    def grades(self, s: int, e: int):
        return None if self.p.grades is None else self.dev(self.p.grades[s:e], self.torch.int64)

    def junk(self, s: int, e: int):
        p, torch = self.p, self.torch
        if not p.has_junk:
            return None
        out = torch.zeros((e - s, p.n_gallery), dtype=torch.bool, device=self.device)
        if p.junk is not None:
            out |= self.dev(p.junk[s:e])
        if self.qc is not None:
            out |= (self.ql[s:e, None] == self.dl[None, :]) & (self.qc[s:e, None] == self.dc[None, :])
        if self.junk_id_mask is not None:
            out |= self.junk_id_mask[None, :]
        return out


class TorchImplementation(Implementation):
    """torch on any device (``device=None``: ``$RC_TORCH_DEVICE``, else CUDA if present, else CPU)."""

    name = "torch"
    speed_rank = 20

    def __init__(self, device: Optional[str] = None, block_bytes: Optional[int] = None):
        self._device = device
        self.block_bytes = block_bytes

    def unavailable_reason(self) -> Optional[str]:
        try:
            _torch()
        except ImportError:
            return _MISSING
        env = os.environ.get("RC_TORCH_DEVICE")
        if self._device is None and env:
            return _environment_device_problem(env)
        return None

    @property
    def device(self):
        return self._device if self._device is not None else default_device()

    def on_device(self, device) -> "TorchImplementation":
        """This implementation on ``device`` (``evaluate(device=...)``): a str such as ``"cpu"``,
        ``"cuda"``, ``"cuda:1"``, or a ``torch.device``; checked here, before any data moves."""
        try:
            _torch()
        except ImportError:
            raise ImplementationUnavailable(_MISSING) from None
        place = checked_device(device, "device", "pass device='cpu' or leave device unset")
        return TorchImplementation(device=str(place), block_bytes=self.block_bytes)

    def prepare(self, problem: Problem) -> PreparedGallery:
        """A store for the gallery's arrays on the device, filled by the first query block."""
        return PreparedGallery(problem)

    @within_gallery
    def compute(
        self,
        problem: Problem,
        options: Options,
        progress: Optional[Callable[[int, int], None]] = None,
        state: object = None,
    ) -> PerQuery:
        """Per-query metrics of ``problem`` under ``options`` (see ``vector.blocks``);
        ``progress(done, total)`` after every block of queries; ``state`` from :meth:`prepare`
        (the gallery's arrays on the device, moved there once)."""
        reason = self.unavailable_reason()
        if reason is not None:
            raise ImplementationUnavailable(reason)
        device = _torch().device(self.device)
        return compute_in_blocks(
            TorchOps(device),
            problem,
            options,
            functools.partial(_TorchSource, device=device),
            self.block_bytes,
            progress,
            state,
        )
