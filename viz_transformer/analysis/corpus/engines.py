"""Where the batches of ``vt.corpus_stats`` run: the ``Engine`` interface and the local engine.

An engine gets a ``ShardPlan`` and decides only where each shard's batches run; every engine
calls ``shard_rows`` (the same rows) and writes through the same ``ShardStore``. ``"local"``
runs one batch after another in this thread; ``"ray"`` (``ray_engine``) on Ray actors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from viz_transformer.analysis.corpus.plan import ShardPlan
from viz_transformer.analysis.corpus.rows import shard_rows
from viz_transformer.analysis.corpus.shards import ShardStore
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.progress import Cancelled, OnCount, StopToken

EngineName = Literal["local", "ray"]
ENGINES: tuple[EngineName, ...] = ("local", "ray")


class Engine(Protocol):
    """Computes and writes the shards a plan has left."""

    def run(
        self,
        model: LoadedModel,
        sentences: Sequence[str],
        plan: ShardPlan,
        store: ShardStore,
        batch_size: int,
        report: OnCount | None = None,
        stop: StopToken | None = None,
    ) -> None:
        """Write every shard of ``plan.todo`` into ``store``.

        Args:
            model: the model; sentences: the whole corpus (``sentence_id`` = index).
            plan: the shards to compute; store: where they go.
            batch_size: sentences run through the model at once.
            report: called with (sentences done, total): first where the run starts, then as
                work finishes.
            stop: once set, the run ends between two batches (or shards); the shards written
                stay, the one in progress is dropped. Returns normally.
        """
        ...


class LocalEngine:
    """One batch after another in this thread; a Stop is seen after every batch."""

    def run(
        self,
        model: LoadedModel,
        sentences: Sequence[str],
        plan: ShardPlan,
        store: ShardStore,
        batch_size: int,
        report: OnCount | None = None,
        stop: StopToken | None = None,
    ) -> None:
        add = plan.tally(report)

        def on_batch(n: int) -> None:
            add(n)
            if stop is not None:
                stop.check()  # the shard in progress is dropped; the written ones stay

        for shard in plan.todo:
            try:
                rows = shard_rows(model, plan.texts(sentences, shard), plan.ids(shard),
                                  batch_size, on_batch)  # fmt: skip
            except Cancelled:
                return
            store.write(shard, rows)


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
