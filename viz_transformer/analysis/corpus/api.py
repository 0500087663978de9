"""``vt.corpus_stats``: head statistics over a corpus, batched, stored in resumable shards.

The engine only decides where batches run (``engines``: ``"local"``, one batch after another in
this process; ``"ray"``, on a Ray cluster); every engine computes the shards a ``ShardPlan`` has
left with ``shard_rows`` and writes them to the same ``ShardStore``; the statistics are
``analysis.corpus.stats``'s.
"""

from __future__ import annotations

import hashlib
import platform
import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from viz_transformer.analysis.corpus.engines import ENGINES, EngineName, engine_for
from viz_transformer.analysis.corpus.plan import ShardPlan, ShardWork
from viz_transformer.analysis.corpus.shards import Manifest, ShardStore
from viz_transformer.analysis.corpus.stats import empty_rows, sort_rows
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.registry import load_model
from viz_transformer.records.progress import OnCount, StopToken
from viz_transformer.settings import cache_root

SHARD_SIZE = 256  # sentences per shard: a killed run loses at most this much work
_HASHES: weakref.WeakKeyDictionary[LoadedModel, str] = weakref.WeakKeyDictionary()


def model_hash(model: LoadedModel) -> str:
    """SHA-256 of the model's weights (every tensor of its state dict, by name), once per model."""
    if model not in _HASHES:
        h = hashlib.sha256()
        for name, t in sorted(model.module.state_dict().items()):
            h.update(name.encode())
            h.update(t.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy())
        _HASHES[model] = h.hexdigest()
    return _HASHES[model]


def corpus_hash(sentences: Sequence[str]) -> str:
    """SHA-256 of the sentences joined one per line (what ``--sentences FILE`` holds)."""
    return hashlib.sha256("\n".join(sentences).encode()).hexdigest()


def cache_folder(model: LoadedModel, sentences: Sequence[str]) -> Path:
    """The folder under ``cache_root()`` that holds ``model``'s statistics of ``sentences``: the
    same model weights and corpus always land in the same folder (a second visit reads it)."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in model.name)
    return (
        cache_root() / "corpus" / (f"{name}-{model_hash(model)[:12]}-{corpus_hash(sentences)[:12]}")
    )


def _versions() -> dict[str, str]:
    import pyarrow

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "pyarrow": pyarrow.__version__,
    }


def _check(sentences: Sequence[str], batch_size: int, engine: str) -> list[str]:
    texts = list(sentences)
    if not texts:
        raise ValueError("The corpus has no sentence; give at least one non-blank line.")
    if not all(isinstance(s, str) and s.strip() for s in texts):
        raise ValueError("Every sentence must be a non-blank string; drop the blank lines.")
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size} must be at least 1.")
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r} is unknown; use 'local' or 'ray'.")
    return texts


def corpus_stats(
    model: str | LoadedModel,
    sentences: Sequence[str],
    out: Path | str,
    *,
    batch_size: int = 32,
    engine: EngineName = "local",
    progress: OnCount | None = None,
    shard_size: int = SHARD_SIZE,
    stop: StopToken | None = None,
) -> pd.DataFrame:
    """Every head's statistics on every sentence (definitions: ``analysis.corpus.stats``).

    The table is written under ``out`` as Parquet shards with a manifest (model name, weights
    hash, corpus hash, shard size, versions). Shards already there are kept: a run killed at
    any moment, run again, computes only the missing ones, and a finished folder (same model,
    same corpus) is read back at once. Concurrent calls on one folder compute it once.

    Args:
        model: a model name (``vt.available_models()``) or a loaded model.
        sentences: the corpus; ``sentence_id`` is the index in it.
        out: the folder of the shards.
        batch_size: sentences run through the model at once.
        engine: ``"local"`` (this process) or ``"ray"`` (``ray.init()``; ``RAY_ADDRESS``
            names a cluster; needs ``requirements-cluster.txt`` and a model name).
        progress: called with (sentences done, total) as batches finish.
        shard_size: sentences per shard (a folder keeps the size it was made with).
        stop: once set (from any thread), the run stops after the current batch (the Ray
            engine: before the next shard); the shards written stay.

    Returns:
        Columns ``sentence_id, kind, layer, head, n_rows, entropy, max_weight, first_token,
        prev_token, diagonal``, sorted by (sentence_id, kind, layer, head); partial when stopped.

    Raises:
        ValueError: no sentences, an unknown model or engine, a folder holding another model's
            or corpus's shards, a sentence the model cannot read.
    """
    compute(
        model,
        sentences,
        out,
        batch_size=batch_size,
        engine=engine,
        progress=progress,
        shard_size=shard_size,
        stop=stop,
    )
    return read_corpus_stats(out)


def compute(
    model: str | LoadedModel,
    sentences: Sequence[str],
    out: Path | str,
    *,
    batch_size: int = 32,
    engine: EngineName = "local",
    progress: OnCount | None = None,
    shard_size: int = SHARD_SIZE,
    stop: StopToken | None = None,
) -> Manifest:
    """``corpus_stats`` without reading the table back (a million sentences' table is large):
    the shards are written and the folder's manifest returned. Same arguments and errors."""
    texts = _check(sentences, batch_size, engine)
    loaded = model if isinstance(model, LoadedModel) else load_model(model)
    wanted = Manifest(
        loaded.name, model_hash(loaded), corpus_hash(texts), len(texts), shard_size, _versions()
    )
    store = ShardStore(out)
    with store.lock():
        manifest = store.open(wanted)
        plan = ShardPlan.of(store, manifest)
        if plan.todo:
            work = ShardWork(loaded, texts, plan, store, batch_size, progress, stop)
            engine_for(engine).run(work)
        elif progress is not None:
            progress(len(texts), len(texts))
    return manifest


def read_corpus_stats(out: Path | str) -> pd.DataFrame:
    """The table ``corpus_stats`` wrote under ``out`` (the shards written so far), sorted by
    (sentence_id, kind, layer, head).

    Raises:
        ValueError: ``out`` holds no corpus statistics.
    """
    store = ShardStore(out)
    if store.manifest() is None:
        raise ValueError(f"{out} holds no corpus statistics (no manifest.json); run corpus first.")
    frames = store.read()
    return sort_rows(pd.concat(frames, ignore_index=True)) if frames else empty_rows()
