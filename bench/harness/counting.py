"""``counting(module, names)``: count the calls of some functions of a module while a benchmark
runs (a page looks them up per call), and put them back afterwards."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def counting(module: object, names: tuple[str, ...]) -> Iterator[Counter]:
    """Count the calls of ``module.<name>`` for each name (the page looks them up per call)."""
    calls: Counter = Counter()
    originals = {name: getattr(module, name) for name in names}

    def wrap(name: str, fn: Callable) -> Callable:
        def counted(*args: object, **kwargs: object) -> object:
            calls[name] += 1
            return fn(*args, **kwargs)

        return counted

    for name, fn in originals.items():
        setattr(module, name, wrap(name, fn))
    try:
        yield calls
    finally:
        for name, fn in originals.items():
            setattr(module, name, fn)
