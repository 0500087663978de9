"""Where the batches of ``vt.corpus_stats`` run: the ``Engine`` interface and the local engine.

An engine gets a ``ShardWork`` (its ``ShardPlan`` included) and decides only where each shard's
batches run; every engine calls ``shard_rows`` (the same rows) and writes through the same
``ShardStore``. ``"local"`` runs one batch after another in this thread; ``"ray"``
(``ray_engine``) on Ray actors.
"""

from __future__ import annotations

from typing import Literal, Protocol

from viz_transformer.analysis.corpus.plan import ShardWork
from viz_transformer.analysis.corpus.rows import shard_rows
from viz_transformer.records.progress import Cancelled

EngineName = Literal["local", "ray"]
ENGINES: tuple[EngineName, ...] = ("local", "ray")


class Engine(Protocol):
    """Computes and writes the shards a plan has left."""

    def run(self, work: ShardWork) -> None:
        """Write every shard of ``work.plan.todo`` into ``work.store`` (``ShardWork`` says how
        progress is reported and a Stop honoured)."""
        ...


class LocalEngine:
    """One batch after another in this thread. A Stop is seen after every batch: a shard left
    unfinished is dropped, a shard its batch has just finished is written first (with one
    batch per shard, every finished batch is kept)."""

    def run(self, work: ShardWork) -> None:
        add = work.plan.tally(work.report)
        for shard in work.plan.todo:
            texts = work.texts(shard)
            left = [len(texts)]  # sentences of this shard not computed yet

            def on_batch(n: int, left: list[int] = left) -> None:
                add(n)
                left[0] -= n
                if work.stop is not None and left[0] > 0:
                    work.stop.check()  # the shard in progress is dropped; the written ones stay

            try:
                rows = shard_rows(
                    work.model, texts, work.plan.ids(shard), work.batch_size, on_batch
                )
            except Cancelled:
                return
            work.store.write(shard, rows)
            if work.stopped():
                return


def engine_for(name: str) -> Engine:
    """The engine called ``name`` (``ENGINES``).

    Raises:
        ValueError: an unknown name.
    """
    if name == "local":
        return LocalEngine()
    if name == "ray":
        from viz_transformer.analysis.corpus.ray_engine import RayEngine

        return RayEngine()
    raise ValueError(f"engine={name!r} is unknown; use 'local' or 'ray'.")
