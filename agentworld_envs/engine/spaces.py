"""Text spaces wide enough for JSON and Unicode, and safe in ``AsyncVectorEnv``.

``gymnasium.spaces.Text`` defaults to an alphanumeric charset with ``min_length=1``:
it rejects JSON, the empty string and any non-ASCII name. :class:`UnicodeText`
accepts every ``str`` within its length bounds, samples from a printable charset,
and registers its own shared-memory codec (code points, not charset indices), so
``AsyncVectorEnv(shared_memory=True)`` returns the real text instead of ``'0000…'``.
"""

from __future__ import annotations

import functools
import string
from multiprocessing.sharedctypes import SynchronizedArray
from types import ModuleType
from collections.abc import Sequence
from typing import Any

import multiprocessing as mp

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import shared_memory as _shm

#: What ``sample()`` draws from: printable ASCII (JSON's punctuation included) plus a
#: few accented letters, so sampled strings exercise UTF-8 paths.
SAMPLE_CHARSET = string.printable + "áéíóúüñçßøåæœ€£¥—…“”‘’"

#: Default maximum length of observations and actions, in characters.
MAX_TEXT_LENGTH = 65_536


class UnicodeText(spaces.Text):
    """A ``Text`` space whose members are all strings of ``min_length..max_length`` chars."""

    def __init__(self, max_length: int = MAX_TEXT_LENGTH, *, min_length: int = 0, seed: Any = None):
        # ``Text.__init__`` rebuilds its charset tables (~0.12 ms) for every space, and every env
        # has two: copy them from one space built per bound instead (they are never mutated),
        # then give this space its own RNG state exactly as ``Text.__init__`` ends by doing.
        self.__dict__.update(_template(int(max_length), int(min_length)).__dict__)
        spaces.Space.__init__(self, dtype=str, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    __hash__ = None  # type: ignore[assignment]  # mutable rng state, like gymnasium spaces


@functools.cache
def _template(max_length: int, min_length: int) -> spaces.Text:
    return spaces.Text(max_length=max_length, min_length=min_length, charset=SAMPLE_CHARSET)


_template(MAX_TEXT_LENGTH, 0)  # the bounds every env uses: built at import, not in the first env's make


# Shared-memory layout per env: slot 0 holds the length, then one int32 code point per char.
@_shm.create_shared_memory.register(UnicodeText)
def _create(space: UnicodeText, n: int = 1, ctx: ModuleType = mp) -> SynchronizedArray:
    return ctx.Array(np.dtype(np.int32).char, n * (space.max_length + 1))


class SharedTexts(Sequence):
    """A live view of n strings in shared memory.

    ``AsyncVectorEnv`` reads its shared observation buffer once, at construction, and
    relies on numpy views to see later writes; a plain tuple of ``str`` would be frozen
    (gymnasium's own ``Text`` codec returns stale or ``'0000'`` observations). This view
    decodes on access, and ``deepcopy`` (what ``AsyncVectorEnv(copy=True)`` returns)
    snapshots it into an ordinary tuple.
    """

    def __init__(self, data: np.ndarray):
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        row = self._data[index]
        return row[1 : 1 + int(row[0])].astype("<u4").tobytes().decode("utf-32-le")

    def __deepcopy__(self, memo: dict) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Sequence) else other)

    def __repr__(self) -> str:
        return repr(tuple(self))


@_shm.read_from_shared_memory.register(UnicodeText)
def _read(space: UnicodeText, shared_memory: SynchronizedArray, n: int = 1) -> SharedTexts:
    data = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length + 1))
    return SharedTexts(data)


@_shm.write_to_shared_memory.register(UnicodeText)
def _write(space: UnicodeText, index: int, value: str, shared_memory: SynchronizedArray) -> None:
    size = space.max_length + 1
    dest = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)
    codes = np.frombuffer(value.encode("utf-32-le"), dtype="<u4").astype(np.int32)
    dest[index * size] = len(codes)
    dest[index * size + 1 : index * size + 1 + len(codes)] = codes
