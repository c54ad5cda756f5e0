"""Generating test inputs: one case of a family, as hypothesis draws it or from a seeded ``random``.

:func:`generate` draws through a source of choices of the shared problem generator
(:mod:`retrieval_conformance.conformance.problems.choices`), its arrays cell by cell so that
hypothesis shrinks them; what a family does differently is its :class:`~.families.Family` entry
(sizes, distinct distances, the shape that gives the input its property).
:func:`hypothesis_strategy` shrinks towards small cases; :func:`sample_cases` gives a fixed,
reproducible set (used by ``identify``); :func:`hypothesis_storage` keeps hypothesis's
caches out of the user's current folder.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from typing import Iterator, List, Optional, Tuple

import numpy as np
from retrieval_conformance.conformance.harness.inputs.case import Case
from retrieval_conformance.conformance.harness.inputs.drawing import IdRelevance, MaskRelevance
from retrieval_conformance.conformance.harness.inputs.families import Capabilities, Family
from retrieval_conformance.conformance.problems.choices import CellChoices, Choices, HypothesisChoices, RandomChoices


def _count(d: Choices, bounds: Tuple[int, int]) -> int:
    """A number in ``bounds``, drawn only when there is a choice."""
    lo, hi = bounds
    return lo if lo == hi else d.integer(lo, hi)


def generate(d: Choices, fam: Family, caps: Capabilities, index: int = 0) -> Case:
    """Draw one case of family ``fam`` that an adapter with ``caps`` can express.

    Distances are small non-negative integers (exact in float32, realisable as Hamming
    distances); relevance is drawn per (query, item) or, for ReID, from ids and cameras.
    Every draw goes through ``d`` so that hypothesis can shrink the case.

    Every case is valid by construction (consistent shapes, no item both relevant and junk,
    ReID relevance = same id) and has its family's property on the items the protocol ranks
    (junk removed; for ReID, items with the query's id and camera): ``ties/tie-heavy`` ties
    a relevant and a non-relevant item of some query; ``ap/relevant-last`` puts a relevant
    item strictly last for every query; ``empty/no-relevant`` has a query without any
    relevant item; ``empty/no-hit-in-top-k`` has a query whose relevant items all come after
    at least k non-relevant ones; ``k/inside`` has 1 <= k < N and a query with R > k.
    """
    n_q = _count(d, fam.queries) if caps.multi_query else 1
    n_g = _count(d, fam.gallery)
    n_levels = d.integer(1, fam.max_levels if fam.max_levels is not None else n_g + 2)
    dist = CellChoices(d).integers(0, n_levels, (n_q, n_g)).astype(np.float64)
    g = IdRelevance(d, n_q, n_g) if caps.ids else MaskRelevance(d, n_q, n_g, caps.junk)
    k: Optional[int] = fam.shape(d, dist, g, n_q, n_g)
    if fam.optional_k and caps.k and caps.protocol_k and d.boolean():
        k = d.integer(1, n_g)
    max_rank = d.integer(1, 12) if caps.ids else 10
    if fam.max_rank_past_gallery:
        max_rank = n_g + d.integer(1, 5)
    rel, junk, ids = g.finish()
    grades = None
    if fam.graded and caps.grades:
        grades = np.array([[d.integer(1, 3) if r else 0 for r in row] for row in rel], dtype=np.int64)
    return Case(
        name=f"{fam.id}#{index}",
        distances=dist,
        relevance=rel,
        junk=junk,
        k=k,
        max_rank=max_rank,
        ids=ids,
        family=fam.id,
        non_positive_scores=fam.non_positive_scores,
        grades=grades,
    )


def hypothesis_strategy(fam: Family, caps: Capabilities):
    """A hypothesis strategy of :class:`Case` for ``fam`` (shrinks towards small cases)."""
    from hypothesis import strategies as st

    @st.composite
    def cases(draw):
        return generate(HypothesisChoices(draw), fam, caps)

    return cases()


def sample_cases(fam: Family, caps: Capabilities, n: int, seed: int = 0) -> List[Case]:
    """``n`` reproducible cases of ``fam`` from a seeded ``random.Random``."""
    import random

    rng = random.Random(f"{seed}:{fam.id}")
    return [generate(RandomChoices(rng), fam, caps, i) for i in range(n)]


_STORAGE: Optional[tempfile.TemporaryDirectory] = None


@contextmanager
def hypothesis_storage() -> Iterator[None]:
    """hypothesis keeps caches (the constants of the modules it reads) in ``./.hypothesis``; during
    the harness's searches they go to a temporary folder of this process, removed at exit, unless
    the user chose a folder (``HYPOTHESIS_STORAGE_DIRECTORY``): ``check`` writes nothing into the
    user's working folder."""
    global _STORAGE
    from hypothesis import configuration

    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    home = configuration.storage_directory(intent_to_write=False)  # no names: the home folder itself
    previous = getattr(home, "home_directory", home)  # older releases (6.141 on Python 3.9): a Path
    if _STORAGE is None:
        _STORAGE = tempfile.TemporaryDirectory(prefix="rc-hypothesis-")
    configuration.set_hypothesis_home_dir(_STORAGE.name)
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(previous)
