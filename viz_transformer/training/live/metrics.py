"""What a live run measures: greedy outputs, held-out exact match, anti-diagonal attention."""

from __future__ import annotations

import numpy as np
import torch

from viz_transformer.models.paper import PaperModel
from viz_transformer.networks.paper_decode import greedy_decode, pad_batch, source_mask
from viz_transformer.records.trace import Trace


@torch.no_grad()
def _greedy(model: PaperModel, sources: list[str], max_new: int) -> list[str]:
    """Greedy outputs of a batch of sources, at most ``max_new`` tokens each."""
    vocab, module = model.vocab, model.module
    src = pad_batch([vocab.encode(s) for s in sources], vocab.pad_id, model.device)
    mask = source_mask(src, vocab.pad_id)  # (B, 1, 1, S)
    outs = greedy_decode(
        module, module.encode(src, mask), max_new, bos_id=vocab.bos_id, eos_id=vocab.eos_id,
        src_mask=mask,
    )  # fmt: skip
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
