"""Progress of a long analysis split into parts: a part's fractions mapped into its share of the
whole, and greedy decoding reported token by token (``LoadedModel.stepping``), so that a Stop
(the job's ``stop`` token, checked in its progress callback: ``records.progress.with_stop``)
ends the work between two tokens."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from viz_transformer.models.base import LoadedModel
from viz_transformer.records.progress import OnFraction


def part(report: OnFraction | None, start: float, end: float) -> OnFraction | None:
    """``report`` for a part that runs from ``start`` to ``end`` of the whole: its fraction f
    becomes ``start + (end - start) * f``; None stays None (no progress asked)."""
    if report is None:
        return None
    # min: float rounding (0.7 + 0.3 * 1) must not pass 1, which a progress bar refuses
    return lambda fraction: report(min(1.0, start + (end - start) * fraction))


@contextlib.contextmanager
def decoding(
    model: LoadedModel, report: OnFraction | None, start: float, end: float
) -> Iterator[None]:
    """While open, every greedy step of this thread reports its share of ``start``..``end``
    (steps over the most it may take; never falling, also across several decodes), and ``end``
    once the block ends normally. What ``report`` raises ends the decode at once."""
    if report is None:
        yield
        return
    best = [start]

    def step(steps: int, max_new: int) -> None:
        best[0] = max(best[0], start + (end - start) * min(1.0, steps / max(1, max_new)))
        report(best[0])

    with model.stepping(step):
        yield
    report(end)
