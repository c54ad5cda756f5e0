"""Arrays for ``evaluate`` read from ``.npy``/``.npz`` files, for every command that takes them.

Every failure is a ``ValueError`` whose message starts with the option and the file and says
what to do (the commands print it as ``error: ...`` and exit 2).  The readers bound what a
file may make us allocate (``--max-array-bytes``, shared by all files of one command).
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import numpy as np
from retrieval_conformance.reference.readers import (
    MAX_ARRAY_BYTES,
    FileRefusedError,
    qrels_from_labels,
    read_npy,
    read_npz,
    run_from_search,
)

#: the array arguments of ``evaluate``, i.e. the names an ``.npz`` may hold
EVALUATE_ARRAYS = (
    "distances",
    "scores",
    "query_codes",
    "db_codes",
    "query_embeddings",
    "db_embeddings",
    "relevance",
    "query_labels",
    "db_labels",
    "query_cams",
    "db_cams",
    "junk",
)
#: other codebases' names of those arrays, read as they are saved: torchreid's (``distmat``,
#: ``q_pids``, ...) and DeepHash's (``qB``, ``rB``, ``queryL`` or ``query_L``, ...)
ARRAY_ALIASES = {
    "distmat": "distances",
    "q_pids": "query_labels",
    "g_pids": "db_labels",
    "q_camids": "query_cams",
    "g_camids": "db_cams",
    "qB": "query_codes",
    "rB": "db_codes",
    "queryL": "query_labels",
    "query_L": "query_labels",
    "retrievalL": "db_labels",
    "retrieval_L": "db_labels",
}
#: the arrays of a search file (``--search``): faiss's ``D, I = index.search(x, k)``, labels and ids
SEARCH_ARRAYS = ("D", "I", "query_labels", "db_labels", "query_ids", "db_ids")


class ArrayBudget:
    """Bytes the files of one command may still bring (``--max-array-bytes``, default 2 GiB)."""

    def __init__(self, max_bytes: Optional[int] = None):
        self.left = MAX_ARRAY_BYTES if max_bytes is None else max_bytes
        if self.left < 0:
            raise ValueError(f"--max-array-bytes must be >= 0, got {self.left}")

    def spend(self, arrays: Dict[str, np.ndarray]) -> None:
        self.left -= sum(a.nbytes for a in arrays.values())


def read_array_file(
    option: str, path: str, budget: ArrayBudget, archive: bool, names: Sequence[str] = EVALUATE_ARRAYS
) -> Dict[str, np.ndarray]:
    """The arrays of one file: ``{name: array}`` from an ``.npz`` (``archive``), ``{"": array}`` from an ``.npy``."""
    kind = ".npz archive written by numpy.savez" if archive else ".npy file written by numpy.save"
    try:
        arrays = read_npz(path, max_bytes=budget.left) if archive else {"": read_npy(path, max_bytes=budget.left)}
    except FileRefusedError as exc:
        if exc.limit == "max_bytes":  # the reader's advice names its keyword; ours the flag
            raise ValueError(f"{option} {exc.path}: {exc.reason}; raise the limit with --max-array-bytes N") from None
        if exc.limit == "max_elements":  # no flag: 2**31 elements is past any array of 2 GiB of bytes
            raise ValueError(
                f"{option} {exc.path}: {exc.reason}; evaluate the data in smaller parts (rc.Accumulator)"
            ) from None
        raise ValueError(f"{option} {exc}") from None
    except FileNotFoundError:
        raise ValueError(f"{option} {path}: no such file; check the path") from None
    except OSError as exc:
        raise ValueError(f"{option} {path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ValueError(f"{option} {exc}; expected a {kind} (plain arrays)") from None
    aliases = ARRAY_ALIASES if names is EVALUATE_ARRAYS else {}
    if archive:
        for key in arrays:
            if key not in names and key not in aliases:
                shown = key if len(key) <= 60 else key[:60] + "..."
                also = " (or torchreid's and DeepHash's names: distmat, q_pids, qB, queryL, ...)" if aliases else ""
                raise ValueError(f"{option} {path} holds {shown!r}; expected names among {', '.join(names)}{also}")
        arrays = _our_names(option, path, arrays, aliases)
    budget.spend(arrays)
    return arrays


def _our_names(option: str, path: str, arrays: Dict[str, np.ndarray], aliases: Dict[str, str]) -> Dict[str, np.ndarray]:
    """The arrays under evaluate's names; two names of one argument (ours and an alias, or two
    aliases) are an error naming both, never a silent choice between them."""
    named: Dict[str, str] = {}  # evaluate's name -> the name it was saved under
    for key in arrays:
        ours = aliases.get(key, key)
        if ours in named:
            first, second = sorted((named[ours], key))
            raise ValueError(
                f"{option} {path} holds both {first!r} and {second!r}, two names of {ours}; keep one of them"
            )
        named[ours] = key
    return {ours: arrays[key] for ours, key in named.items()}


def read_search_file(
    path: str, metric: str, budget: ArrayBudget, qrels_given: bool, ties: str = "search"
) -> Tuple[dict, Optional[dict]]:
    """The run (and, from labels, the qrels) of a search file: ``np.savez(path, D=D, I=I, ...)``.

    ``D`` and ``I`` are what ``faiss.Index.search`` returns (``I = -1``: no neighbour);
    ``query_labels`` and ``db_labels`` give the qrels (same label: relevant) unless ``--qrels``
    does; ``query_ids`` and ``db_ids`` name the rows (default ``0, 1, ...``).
    """
    arrays = read_array_file("--search", path, budget, archive=True, names=SEARCH_ARRAYS)
    for name in ("D", "I"):
        if name not in arrays:
            raise ValueError(
                f"--search {path}: no array {name}; expected D and I as index.search returns them "
                "(np.savez(path, D=D, I=I, query_labels=..., db_labels=...))"
            )
    labels = [name in arrays for name in ("query_labels", "db_labels")]
    if any(labels) and not all(labels):
        raise ValueError(
            f"--search {path}: holds {'query_labels' if labels[0] else 'db_labels'} alone; the qrels "
            "come from both query_labels and db_labels"
        )
    if all(labels) and qrels_given:
        raise ValueError(
            f"--qrels: {path} holds query_labels and db_labels, which give the qrels; drop --qrels or the labels"
        )
    if not all(labels) and not qrels_given:
        raise ValueError(f"--search {path}: no query_labels and db_labels, and no --qrels; give the qrels one way")
    try:
        run = run_from_search(
            arrays["D"],
            arrays["I"],
            metric=metric,
            query_ids=arrays.get("query_ids"),
            db_ids=arrays.get("db_ids"),
            n_db=len(arrays["db_labels"]) if all(labels) else None,
            ties=ties,
        )
        qrels = (
            qrels_from_labels(
                arrays["query_labels"],
                arrays["db_labels"],
                query_ids=arrays.get("query_ids"),
                db_ids=arrays.get("db_ids"),
            )
            if all(labels)
            else None
        )
    except ValueError as exc:
        raise ValueError(f"--search {path}: {exc}") from None
    return run, qrels


def load_evaluate_arrays(args) -> dict:
    """The arrays named by ``--npz`` and the per-array options (``--distances`` ...), read defensively.

    Files are read with :func:`~retrieval_conformance.reference.readers.read_npz` /
    :func:`~retrieval_conformance.reference.readers.read_npy`: only regular files of plain
    arrays, each header's declared size checked against the data present and against
    ``--max-array-bytes`` (all arrays together) before anything is allocated.

    Raises
    ------
    ValueError
        With a message naming the option, the file and what to do; the command
        prints it as ``error: ...`` and exits with status 2.
    """
    budget = ArrayBudget(args.max_array_bytes)
    arrays = dict(read_array_file("--npz", args.npz, budget, archive=True)) if args.npz else {}
    for key in EVALUATE_ARRAYS:
        path = getattr(args, key)
        if path:
            arrays[key] = read_array_file("--" + key.replace("_", "-"), path, budget, archive=False)[""]
    return arrays
