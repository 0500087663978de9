"""``ShardPlan``: which sentences each shard holds and which shards a run still computes; and
``ShardWork``, all an engine gets for one run.

Every engine reads its work from one plan: the sentence ids of a shard, the shards missing from
the folder, and where a resumed run starts (the sentences of the shards kept). ``tally`` counts
finished sentences from there and reports them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from viz_transformer.analysis.corpus.shards import Manifest, ShardStore
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.progress import OnCount, StopToken


@dataclass(frozen=True)
class ShardPlan:
    """The shards of one corpus and the ones left to compute.

    Attributes:
        n_sentences: sentences in the corpus; shard_size: sentences per shard (the last may
            hold fewer); todo: the shards to compute, in order.
    """

    n_sentences: int
    shard_size: int
    todo: tuple[int, ...]

    @classmethod
    def of(cls, store: ShardStore, manifest: Manifest) -> ShardPlan:
        """The plan of the folder ``store`` with ``manifest``: its shards not written yet."""
        return cls(manifest.n_sentences, manifest.shard_size, tuple(store.missing(manifest)))

    def ids(self, shard: int) -> list[int]:
        """The ``sentence_id``s of ``shard``."""
        start = shard * self.shard_size
        return list(range(start, min(start + self.shard_size, self.n_sentences)))

    def texts(self, sentences: Sequence[str], shard: int) -> list[str]:
        """The sentences of ``shard``."""
        return [sentences[i] for i in self.ids(shard)]

    @property
    def kept(self) -> int:
        """Sentences already done before this run: those of the shards not in ``todo``."""
        return self.n_sentences - sum(len(self.ids(s)) for s in self.todo)

    def tally(self, report: OnCount | None) -> Callable[[int], None]:
        """A counter that starts at ``kept`` (reported at once) and reports ``(done, total)``
        each time it is called with the sentences just finished."""
        done = self.kept
        if report is not None:  # where this run starts (a resumed one: past the shards kept)
            report(done, self.n_sentences)

        def add(n: int) -> None:
            nonlocal done
            done += n
            if report is not None:
                report(done, self.n_sentences)

        return add


@dataclass(frozen=True)
class ShardWork:
    """One run of an engine (``engines.Engine.run``).

    Attributes:
        model: the model; sentences: the whole corpus (``sentence_id`` = index).
        plan: the shards to compute; store: where they go.
        batch_size: sentences run through the model at once.
        report: called with (sentences done, total): first where the run starts, then as work
            finishes (``plan.tally``).
        stop: once set, the run ends between two batches (or shards): the shards written stay,
            the one in progress is dropped, and ``run`` returns normally.
    """

    model: LoadedModel
    sentences: Sequence[str]
    plan: ShardPlan
    store: ShardStore
    batch_size: int
    report: OnCount | None = None
    stop: StopToken | None = None

    def texts(self, shard: int) -> list[str]:
        """The sentences of ``shard``."""
        return self.plan.texts(self.sentences, shard)

    def stopped(self) -> bool:
        """Whether the caller asked the run to stop."""
        return self.stop is not None and self.stop.is_set()
