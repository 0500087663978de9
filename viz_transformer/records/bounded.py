"""``BoundedCache``: the one small cache of the library and the app, a thread-safe dictionary that
forgets its least recently used entries beyond a number of entries or a weight (bytes), and
computes a missing value once however many threads ask for it at once.

The pages' stores of long results (``ui/jobs.py``, ``ui/head_caches.py``), the course's
quantities (``course/grading_caches.py``) and a long input's recent heads (``records/lazy.py``) are
each one of these.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar, overload

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
D = TypeVar("D")


class BoundedCache(Generic[K, V]):
    """At most ``size`` entries, and, given ``weigh``, at most ``budget`` of their summed weight;
    the least recently used (read or put) go first, but the newest entry always stays.

    Args:
        size: the most entries kept (at least 1).
        weigh: a value's weight (e.g. ``lambda a: a.nbytes``), or None to count entries only.
        budget: the most summed weight kept, with ``weigh``.
    """

    def __init__(
        self, size: int, weigh: Callable[[V], int] | None = None, budget: int | None = None
    ) -> None:
        if size < 1:
            raise ValueError(f"a cache keeps at least 1 entry (size={size})")
        if (weigh is None) != (budget is None):
            raise ValueError("give both weigh and budget, or neither")
        self.size, self._weigh, self._budget = size, weigh, budget
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()  # key -> (value, weight)
        self._weight = 0
        self._lock = threading.Lock()
        self._making: dict[K, _Making] = {}  # key -> the value being made now

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __getitem__(self, key: K) -> V:
        """The value of ``key``, now the most recently used. Raises KeyError when absent."""
        with self._lock:
            value = self._entries[key][0]
            self._entries.move_to_end(key)
            return value

    @overload
    def get(self, key: K) -> V | None: ...

    @overload
    def get(self, key: K, default: D) -> V | D: ...

    def get(self, key: K, default: object = None) -> object:
        """The value of ``key`` (now the most recently used), or ``default``."""
        try:
            return self[key]
        except KeyError:
            return default

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` as the most recently used, then forget the oldest beyond the bounds."""
        weight = self._weigh(value) if self._weigh is not None else 0
        with self._lock:
            self._put(key, value, weight)

    def _put(self, key: K, value: V, weight: int) -> None:  # under self._lock
        if key in self._entries:
            self._weight -= self._entries.pop(key)[1]
        self._entries[key] = (value, weight)
        self._weight += weight
        while len(self._entries) > 1 and (
            len(self._entries) > self.size
            or (self._budget is not None and self._weight > self._budget)
        ):
            self._weight -= self._entries.popitem(last=False)[1][1]

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
            self._weight = 0

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The value of ``key``, made by ``make()`` and kept when absent: once, even when many
        threads ask at once (the others wait for it and get that value, even if it was
        evicted before they woke). A ``make`` that raises keeps nothing and leaves no record
        behind: the next asker, or one that was waiting, tries again."""
        while True:
            with self._lock:
                if key in self._entries:
                    self._entries.move_to_end(key)
                    return self._entries[key][0]
                making = self._making.get(key)
                mine = making is None
                if mine:
                    making = self._making[key] = _Making()
            if mine:
                return self._make(key, make, making)
            making.done.wait()
            if making.made:  # the maker's value, whether or not the cache still holds it
                return making.value  # type: ignore[return-value]

    def _make(self, key: K, make: Callable[[], V], making: _Making) -> V:
        try:
            value = make()
            weight = self._weigh(value) if self._weigh is not None else 0
        except BaseException:
            with self._lock:
                del self._making[key]
            making.done.set()
            raise
        # kept and the record dropped in one step: a new asker finds either the value or the
        # record of its making, never neither (which would start a second make)
        with self._lock:
            self._put(key, value, weight)
            del self._making[key]
        making.value, making.made = value, True
        making.done.set()
        return value


class _Making:
    """One value being made: its waiters wake on ``done`` and read ``value`` when ``made``."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.made = False
        self.value: object = None
