"""Synthetic but realistic benchmark workloads at the standard sizes of CONVENTIONS §12.

Every workload is generated from a fixed seed, so two runs (and two machines) time exactly the
same input.  Each exists at two scales: ``full`` (the real dataset's shape) and ``smoke`` (a
few dozen queries, small enough for the exact pure-Python reference; run in the normal suite).

=============== ======================================= =========================================
name            shape (full)                            input
=============== ======================================= =========================================
cifar10-all     1,000 x 54,000, mAP@ALL                 64-bit ±1 codes (float32), one-hot labels
cifar10-1000    1,000 x 54,000, mAP@1000                the same codes and labels
nuswide-5000    2,100 x 193,734, mAP@5000               64-bit ±1 codes, 21 multi-hot labels
market1501      3,368 x 15,913, ``reid``                float32 squared-Euclidean distances,
                                                        751 ids, 6 cameras, ids 0 and -1
msmt17          11,659 x 82,161, ``reid``               float32 distances in a memory-mapped .npy
                                                        written block by block (never whole in
                                                        memory), 3,060 ids, 15 cameras
oxford5k        55 x 5,063, trapezoid AP with junk      float32 distances, relevance and junk
=============== ======================================= =========================================

How the data is structured (so that rankings, ties and the share of relevant items look like
the real thing, not like uniform noise):

* Hashing (CIFAR-10, NUS-WIDE): every class (label) has a random ±1 prototype; an item's code
  copies, bit by bit, the prototype of one of its labels and flips each bit with a small
  probability; a minority of "hard" items flip far more.  64-bit Hamming distances take 65
  values, so ties are everywhere, as in real hashing evaluations.  The database is shuffled.
* ReID (Market-1501, MSMT17): identities appear in 2..n cameras with one query per
  (identity, camera) pair; features are an identity centre plus a camera offset plus noise, L2
  normalised; distances are squared Euclidean in float32 (torchreid's default).  Gallery items
  with the query's id and camera are junk under the ``reid`` protocol; Market-1501 adds
  distractors (id 0, ordinary wrong matches) and junk images (id -1).
* Oxford5k: 11 landmarks x 5 queries; per-landmark numbers of positives and junk items of the
  same order as the real ground truth; similarity-like float32 distances.

Example
-------
>>> w = build("cifar10-1000", scale="smoke")
>>> res = rc.evaluate(**w.evaluate_kwargs(), implementation="numpy")   # doctest: +SKIP
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

WORKLOAD_NAMES = ("cifar10-all", "cifar10-1000", "nuswide-5000", "market1501", "msmt17", "oxford5k")
SCALES = ("full", "smoke")

#: one seed per workload family: the same input on every run and every machine
SEEDS = {"cifar10": 20_100, "nuswide": 20_200, "market1501": 20_300, "msmt17": 20_400, "oxford5k": 20_500}


@dataclass
class Workload:
    """One benchmark input.

    Attributes
    ----------
    name, scale : str
        ``name`` from :data:`WORKLOAD_NAMES`, ``scale`` ``"full"`` or ``"smoke"``.
    title : str
        Human description with the shape (shown by the summary command).
    kind : {"codes", "distances"}
        ``codes``: ``query_codes``/``db_codes`` (±1 float32) with ``query_labels``/``db_labels``
        (multi-hot float32).  ``distances``: ``distances`` (float32, in memory or memory-mapped)
        with either ids and cameras (ReID) or ``relevance``/``junk`` matrices (Oxford).
    arrays : dict of str to ndarray
        The inputs, named as :func:`retrieval_conformance.evaluate` names them.
    protocol : str
        Preset passed to ``rc.evaluate``.
    options : dict
        Further ``rc.evaluate`` keyword arguments (``k``, ``ap_rule`` ...).
    directory : str or None
        Temporary folder holding memory-mapped arrays (removed by :meth:`cleanup`).
    """

    name: str
    scale: str
    title: str
    kind: str
    arrays: Dict[str, np.ndarray]
    protocol: str
    options: Dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    directory: Optional[str] = None

    # -- shape ---------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        key = "distances" if self.kind == "distances" else "query_codes"
        return int(self.arrays[key].shape[0])

    @property
    def n_gallery(self) -> int:
        if self.kind == "distances":
            return int(self.arrays["distances"].shape[1])
        return int(self.arrays["db_codes"].shape[0])

    @property
    def k(self) -> Optional[int]:
        return self.options.get("k")

    @property
    def group(self) -> str:
        """pytest-benchmark group: stable across runs, so saved runs compare group by group."""
        return f"{self.name} {self.n_queries}x{self.n_gallery}" + ("" if self.scale == "full" else " (smoke)")

    @property
    def memory_mapped(self) -> bool:
        return any(isinstance(a, np.memmap) for a in self.arrays.values())

    def extra_info(self) -> Dict[str, Any]:
        """Shapes and conventions for ``benchmark.extra_info``."""
        info: Dict[str, Any] = {
            "workload": self.name, "scale": self.scale, "title": self.title,
            "queries": self.n_queries, "gallery": self.n_gallery, "protocol": self.protocol,
            "k": self.k, "seed": self.seed, "memory_mapped": self.memory_mapped,
        }
        for key, arr in self.arrays.items():
            info[f"shape_{key}"] = list(arr.shape)
            info[f"dtype_{key}"] = str(arr.dtype)
        if self.kind == "codes":
            info["bits"] = int(self.arrays["query_codes"].shape[1])
        return info

    # -- inputs --------------------------------------------------------------------------
    def evaluate_kwargs(self, **overrides) -> Dict[str, Any]:
        """Keyword arguments of ``rc.evaluate`` for this workload (arrays, protocol, options)."""
        kw: Dict[str, Any] = dict(self.arrays)
        kw["protocol"] = self.protocol
        kw.update(self.options)
        kw.update(overrides)
        return kw

    def subset(self, rows: np.ndarray) -> "Workload":
        """The same workload restricted to the queries ``rows`` (in memory)."""
        rows = np.asarray(rows)
        arrays = {}
        for key, arr in self.arrays.items():
            if key.startswith("query_") or key in ("distances", "relevance", "junk"):
                arrays[key] = np.ascontiguousarray(arr[rows])
            else:
                arrays[key] = arr
        return Workload(self.name, self.scale, self.title + f" (queries {rows.size})", self.kind, arrays,
                        self.protocol, dict(self.options), self.seed)

    # -- storage (for the memory-measuring child process) -------------------------------
    def save(self, directory: str) -> str:
        """Write every array as ``.npy`` plus ``meta.json`` into ``directory``; returns it.

        A memory-mapped array already stored in ``directory`` is left where it is.
        """
        os.makedirs(directory, exist_ok=True)
        mapped = {}
        for key, arr in self.arrays.items():
            path = os.path.join(directory, f"{key}.npy")
            if isinstance(arr, np.memmap) and arr.filename and os.path.abspath(arr.filename) == os.path.abspath(path):
                mapped[key] = True
                continue
            if isinstance(arr, np.memmap):
                mapped[key] = True
                _copy_blockwise(arr, path)
            else:
                np.save(path, arr)
        meta = {"name": self.name, "scale": self.scale, "title": self.title, "kind": self.kind,
                "protocol": self.protocol, "options": self.options, "seed": self.seed,
                "keys": list(self.arrays), "mapped": mapped}
        with open(os.path.join(directory, "meta.json"), "w") as fh:
            json.dump(meta, fh)
        return directory

    @classmethod
    def load(cls, directory: str) -> "Workload":
        """Read a workload written by :meth:`save` (memory-mapped arrays stay memory-mapped)."""
        with open(os.path.join(directory, "meta.json")) as fh:
            meta = json.load(fh)
        arrays = {}
        for key in meta["keys"]:
            path = os.path.join(directory, f"{key}.npy")
            arrays[key] = np.load(path, mmap_mode="r" if meta["mapped"].get(key) else None)
        return cls(meta["name"], meta["scale"], meta["title"], meta["kind"], arrays, meta["protocol"],
                   meta["options"], meta["seed"])

    def cleanup(self) -> None:
        """Remove the temporary folder of memory-mapped arrays, if any."""
        if self.directory is not None:
            for key, arr in list(self.arrays.items()):
                if isinstance(arr, np.memmap):
                    self.arrays[key] = None  # type: ignore[assignment]  # drop the mapping first
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None


def _copy_blockwise(arr: np.ndarray, path: str, rows: int = 1024) -> None:
    out = np.lib.format.open_memmap(path, mode="w+", dtype=arr.dtype, shape=arr.shape)
    for s in range(0, arr.shape[0], rows):
        out[s:s + rows] = arr[s:s + rows]
    out.flush()
    del out


# ---------------------------------------------------------------------------------------------
# hashing: class-structured ±1 codes
# ---------------------------------------------------------------------------------------------
def _class_codes(rng: np.random.Generator, prototypes: np.ndarray, owner: np.ndarray, p_easy: float,
                 p_hard: float, hard_share: float) -> np.ndarray:
    """±1 float32 codes: bit b copies ``prototypes[owner[:, b], b]``, flipped with p_easy (or p_hard)."""
    n, bits = owner.shape
    codes = prototypes[owner, np.arange(bits)[None, :]]
    p = np.where(rng.random(n) < hard_share, p_hard, p_easy).astype(np.float32)
    flips = rng.random((n, bits), dtype=np.float32) < p[:, None]
    codes[flips] *= -1
    return codes.astype(np.float32)


def _cifar10(scale: str, k: Optional[int], name: str) -> Workload:
    n_q, n_db, classes, bits = (1000, 54_000, 10, 64) if scale == "full" else (20, 600, 10, 64)
    rng = np.random.default_rng(SEEDS["cifar10"])
    protos = rng.choice(np.array([-1, 1], dtype=np.int8), size=(classes, bits))
    # balanced classes (100 queries and 5,400 database images per class), shuffled database
    q_cls = np.repeat(np.arange(classes), n_q // classes)
    db_cls = rng.permutation(np.repeat(np.arange(classes), n_db // classes))
    codes = []
    for cls in (q_cls, db_cls):
        owner = np.broadcast_to(cls[:, None], (cls.size, bits))
        codes.append(_class_codes(rng, protos, owner, p_easy=0.10, p_hard=0.40, hard_share=0.15))
    labels = [np.eye(classes, dtype=np.float32)[cls] for cls in (q_cls, db_cls)]
    if scale == "smoke" and k is not None:
        k = 50
    at = "ALL" if k is None else str(k)
    title = f"CIFAR-10 hashing mAP@{at}: {n_q:,} x {n_db:,}, {bits}-bit ±1 codes, {classes} classes"
    return Workload(name, scale, title, "codes",
                    {"query_codes": codes[0], "db_codes": codes[1], "query_labels": labels[0],
                     "db_labels": labels[1]}, "hashing", {"k": k}, SEEDS["cifar10"])


def _multi_hot(rng: np.random.Generator, n: int, n_labels: int, weights: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(n, L) float32 multi-hot rows with 1-3 labels each (never empty), and (n, 3) label slots."""
    count = rng.choice([1, 2, 3], size=n, p=[0.55, 0.30, 0.15])
    # three labels drawn by weight without replacement (Gumbel top-k); keep the first `count`
    keys = np.log(weights)[None, :] - np.log(-np.log(rng.random((n, n_labels))))
    top3 = np.argsort(-keys, axis=1, kind="stable")[:, :3]
    hot = np.zeros((n, n_labels), dtype=np.float32)
    for j in range(3):
        use = count > j
        hot[np.flatnonzero(use), top3[use, j]] = 1.0
    slots = np.where(np.arange(3)[None, :] < count[:, None], top3, top3[:, :1])
    return hot, slots


