"""The torch implementation: the numpy algorithm on torch tensors, on any device.

Device-agnostic: every block is built on ``device`` (CPU here; the same code runs on CUDA)
and stays there until its per-query results are copied back as float64 numpy arrays.
Python loops run over blocks of queries only.

Ties never depend on how ``torch.sort`` orders equal keys (CPU and CUDA differ,
pytorch/pytorch#103909): float32 and Hamming distances are mapped to an order-preserving
integer and packed with the tie key (gallery index, or N-1-index for ``reverse``) and the
relevance bit into one int64 key per item; only the sorted values are used, never the
permutation, so every device gives the same result.  float64 distances are sorted with
``stable=True`` (a documented guarantee on every device) on rows already in tie-key
order.  Hamming distances come from a float32 matrix product of {0, 1} bits
(``|q| + |r| - 2 q.r``), exact while the code length stays below 2**24.
"""
from __future__ import annotations

import os
from typing import Optional

import numpy as np
from retrieval_conformance.implementations._vector_common import (
    FIELDS,
    block_metrics,
    block_rows,
    empty_per_query,
    radius_values,
    to_per_query,
)
from retrieval_conformance.implementations.registry import Implementation
from retrieval_conformance.reference.cutoffs import within_gallery
from retrieval_conformance.reference.problem import Options, PerQuery, Problem

TORCH_VERSION = "2.13.0"
_MISSING = (
    f"torch is not installed; pip install 'retrieval-conformance[torch]' (torch=={TORCH_VERSION})"
)


def _torch():
    import torch  # noqa: PLC0415  (optional dependency, imported on use)

    return torch


class TorchOps:
    """The array operations of ``_vector_common.block_metrics`` for torch tensors."""

    name = "torch"

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

    def to_numpy(self, x) -> np.ndarray:
        return x.detach().cpu().numpy()


def default_device() -> str:
    """``$RC_TORCH_DEVICE`` if set, else ``cuda`` when available, else ``cpu``."""
    env = os.environ.get("RC_TORCH_DEVICE")
    if env:
        return env
    torch = _torch()
    return "cuda" if torch.cuda.is_available() else "cpu"


class _TorchSource:
    """Distances, relevance and junk of query blocks, built on the device."""

    def __init__(self, problem: Problem, device):
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
        self.q_bits = self.db_bits = None
        if problem.distances is None:
            # 0/1 products summed in float32 are exact below 2**24 bits
            dtype = torch.float32 if problem.query_bits.shape[1] < 2 ** 24 else torch.float64
            self.q_bits = dev(problem.query_bits, dtype)
            self.db_bits = dev(problem.db_bits, dtype)
            self.db_ones = self.db_bits.sum(1)
        self.ql = self.dl = None
        if problem.query_labels is not None:
            if problem.multi_label:
                self.ql = dev(problem.query_labels, torch.float32)
                self.dl = dev(problem.db_labels, torch.float32)
            else:
                self.ql = dev(problem.query_labels)
                self.dl = dev(problem.db_labels)
        self.qc = dev(problem.query_cams) if problem.query_cams is not None else None
        self.dc = dev(problem.db_cams) if problem.db_cams is not None else None
        self.junk_id_mask = None
        if problem.junk_ids:
            ids = torch.as_tensor(list(problem.junk_ids), dtype=torch.int64, device=device)
            self.junk_id_mask = torch.isin(self.dl, ids)

    def distances(self, s: int, e: int):
        if self.q_bits is None:
            d = self.p.distances[s:e]
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

    def sorted_block(self, dist, rel, junk, ties: str):
        """(key_s, rel_s): rows sorted by (distance, tie key), junk last (see the module doc)."""
        torch = self.torch
        n = dist.shape[1]
        reverse = ties == "reverse"
        if dist.dtype == torch.float64:
            d = dist + 0.0  # -0.0 + 0.0 = +0.0
            if junk is not None:
                d = torch.where(junk, torch.inf, d)
            if reverse:
                d = torch.flip(d, dims=(1,))
                rel = torch.flip(rel, dims=(1,))
            # stable=True is a documented guarantee on every device; the row is already in
            # tie-key order (gallery order, or reversed for ``reverse``)
            key_s, idx = torch.sort(d, dim=1, stable=True)
            return key_s, torch.gather(rel, 1, idx)
        if dist.dtype == torch.float32:
            b = (dist + 0.0).view(torch.int32)  # -0.0 + 0.0 = +0.0
            hi = torch.where(b < 0, b ^ 0x7FFFFFFF, b).to(torch.int64)
            sentinel = 0x7FFFFFFF
        else:
            hi = dist.to(torch.int64)
            sentinel = int(self.p.query_bits.shape[1]) + 1
        if junk is not None:
            hi = torch.where(junk, sentinel, hi)
        tie_bits = int(n - 1).bit_length() if ties in ("stable", "reverse") else 0
        shift = tie_bits + 1
        key = (hi << shift) | rel.to(torch.int64)
        if tie_bits:
            tie = torch.arange(n, dtype=torch.int64, device=dist.device)
            if reverse:
                tie = (n - 1) - tie
            key = key | (tie[None, :] << 1)
        key, _ = torch.sort(key, dim=1)  # values only: equal keys are equal values
        return key >> shift, (key & 1).to(torch.bool)


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
        return None

    @property
    def device(self):
        return self._device if self._device is not None else default_device()

    @within_gallery
    def compute(self, problem: Problem, options: Options) -> PerQuery:
        """Per-query metrics of ``problem`` under ``options`` (see ``_vector_common``)."""
        reason = self.unavailable_reason()
        if reason is not None:
            from retrieval_conformance.implementations.registry import ImplementationUnavailable

            raise ImplementationUnavailable(reason)
        torch = _torch()
        device = torch.device(self.device)
        ops = TorchOps(device)
        Q, N = problem.n_queries, problem.n_gallery
        out = empty_per_query(Q, options)
        if Q == 0 or N == 0:
            return to_per_query(out, options)
        if N >= 2 ** 31:
            raise ValueError(f"gallery: at most 2**31 - 1 items are supported, got {N}")
        src = _TorchSource(problem, device)
        kwargs = {} if self.block_bytes is None else {"budget": self.block_bytes}
        step = block_rows(Q, N, **kwargs)
        with torch.no_grad():
            for s in range(0, Q, step):
                e = min(Q, s + step)
                dist = src.distances(s, e)
                rel = src.relevance(s, e)
                junk = src.junk(s, e)
                if junk is not None:
                    rel = rel & ~junk
                key_s, rel_s = src.sorted_block(dist, rel, junk, options.ties)
                n_kept = torch.full((e - s,), N, dtype=torch.int64, device=device)
                if junk is not None:
                    n_kept = n_kept - junk.sum(1)
                res = block_metrics(ops, key_s, rel_s, n_kept, options, row0=s)
                if options.radius is not None:
                    within = dist.to(torch.float64) <= float(options.radius)
                    if junk is not None:
                        within = within & ~junk
                    res["precision_at_radius"], res["recall_at_radius"] = radius_values(
                        ops, within, rel, res["n_relevant"]
                    )
                names = FIELDS + (("precision_at_radius", "recall_at_radius")
                                  if options.radius is not None else ())
                for name in names:
                    out[name][s:e] = ops.to_numpy(res[name])
        return to_per_query(out, options)
