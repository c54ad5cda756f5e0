"""The :class:`Workload` type: one benchmark input, its arrays and how ``evaluate`` is called on it.

The generators (:mod:`.hashing`, :mod:`.reid`, :mod:`.landmarks`, :mod:`.graded`) build Workloads;
:func:`.workloads.build` picks the generator by name.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import numpy as np

#: one seed per workload family: the same input on every run and every machine
SEEDS = {
    "cifar10": 20_100,
    "nuswide": 20_200,
    "market1501": 20_300,
    "msmt17": 20_400,
    "oxford5k": 20_500,
    "graded": 20_600,
    "scores-map": 20_700,
    "scaling-floats": 20_800,
    "scaling-codes": 20_900,
}

#: the (Q, N) matrix of each float-input kind (the ranking input)
MATRIX_KEYS = {"distances": "distances", "scores": "scores"}


@dataclass
class Workload:
    """One benchmark input.

    Attributes
    ----------
    name, scale : str
        ``name`` from :data:`WORKLOAD_NAMES`, ``scale`` ``"full"`` or ``"smoke"``.
    title : str
        Human description with the shape (shown by the summary command).
    kind : {"codes", "distances", "scores"}
        ``codes``: ``query_codes``/``db_codes`` (±1 float32) with ``query_labels``/``db_labels``
        (multi-hot float32).  ``distances``: ``distances`` (float32, in memory or memory-mapped)
        with either ids and cameras (ReID) or ``relevance``/``junk`` matrices (Oxford).
        ``scores``: ``scores`` (float32 similarities, larger ranks first) with a ``relevance``
        matrix of integer grades (graded relevance).
    arrays : dict of str to ndarray
        The inputs, named as :func:`retrieval_conformance.evaluate` names them.
    protocol : str
        Preset passed to ``rc.evaluate``.
    options : dict
        Further ``rc.evaluate`` keyword arguments (``k``, ``ap_rule`` ...).
    directory : str or None
        Temporary folder holding memory-mapped arrays (removed by :meth:`cleanup`).
    metric : str
        The headline mean of the :class:`~retrieval_conformance.reference.contract.problem.Result`
        (``map``, ``ndcg_at_k`` ...): what the summary shows for this workload.
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
    metric: str = "map"

    # -- shape ---------------------------------------------------------------------------
    @property
    def matrix_key(self) -> Optional[str]:
        """The (Q, N) ranking input (``distances`` or ``scores``); None for codes."""
        return MATRIX_KEYS.get(self.kind)

    @property
    def n_queries(self) -> int:
        return int(self.arrays[self.matrix_key or "query_codes"].shape[0])

    @property
    def n_gallery(self) -> int:
        if self.matrix_key is not None:
            return int(self.arrays[self.matrix_key].shape[1])
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
            "workload": self.name,
            "scale": self.scale,
            "title": self.title,
            "queries": self.n_queries,
            "gallery": self.n_gallery,
            "protocol": self.protocol,
            "k": self.k,
            "seed": self.seed,
            "memory_mapped": self.memory_mapped,
            "metric": self.metric,
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
            if key.startswith("query_") or key in ("distances", "scores", "relevance", "junk"):
                arrays[key] = np.ascontiguousarray(arr[rows])
            else:
                arrays[key] = arr
        return Workload(
            self.name,
            self.scale,
            self.title + f" (queries {rows.size})",
            self.kind,
            arrays,
            self.protocol,
            dict(self.options),
            self.seed,
            metric=self.metric,
        )

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
        meta = {
            "name": self.name,
            "scale": self.scale,
            "title": self.title,
            "kind": self.kind,
            "protocol": self.protocol,
            "options": self.options,
            "seed": self.seed,
            "metric": self.metric,
            "keys": list(self.arrays),
            "mapped": mapped,
        }
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
        return cls(
            meta["name"],
            meta["scale"],
            meta["title"],
            meta["kind"],
            arrays,
            meta["protocol"],
            meta["options"],
            meta["seed"],
            metric=meta.get("metric", "map"),
        )

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
        out[s : s + rows] = arr[s : s + rows]
    out.flush()
    del out