def _nuswide(scale: str) -> Workload:
    n_q, n_db, n_labels, bits, k = (2100, 193_734, 21, 64, 5000) if scale == "full" else (21, 1500, 21, 64, 100)
    rng = np.random.default_rng(SEEDS["nuswide"])
    protos = rng.choice(np.array([-1, 1], dtype=np.int8), size=(n_labels, bits))
    # skewed concept frequencies, as in NUS-WIDE's 21 most frequent concepts
    weights = 1.0 / (np.arange(n_labels) + 2.0) ** 0.7
    arrays = {}
    for side, n in (("query", n_q), ("db", n_db)):
        hot, slots = _multi_hot(rng, n, n_labels, weights)
        # each bit follows the prototype of one of the item's labels, chosen at random
        pick = rng.integers(0, 3, size=(n, bits), dtype=np.int8)
        owner = np.take_along_axis(slots, pick.astype(np.intp), axis=1)
        arrays[f"{side}_codes"] = _class_codes(rng, protos, owner, p_easy=0.12, p_hard=0.35, hard_share=0.15)
        arrays[f"{side}_labels"] = hot
    arrays = {key: arrays[key] for key in ("query_codes", "db_codes", "query_labels", "db_labels")}
    title = f"NUS-WIDE hashing mAP@{k}: {n_q:,} x {n_db:,}, {bits}-bit ±1 codes, {n_labels} multi-hot labels"
    return Workload("nuswide-5000", scale, title, "codes", arrays, "hashing", {"k": k}, SEEDS["nuswide"])


