"""``records.bounded.BoundedCache``, the one cache of the pages' stores, the course's quantities
and a long input's heads: least recently used first out, bounded by entries and by weight, and a
value made once however many threads ask for it."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from viz_transformer.records.bounded import BoundedCache


def test_the_least_recently_used_entry_goes_first():
    cache: BoundedCache[str, int] = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache["a"] == 1  # a read makes "a" the most recent: "b" is now the oldest
    cache.put("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3 and len(cache) == 2
    cache.put("a", 10)  # a put of a kept key replaces it and makes it the most recent
    cache.put("d", 4)
    assert sorted((k, cache[k]) for k in ("a", "d")) == [("a", 10), ("d", 4)]
    assert "c" not in cache and cache.get("c", -1) == -1


def test_the_weight_bound_keeps_the_newest_entries_within_the_budget():
    cache: BoundedCache[int, np.ndarray] = BoundedCache(100, weigh=lambda a: a.nbytes, budget=100)
    for i in range(5):
        cache.put(i, np.zeros(10, np.float32))  # 40 bytes each: two fit in 100
    assert [i for i in range(5) if i in cache] == [3, 4]
    cache.put(3, np.zeros(5, np.float32))  # replaced by 20 bytes: 20 + 40 counted, not 40 + 40
    cache.put(5, np.zeros(10, np.float32))
    assert [i for i in range(6) if i in cache] == [3, 4, 5]
    cache.put(9, np.zeros(100, np.float32))  # over the budget alone: the newest always stays
    assert [i for i in range(10) if i in cache] == [9]
    cache.clear()
    cache.put(1, np.zeros(25, np.float32))  # the weight counted from zero again after clear
    assert 1 in cache and len(cache) == 1


def test_a_value_is_made_once_while_many_threads_ask_for_it():
    cache: BoundedCache[str, int] = BoundedCache(4)
    made: list[int] = []
    start = threading.Barrier(8)

    def make() -> int:
        made.append(1)
        time.sleep(0.05)  # long enough that the other askers arrive while it is being made
        return 42

    def ask(out: list[int]) -> None:
        start.wait()
        out.append(cache.get_or_make("k", make))

    got: list[int] = []
    threads = [threading.Thread(target=ask, args=(got,)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [42] * 8 and made == [1]
    assert cache.get_or_make("k", lambda: 0) == 42  # kept: not made again


def test_a_value_is_made_once_at_a_time_even_while_a_tiny_cache_evicts_it():
    """A cache of one entry, 12 threads asking for 3 keys in turn: each key is evicted as soon
    as another is kept. A thread that waited on a make gets that make's value even when it was
    evicted before it woke, and never starts a second make of a key already being made."""
    cache: BoundedCache[int, tuple[int, int]] = BoundedCache(1)
    guard, making, most = threading.Lock(), {k: 0 for k in range(3)}, {k: 0 for k in range(3)}
    serial = iter(range(1_000_000))
    start = threading.Barrier(12)

    def make(key: int) -> tuple[int, int]:
        with guard:
            making[key] += 1
            most[key] = max(most[key], making[key])
            number = next(serial)
        time.sleep(0.002)  # others ask meanwhile, and other keys evict this one
        with guard:
            making[key] -= 1
        return key, number

    def ask(got: list[tuple[int, tuple[int, int]]], offset: int) -> None:
        start.wait()
        for i in range(60):
            key = (i + offset) % 3
            got.append((key, cache.get_or_make(key, lambda key=key: make(key))))

    got: list[tuple[int, tuple[int, int]]] = []
    threads = [threading.Thread(target=ask, args=(got, n)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    made = next(serial)  # how many makes ran
    assert most == {0: 1, 1: 1, 2: 1}, most  # never two makes of one key at once
    assert all(key == value[0] for key, value in got) and len(got) == 12 * 60
    shared = len(got) - made  # asks answered by a make another thread ran, or a kept value
    assert made < len(got) and shared > 0, (made, shared)
    assert cache._making == {}


def test_a_failed_make_keeps_nothing_and_the_next_asker_tries_again():
    cache: BoundedCache[str, int] = BoundedCache(2)

    def fail() -> int:
        raise ValueError("no such layer")

    with pytest.raises(ValueError, match="no such layer"):
        cache.get_or_make("k", fail)
    assert "k" not in cache and cache._making == {}
    assert cache.get_or_make("k", lambda: 7) == 7 and cache["k"] == 7


def test_bounds_are_checked():
    with pytest.raises(ValueError, match="at least 1"):
        BoundedCache(0)
    with pytest.raises(ValueError, match="both weigh and budget"):
        BoundedCache(2, weigh=len)


def test_a_long_inputs_heads_are_kept_within_their_byte_budget(monkeypatch):
    """``LazyPatterns.head`` keeps recent heads in a ``BoundedCache`` of ``HEAD_CACHE_BYTES``:
    a head read again is the same read-only array until newer heads push it out."""
    from viz_transformer.records import lazy

    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(1, 3, 5, 4)).astype(np.float32), rng.normal(size=(1, 3, 5, 4))
    monkeypatch.setattr(lazy, "HEAD_CACHE_BYTES", 2 * 5 * 5 * 4)  # two float32 [5, 5] heads
    patterns = lazy.LazyPatterns(list(q), list(k.astype(np.float32)), causal=True)
    first = patterns.head(0, 0)
    assert not first.flags.writeable and np.allclose(first.sum(axis=1), 1.0)
    assert patterns.head(0, 0) is first  # kept
    patterns.head(0, 1)
    assert patterns.head(0, 0) is first  # two heads fit: both kept, head 0 now the newest
    patterns.head(0, 2)  # pushes out head 1, the least recently used
    assert patterns.head(0, 0) is first and len(patterns._cache) == 2
    assert (0, 1) not in patterns._cache and (0, 2) in patterns._cache
