"""The Bergamot "tiny" Marian Transformer in PyTorch with hook points: encode once, then step.

Encoder: the paper's post-norm layers (self-attention, FFN). Decoder: each layer replaces masked
self-attention with an SSRU, a recurrent unit that is cheap on CPUs, then cross-attention and FFN,
each as ``LayerNorm(x + Sublayer(x))`` with epsilon 1e-6. The parts (config, positions,
attention, FFN, SSRU) live in ``marian_blocks``; this module assembles and runs them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from viz_transformer.networks.hooks import HookPoint, attention_hook_names, name_hook_points
from viz_transformer.networks.marian_blocks import (
    POSITIONS,
    SSRU,
    Attention,
    BergamotConfig,
    FeedForward,
    marian_positions,
)


class EncoderLayer(nn.Module):
    """Self-attention then FFN, each as LayerNorm(x + Sublayer(x)): post-norm, the paper's order."""

    def __init__(self, cfg: BergamotConfig) -> None:
        super().__init__()
        self.self_attn, self.ffn = Attention(cfg), FeedForward(cfg)
        self.norm_1 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.norm_2 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.hook_resid_pre, self.hook_resid_mid = HookPoint(), HookPoint()
        self.hook_resid_post = HookPoint()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.hook_resid_pre(x)
        x = self.hook_resid_mid(self.norm_1(x + self.self_attn.self_attend(x)))
        return self.hook_resid_post(self.norm_2(x + self.ffn(x)))


