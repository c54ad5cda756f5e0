"""ReID workloads (Market-1501, MSMT17): identity-structured float32 distances with cameras.

Identities appear in 2..n cameras with one query per (identity, camera) pair; features are an
identity centre plus a camera offset plus noise, L2 normalised; distances are squared
Euclidean in float32 (torchreid's default).  Gallery items with the query's id and camera are
junk under the ``reid`` protocol; Market-1501 adds distractors (id 0, ordinary wrong matches)
and junk images (id -1).  MSMT17's distance matrix is written block by block to a
memory-mapped ``.npy`` (never whole in memory).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Optional

import numpy as np
from retrieval_conformance.conformance.bench.workload import SEEDS, Workload


@dataclass
class _ReidSpec:
    n_ids: int
    n_cams: int
    n_queries: int
    n_identity_gallery: int
    n_distractors: int = 0  # id 0: ordinary wrong matches
    n_junk: int = 0  # id -1: junk under reid-matlab, a wrong match under reid
    dim: int = 64
    cam_scale: float = 0.45  # camera offset norm (the cross-camera domain gap)
    noise: float = 0.9  # noise vector norm; with centres of norm 1: Market mAP ~0.8, Rank-1 ~0.96


def _reid_ids(rng: np.random.Generator, spec: _ReidSpec):
    """Ids and cameras: one query per (identity, camera) pair; gallery images spread over pairs."""
    cams_per_id = np.full(spec.n_ids, 2)
    extra = spec.n_queries - cams_per_id.sum()
    if extra < 0 or spec.n_queries > spec.n_ids * spec.n_cams:
        raise ValueError("n_queries: cannot place one query per (identity, camera) pair")
    while extra > 0:  # add cameras at random until the pair count equals the query count
        room = np.flatnonzero(cams_per_id < spec.n_cams)
        chosen = rng.choice(room, size=min(extra, room.size), replace=False)
        cams_per_id[chosen] += 1
        extra -= chosen.size
    pair_id = np.repeat(np.arange(1, spec.n_ids + 1), cams_per_id)
    pair_cam = np.concatenate([rng.choice(spec.n_cams, size=c, replace=False) for c in cams_per_id])
    # gallery images per pair: Poisson, then nudged to the exact total
    per_pair = rng.poisson(spec.n_identity_gallery / pair_id.size, size=pair_id.size)
    diff = spec.n_identity_gallery - per_pair.sum()
    while diff != 0:
        idx = rng.integers(0, per_pair.size, size=abs(diff))
        if diff > 0:
            np.add.at(per_pair, idx, 1)
        else:
            idx = idx[per_pair[idx] > 0]
            np.add.at(per_pair, np.unique(idx), -1)
        diff = spec.n_identity_gallery - per_pair.sum()
    g_pid = np.repeat(pair_id, per_pair)
    g_cam = np.repeat(pair_cam, per_pair)
    g_pid = np.concatenate([g_pid, np.zeros(spec.n_distractors, np.int64), np.full(spec.n_junk, -1)])
    g_cam = np.concatenate([g_cam, rng.integers(0, spec.n_cams, spec.n_distractors + spec.n_junk)])
    order = rng.permutation(g_pid.size)
    return (
        pair_id.astype(np.int64),
        pair_cam.astype(np.int64),
        g_pid[order].astype(np.int64),
        g_cam[order].astype(np.int64),
    )


def _reid_features(
    rng: np.random.Generator,
    spec: _ReidSpec,
    pids: np.ndarray,
    cams: np.ndarray,
    centres: np.ndarray,
    cam_offsets: np.ndarray,
) -> np.ndarray:
    """L2-normalised float32 features: identity centre + camera offset + noise.

    Distractors (id 0) get a fresh random centre each; junk images (id -1) are a random
    identity's centre under heavy noise (partial or badly cropped detections).
    """
    n = pids.size
    base = np.empty((n, spec.dim), dtype=np.float32)
    real = pids > 0
    base[real] = centres[pids[real] - 1]
    base[pids == 0] = rng.standard_normal((int((pids == 0).sum()), spec.dim), dtype=np.float32)
    junk = pids == -1
    base[junk] = centres[rng.integers(0, centres.shape[0], int(junk.sum()))]
    # per-dimension noise scaled by 1/sqrt(dim): ``noise`` is the expected norm of the noise vector
    noise = (np.where(junk, 3.0 * spec.noise, spec.noise) / np.sqrt(spec.dim)).astype(np.float32)
    f = base + cam_offsets[cams] + noise[:, None] * rng.standard_normal((n, spec.dim), dtype=np.float32)
    f /= np.linalg.norm(f, axis=1, keepdims=True)
    return f.astype(np.float32)


def _reid_embeddings(spec: _ReidSpec, seed: int):
    rng = np.random.default_rng(seed)
    q_pid, q_cam, g_pid, g_cam = _reid_ids(rng, spec)
    centres = rng.standard_normal((spec.n_ids, spec.dim), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    cam_offsets = (spec.cam_scale / np.sqrt(spec.dim)) * rng.standard_normal((spec.n_cams, spec.dim), dtype=np.float32)
    qf = _reid_features(rng, spec, q_pid, q_cam, centres, cam_offsets)
    gf = _reid_features(rng, spec, g_pid, g_cam, centres, cam_offsets)
    return qf, gf, q_pid, q_cam, g_pid, g_cam


# BLAS picks its kernel by the matrix shape, so q @ g.T can differ in the last bit between a
# 5-row and a 12-row product: the cross term is always computed in chunks of this many query
# rows, and a caller that splits the queries into blocks aligned to it gets the same bits
ROW_CHUNK = 64


def squared_euclidean(qf: np.ndarray, gf: np.ndarray, g_sq: Optional[np.ndarray] = None) -> np.ndarray:
    """float32 ``|q|^2 + |g|^2 - 2 q.g`` (torchreid's default ``euclidean`` distance), clipped at 0."""
    if g_sq is None:
        g_sq = np.einsum("ij,ij->i", gf, gf)
    q_sq = np.einsum("ij,ij->i", qf, qf)
    d = q_sq[:, None] + g_sq[None, :]
    for s in range(0, qf.shape[0], ROW_CHUNK):
        d[s : s + ROW_CHUNK] -= np.float32(2.0) * (qf[s : s + ROW_CHUNK] @ gf.T)
    np.maximum(d, 0, out=d)
    return d.astype(np.float32, copy=False)


def write_distances_npy(path: str, qf: np.ndarray, gf: np.ndarray, block_rows: int = 512) -> np.memmap:
    """Write the (Q, N) float32 distance matrix to ``path`` (``.npy``) one query block at a time.

    Memory: one ``block_rows x N`` block at a time, never the whole matrix.  Returns the file
    opened read-only as a memory map.
    """
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(qf.shape[0], gf.shape[0]))
    g_sq = np.einsum("ij,ij->i", gf, gf)
    block_rows = max(ROW_CHUNK, block_rows - block_rows % ROW_CHUNK)  # the same bits as one whole product
    for s in range(0, qf.shape[0], block_rows):
        out[s : s + block_rows] = squared_euclidean(qf[s : s + block_rows], gf, g_sq)
    out.flush()
    del out
    return np.load(path, mmap_mode="r")


