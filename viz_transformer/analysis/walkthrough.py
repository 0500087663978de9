"""Q, K, V walkthrough: one query token through one head of one layer, step by step, in numbers.

``capture()`` reads a loaded model of our own (paper or Bergamot) through its hook points
(``model.qkv_run``): every layer's input, the attention weights and the q, k, v, scores, pattern
and z the forward pass recorded; a Hugging Face model (BERT, GPT-2, Llama families) hands over
each block's input, its pre-attention norm (none, RMSNorm or LayerNorm), weights and pattern.
``explain()`` recomputes Eq. 1 and section 3.2.2 for one query row from the layer input and the
weights alone, so each step can be checked against what the model itself computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from viz_transformer.analysis.rope import rotate
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.results import PreNorm
from viz_transformer.networks.hooks import (
    ATTENTION_POINTS,
    ATTENTION_SUBLAYERS,
    EMBED_POINTS,
    attention_hook_name,
    encoder_output_name,
    query_stream_name,
)
from viz_transformer.records.kinds import KINDS, AttentionKind
from viz_transformer.text.checks import check_text


@dataclass(frozen=True)
class KindCapture:
    """One attention kind of one input, every layer; float32 numpy, batch dimension removed.

    Weights follow the maths, ``q = x @ w_q + b_q`` (the transpose of ``nn.Linear.weight``).

    Attributes:
        query_tokens, key_tokens: labels of the ``Tq`` query and ``Tk`` key positions.
        x_q: ``[L, Tq, d]`` input of each layer's attention at the query positions.
        x_kv: ``[L, Tk, d]`` the vectors keys and values are made from (the encoder output for
            cross-attention, else ``x_q``).
        embed, pos: ``[Tq, d]`` sqrt(d_model) * embedding and the positional encoding, the two
            parts of layer 0's input (section 3.4, 3.5); None for cross-attention.
        w_q, w_k, w_v, w_o: ``[L, d, d]``; b_q, b_k, b_v, b_o: ``[L, d]``.
        captured: ``"q"``, ``"k"``, ``"v"``, ``"scores"``, ``"pattern"``, ``"z"`` ->
            ``[L, h, T, .]`` what the hook points recorded (Hugging Face: ``"pattern"`` only).
        resid: ``[L, Tq, d]`` each block's input before its pre-attention norm ``norm`` ("rms":
            RMSNorm, "layer": LayerNorm; gain ``weights["norm"]``, LayerNorm bias
            ``weights["norm_bias"]``, epsilon ``norm_eps``), None without one (post-norm).
        rotary: cos, sin ``[T, d_head]`` rotating q and k (RoPE), None without.
        kv_heads: key/value heads; fewer than ``n_heads`` is grouped-query attention.
    """

    model_name: str
    kind: AttentionKind
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    n_heads: int
    scaled: bool
    x_q: np.ndarray
    x_kv: np.ndarray
    embed: np.ndarray | None
    pos: np.ndarray | None
    weights: dict[str, np.ndarray]
    captured: dict[str, np.ndarray]
    resid: np.ndarray | None = None
    norm_eps: float = 0.0
    rotary: tuple[np.ndarray, np.ndarray] | None = None
    kv_heads: int = 0  # 0: one per query head
    norm: PreNorm = "none"

    @property
    def n_layers(self) -> int:
        return self.x_q.shape[0]

    @property
    def biased(self) -> bool:
        """Whether any projection adds a bias (the paper's Eq. 1 has none; Llama adds none,
        BERT and GPT-2 do)."""
        return any(self.weights[f"b_{p}"].any() for p in "qkvo")

    @property
    def d_k(self) -> int:
        return self.weights["w_q"].shape[-1] // self.n_heads

    def kv_head(self, head: int) -> int:
        """The key/value head query ``head`` reads (consecutive query heads share one)."""
        return head // (self.n_heads // self.kv_heads) if self.kv_heads else head


@dataclass(frozen=True)
class Walkthrough:
    """Every step of one head for one query position, recomputed in float64 (Eq. 1, 3.2.2).

    Attributes:
        x: ``(d,)`` the query's layer input; embed, pos: its two parts at layer 0, else None.
        q: ``(d_k,)``; k, v: ``(Tk, d_k)`` this head's projections (step 2).
        raw: ``(Tk,)`` q . k_j (step 3); scaled: raw / sqrt(d_k), -inf where masked (step 4).
        weights: ``(Tk,)`` softmax of ``scaled`` (step 5); keep: ``(Tk,)`` False where masked.
        z: ``(d_k,)`` sum_j weights_j v_j (step 6); concat: ``(d,)`` every head's z side by side.
        out: ``(d,)`` concat @ W^O + b^O, the sub-layer output before the residual and LayerNorm.
        resid, normed: a pre-norm model's block input ``(d,)`` and its ``norm`` (RMSNorm or
            LayerNorm) recomputed here (equal to ``x``, which the model's norm computed); q_plain,
            k_plain: q and k before RoPE rotated them; kv_head: the K/V head this query head
            shares. None otherwise.
    """

    model_name: str
    kind: AttentionKind
    layer: int
    head: int
    position: int
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    d_k: int
    n_heads: int
    divided: bool  # False for a model trained without the 1/sqrt(d_k) factor
    x: np.ndarray
    embed: np.ndarray | None
    pos: np.ndarray | None
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    raw: np.ndarray
    scaled: np.ndarray
    keep: np.ndarray
    weights: np.ndarray
    z: np.ndarray
    concat: np.ndarray
    out: np.ndarray
    resid: np.ndarray | None = None
    normed: np.ndarray | None = None
    q_plain: np.ndarray | None = None
    k_plain: np.ndarray | None = None
    kv_head: int | None = None
    norm: PreNorm = "none"

    def arrays(self) -> dict[str, np.ndarray]:
        """The numbers of every step, by name, for downloads."""
        names = ("resid", "normed", "x", "embed", "pos", "q_plain", "k_plain", "q", "k", "v",
                 "raw", "scaled", "weights", "z", "concat")  # fmt: skip
        found = {n: getattr(self, n) for n in (*names, "out") if getattr(self, n) is not None}
        return {**found, "keep": self.keep.astype(np.int8)}

    def meta(self) -> dict[str, Any]:
        """What the arrays describe, JSON-ready."""
        return {
            "model": self.model_name, "kind": self.kind, "layer": self.layer, "head": self.head,
            "position": self.position, "query_token": self.query_tokens[self.position],
            "key_tokens": list(self.key_tokens), "d_k": self.d_k, "n_heads": self.n_heads,
            "divided_by_sqrt_d_k": self.divided, "kv_head": self.kv_head,
        }  # fmt: skip


def attention_module(model: LoadedModel, kind: AttentionKind, layer: int) -> torch.nn.Module:
    """The attention sub-layer of ``kind`` in ``layer``: its ``W_q``, ``W_k``, ``W_v``, ``W_o``."""
    stack, sublayer = ATTENTION_SUBLAYERS[kind]
    return getattr(getattr(model.module, stack).layers[layer], sublayer)


def _linear(lin: torch.nn.Linear) -> tuple[np.ndarray, np.ndarray]:
    w = lin.weight.detach().to("cpu", torch.float32).numpy().T.copy()  # (d_in, d_out): x @ w
    return w, lin.bias.detach().to("cpu", torch.float32).numpy().copy()


def _weights(mods: list[torch.nn.Module]) -> dict[str, np.ndarray]:
    """``w_q`` .. ``w_o`` ``[L, d, d]`` and ``b_q`` .. ``b_o`` ``[L, d]`` of every layer."""
    weights: dict[str, np.ndarray] = {}
    for part in "qkvo":
        pairs = [_linear(getattr(m, f"W_{part}")) for m in mods]
        weights[f"w_{part}"] = np.stack([w for w, _ in pairs])
        weights[f"b_{part}"] = np.stack([b for _, b in pairs])
    return weights


def capture(
    model: LoadedModel, text: str, kind: AttentionKind, target: str | None = None
) -> KindCapture:
    """Run ``text`` once and keep everything the walkthrough of ``kind`` needs, for every layer.

    Args:
        model: a paper or Bergamot model, or a Hugging Face BERT, GPT-2 or Llama, from
            ``vt.load_model`` (``model.qkv_run``).
        text: the source sentence; target: forced decoder output, None for the greedy output
            (the one ``vt.trace`` records).
        kind: "encoder", "decoder" (masked self) or "cross".

    Raises:
        ValueError: a model without our hook points, a kind the model lacks, or text it cannot
            read.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; use one of {', '.join(KINDS)}.")
    text = check_text(text)
    target = None if target is None else check_text(target, "target")
    run = model.qkv_run(text, kind, target)
    cache = run.cache
    if run.weights is not None:  # a Hugging Face model read without our hook points
        tokens = run.src_tokens if kind == "encoder" else run.tgt_tokens
        return KindCapture(
            model.name, kind, tokens, tokens, run.n_heads, run.scaled, cache["x"], cache["x"],
            None, None, run.weights, {"pattern": cache["pattern"]}, cache.get("resid"),
            run.norm_eps, run.rotary, run.kv_heads, run.norm,
        )  # fmt: skip
    n = len(getattr(model.module, ATTENTION_SUBLAYERS[kind][0]).layers)
    mods = [attention_module(model, kind, i) for i in range(n)]
    x_q = np.stack([cache[query_stream_name(kind, i)] for i in range(n)])
    if kind == "cross":
        x_kv, embed, pos = np.stack([cache[encoder_output_name(model.module)]] * n), None, None
    else:
        x_kv, (embed, pos) = x_q, (cache[p] for p in EMBED_POINTS[kind])
    captured = {
        p.removeprefix("hook_"): np.stack(
            [cache[attention_hook_name(kind, i, p)] for i in range(n)]
        )
        for p in ATTENTION_POINTS
    }
    src, tgt = run.src_tokens, run.tgt_tokens
    queries, keys = (src, src) if kind == "encoder" else (tgt, tgt if kind == "decoder" else src)
    return KindCapture(
        model.name, kind, queries, keys, mods[0].h, run.scaled, x_q, x_kv, embed, pos,
        _weights(mods), captured,
    )  # fmt: skip


def _head(
    cap: KindCapture, layer: int, head: int, position: int, x: np.ndarray, keep: np.ndarray
) -> dict:
    """Steps 2 to 6 of one head for the query vector ``x`` ``(d,)`` at ``position``, in float64;
    with rotary positions q and k are rotated by their positions before they meet."""
    sl = slice(head * cap.d_k, (head + 1) * cap.d_k)
    kv = cap.kv_head(head)
    kv_sl = slice(kv * cap.d_k, (kv + 1) * cap.d_k)  # grouped-query: the shared K/V head
    w = {n: a[layer].astype(np.float64) for n, a in cap.weights.items()}
    xs = cap.x_kv[layer].astype(np.float64)  # (Tk, d)
    q = x @ w["w_q"][:, sl] + w["b_q"][sl]  # (d_k,)
    k = xs @ w["w_k"][:, kv_sl] + w["b_k"][kv_sl]  # (Tk, d_k)
    v = xs @ w["w_v"][:, kv_sl] + w["b_v"][kv_sl]  # (Tk, d_k)
    plain = {}
    if cap.rotary is not None:
        cos, sin = (t.astype(np.float64) for t in cap.rotary)
        plain = {"q_plain": q, "k_plain": k, "kv_head": kv}
        q, k = rotate(q, cos[position], sin[position]), rotate(k, cos[: len(k)], sin[: len(k)])
    raw = k @ q  # (Tk,)
    scaled = np.where(keep, raw / math.sqrt(cap.d_k) if cap.scaled else raw, -np.inf)
    # -inf -> exp 0: masked keys get exactly zero weight (section 3.2.3)
    e = np.exp(scaled - scaled[keep].max())
    weights = e / e.sum()
    return {"q": q, "k": k, "v": v, "raw": raw, "scaled": scaled, "weights": weights,
            "z": weights @ v, **plain}  # fmt: skip


def explain(cap: KindCapture, layer: int, head: int, position: int) -> Walkthrough:
    """Recompute Eq. 1 for one query row of one head, then Concat(heads) W^O (section 3.2.2).

    Args:
        cap: from ``capture``.
        layer, head: counted from 0; position: the query token's index in ``cap.query_tokens``.

    Raises:
        ValueError: an index out of range, with the valid range.
    """
    for what, value, upper in (("layer", layer, cap.n_layers), ("head", head, cap.n_heads),
                               ("position", position, len(cap.query_tokens))):  # fmt: skip
        if not 0 <= value < upper:
            raise ValueError(f"{what} {value} does not exist: choose 0 to {upper - 1}.")
    x = cap.x_q[layer, position].astype(np.float64)
    keep = np.ones(len(cap.key_tokens), dtype=bool)
    if cap.kind == "decoder":  # a decoder position sees itself and the earlier ones only
        keep[position + 1 :] = False
    heads = [_head(cap, layer, h, position, x, keep) for h in range(cap.n_heads)]
    concat = np.concatenate([h["z"] for h in heads])  # (d,)
    out = concat @ cap.weights["w_o"][layer].astype(np.float64) + cap.weights["b_o"][layer]
    at_start = layer == 0 and cap.embed is not None and cap.pos is not None
    return Walkthrough(
        cap.model_name, cap.kind, layer, head, position, cap.query_tokens, cap.key_tokens,
        cap.d_k, cap.n_heads, cap.scaled, x,
        cap.embed[position].astype(np.float64) if at_start else None,
        cap.pos[position].astype(np.float64) if at_start else None,
        keep=keep, concat=concat, out=out, norm=cap.norm, **heads[head],
        **_norm(cap, layer, position),
    )  # fmt: skip


def _norm(cap: KindCapture, layer: int, position: int) -> dict[str, np.ndarray]:
    """A pre-norm block's input and its norm in float64: RMSNorm ``r / sqrt(mean(r^2) + eps) * g``,
    or LayerNorm ``(r - mean(r)) / sqrt(var(r) + eps) * g + b``; nothing without a norm."""
    if cap.resid is None or cap.norm == "none":
        return {}
    resid = cap.resid[layer, position].astype(np.float64)
    centred = resid - resid.mean() if cap.norm == "layer" else resid
    normed = centred / np.sqrt(np.mean(centred**2) + cap.norm_eps) * cap.weights["norm"][layer]
    if cap.norm == "layer":
        normed = normed + cap.weights["norm_bias"][layer]
    return {"resid": resid, "normed": normed}


def walkthrough(
    model: LoadedModel,
    text: str,
    kind: AttentionKind,
    layer: int,
    head: int,
    position: int,
    target: str | None = None,
) -> Walkthrough:
    """``explain(capture(model, text, kind, target), layer, head, position)`` in one call."""
    return explain(capture(model, text, kind, target), layer, head, position)
