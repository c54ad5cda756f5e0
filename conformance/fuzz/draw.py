"""Where the fuzz generator's choices come from: a seeded ``random.Random`` or hypothesis.

The generator (:mod:`.cases`) asks a *drawer* for integers, choices and coin flips.  The long
campaign uses :class:`RandomDraw` (fast, and case ``i`` of seed ``s`` is rebuilt from
``(s, i)`` alone, in any process); the pytest suite uses :class:`HypothesisDraw`, so a
failure there is shrunk to a small reproducer and CI runs derandomised.
"""
from __future__ import annotations

import random
from typing import Any, Sequence

__all__ = ["HypothesisDraw", "RandomDraw", "RecordingDraw", "ReplayDraw", "case_rng"]


def case_rng(seed: int, index: int) -> random.Random:
    """The random source of case ``index`` of campaign ``seed`` (independent of every other case)."""
    return random.Random(f"rc-fuzz:{seed}:{index}")


class RandomDraw:
    """Choices from a seeded :class:`random.Random`."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        """An integer in ``lo .. hi`` (both included)."""
        return self.rng.randint(lo, hi)

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.rng.randrange(len(options))]

    def chance(self, p: float) -> bool:
        """True with probability ``p``."""
        return self.rng.random() < p


class HypothesisDraw:
    """Choices drawn from hypothesis's ``data`` object (shrinkable, derandomised under CI)."""

    def __init__(self, data):
        from hypothesis import strategies as st

        self.data = data
        self.st = st

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))

    def choice(self, options: Sequence[Any]) -> Any:
        # an index, not sampled_from: options may hold unhashable or array values
        return options[self.data.draw(self.st.integers(0, len(options) - 1))]

    def chance(self, p: float) -> bool:
        # shrinks towards False (index 0 <= ...), i.e. towards the plainer input
        return self.data.draw(self.st.integers(0, 999)) >= 1000 - round(1000 * p)


class RecordingDraw:
    """Wraps a drawer and keeps every value it returned, so the case can be rebuilt."""

    def __init__(self, inner):
        self.inner = inner
        self.values: list = []

    def integer(self, lo: int, hi: int) -> int:
        self.values.append(self.inner.integer(lo, hi))
        return self.values[-1]

    def choice(self, options: Sequence[Any]) -> Any:
        # recorded as an index: the options may be fresh objects on every build
        index = self.inner.integer(0, len(options) - 1)
        self.values.append(index)
        return options[index]

    def chance(self, p: float) -> bool:
        self.values.append(self.inner.chance(p))
        return self.values[-1]


class ReplayDraw:
    """Gives back the values a :class:`RecordingDraw` recorded, in order."""

    def __init__(self, values: Sequence[Any]):
        self.values = list(values)
        self.at = 0

    def _next(self):
        self.at += 1
        return self.values[self.at - 1]

    def integer(self, lo: int, hi: int) -> int:
        return self._next()

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self._next()]

    def chance(self, p: float) -> bool:
        return self._next()