# ---------------------------------------------------------------------------------------------
# ReID: identity-structured float32 distances with cameras
# ---------------------------------------------------------------------------------------------
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
    return pair_id.astype(np.int64), pair_cam.astype(np.int64), g_pid[order].astype(np.int64), \
        g_cam[order].astype(np.int64)


def _reid_features(rng: np.random.Generator, spec: _ReidSpec, pids: np.ndarray, cams: np.ndarray,
                   centres: np.ndarray, cam_offsets: np.ndarray) -> np.ndarray:
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
    cam_offsets = (spec.cam_scale / np.sqrt(spec.dim)) * rng.standard_normal((spec.n_cams, spec.dim),
                                                                            dtype=np.float32)
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
        d[s:s + ROW_CHUNK] -= np.float32(2.0) * (qf[s:s + ROW_CHUNK] @ gf.T)
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
        out[s:s + block_rows] = squared_euclidean(qf[s:s + block_rows], gf, g_sq)
    out.flush()
    del out
    return np.load(path, mmap_mode="r")


def _reid_workload(name: str, scale: str, spec: _ReidSpec, title: str, mapped: bool,
                   directory: Optional[str]) -> Workload:
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


def _market(scale: str) -> Workload:
    if scale == "full":
        spec = _ReidSpec(n_ids=751, n_cams=6, n_queries=3368, n_identity_gallery=12_720, n_distractors=2793,
                         n_junk=400)
    else:
        spec = _ReidSpec(n_ids=12, n_cams=6, n_queries=40, n_identity_gallery=150, n_distractors=30, n_junk=10)
    n_g = spec.n_identity_gallery + spec.n_distractors + spec.n_junk
    title = (f"Market-1501 ReID: {spec.n_queries:,} x {n_g:,} float32 squared-Euclidean distances, "
             f"{spec.n_ids} ids, {spec.n_cams} cameras, ids 0 (distractors) and -1 (junk images)")
    return _reid_workload("market1501", scale, spec, title, mapped=False, directory=None)


