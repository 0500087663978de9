"""The encoder-decoder Transformer of "Attention Is All You Need" (section 3) with hook points.

Post-norm exactly as the paper: every sub-layer's output is ``LayerNorm(x + Dropout(Sublayer(x)))``
(section 3.1 and 5.4), not the pre-norm most modern code uses. Whenever a hook is active in the
calling thread, attention is computed with an explicit softmax so every weight can be read at
``hook_pattern``; with no hook active it takes PyTorch's fused ``scaled_dot_product_attention``
(the same Eq. 1). The decoder can run incrementally: ``start`` then ``extend`` with a
``DecoderCache`` of keys and values, one new row per step (section 3.1's auto-regression).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from viz_transformer.networks.config import TransformerConfig
from viz_transformer.networks.hooks import (
    HookPoint,
    any_active,
    attention_hook_names,
    name_hook_points,
)
from viz_transformer.networks.positional import sinusoidal_table

KV = tuple[torch.Tensor, torch.Tensor]  # keys, values (B, h, T, d_k), before their hook points


def subsequent_mask(size: int, device: torch.device | str, start: int = 0) -> torch.Tensor:
    """Boolean ``[size, start + size]`` mask, True where query i (at position ``start + i``) may
    attend to key j: j <= start + i. ``start`` counts the positions already in a cache."""
    return torch.ones(size, start + size, dtype=torch.bool, device=device).tril(start)


@dataclass(frozen=True)
class DecoderCache:
    """What incremental decoding keeps between steps, per decoder layer: the self-attention keys
    and values of the decoder inputs so far (one row more per step) and the cross-attention keys
    and values of the source (computed once).

    Immutable: ``Transformer.extend`` returns a new cache, so beams can branch from any step.
    Keys and values are kept as projected, before ``hook_k``/``hook_v``, which fire on every step
    with all of them, as in a pass over the whole prefix.
    """

    self_kv: tuple[KV, ...]  # per layer (B, h, T, d_k); empty before the first input
    cross_kv: tuple[KV, ...]  # per layer (B, h, S, d_k)

    @property
    def length(self) -> int:
        """Decoder positions already in the cache: the position of the next input."""
        return self.self_kv[0][0].shape[2] if self.self_kv else 0

    def select(self, rows: torch.Tensor) -> DecoderCache:
        """Keep and reorder batch rows, ``rows`` (B',) long: greedy decoding drops finished ones."""
        return DecoderCache(
            tuple((k[rows], v[rows]) for k, v in self.self_kv),
            tuple((k[rows], v[rows]) for k, v in self.cross_kv),
        )


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O (section 3.2.2, Eq. 1 per head)."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.h, self.d_k, self.scale = cfg.n_heads, cfg.d_k, cfg.scale_scores
        self.W_q = nn.Linear(cfg.d_model, cfg.d_model)
        self.W_k = nn.Linear(cfg.d_model, cfg.d_model)
        self.W_v = nn.Linear(cfg.d_model, cfg.d_model)
        self.W_o = nn.Linear(cfg.d_model, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)
        self.hook_q = HookPoint()  # (B, h, Tq, d_k)
        self.hook_k = HookPoint()  # (B, h, Tk, d_k)
        self.hook_v = HookPoint()  # (B, h, Tk, d_k)
        self.hook_scores = HookPoint()  # (B, h, Tq, Tk), after scaling and masking
        self.hook_pattern = HookPoint()  # (B, h, Tq, Tk), softmax of the scores
        self.hook_z = HookPoint()  # (B, h, Tq, d_k), pattern @ v before W^O

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.h, self.d_k).transpose(1, 2)  # (B, h, T, d_k)

    def project_kv(self, x_kv: torch.Tensor) -> KV:
        """Keys and values ``(B, h, Tk, d_k)`` of ``x_kv (B, Tk, d)``, before their hook points."""
        return self._split(self.W_k(x_kv)), self._split(self.W_v(x_kv))

    def forward(
        self,
        x_q: torch.Tensor,
        x_kv: torch.Tensor | None,
        mask: torch.Tensor | None,
        kv: KV | None = None,
    ) -> torch.Tensor:
        """Args: x_q (B, Tq, d); x_kv (B, Tk, d), or None with ``kv``: keys and values already
        projected (cached rows first); mask broadcast to (B, h, Tq, Tk), True = keep, or None.

        Returns: (B, Tq, d).
        """
        q = self.hook_q(self._split(self.W_q(x_q)))  # (B, h, Tq, d_k)
        k, v = self.project_kv(x_kv) if kv is None else kv
        k, v = self.hook_k(k), self.hook_v(v)  # (B, h, Tk, d_k)
        if any_active():
            z = self._explicit(q, k, v, mask)
        else:  # nobody reads the weights: the fused kernel computes the same Eq. 1
            z = F.scaled_dot_product_attention(
                q,
                k,
                v,
                attn_mask=mask,
                dropout_p=self.dropout.p if self.training else 0.0,
                scale=None if self.scale else 1.0,
            )
        B, _, Tq, _ = z.shape
        return self.W_o(z.transpose(1, 2).reshape(B, Tq, self.h * self.d_k))  # (B, Tq, d)

    def _explicit(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
    ) -> torch.Tensor:
        """softmax(q k^T / sqrt(d_k)) v, every step at its hook point: (B, h, Tq, d_k)."""
        scores = q @ k.transpose(-2, -1)  # (B, h, Tq, Tk)
        if self.scale:
            scores = scores / math.sqrt(self.d_k)
        if mask is not None:
            # -inf, not a large negative number: softmax then gives exactly 0 (section 3.2.3)
            scores = scores.masked_fill(~mask, float("-inf"))
        scores = self.hook_scores(scores)
        pattern = self.hook_pattern(F.softmax(scores, dim=-1))
        return self.hook_z(self.dropout(pattern) @ v)  # (B, h, Tq, d_k)


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied to each position alone (Eq. 2)."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.W_1 = nn.Linear(cfg.d_model, cfg.d_ff)
        self.W_2 = nn.Linear(cfg.d_ff, cfg.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.W_2(F.relu(self.W_1(x)))


class EncoderLayer(nn.Module):
    """Self-attention then FFN, each wrapped as LayerNorm(x + Dropout(Sublayer(x)))."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.self_attn, self.ffn = MultiHeadAttention(cfg), FeedForward(cfg)
        self.norm_1, self.norm_2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)
        self.hook_resid_pre, self.hook_resid_mid = HookPoint(), HookPoint()
        self.hook_resid_post = HookPoint()

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor | None) -> torch.Tensor:
        x = self.hook_resid_pre(x)
        x = self.hook_resid_mid(self.norm_1(x + self.dropout(self.self_attn(x, x, src_mask))))
        return self.hook_resid_post(self.norm_2(x + self.dropout(self.ffn(x))))


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder (cross) attention, FFN; post-norm after each."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.self_attn, self.cross_attn = MultiHeadAttention(cfg), MultiHeadAttention(cfg)
        self.ffn = FeedForward(cfg)
        self.norm_1, self.norm_2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.norm_3 = nn.LayerNorm(cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)
        self.hook_resid_pre, self.hook_resid_mid = HookPoint(), HookPoint()
        self.hook_resid_cross, self.hook_resid_post = HookPoint(), HookPoint()

    def forward(
        self,
        x: torch.Tensor,
        cross_kv: KV,
        src_mask: torch.Tensor | None,
        tgt_mask: torch.Tensor | None,
        past: KV | None = None,
    ) -> tuple[torch.Tensor, KV]:
        """Args: x (B, n, d) the new decoder positions; cross_kv: the source's keys and values
        (B, h, S, d_k); src_mask (B, 1, 1, S) or None; tgt_mask (1, 1, n, T), or None when the
        new positions may see every key (n = 1); past: keys and values of the T - n earlier
        positions, or None.

        Returns: x (B, n, d), and the self-attention keys and values of all T positions.
        """
        x = self.hook_resid_pre(x)
        k, v = self.self_attn.project_kv(x)  # (B, h, n, d_k)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)  # (B, h, T, d_k)
        attn = self.self_attn(x, None, tgt_mask, (k, v))
        x = self.hook_resid_mid(self.norm_1(x + self.dropout(attn)))
        x = self.norm_2(x + self.dropout(self.cross_attn(x, None, src_mask, cross_kv)))
        x = self.hook_resid_cross(x)
        return self.hook_resid_post(self.norm_3(x + self.dropout(self.ffn(x)))), (k, v)


class Stack(nn.Module):
    """N identical layers (section 3.1); the paper's post-norm needs no final LayerNorm."""

    def __init__(self, layers: list[nn.Module]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)


class Transformer(nn.Module):
    """EncoderDecoder in the Annotated Transformer's vocabulary: ``encode`` then ``decode``."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.tgt_embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.generator = nn.Linear(cfg.d_model, cfg.vocab_size, bias=cfg.output_bias)
        if cfg.tie_embeddings:  # section 3.4: one matrix for both embeddings and the generator
            self.tgt_embed.weight = self.src_embed.weight
            self.generator.weight = self.src_embed.weight
        table = sinusoidal_table(cfg.max_len, cfg.d_model, cfg.pe_layout)
        self.register_buffer("pe", torch.from_numpy(table), persistent=False)  # (max_len, d)
        self.dropout = nn.Dropout(cfg.dropout)
        self.encoder = Stack([EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers)])
        self.decoder = Stack([DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers)])
        self.hook_src_embed, self.hook_tgt_embed = HookPoint(), HookPoint()
        self.hook_src_pos, self.hook_tgt_pos = HookPoint(), HookPoint()
        self.hook_points = name_hook_points(self)
        self._init_weights()

    def _init_weights(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        if self.cfg.tie_embeddings:  # keep sqrt(d_model) * embedding at unit scale
            nn.init.normal_(self.src_embed.weight, std=self.cfg.d_model**-0.5)
        if self.generator.bias is not None:
            nn.init.zeros_(self.generator.bias)

    def _embed(
        self, table: nn.Embedding, tokens: torch.Tensor, side: str, start: int = 0
    ) -> torch.Tensor:
        """Tokens (B, T) at positions ``start .. start + T - 1`` -> (B, T, d)."""
        end = start + tokens.shape[1]
        if self.cfg.max_len < end:
            raise ValueError(
                f"{end} tokens exceed this model's {self.cfg.max_len} positions; shorten the input."
            )
        emb = getattr(self, f"hook_{side}_embed")(table(tokens) * math.sqrt(self.cfg.d_model))
        pos = getattr(self, f"hook_{side}_pos")(self.pe[None, start:end])  # (1, T, d)
        return self.dropout(emb + pos)  # (B, T, d), section 3.4 and 3.5

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Args: src (B, S) ids; src_mask (B, 1, 1, S), True = real token. Returns (B, S, d)."""
        x = self._embed(self.src_embed, src, "src")
        for layer in self.encoder.layers:
            x = layer(x, src_mask)
        return x

    def decode(
        self,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None,
        tgt_in: torch.Tensor,
    ) -> torch.Tensor:
        """Logits for the next token at every decoder position.

        Args:
            memory: encoder output (B, S, d).
            src_mask: (B, 1, 1, S) True = real source token, or None.
            tgt_in: decoder input (B, T): start symbol, then the outputs so far ("shifted right").

        Returns:
            logits (B, T, vocab); row t predicts output token t + 1 from inputs 0..t only.
        """
        return self.extend(self.start(memory), src_mask, tgt_in)[0]

    def start(self, memory: torch.Tensor) -> DecoderCache:
        """The cache before the first decoder input: every layer's cross-attention keys and
        values of the source, computed once; no decoder position yet.

        Args:
            memory: encoder output (B, S, d).
        """
        kv = tuple(layer.cross_attn.project_kv(memory) for layer in self.decoder.layers)
        return DecoderCache(self_kv=(), cross_kv=kv)

    def extend(
        self, cache: DecoderCache, src_mask: torch.Tensor | None, tgt_new: torch.Tensor
    ) -> tuple[torch.Tensor, DecoderCache]:
        """Decode the next decoder inputs after those in ``cache`` (incremental decoding).

        Only the new positions run; their queries attend to the cached keys and values plus
        their own (causal mask), so the logits equal those of ``decode`` on the whole input.

        Args:
            cache: from ``start`` (then ``tgt_new`` begins with the start symbol) or ``extend``.
            src_mask: (B, 1, 1, S) True = real source token, or None.
            tgt_new: (B, n) the next decoder inputs, at positions ``cache.length`` onwards.

        Returns:
            logits (B, n, vocab) for the new positions, and the cache holding them too.
        """
        x, cache = self.extend_stream(cache, src_mask, tgt_new)
        return self.generator(x), cache

    def extend_stream(
        self, cache: DecoderCache, src_mask: torch.Tensor | None, tgt_new: torch.Tensor
    ) -> tuple[torch.Tensor, DecoderCache]:
        """``extend`` without the output layer: the last decoder layer's output (B, n, d) and
        the new cache. A pass that only reads attention skips the vocabulary-sized matmul."""
        start, n = cache.length, tgt_new.shape[1]
        x = self._embed(self.tgt_embed, tgt_new, "tgt", start)  # (B, n, d)
        tgt_mask = None  # one new position sees every key
        if n > 1:
            tgt_mask = subsequent_mask(n, tgt_new.device, start)[None, None]  # (1, 1, n, T)
        pasts = cache.self_kv or (None,) * len(self.decoder.layers)
        self_kv = []
        for layer, cross_kv, past in zip(self.decoder.layers, cache.cross_kv, pasts, strict=True):
            x, kv = layer(x, cross_kv, src_mask, tgt_mask, past)
            self_kv.append(kv)
        return x, DecoderCache(tuple(self_kv), cache.cross_kv)

    def forward(
        self, src: torch.Tensor, tgt_in: torch.Tensor, src_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        return self.decode(self.encode(src, src_mask), src_mask, tgt_in)

    def pattern_hook_names(self) -> dict[str, list[str]]:
        """Hook points of the attention patterns, per attention kind, in layer order."""
        return attention_hook_names(self, ("encoder", "decoder", "cross"))
