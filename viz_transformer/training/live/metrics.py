"""What a live run measures: greedy outputs, held-out exact match, anti-diagonal attention."""

from __future__ import annotations

import numpy as np

from viz_transformer.models.paper import PaperModel
from viz_transformer.networks.paper_decode import greedy_batch
from viz_transformer.records.trace import Trace


def _greedy(model: PaperModel, sources: list[str], max_new: int) -> list[str]:
    """Greedy outputs of a batch of sources, at most ``max_new`` tokens each."""
    vocab = model.vocab
    outs = greedy_batch(
        model.module,
        [vocab.encode(s) for s in sources],
        max_new,
        pad_id=vocab.pad_id,
        bos_id=vocab.bos_id,
        eos_id=vocab.eos_id,
    )
    return [vocab.decode([i for i in out if i != vocab.eos_id]) for out in outs]


def greedy_text(model: PaperModel, source: str, max_new: int) -> str:
    return _greedy(model, [source], max_new)[0]


def exact_match(model: PaperModel, data: list[tuple[str, str]]) -> float:
    """Share of ``data`` whose greedy output (at most the reference's length + 4) is exact."""
    vocab = model.vocab
    longest = max(len(vocab.encode(t)) for _, t in data)
    outs = _greedy(model, [s for s, _ in data], longest + 4)
    hits = [o == vocab.decode(vocab.encode(t)) for o, (_, t) in zip(outs, data, strict=True)]
    return sum(hits) / len(data)


def antidiagonal_mass(trace: Trace) -> np.ndarray:
    """Mean cross-attention weight on the anti-diagonal, ``[layers, heads]``, of a reversal
    trace teacher-forced with its reference: the query predicting output word i should attend
    to source word n - 1 - i (the ``</s>`` rows and columns are left out).
    """
    cross = np.asarray(trace.cross)  # [layers, heads, tgt, src]
    n = len(trace.src_tokens) - 1  # words before </s>
    rows = np.arange(n)
    return cross[:, :, rows, n - 1 - rows].mean(axis=-1)