def _msmt17(scale: str, directory: Optional[str]) -> Workload:
    if scale == "full":
        spec = _ReidSpec(n_ids=3060, n_cams=15, n_queries=11_659, n_identity_gallery=82_161, noise=1.0, cam_scale=0.5)
    else:
        spec = _ReidSpec(n_ids=10, n_cams=15, n_queries=36, n_identity_gallery=300, noise=1.0, cam_scale=0.5)
    title = (f"MSMT17 ReID: {spec.n_queries:,} x {spec.n_identity_gallery:,} float32 distances, memory-mapped "
             f".npy written block by block, {spec.n_ids} ids, {spec.n_cams} cameras")
    return _reid_workload("msmt17", scale, spec, title, mapped=True, directory=directory)


# ---------------------------------------------------------------------------------------------
# landmark retrieval: relevance and junk matrices
# ---------------------------------------------------------------------------------------------
#: positives and junk per landmark, of the order of the real Oxford5k ground truth
_OXFORD_COUNTS = [(78, 111), (25, 31), (12, 18), (24, 9), (78, 133), (9, 13), (54, 30), (7, 11), (54, 49),
                  (6, 15), (221, 127)]


def _oxford(scale: str) -> Workload:
    n_land, per_land, n_g = (11, 5, 5063) if scale == "full" else (11, 1, 400)
    counts = _OXFORD_COUNTS if scale == "full" else [(max(2, p // 10), max(1, j // 10)) for p, j in _OXFORD_COUNTS]
    rng = np.random.default_rng(SEEDS["oxford5k"])
    members = rng.permutation(n_g)
    pos_sets, junk_sets, at = [], [], 0
    for n_pos, n_junk in counts:  # disjoint positives and junk per landmark; the rest is clutter
        pos_sets.append(members[at:at + n_pos])
        junk_sets.append(members[at + n_pos:at + n_pos + n_junk])
        at += n_pos + n_junk
    q_land = np.repeat(np.arange(n_land), per_land)
    n_q = q_land.size
    relevance = np.zeros((n_q, n_g), dtype=bool)
    junk = np.zeros((n_q, n_g), dtype=bool)
    for q, land in enumerate(q_land):
        relevance[q, pos_sets[land]] = True
        junk[q, junk_sets[land]] = True
    # distance = 1 - cosine similarity: positives closer on average, junk in between,
    # per-query difficulty (some queries are hard, as in Oxford: mAP spreads 0.2 .. 1)
    difficulty = rng.uniform(0.3, 1.6, size=n_q)[:, None]
    sim = rng.normal(0.1, 0.1, size=(n_q, n_g))
    sim += relevance * rng.normal(0.45, 0.2 * difficulty, size=(n_q, n_g)) / difficulty
    sim += junk * rng.normal(0.2, 0.15, size=(n_q, n_g))
    dist = (1.0 - sim).astype(np.float32)
    title = f"Oxford5k landmarks: {n_q} x {n_g:,} float32 distances, relevance and junk matrices, trapezoid AP"
    return Workload("oxford5k", scale, title, "distances", {"distances": dist, "relevance": relevance, "junk": junk},
                    "hashing", {"ap_rule": "trapezoid"}, SEEDS["oxford5k"])


def build(name: str, scale: str = "full", directory: Optional[str] = None) -> Workload:
    """Generate workload ``name`` at ``scale`` (deterministic).

    Parameters
    ----------
    name : str
        One of :data:`WORKLOAD_NAMES`.
    scale : {"full", "smoke"}
    directory : str, optional
        Where a memory-mapped workload (``msmt17``) writes its ``.npy``; default a new
        temporary folder, removed by :meth:`Workload.cleanup`.
    """
    if name not in WORKLOAD_NAMES:
        raise ValueError(f"name: expected one of {list(WORKLOAD_NAMES)}, got {name!r}")
    if scale not in SCALES:
        raise ValueError(f"scale: expected one of {list(SCALES)}, got {scale!r}")
    if name == "cifar10-all":
        return _cifar10(scale, None, name)
    if name == "cifar10-1000":
        return _cifar10(scale, 1000, name)
    if name == "nuswide-5000":
        return _nuswide(scale)
    if name == "market1501":
        return _market(scale)
    if name == "msmt17":
        return _msmt17(scale, directory)
    return _oxford(scale)


# ---------------------------------------------------------------------------------------------
# what runs on a workload: implementations and baselines
# ---------------------------------------------------------------------------------------------
IMPLEMENTATIONS = ("numpy", "c", "torch", "reference")
BASELINES = ("loop", "full-matrix", "argsort")

#: Q x N int64 index arrays above this many bytes are not built (they are the failure mode the
#: streaming evaluation exists to avoid: torchreid at MSMT17 scale, JDAI-CV/fast-reid#404)
FULL_MATRIX_LIMIT = 3 * 2**30

#: (workload, candidate) pairs that are not run at full scale, with the reason
_FULL_SKIPS = {
    ("*", "reference"): "the pure-Python exact reference would take hours at this scale; results are "
                        "checked against the numpy implementation (itself proven equal to the reference "
                        "by the cross-implementation tests) and the reference runs in the smoke version",
}


_CODES = ("cifar10-all", "cifar10-1000", "nuswide-5000")


def candidate_names(workload) -> List[str]:
    """Implementations, then the baselines that make sense for the workload's input.

    ``workload`` is a :class:`Workload` or a name from :data:`WORKLOAD_NAMES`.
    """
    name = workload if isinstance(workload, str) else workload.name
    names = list(IMPLEMENTATIONS) + ["loop", "full-matrix"]
    if name not in _CODES:
        names.append("argsort")  # the timing anchor for float distances: sorting alone
    return names


#: adaptive rounds: about this many seconds of timed rounds, at least/at most this many rounds
ROUND_BUDGET, MIN_ROUNDS, MAX_ROUNDS = 3.0, 3, 50


def rounds(workload: Workload, candidate: str, probe_seconds: Optional[float] = None) -> Optional[int]:
    """Timed rounds of ``candidate`` on ``workload``.

    Known slow runs (the per-query loop, the pure-Python reference, numpy and torch at
    NUS-WIDE and MSMT17 scale: tens of seconds each) get one round: the median of one round of
    a 40-second run is as informative as it gets, and the whole run stays within minutes.
    Otherwise this returns None until the time of one untimed probe run is known, then
    ``clamp(ROUND_BUDGET / probe_seconds, MIN_ROUNDS, MAX_ROUNDS)``: many rounds for
    millisecond runs, whose medians are noisy, and at least three for the rest.
    """
    if workload.scale == "smoke":
        return 1
    if candidate in ("loop", "reference") and workload.name != "oxford5k":
        return 1
    if candidate in ("numpy", "torch") and workload.name in ("nuswide-5000", "msmt17"):
        return 1
    if probe_seconds is None:
        return None
    return int(min(MAX_ROUNDS, max(MIN_ROUNDS, ROUND_BUDGET / max(probe_seconds, 1e-9))))


#: a candidate slower than this (median, seconds) has its peak memory measured on fewer queries
MEMORY_SUBSET_AFTER = 20.0


def memory_query_limit(workload: Workload, candidate: str, median: Optional[float] = None) -> Optional[int]:
    """Queries used when measuring peak memory (None: all).

    A slow candidate (median above :data:`MEMORY_SUBSET_AFTER`) is measured on fewer queries
    where its peak does not depend on their number: the per-query loop holds one row at a time
    (100 queries), and the implementations evaluate query blocks of bounded size, so two
    blocks of ``rc.evaluate`` (whose peak then repeats for every block) show the same peak.
    The whole-matrix baselines are always measured on every query: their memory is Q x N.
    """
    if workload.scale != "full" or median is None or median <= MEMORY_SUBSET_AFTER:
        return None
    if candidate == "loop":
        return 100
    if candidate in IMPLEMENTATIONS:
        from retrieval_conformance.reference.query_blocks import block_rows

        limit = 2 * block_rows(workload.n_queries, workload.n_gallery, None)
        return limit if limit < workload.n_queries else None
    return None


def skip_reason(workload: Workload, candidate: str) -> Optional[str]:
    """Why ``candidate`` is not run on ``workload`` (None: it runs)."""
    if workload.scale == "full" and candidate == "reference" and workload.name != "oxford5k":
        return _FULL_SKIPS[("*", "reference")]
    if candidate in ("full-matrix", "argsort"):
        need = workload.n_queries * workload.n_gallery * 8
        if need > FULL_MATRIX_LIMIT:
            return (f"{candidate}: needs a {workload.n_queries:,} x {workload.n_gallery:,} int64 index array "
                    f"({need / 2**30:.1f} GiB) plus as much again for the match matrix, the failure mode "
                    "the streaming evaluation avoids (torchreid at MSMT17 scale: JDAI-CV/fast-reid#404)")
    return None


def make_runner(workload: Workload, candidate: str) -> Callable[[], Any]:
    """A no-argument callable running ``candidate`` on ``workload`` once.

    Implementations return a :class:`~retrieval_conformance.reference.problem.Result`;
    baselines return a :class:`~retrieval_conformance.conformance.baselines.BaselineResult`
    (``argsort`` returns the index array).  ``"py:module:function"`` calls
    ``function(workload)`` (a lab's own code, e.g. to measure its peak memory).
    """
    from retrieval_conformance.conformance import baselines as bl

    if candidate.startswith("py:"):
        import importlib

        module, _, attr = candidate[3:].rpartition(":")
        if not module:
            raise ValueError(f"candidate: expected 'py:module:function', got {candidate!r}")
        func = getattr(importlib.import_module(module), attr)
        return lambda: func(workload)

    if candidate in IMPLEMENTATIONS:
        import retrieval_conformance as rc

        kwargs = workload.evaluate_kwargs(implementation=candidate)
        return lambda: rc.evaluate(**kwargs)
    a = workload.arrays
    if candidate == "argsort":
        return lambda: bl.bare_argsort(a["distances"])
    if workload.kind == "codes":
        topk = workload.k if workload.k is not None else workload.n_gallery
        if candidate == "loop":
            return lambda: bl.calc_top_map(a["query_codes"], a["db_codes"], a["query_labels"], a["db_labels"], topk)
        if candidate == "full-matrix":
            return lambda: bl.full_matrix_hashing(a["query_codes"], a["db_codes"], a["query_labels"],
                                                  a["db_labels"], topk)
    elif "query_cams" in a:
        ids = (a["query_labels"], a["db_labels"], a["query_cams"], a["db_cams"])
        if candidate == "loop":
            return lambda: bl.loop_reid(a["distances"], *ids)
        if candidate == "full-matrix":
            return lambda: bl.torchreid_style(a["distances"], *ids)
    else:
        if candidate == "loop":
            return lambda: bl.loop_masked(a["distances"], a["relevance"], a["junk"])
        if candidate == "full-matrix":
            return lambda: bl.full_matrix_masked(a["distances"], a["relevance"], a["junk"])
    raise ValueError(f"candidate: expected one of {candidate_names(workload)}, got {candidate!r}")


# ---------------------------------------------------------------------------------------------
# a lab's own evaluation function on the same workloads, through the harness adapters
# ---------------------------------------------------------------------------------------------
def as_case(workload: Workload):
    """The workload as a harness :class:`~retrieval_conformance.conformance.harness.cases.Case`.

    The native form is kept (codes with labels, or ReID ids with cameras), so an adapter passes
    exactly what a lab passes.  Codes workloads get zero-stride placeholders for the (Q, N)
    distance and relevance matrices that the adapters do not read for them (no memory).
    """
    from retrieval_conformance.conformance.harness.cases import Case

    a = workload.arrays
    shape = (workload.n_queries, workload.n_gallery)
    if workload.kind == "codes":
        placeholder = np.broadcast_to(np.float64(0.0), shape)
        codes = (a["query_codes"], a["db_codes"], a["query_labels"], a["db_labels"])
        return Case(f"bench/{workload.name}", placeholder, np.broadcast_to(False, shape), None, workload.k, 50,
                    codes=codes, family="bench")
    if "query_cams" in a:
        if workload.memory_mapped:
            raise ValueError(f"workload: {workload.name} is memory-mapped; adapters pass a whole in-memory matrix "
                             "(use a workload that fits in memory, or rc.evaluate's streaming for this one)")
        ids = (a["query_labels"], a["db_labels"], a["query_cams"], a["db_cams"])
        relevance = a["query_labels"][:, None] == a["db_labels"][None, :]
        return Case(f"bench/{workload.name}", a["distances"], relevance, None, None, 50, ids=ids, family="bench")
    return Case(f"bench/{workload.name}", a["distances"], a["relevance"], a["junk"], workload.k, 50, family="bench")


def adapter_calls(workload: Workload, adapter: str, func: Callable):
    """``(adapter, calls)``: the call(s) of ``func`` that express ``workload`` through harness
    adapter ``adapter`` (``hashing-codes``, ``reid``, ``distances-relevance``, ``oxford``, ...).

    Raises ``ValueError`` when the adapter cannot express the workload (the adapter's reason).
    """
    from retrieval_conformance.conformance.harness.adapters import Skip, get_adapter

    ad = get_adapter(adapter, func)
    case = as_case(workload)
    junk = case.junk if case.junk is not None else np.broadcast_to(False, case.relevance.shape)
    try:
        calls = ad.calls(case, case.relevance, junk, "numpy")
    except Skip as exc:
        raise ValueError(f"adapter: {adapter} cannot express workload {workload.name}: {exc}") from None
    return ad, calls


@dataclass
class LabRun:
    """What :func:`benchmark_function` measured and read: the function's values and ours."""

    values: Dict[str, Any]
    expected: Dict[str, Any]
    differences: List[str]


def benchmark_function(benchmark, func: Callable, adapter: str, workload: str = "cifar10-1000",
                       scale: str = "full", protocol: Optional[str] = None, rounds: Optional[int] = None,
                       check: bool = True, atol: float = 1e-6, **overrides) -> LabRun:
    """Time a lab's own evaluation function on a standard workload (pytest-benchmark fixture).

    ``func`` is called with the arguments its harness ``adapter`` builds (the same signatures
    ``retrieval-conformance check`` uses), so the timing covers exactly what the lab's code
    does on a real-sized input.  After timing, its value is compared with this package's
    numpy implementation under ``protocol`` (default: the adapter's usual one) and
    ``overrides`` (``ties``, ``ap_rule``, ...); with ``check`` a difference larger than
    ``atol`` fails (run ``retrieval-conformance check`` to learn which convention differs).

    Example (a lab's ``test_speed.py``)::

        from retrieval_conformance.conformance.workloads import benchmark_function
        from mylab.metrics import calc_map_k

        def test_calc_map_speed(benchmark):
            benchmark_function(benchmark, calc_map_k, "hashing-codes", "cifar10-1000")
    """
    from retrieval_conformance.conformance.harness.adapters import DEFAULT_PROTOCOL

    w = build(workload, scale)
    try:
        ad, calls = adapter_calls(w, adapter, func)
        benchmark.group = f"lab: {w.group}"
        benchmark.extra_info.update(w.extra_info())
        benchmark.extra_info.update({"candidate": getattr(func, "__name__", "function"), "role": "lab",
                                     "adapter": adapter})

        def run():
            return [func(*c.args, **c.kwargs) for c in calls]

        outputs = benchmark.pedantic(run, rounds=rounds or 3, iterations=1)
        values: Dict[str, Any] = {}
        for call, out in zip(calls, outputs):
            reading = ad.read(out, call).values
            if call.query is None:
                values.update(reading)
            else:
                for key, v in reading.items():
                    values.setdefault(f"{key}[per query]", {})[call.query] = v
        import retrieval_conformance as rc

        protocol = protocol or DEFAULT_PROTOCOL.get(adapter, w.protocol)
        kw = w.evaluate_kwargs(implementation="numpy", protocol=protocol, **overrides)
        if protocol not in ("reid", "reid-matlab"):
            kw.pop("query_cams", None), kw.pop("db_cams", None)
        ours = rc.evaluate(**kw)
        expected = {"mAP": ours.map, "cmc": ours.cmc, "mINP": ours.minp}
        differences = []
        for key, v in values.items():
            if key.endswith("[per query]"):
                for q, ap in v.items():
                    if abs(ap - ours.per_query.ap[q]) > atol:
                        differences.append(f"AP of query {q}: yours {ap!r}, expected {ours.per_query.ap[q]!r}")
            elif key == "cmc":
                n = min(len(v), len(ours.cmc))
                bad = np.flatnonzero(np.abs(np.asarray(v[:n]) - ours.cmc[:n]) > atol)
                if bad.size:
                    j = int(bad[0])
                    differences.append(f"cmc[{j}] (Rank-{j + 1}): yours {v[j]!r}, expected {ours.cmc[j]!r}")
            elif key in expected and abs(v - expected[key]) > atol:
                differences.append(f"{key}: yours {v!r}, expected {expected[key]!r} (protocol {protocol!r})")
        benchmark.extra_info["map"] = values.get("mAP")
        if check and differences:
            raise AssertionError(
                f"{getattr(func, '__name__', 'function')} on {w.name} differs from the {protocol!r} protocol: "
                + "; ".join(differences[:5]) + ". Run `retrieval-conformance check` to find which convention differs."
            )
        return LabRun(values, expected, differences)
    finally:
        w.cleanup()
