"""The one function every engine of ``vt.corpus_stats`` calls: sentences in, head rows out."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from viz_transformer.analysis.corpus.stats import batch_rows, empty_rows, sort_rows
from viz_transformer.models.base import LoadedModel


def shard_rows(
    model: LoadedModel,
    sentences: Sequence[str],
    ids: Sequence[int],
    batch_size: int,
    on_batch: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """The rows of some sentences: grouped by length into batches, each run at once.

    Args:
        model: the model; sentences: the texts; ids: their ``sentence_id``s.
        batch_size: sentences per batch; on_batch: called with each batch's size when done.
    """
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))  # little padding
    frames = []
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        batch = model.batch_patterns([sentences[i] for i in idx])
        frames.append(batch_rows(batch, np.asarray(ids, dtype=np.int64)[idx]))
        if on_batch is not None:
            on_batch(len(idx))
    return sort_rows(pd.concat(frames, ignore_index=True)) if frames else empty_rows()
