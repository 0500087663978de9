"""Batched capture for the paper network: several sources encoded, decoded greedily and read in
one padded pass, each input's attention equal to its own trace (padding masked)."""

from __future__ import annotations

import numpy as np
import torch

from viz_transformer.networks.hooks import record_calls
from viz_transformer.networks.paper import Transformer
from viz_transformer.networks.paper_decode import greedy_decode, pad_batch, source_mask
from viz_transformer.records.batch import PatternBatch
from viz_transformer.records.kinds import AttentionKind


def _stacked(calls: dict[str, list[torch.Tensor]], names: list[str]) -> np.ndarray:
    """The last call of each named hook point, stacked: ``[layers, B, h, q, k]`` float32."""
    return torch.stack([calls[n][-1] for n in names]).to("cpu", torch.float32).numpy()


ROWS = 16  # decoder rows read per pass: one runaway output pads 15 others, not the whole batch


def _read_decoder(
    module: Transformer,
    memory: torch.Tensor,
    mask: torch.Tensor,
    tgt_ids: list[list[int]],
    pad_id: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Decoder and cross patterns of teacher-forced passes over ``tgt_ids`` (``<s>`` + output),
    ``ROWS`` rows of similar length at a time, without the output layer.

    Returns:
        ``[layers, B, h, T, T]`` and ``[layers, B, h, T, S]``, zero past each row's length.
    """
    names = module.pattern_hook_names()
    B, S = memory.shape[:2]
    T, h = max(len(t) for t in tgt_ids), module.cfg.n_heads
    layers = len(names["decoder"])
    decoder = np.zeros((layers, B, h, T, T), np.float32)
    cross = np.zeros((layers, B, h, T, S), np.float32)
    order = sorted(range(B), key=lambda b: len(tgt_ids[b]))
    for start in range(0, B, ROWS):
        rows = order[start : start + ROWS]
        idx = torch.tensor(rows, device=memory.device)
        tgt = pad_batch([tgt_ids[r] for r in rows], pad_id, memory.device)  # (R, t)
        with record_calls(module, names["decoder"] + names["cross"], lambda x: x) as seen:
            module.extend_stream(module.start(memory[idx]), mask[idx], tgt)
        t = tgt.shape[1]
        decoder[:, rows, :, :t, :t] = _stacked(seen, names["decoder"])
        cross[:, rows, :, :t, :] = _stacked(seen, names["cross"])
    return decoder, cross


@torch.no_grad()
def capture_batch(
    module: Transformer, src_ids: list[list[int]], *, bos_id: int, eos_id: int, pad_id: int
) -> PatternBatch:
    """Encoder, decoder and cross attention of a batch of sources and their greedy outputs.

    Three steps: (1) encode the padded sources once, reading the encoder patterns; (2) decode
    greedily from that memory, nothing captured; (3) teacher-forced decoder passes over
    ``<s>`` + each output (rows of similar length together), reading the decoder and cross
    patterns and skipping the output layer.
    Padded keys are masked with -inf (source mask, causal mask), so real rows never see them.

    Args:
        module: the paper network in eval mode.
        src_ids: per input its source ids, ``</s>`` included (as ``trace`` reads them).
        bos_id, eos_id, pad_id: the tokenizer's start, end and padding ids.

    Returns:
        The batch's patterns with each input's query and key counts.
    """
    device = module.pe.device
    names = module.pattern_hook_names()
    src = pad_batch(src_ids, pad_id, device)  # (B, S)
    mask = source_mask(src, pad_id)  # (B, 1, 1, S)
    with record_calls(module, names["encoder"], lambda x: x) as enc:
        memory = module.encode(src, mask)  # (B, S, d)
    outs = greedy_decode(
        module, memory, module.cfg.max_len - 1, bos_id=bos_id, eos_id=eos_id, src_mask=mask
    )
    tgt_ids = [[bos_id, *(i for i in out if i != eos_id)] for out in outs]
    decoder, cross = _read_decoder(module, memory, mask, tgt_ids, pad_id)
    src_lens = np.array([len(s) for s in src_ids], dtype=np.int64)
    tgt_lens = np.array([len(t) for t in tgt_ids], dtype=np.int64)
    kinds: tuple[AttentionKind, ...] = ("encoder", "decoder", "cross")
    arrays = [_stacked(enc, names["encoder"]), decoder, cross]
    q_lens = dict(zip(kinds, (src_lens, tgt_lens, tgt_lens), strict=True))
    k_lens = dict(zip(kinds, (src_lens, tgt_lens, src_lens), strict=True))
    return PatternBatch(dict(zip(kinds, arrays, strict=True)), q_lens, k_lens)