class DecoderLayer(nn.Module):
    """SSRU, cross-attention, FFN; post-norm after each."""

    def __init__(self, cfg: BergamotConfig) -> None:
        super().__init__()
        self.ssru, self.cross_attn, self.ffn = SSRU(cfg), Attention(cfg), FeedForward(cfg)
        self.norm_1 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.norm_2 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.norm_3 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.hook_resid_pre, self.hook_resid_mid = HookPoint(), HookPoint()
        self.hook_resid_cross, self.hook_resid_post = HookPoint(), HookPoint()

    def forward(
        self, x: torch.Tensor, kv: tuple[torch.Tensor, torch.Tensor], cell: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Args: x (B, T, d); kv: source keys and values (B, h, S, d_k); cell (B, d).

        Returns: x (B, T, d) and the SSRU cell after the last position (B, d).
        """
        x = self.hook_resid_pre(x)
        rnn_out, cell = self.ssru(x, cell)
        x = self.hook_resid_mid(self.norm_1(x + rnn_out))
        x = self.hook_resid_cross(self.norm_2(x + self.cross_attn(x, *kv)))
        return self.hook_resid_post(self.norm_3(x + self.ffn(x))), cell


class Stack(nn.Module):
    """N layers; post-norm needs no final LayerNorm."""

    def __init__(self, layers: list[nn.Module]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)


@dataclass(frozen=True)
class DecoderState:
    """What one decoding step hands the next: nothing here depends on the hooks of a call."""

    cross_kv: tuple[tuple[torch.Tensor, torch.Tensor], ...]  # per layer: k, v (B, h, S, d_k)
    cells: tuple[torch.Tensor, ...]  # per layer: SSRU cell (B, d)
    position: int  # the decoder position of the next input
    # shortlist: allowed ids (n,), their Wemb rows (n, d) and output biases (n,); None: all ids
    output: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    def select(self, rows: torch.Tensor) -> DecoderState:
        """Keep and reorder batch rows (beam search), ``rows`` (B',) long."""
        kv = tuple((k.index_select(0, rows), v.index_select(0, rows)) for k, v in self.cross_kv)
        cells = tuple(c.index_select(0, rows) for c in self.cells)
        return DecoderState(kv, cells, self.position, self.output)


class BergamotTransformer(nn.Module):
    """Encoder-decoder with tied embeddings: ``encode`` once, then ``decode_step`` per token."""

    def __init__(self, cfg: BergamotConfig) -> None:
        super().__init__()
        self.cfg = cfg
        # Wemb: source embedding, target embedding and output projection at once (section 3.4)
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.logit_bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        self.encoder = Stack([EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers)])
        self.decoder = Stack([DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers)])
        self.hook_src_embed, self.hook_tgt_embed = HookPoint(), HookPoint()
        self.hook_src_pos, self.hook_tgt_pos = HookPoint(), HookPoint()
        self.hook_points = name_hook_points(self)
        # computed once rather than at every decoding step: (POSITIONS, d), rows as on the fly
        table = marian_positions(0, POSITIONS, cfg.d_model, torch.device("cpu"))
        self.register_buffer("pe", table, persistent=False)

    def _positions(self, start: int, length: int, device: torch.device) -> torch.Tensor:
        """Rows ``start .. start + length - 1`` of Marian's sinusoid, (1, length, d)."""
        if start + length <= self.pe.shape[0]:
            return self.pe[None, start : start + length].to(device)
        return marian_positions(start, length, self.cfg.d_model, device)[None]

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        """Args: src (B, S) ids ending with ``</s>``, no padding. Returns memory (B, S, d)."""
        emb = self.hook_src_embed(self.embed(src) * math.sqrt(self.cfg.d_model))
        pos = self._positions(0, src.shape[1], src.device)  # (1, S, d)
        x = emb + self.hook_src_pos(pos)
        for layer in self.encoder.layers:
            x = layer(x)
        return x

    def start(self, memory: torch.Tensor, vocab: torch.Tensor | None = None) -> DecoderState:
        """The state before the first decoder position: source K/V per layer, zero SSRU cells.

        Args:
            memory: encoder output (B, S, d).
            vocab: (n,) the target ids the output layer computes (a lexical shortlist); the
                others get logit -inf. None computes every id.
        """
        kv = tuple(layer.cross_attn.project_kv(memory) for layer in self.decoder.layers)
        zeros = memory.new_zeros(memory.shape[0], self.cfg.d_model)  # (B, d)
        output = None
        if vocab is not None:  # gathered once: a step then multiplies n rows, not the vocabulary
            output = (vocab, self.embed.weight[vocab], self.logit_bias[vocab])
        return DecoderState(kv, (zeros,) * len(self.decoder.layers), 0, output)

    def fuse(self) -> None:
        """Fuse the projections that read one input (encoder q, k, v; the SSRU's two matrices)
        into one matmul each: the same numbers with fewer passes over the weights. Call after
        loading or changing the weights."""
        for layer in self.encoder.layers:
            layer.self_attn.fuse()
        for layer in self.decoder.layers:
            layer.ssru.fuse()

    def _logits(self, x: torch.Tensor, state: DecoderState, narrow: bool = False) -> torch.Tensor:
        """Tied output layer (section 3.4): x (B, T, d) -> logits (B, T, vocab), or with
        ``narrow`` and a shortlist only its columns (B, T, n), in its (sorted) id order."""
        if state.output is None:
            return x @ self.embed.weight.T + self.logit_bias
        ids, weight, bias = state.output
        if narrow:
            return x @ weight.T + bias
        logits = x.new_full((*x.shape[:-1], self.cfg.vocab_size), float("-inf"))
        logits[..., ids] = x @ weight.T + bias  # (B, T, n) into the allowed columns
        return logits

    def _decode(
        self, emb: torch.Tensor, state: DecoderState, narrow: bool = False
    ) -> tuple[torch.Tensor, DecoderState]:
        """Logits (B, T, vocab) for decoder input embeddings ``emb`` (B, T, d) after ``state``
        (``narrow``: the shortlist's columns only, see ``_logits``)."""
        T = emb.shape[1]
        pos = self._positions(state.position, T, emb.device)  # (1, T, d)
        x = self.hook_tgt_embed(emb * math.sqrt(self.cfg.d_model)) + self.hook_tgt_pos(pos)
        cells = []
        for layer, kv, cell in zip(self.decoder.layers, state.cross_kv, state.cells, strict=True):
            x, cell = layer(x, kv, cell)
            cells.append(cell)
        new_state = DecoderState(state.cross_kv, tuple(cells), state.position + T, state.output)
        return self._logits(x, state, narrow), new_state

    def decode_step(
        self, prev: torch.Tensor | None, state: DecoderState, narrow: bool = False
    ) -> tuple[torch.Tensor, DecoderState]:
        """One decoder position.

        Args:
            prev: (B,) the previous output ids, or None at position 0, whose input is a zero
                vector (the model has no BOS token).
            state: from ``start`` or the previous step.
            narrow: with a shortlist, return only its columns (B, n), in its sorted id order:
                greedy decoding then skips filling and searching the other ~31,000 ids.

        Returns:
            logits (B, vocab) (or (B, n)) for the next output, and the state for the next step.
        """
        if prev is None:
            B = state.cells[0].shape[0]
            emb = state.cells[0].new_zeros(B, 1, self.cfg.d_model)  # (B, 1, d)
        else:
            emb = self.embed(prev)[:, None]  # (B, 1, d)
        logits, state = self._decode(emb, state, narrow)
        return logits[:, 0], state

    def decode(
        self, memory: torch.Tensor, outputs: torch.Tensor, vocab: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Teacher forcing: every decoder position in one call.

        Args:
            memory: encoder output (B, S, d).
            outputs: (B, n) output ids; the decoder inputs are the zero start vector, then
                these ids ("shifted right"), so there are T = n + 1 positions.
            vocab: (n,) ids the output layer computes (a shortlist), or None for all.

        Returns:
            logits (B, n + 1, vocab); row t predicts output t from the inputs up to t.
        """
        return self.decode_prefix(outputs, self.start(memory, vocab))[0]

    def decode_prefix(
        self, outputs: torch.Tensor, state: DecoderState
    ) -> tuple[torch.Tensor, DecoderState]:
        """The zero start vector then ``outputs`` (B, n) in one call, from ``start``'s state.

        Returns:
            logits (B, n + 1, vocab) and the state after the last position, which
            ``decode_step`` continues.
        """
        start = state.cells[0].new_zeros(outputs.shape[0], 1, self.cfg.d_model)  # (B, 1, d)
        return self._decode(torch.cat([start, self.embed(outputs)], dim=1), state)

    def pattern_hook_names(self) -> dict[str, list[str]]:
        """Hook points of the attention patterns per kind, in layer order (no decoder kind)."""
        return attention_hook_names(self, ("encoder", "cross"))
