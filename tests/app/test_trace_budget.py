"""The server's trace cache keeps at most ``VT_TRACE_CACHE_MB`` of traces (issue 53): the least
recently used go first, the newest always stays, and a trace is weighed by what it holds."""

from __future__ import annotations

import pytest

from viz_transformer.ui import budget, caches

MODEL = "paper-en-pt"
LONG = " ".join(["the cat sat on the mat"] * 10)  # 61 source tokens: about 1 MB of maps


@pytest.fixture
def traces(monkeypatch):
    monkeypatch.setattr(caches, "TRACE_CACHE_MB", 2)
    caches._traces.clear()  # made again under the patched budget
    yield caches._traces()
    caches._traces.clear()


def test_traces_beyond_the_byte_budget_are_forgotten_oldest_first(traces) -> None:
    first = caches.trace(MODEL, LONG)
    weight = budget.held_bytes(first)
    assert 0.6 * budget.MB < weight < budget.MB  # the maps themselves
    caches.trace(MODEL, LONG + " again")
    assert (MODEL, LONG, None) in traces and len(traces) == 2  # 2 of about 0.9 MB: kept
    caches.trace(MODEL, LONG)  # read: now the most recently used
    caches.trace(MODEL, LONG + " and again")
    assert (MODEL, LONG + " again", None) not in traces  # the oldest went
    assert caches.trace(MODEL, LONG) is first and len(traces) == 2


def test_a_trace_larger_than_the_budget_is_still_kept_alone(traces, monkeypatch) -> None:
    monkeypatch.setattr(budget, "MB", 1000)  # a budget of 2,000 bytes: below any trace
    caches._traces.clear()
    small = caches._traces()
    record = caches.trace(MODEL, LONG)
    assert caches.trace(MODEL, LONG) is record and len(small) == 1
    caches.trace(MODEL, "the cat sat")
    assert len(small) == 1 and (MODEL, "the cat sat", None) in small