def _reid_workload(
    name: str, scale: str, spec: _ReidSpec, title: str, mapped: bool, directory: Optional[str]
) -> Workload:
    seed = SEEDS[name]
    qf, gf, q_pid, q_cam, g_pid, g_cam = _reid_embeddings(spec, seed)
    tmp = None
    if mapped:
        tmp = directory or tempfile.mkdtemp(prefix=f"rc-bench-{name}-")
        os.makedirs(tmp, exist_ok=True)
        dist = write_distances_npy(os.path.join(tmp, "distances.npy"), qf, gf)
    else:
        dist = squared_euclidean(qf, gf)
    arrays = {"distances": dist, "query_labels": q_pid, "db_labels": g_pid, "query_cams": q_cam, "db_cams": g_cam}
    return Workload(name, scale, title, "distances", arrays, "reid", {}, seed, directory=tmp)


def _market_spec(scale: str, dim: int = 64) -> _ReidSpec:
    if scale == "full":
        return _ReidSpec(
            n_ids=751, n_cams=6, n_queries=3368, n_identity_gallery=12_720, n_distractors=2793, n_junk=400, dim=dim
        )
    return _ReidSpec(n_ids=12, n_cams=6, n_queries=40, n_identity_gallery=150, n_distractors=30, n_junk=10, dim=dim)


def market1501_embeddings(scale: str, dim: int = 256):
    """Market-1501-sized features at ``scale``: ``(query features, gallery features, ids and
    cameras as ``evaluate``'s keywords)``, float32, L2-normalised, ``dim`` dimensions."""
    qf, gf, q_pid, q_cam, g_pid, g_cam = _reid_embeddings(_market_spec(scale, dim), SEEDS["market1501"])
    return qf, gf, {"query_labels": q_pid, "db_labels": g_pid, "query_cams": q_cam, "db_cams": g_cam}


def market1501(scale: str) -> Workload:
    """``market1501`` at ``scale`` (in memory)."""
    spec = _market_spec(scale)
    n_g = spec.n_identity_gallery + spec.n_distractors + spec.n_junk
    title = (
        f"Market-1501 ReID: {spec.n_queries:,} x {n_g:,} float32 squared-Euclidean distances, "
        f"{spec.n_ids} ids, {spec.n_cams} cameras, ids 0 (distractors) and -1 (junk images)"
    )
    return _reid_workload("market1501", scale, spec, title, mapped=False, directory=None)


def msmt17(scale: str, directory: Optional[str]) -> Workload:
    """``msmt17`` at ``scale``, its distances memory-mapped in ``directory`` (None: a temporary folder)."""
    if scale == "full":
        spec = _ReidSpec(n_ids=3060, n_cams=15, n_queries=11_659, n_identity_gallery=82_161, noise=1.0, cam_scale=0.5)
    else:
        spec = _ReidSpec(n_ids=10, n_cams=15, n_queries=36, n_identity_gallery=300, noise=1.0, cam_scale=0.5)
    title = (
        f"MSMT17 ReID: {spec.n_queries:,} x {spec.n_identity_gallery:,} float32 distances, memory-mapped "
        f".npy written block by block, {spec.n_ids} ids, {spec.n_cams} cameras"
    )
    return _reid_workload("msmt17", scale, spec, title, mapped=True, directory=directory)
