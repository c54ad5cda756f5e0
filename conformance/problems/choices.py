"""Where a problem builder's choices come from: a seeded ``random.Random``, a numpy Generator, hypothesis.

Every builder of :mod:`.build` (and the harness's family generator) asks a *source of choices*
for integers, picks and coin flips, and for arrays through :meth:`Choices.arrays`.  One
builder therefore serves

* the fuzz campaign: :class:`RandomChoices` over :func:`case_rng`, so case ``i`` of seed ``s``
  is rebuilt from ``(s, i)`` alone, in any process;
* the implementation tests: :class:`NumpyChoices` over a seeded ``np.random.Generator``;
* the property tests and the harness: :class:`HypothesisChoices`, so a failure is shrunk to a
  small reproducer (every array cell is a draw of its own) and CI runs derandomised;
* a replay: :class:`RecordingChoices` keeps the values a build drew, :class:`ReplayChoices`
  gives them back.

An *array source* has the three methods of ``np.random.Generator`` the builders use
(``integers``, ``random``, ``choice``); a numpy Generator is one, :class:`CellChoices` draws
each cell through a source of choices.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Optional, Sequence

import numpy as np

__all__ = [
    "CellChoices",
    "Choices",
    "HypothesisChoices",
    "NumpyChoices",
    "RandomChoices",
    "RecordingChoices",
    "ReplayChoices",
    "case_rng",
]

#: the largest seed a numpy Generator is drawn from (so every source draws it the same way)
MAX_SEED = 2**32 - 1
#: arrays with more cells than this are drawn from a seeded numpy Generator even under hypothesis,
#: so that a rare large tie group stays within hypothesis's budget of draws
MAX_CELLS_DRAWN = 512


def case_rng(seed: int, index: int) -> random.Random:
    """The random source of case ``index`` of fuzz campaign ``seed`` (independent of every other case)."""
    return random.Random(f"rc-fuzz:{seed}:{index}")


class Choices:
    """The few random choices a builder makes; a subclass supplies :meth:`integer`.

    The other choices are made of integers, so that hypothesis shrinks through all of them
    (towards the first option, ``False`` and small numbers).
    """

    def integer(self, lo: int, hi: int) -> int:  # pragma: no cover - interface
        """An integer in ``lo .. hi`` (both included)."""
        raise NotImplementedError

    def choice(self, options: Sequence[Any]) -> Any:
        """One of ``options`` (by index: they may be unhashable or arrays)."""
        return options[self.integer(0, len(options) - 1)]

    def boolean(self) -> bool:
        return self.integer(0, 1) == 1

    def chance(self, p: float) -> bool:
        """True with probability ``p`` (in steps of 1/1000)."""
        return self.integer(0, 999) >= 1000 - round(1000 * p)

    def arrays(self) -> Any:
        """An array source for the next arrays of a build (its cells drawn here, one by one)."""
        return CellChoices(self)


class RandomChoices(Choices):
    """Choices from a seeded :class:`random.Random` (the fuzz campaign's: fast and rebuilt from its seed)."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def arrays(self) -> np.random.Generator:
        """A numpy Generator seeded from here: bulk arrays at numpy's speed."""
        return np.random.default_rng(self.integer(0, MAX_SEED))


class NumpyChoices(Choices):
    """Choices from a seeded ``np.random.Generator``, which is also the array source."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def arrays(self) -> np.random.Generator:
        return self.rng


class HypothesisChoices(Choices):
    """Choices drawn by hypothesis: from ``draw`` of ``@st.composite`` or from ``st.data()``'s object."""

    def __init__(self, draw: Any):
        from hypothesis import strategies as st

        self.draw: Callable = draw.draw if hasattr(draw, "draw") else draw
        self.st = st

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(self.st.integers(lo, hi))


class RecordingChoices(Choices):
    """Wraps a source and keeps every value it returned, so that the build can be replayed."""

    def __init__(self, inner: Choices):
        self.inner = inner
        self.values: list = []

    def integer(self, lo: int, hi: int) -> int:
        self.values.append(self.inner.integer(lo, hi))
        return self.values[-1]

    def chance(self, p: float) -> bool:
        self.values.append(self.inner.chance(p))
        return self.values[-1]

    def arrays(self) -> Any:
        return CellChoices(self)


class ReplayChoices(Choices):
    """Gives back the values a :class:`RecordingChoices` recorded, in order."""

    def __init__(self, values: Sequence[Any]):
        self.values = list(values)
        self.at = 0

    def _next(self) -> Any:
        self.at += 1
        return self.values[self.at - 1]

    def integer(self, lo: int, hi: int) -> int:
        return self._next()

    def chance(self, p: float) -> bool:
        return self._next()

    def arrays(self) -> Any:
        return CellChoices(self)


class CellChoices:
    """An array source whose every cell is one choice (so that hypothesis shrinks cell by cell).

    It offers the ``np.random.Generator`` methods the builders call.  Arrays of more than
    ``MAX_CELLS_DRAWN`` cells come from a numpy Generator seeded by one choice.
    """

    def __init__(self, choices: Choices):
        self.choices = choices

    def _bulk(self, size: Any) -> Optional[np.random.Generator]:
        cells = int(np.prod(size)) if size is not None else 1
        return np.random.default_rng(self.choices.integer(0, MAX_SEED)) if cells > MAX_CELLS_DRAWN else None

    def integers(self, low: int, high: int, size: Any = None) -> Any:
        """Integers in ``low .. high - 1``, numpy's convention."""
        bulk = self._bulk(size)
        if bulk is not None:
            return bulk.integers(low, high, size=size)
        if size is None:
            return self.choices.integer(low, high - 1)
        return np.array(
            [self.choices.integer(low, high - 1) for _ in range(int(np.prod(size)))], dtype=np.int64
        ).reshape(size)

    def random(self, size: Any = None) -> Any:
        """Floats in [0, 1), in steps of 1/1000."""
        bulk = self._bulk(size)
        if bulk is not None:
            return bulk.random(size)
        return self.integers(0, 1000, size) / 1000.0

    def choice(self, values: Any, size: Any = None, replace: bool = True) -> Any:
        """Cells picked from ``values`` (with ``replace=False``, distinct positions of ``values``)."""
        values = np.asarray(values)
        if not replace:
            left = list(range(len(values)))
            count = 1 if size is None else int(np.prod(size))
            picked = [left.pop(self.choices.integer(0, len(left) - 1)) for _ in range(count)]
            return values[np.array(picked).reshape(() if size is None else size)]
        return values[self.integers(0, len(values), size)]
