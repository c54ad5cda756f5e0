"""The fuzz campaign for ``rc.Accumulator``'s blocks: query embeddings in a mix of dtypes and sizes.

A case (:func:`draw_case`) is a small gallery (float16/32/64 or int32 embeddings, tie-prone
values such as ±1, 0, 2**-25 and 1 + 2**-25, where float32 and float64 distances rank
differently) and one to four ``update()`` blocks, each of its own dtype (float16/32/64, int8,
int32, int64, now and then bool) and size (empty blocks included), under a drawn tie policy,
cut-off and metric.

What a correct Accumulator does (:func:`classify_case`):

* a block it refuses raises a ``ValueError``/``TypeError`` naming an argument and leaves the
  accumulator as it was; a refusal for the block's dtype is right only when the distances of
  the blocks before it would be computed in another dtype once it joins them (observed with
  ``embedding_distances`` on the concatenations), else it is ``rejected_valid``;
* ``compute()`` gives, bit for bit, ``rc.evaluate`` on the concatenation of the accepted
  non-empty blocks (an empty block takes no part), or the same error; any difference is a
  ``wrong_number`` or ``inconsistent``.

Run with ``python -m retrieval_conformance.conformance.fuzz --target accumulator --cases N``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple

import numpy as np
import retrieval_conformance as rc
from retrieval_conformance.conformance.crosscheck import same_bits
from retrieval_conformance.reference.contract.embeddings import embedding_distances

from .classify import Outcome, names_an_argument

__all__ = ["BlocksCase", "classify_case", "draw_case"]

_VALUES = (-1.0, 1.0, 0.0, 0.5, 2.0**-25, 1.0 + 2.0**-25, 3.0)
_GALLERY_DTYPES = ("float32", "float32", "float64", "float16", "int32")
_BLOCK_DTYPES = ("float32", "float32", "float64", "float64", "float16", "int8", "int32", "int64", "bool")
#: the message of a block refused for its dtype (reference/contract/promotion.py)
_DTYPE_REFUSAL = "query_embeddings: a block of"


@dataclass
class BlocksCase:
    gallery: Dict[str, np.ndarray]
    blocks: List[Tuple[np.ndarray, np.ndarray]]
    options: Dict[str, Any]
    change: str = ""
    notes: List[str] = field(default_factory=list)

    def describe(self) -> str:
        blocks = ", ".join(f"{e.dtype}{list(e.shape)}" for e, _ in self.blocks)
        return f"gallery {self.gallery['db_embeddings'].dtype}, blocks {blocks}, {self.options}"


def _embeddings(d, rows: int, dim: int, dtype: str) -> np.ndarray:
    values = np.array([[d.choice(_VALUES) for _ in range(dim)] for _ in range(rows)], dtype=np.float64)
    return values.reshape(rows, dim).astype(dtype)


def draw_case(d) -> BlocksCase:
    dim, n_g = d.integer(1, 2), d.integer(1, 6)
    gallery = {
        "db_embeddings": _embeddings(d, n_g, dim, d.choice(_GALLERY_DTYPES)),
        "db_labels": np.array([d.integer(0, 2) for _ in range(n_g)]),
    }
    blocks = []
    for _ in range(d.integer(1, 4)):
        rows = d.choice((0, 1, 1, 2, 3))
        blocks.append(
            (
                _embeddings(d, rows, dim, d.choice(_BLOCK_DTYPES)),
                np.array([d.integer(0, 2) for _ in range(rows)], dtype=np.int64),
            )
        )
    options = {
        "ties": d.choice(("stable", "optimistic", "expected", "grouped")),
        "metric": d.choice(("euclidean", "euclidean", "cosine")),
    }
    if d.boolean():
        options["k"] = d.integer(1, 3)
    kinds = {str(e.dtype) for e, _ in blocks if e.shape[0]}
    mix = ("mixed" if len(kinds) > 1 else "one-dtype") + ("+empty" if any(not e.shape[0] for e, _ in blocks) else "")
    return BlocksCase(gallery, blocks, options, f"{gallery['db_embeddings'].dtype}-{mix}")


def _distance_dtype(blocks: List[np.ndarray], gallery: np.ndarray) -> np.dtype:
    """The dtype ``evaluate`` computes the distances of these blocks' concatenation in (one row of it)."""
    joined = np.concatenate(blocks)
    return embedding_distances(joined[:1], gallery, "euclidean").dtype


def _evaluate(case: BlocksCase, accepted: List[Tuple[np.ndarray, np.ndarray]]):
    embeddings = np.concatenate([e for e, _ in accepted])
    labels = np.concatenate([lab for _, lab in accepted])
    return rc.evaluate(**case.gallery, query_embeddings=embeddings, query_labels=labels, **case.options)


def classify_case(case: BlocksCase) -> Outcome:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # float16 warns by design; the warnings are not checked here
        return _classify(case)


def _classify(case: BlocksCase) -> Outcome:
    acc = rc.Accumulator(**case.gallery, **case.options)
    accepted: List[Tuple[np.ndarray, np.ndarray]] = []
    for embeddings, labels in case.blocks:
        before = len(acc)
        try:
            acc.update(query_embeddings=embeddings, query_labels=labels)
        except (ValueError, TypeError) as exc:
            message = str(exc)
            if not names_an_argument(message) or len(acc) != before:
                return Outcome("unnamed_error", f"{case.describe()}: {message[:300]} (queries {before} -> {len(acc)})")
            earlier = [e for e, _ in accepted]
            if message.startswith(_DTYPE_REFUSAL) and (
                not earlier
                or _distance_dtype(earlier, case.gallery["db_embeddings"])
                == _distance_dtype(earlier + [embeddings], case.gallery["db_embeddings"])
            ):
                return Outcome("rejected_valid", f"{case.describe()}: {message[:300]}")
            continue
        except Exception as exc:  # noqa: BLE001 (every other exception is a finding)
            return Outcome("unnamed_error", f"{case.describe()}: {type(exc).__name__}: {str(exc)[:300]}")
        if embeddings.shape[0]:
            accepted.append((embeddings, labels))
    if not accepted:
        try:
            acc.compute()
        except ValueError as exc:
            return Outcome("named_error") if "no queries" in str(exc) else Outcome("unnamed_error", str(exc)[:300])
        return Outcome("accepted_invalid", f"{case.describe()}: compute() with no queries returned")
    got = want = None
    try:
        got = acc.compute()
    except (ValueError, TypeError) as exc:
        got = ("error", str(exc))
    try:
        want = _evaluate(case, accepted)
    except (ValueError, TypeError) as exc:
        want = ("error", str(exc))
    if isinstance(got, tuple) or isinstance(want, tuple):
        if not (isinstance(got, tuple) and isinstance(want, tuple)):
            return Outcome("inconsistent", f"{case.describe()}: Accumulator {got!s:.200}, evaluate {want!s:.200}")
        return Outcome("named_error")
    problems = same_bits(want.per_query, got.per_query, "per query")
    if problems or np.float64(want.map).tobytes() != np.float64(got.map).tobytes():
        return Outcome("wrong_number", f"{case.describe()}: map {got.map!r} != evaluate {want.map!r}; {problems[:3]}")
    return Outcome("value")
