"""Arrays for ``evaluate`` read from ``.npy``/``.npz`` files, for every command that takes them.

Every failure is a ``ValueError`` whose message starts with the option and the file and says
what to do (the commands print it as ``error: ...`` and exit 2).  The readers bound what a
file may make us allocate (``--max-array-bytes``, shared by all files of one command).
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np
from retrieval_conformance.reference.readers import MAX_ARRAY_BYTES, FileRefusedError, read_npy, read_npz

#: the array arguments of ``evaluate``, i.e. the names an ``.npz`` may hold
EVALUATE_ARRAYS = ("distances", "scores", "query_codes", "db_codes", "query_embeddings", "db_embeddings",
                   "relevance", "query_labels", "db_labels", "query_cams", "db_cams", "junk")


class ArrayBudget:
    """Bytes the files of one command may still bring (``--max-array-bytes``, default 2 GiB)."""

    def __init__(self, max_bytes: Optional[int] = None):
        self.left = MAX_ARRAY_BYTES if max_bytes is None else max_bytes
        if self.left < 0:
            raise ValueError(f"--max-array-bytes must be >= 0, got {self.left}")

    def spend(self, arrays: Dict[str, np.ndarray]) -> None:
        self.left -= sum(a.nbytes for a in arrays.values())


def read_array_file(option: str, path: str, budget: ArrayBudget, archive: bool) -> Dict[str, np.ndarray]:
    """The arrays of one file: ``{name: array}`` from an ``.npz`` (``archive``), ``{"": array}`` from an ``.npy``."""
    kind = ".npz archive written by numpy.savez" if archive else ".npy file written by numpy.save"
    try:
        arrays = read_npz(path, max_bytes=budget.left) if archive else {"": read_npy(path, max_bytes=budget.left)}
    except FileRefusedError as exc:
        if exc.limit == "max_bytes":  # the reader's advice names its keyword; ours the flag
            raise ValueError(f"{option} {exc.path}: {exc.reason}; raise the limit with --max-array-bytes N") from None
        if exc.limit == "max_elements":  # no flag: 2**31 elements is past any array of 2 GiB of bytes
            raise ValueError(f"{option} {exc.path}: {exc.reason}; evaluate the data in smaller parts "
                             "(rc.Accumulator)") from None
        raise ValueError(f"{option} {exc}") from None
    except FileNotFoundError:
        raise ValueError(f"{option} {path}: no such file; check the path") from None
    except OSError as exc:
        raise ValueError(f"{option} {path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ValueError(f"{option} {exc}; expected a {kind} (plain arrays)") from None
    if archive:
        for key in arrays:
            if key not in EVALUATE_ARRAYS:
                shown = key if len(key) <= 60 else key[:60] + "..."
                raise ValueError(f"{option} {path} holds {shown!r}; expected names among {', '.join(EVALUATE_ARRAYS)}")
    budget.spend(arrays)
    return arrays
