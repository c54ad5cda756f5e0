"""The random choices a case generator makes, and the relevance it draws them into.

A generator draws every number through a :class:`Drawer` (the shared sources of choices of
:mod:`retrieval_conformance.conformance.problems.choices`), backed by hypothesis (which shrinks
through it) or by a seeded ``random.Random``.  Relevance is drawn as a (Q, N) mask with optional
explicit junk (:class:`MaskRelevance`) or from ReID ids and cameras (:class:`IdRelevance`); both
offer the same edits, which the families' shapes (:mod:`.families`) apply.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np
from retrieval_conformance.conformance.harness.inputs.case import Ids
from retrieval_conformance.conformance.problems.choices import Choices as Drawer
from retrieval_conformance.conformance.problems.choices import HypothesisChoices as HypothesisDrawer
from retrieval_conformance.conformance.problems.choices import RandomChoices as RandomDrawer

__all__ = ["Drawer", "HypothesisDrawer", "IdRelevance", "MaskRelevance", "RandomDrawer"]


class MaskRelevance:
    """Relevance as a (Q, N) mask with an optional explicit junk mask (non-ReID cases).

    The edits keep the invariant "no item is both relevant and junk": an item made relevant
    or non-relevant for a query is also made non-junk for it.
    """

    def __init__(self, d: Drawer, n_q: int, n_g: int, with_junk: bool):
        self.d = d
        self.rel = np.array([[d.boolean() for _ in range(n_g)] for _ in range(n_q)], dtype=bool)
        self.junk = np.zeros((n_q, n_g), dtype=bool)
        if with_junk and d.integer(0, 3) == 0:
            drawn = np.array([[d.integer(0, 3) == 0 for _ in range(n_g)] for _ in range(n_q)], dtype=bool)
            self.junk = drawn & ~self.rel

    def view(self, q: int) -> Tuple[np.ndarray, np.ndarray]:
        """(relevant non-junk, non-relevant non-junk) items of query ``q``."""
        keep = ~self.junk[q]
        return self.rel[q] & keep, ~self.rel[q] & keep

    def make_relevant(self, q: int, i: int) -> None:
        self.rel[q, i], self.junk[q, i] = True, False

    def make_other(self, q: int, i: int) -> None:
        self.rel[q, i], self.junk[q, i] = False, False

    def no_relevant(self, q: int) -> None:
        self.rel[q] = False

    def make_junk(self, q: int, i: int) -> None:
        self.rel[q, i], self.junk[q, i] = False, True

    def relevant_last(self, dist: np.ndarray) -> None:
        """Every query's farthest item: relevant, not junk, strictly last."""
        for q in range(dist.shape[0]):
            far = self.d.integer(0, dist.shape[1] - 1)
            dist[q, far] = dist[q].max() + 1
            self.make_relevant(q, far)

    def finish(self) -> Tuple[np.ndarray, Optional[np.ndarray], Optional[Ids]]:
        junk = self.junk if self.junk.any() else None
        return self.rel, junk, None


class IdRelevance:
    """Relevance from ReID ids and cameras (the protocol's junk follows from them).

    ``view`` is what the ReID protocols see: a gallery item with the query's id and camera
    is junk; a non-relevant item counts as "other" only when its id is not -1, so that what
    the family promises holds under reid-matlab (where id -1 is junk) as well.
    """

    def __init__(self, d: Drawer, n_q: int, n_g: int):
        self.d = d
        self.n_ids = n_ids = d.integer(1, 3)
        self.q_pids = np.array([d.integer(0, n_ids - 1) for _ in range(n_q)], dtype=np.int64)
        self.g_pids = np.array([d.integer(-1, n_ids - 1) for _ in range(n_g)], dtype=np.int64)
        self.q_cams = np.array([d.integer(0, 1) for _ in range(n_q)], dtype=np.int64)
        self.g_cams = np.array([d.integer(0, 2) for _ in range(n_g)], dtype=np.int64)

    def _other_camera(self, cam: int) -> int:
        c = self.d.integer(0, 1)  # one of the cameras 0, 1, 2 other than ``cam``
        return c + 1 if c >= cam else c

    def view(self, q: int) -> Tuple[np.ndarray, np.ndarray]:
        same_id = self.g_pids == self.q_pids[q]
        return same_id & (self.g_cams != self.q_cams[q]), ~same_id & (self.g_pids != -1)

    def make_relevant(self, q: int, i: int) -> None:
        self.g_pids[i] = self.q_pids[q]
        if self.g_cams[i] == self.q_cams[q]:
            self.g_cams[i] = self._other_camera(int(self.q_cams[q]))

    def make_other(self, q: int, i: int) -> None:
        own = int(self.q_pids[q])
        if self.g_pids[i] in (own, -1):
            p = self.d.integer(0, self.n_ids - 1)  # an id in 0..n_ids other than the query's
            self.g_pids[i] = p + 1 if p >= own else p

    def make_junk(self, q: int, i: int) -> None:
        """The query's identity seen by its own camera: junk under the ReID protocols."""
        self.g_pids[i], self.g_cams[i] = self.q_pids[q], self.q_cams[q]

    def no_relevant(self, q: int) -> None:
        if self.d.boolean():
            self.q_pids[q] = self.n_ids  # an id the gallery does not hold
        else:  # the query's gallery images all share its camera: junk, nothing left to find
            self.g_cams[self.g_pids == self.q_pids[q]] = self.q_cams[q]

    def relevant_last(self, dist: np.ndarray) -> None:
        """Every query's farthest item: relevant, not junk, strictly last.

        A query whose drawn item already ends another query's row takes that query's id (and
        a camera the item does not have), so no item has to serve two identities.
        """
        owner: Dict[int, int] = {}
        for q in range(dist.shape[0]):
            far = self.d.integer(0, dist.shape[1] - 1)
            dist[q, far] = dist[q].max() + 1
            if far in owner:
                self.q_pids[q] = owner[far]
                if self.q_cams[q] == self.g_cams[far]:
                    self.q_cams[q] = self._other_camera(int(self.g_cams[far]))
            else:
                owner[far] = int(self.q_pids[q])
                self.make_relevant(q, far)

    def finish(self) -> Tuple[np.ndarray, Optional[np.ndarray], Optional[Ids]]:
        rel = self.q_pids[:, None] == self.g_pids[None, :]
        return rel, None, (self.q_pids, self.g_pids, self.q_cams, self.g_cams)
