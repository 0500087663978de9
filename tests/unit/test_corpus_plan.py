"""The corpus engines' one ``ShardPlan`` and the local ``Engine``: shard ranges and the resume
offset against a definition written another way (a brute-force assignment of sentences to
shards), and a Stop between batches that keeps the shards written."""

from __future__ import annotations

import pandas as pd
import pytest

from viz_transformer.analysis.corpus import engines
from viz_transformer.analysis.corpus.engines import LocalEngine, engine_for
from viz_transformer.analysis.corpus.plan import ShardPlan, ShardWork
from viz_transformer.analysis.corpus.shards import Manifest, ShardStore
from viz_transformer.records.progress import StopToken

CASES = [(10, 4, (0, 1, 2)), (10, 4, (2,)), (10, 4, (1,)), (8, 4, ()), (1, 256, (0,))]


@pytest.mark.parametrize(("n", "size", "todo"), CASES)
def test_shard_ids_cover_the_corpus_once_and_kept_counts_the_other_shards(n, size, todo) -> None:
    plan = ShardPlan(n, size, todo)
    shards = -(-n // size)
    owner = {i: i // size for i in range(n)}  # sentence -> shard, by definition
    for s in range(shards):
        assert plan.ids(s) == [i for i in range(n) if owner[i] == s]
    assert plan.kept == sum(1 for i in range(n) if owner[i] not in todo)


def test_tally_reports_the_start_then_each_finished_batch() -> None:
    seen: list[tuple[int, int]] = []
    add = ShardPlan(10, 4, (2, 1)).tally(lambda d, t: seen.append((d, t)))
    add(2)
    add(4)
    assert seen == [(4, 10), (6, 10), (10, 10)]  # shard 0 kept (4), then 2 + 4 more
    ShardPlan(10, 4, (0,)).tally(None)(3)  # no report asked: nothing to call


def test_the_plan_of_a_folder_lists_the_shards_not_written(tmp_path) -> None:
    store = ShardStore(tmp_path)
    manifest = store.open(Manifest("m", "h", "c", 10, 4))
    store.write(1, pd.DataFrame({"sentence_id": [4]}))
    plan = ShardPlan.of(store, manifest)
    assert plan == ShardPlan(10, 4, (0, 2)) and plan.kept == 4


class FakeModel:
    """Stands for a LoadedModel: ``shard_rows`` is replaced, so only the name is read."""

    name = "fake"


def _counted_rows(model, texts, ids, batch_size, on_batch=None) -> pd.DataFrame:
    """``shard_rows`` without a model: reports each batch, returns the shard's ids."""
    for start in range(0, len(ids), batch_size):
        on_batch(len(ids[start : start + batch_size]))
    return pd.DataFrame({"sentence_id": ids})


def test_the_local_engine_stops_between_batches_and_keeps_whole_shards(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(engines, "shard_rows", _counted_rows)
    store, stop = ShardStore(tmp_path), StopToken()
    store.open(Manifest("fake", "h", "c", 10, 4))
    seen: list[int] = []

    def report(done: int, total: int) -> None:
        seen.append(done)
        if done >= 6:
            stop.set()  # in shard 1's second batch

    sentences = [f"s{i}" for i in range(10)]
    plan = ShardPlan(10, 4, (0, 1, 2))
    LocalEngine().run(ShardWork(FakeModel(), sentences, plan, store, 2, report, stop))
    assert [p.name for p in sorted(tmp_path.glob("shard-*"))] == ["shard-000000.parquet"]
    assert seen == [0, 2, 4, 6]
    again = ShardPlan.of(store, store.manifest())
    LocalEngine().run(ShardWork(FakeModel(), sentences, again, store, 2))
    assert [len(f) for f in store.read()] == [4, 4, 2]


def test_an_unknown_engine_is_refused_by_name() -> None:
    assert isinstance(engine_for("local"), LocalEngine)
    with pytest.raises(ValueError, match="'gpu' is unknown"):
        engine_for("gpu")


def test_a_stop_as_a_shards_last_batch_ends_keeps_that_shard(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(engines, "shard_rows", _counted_rows)
    store, stop = ShardStore(tmp_path), StopToken()
    store.open(Manifest("fake", "h", "c", 10, 2))  # one batch per shard, as the app runs it
    seen: list[int] = []

    def report(done: int, total: int) -> None:
        seen.append(done)
        if done >= 4:
            stop.set()  # as shard 1's only batch ends

    sentences = [f"s{i}" for i in range(10)]
    plan = ShardPlan(10, 2, (0, 1, 2, 3, 4))
    LocalEngine().run(ShardWork(FakeModel(), sentences, plan, store, 2, report, stop))
    assert [len(f) for f in store.read()] == [2, 2]  # both finished batches kept, no third
    assert seen == [0, 2, 4]
    again = ShardPlan.of(store, store.manifest())
    assert again.kept == 4 and again.todo == (2, 3, 4)  # Run goes on from sentence 5
