"""Q, K, V walkthrough: one query token through one head of one layer, step by step, in numbers.

``capture()`` asks the model for one ``KindCapture`` (``model.qkv_run``), the record every
family's adapter fills alike: each layer's input and weights and what the forward pass computed
(our own networks: q, k, v, scores, pattern and z at their hook points, every layer; a Hugging
Face BERT, GPT-2 or Llama: what ``needs`` names, ``reads(layer)`` for one layer's walkthrough:
its input, its block input before the pre-attention norm, q, k and z, and no pattern: the steps
recompute the weights, and the model's own row is one read of the trace's ``cells``).
``explain()`` recomputes Eq. 1 and section 3.2.2 for one query row from the layer input and the
weights alone, so each step can be checked against what the model itself computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from viz_transformer.analysis.rope import rotate
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.kinds import KINDS, AttentionKind
from viz_transformer.records.qkv import KindCapture, Needs, PreNorm, rows_of
from viz_transformer.text.checks import check_text

PROJECTIONS = ("w_q", "w_k", "w_v", "b_q", "b_k", "b_v")  # what each head's steps read


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
            "model": self.model_name,
            "kind": self.kind,
            "layer": self.layer,
            "head": self.head,
            "position": self.position,
            "query_token": self.query_tokens[self.position],
            "key_tokens": list(self.key_tokens),
            "d_k": self.d_k,
            "n_heads": self.n_heads,
            "divided_by_sqrt_d_k": self.divided,
            "kv_head": self.kv_head,
        }


def capture(
    model: LoadedModel,
    text: str,
    kind: AttentionKind,
    target: str | None = None,
    needs: Needs | None = None,
) -> KindCapture:
    """Run ``text`` once and keep what ``needs`` names (as TransformerLens' ``names_filter``;
    ``reads(layer)``: one layer's walkthrough and its score map and splits by dimension and
    input; None: every point but the pattern at every layer, which grows with the layers).

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
    return model.qkv_run(text, kind, target, needs)


def reads(layer: int) -> Needs:
    """What the walkthrough of ``layer`` reads (``capture``'s ``needs``): that layer's input,
    its block input before the pre-attention norm, its q, k, v and heads' outputs z, and the
    last block's output (the score map and the split by dimension read q and k; the split by
    input layer 0's block input, here when ``layer`` is 0; what a head writes z and the last
    output). One layer, whatever the model's depth; no pattern."""
    return Needs({**Needs.at([layer], "x", "resid", "q", "k", "v", "z").layers, "final": None})


def _layer_weights(cap: KindCapture, layer: int) -> dict[str, np.ndarray]:
    """The projections of ``layer`` in float64, read once for every head."""
    return {n: cap.weights[n][layer].astype(np.float64) for n in PROJECTIONS}


def _head(
    cap: KindCapture,
    w: dict[str, np.ndarray],
    xs: np.ndarray,
    head: int,
    position: int,
    x: np.ndarray,
    keep: np.ndarray,
    shared: dict[int, tuple[np.ndarray, ...]],
) -> dict:
    """Steps 2 to 6 of one head for the query vector ``x`` ``(d,)`` at ``position`` over the key
    inputs ``xs`` ``(Tk, d)``, with the layer's projections ``w``, in float64; with rotary
    positions q and k are rotated by their positions before they meet. A K/V head's keys and
    values are made once, in ``shared``, for the query heads that read it (grouped-query)."""
    sl = slice(head * cap.d_k, (head + 1) * cap.d_k)
    kv = cap.kv_head(head)
    if kv not in shared:
        kv_sl = slice(kv * cap.d_k, (kv + 1) * cap.d_k)  # grouped-query: the shared K/V head
        k = xs @ w["w_k"][:, kv_sl] + w["b_k"][kv_sl]  # (Tk, d_k)
        v = xs @ w["w_v"][:, kv_sl] + w["b_v"][kv_sl]  # (Tk, d_k)
        rotated = k
        if cap.rotary is not None:
            cos, sin = (t[: len(k)].astype(np.float64) for t in cap.rotary)
            rotated = rotate(k, cos, sin)
        shared[kv] = k, v, rotated
    k_plain, v, k = shared[kv]
    q = x @ w["w_q"][:, sl] + w["b_q"][sl]  # (d_k,)
    plain = {}
    if cap.rotary is not None:
        plain = {"q_plain": q, "k_plain": k_plain, "kv_head": kv}
        cos, sin = (t[position].astype(np.float64) for t in cap.rotary)
        q = rotate(q, cos, sin)
    raw = k @ q  # (Tk,)
    scaled = np.where(keep, raw / math.sqrt(cap.d_k) if cap.scaled else raw, -np.inf)
    # -inf -> exp 0: masked keys get exactly zero weight (section 3.2.3)
    e = np.exp(scaled - scaled[keep].max())
    weights = e / e.sum()
    return {
        "q": q,
        "k": k,
        "v": v,
        "raw": raw,
        "scaled": scaled,
        "weights": weights,
        "z": weights @ v,
        **plain,
    }


def explain(cap: KindCapture, layer: int, head: int, position: int) -> Walkthrough:
    """Recompute Eq. 1 for one query row of one head, then Concat(heads) W^O (section 3.2.2).

    Args:
        cap: from ``capture``.
        layer, head: counted from 0; position: the query token's index in ``cap.query_tokens``.

    Raises:
        ValueError: an index out of range, with the valid range.
    """
    cap.check(layer, head, position=position)
    x = cap.x_q[layer, position].astype(np.float64)
    keep = np.ones(len(cap.key_tokens), dtype=bool)
    if cap.kind == "decoder":  # a decoder position sees itself and the earlier ones only
        keep[position + 1 :] = False
    w, xs = _layer_weights(cap, layer), cap.x_kv[layer].astype(np.float64)  # xs: (Tk, d)
    shared: dict[int, tuple[np.ndarray, ...]] = {}
    heads = [_head(cap, w, xs, h, position, x, keep, shared) for h in range(cap.n_heads)]
    del w, xs, shared
    concat = np.concatenate([h["z"] for h in heads])  # (d,)
    out = concat @ cap.weights["w_o"][layer].astype(np.float64) + cap.weights["b_o"][layer]
    at_start = layer == 0 and cap.embed is not None and cap.pos is not None
    return Walkthrough(
        cap.model_name,
        cap.kind,
        layer,
        head,
        position,
        cap.query_tokens,
        cap.key_tokens,
        cap.d_k,
        cap.n_heads,
        cap.scaled,
        x,
        cap.embed[position].astype(np.float64) if at_start else None,
        cap.pos[position].astype(np.float64) if at_start else None,
        keep=keep,
        concat=concat,
        out=out,
        norm=cap.norm,
        **heads[head],
        **_norm(cap, layer, position),
    )


def _norm(cap: KindCapture, layer: int, position: int) -> dict[str, np.ndarray]:
    """A pre-norm block's input and its norm in float64: RMSNorm ``r / sqrt(mean(r^2) + eps) * g``,
    or LayerNorm ``(r - mean(r)) / sqrt(var(r) + eps) * g + b``; nothing without a norm."""
    if cap.resid is None or cap.norm == "none":
        return {}
    resid = rows_of(cap.resid, layer, [position])[0].astype(np.float64)
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
    """``explain`` of ``capture(..., needs=reads(layer))``: one layer read, in one call."""
    return explain(capture(model, text, kind, target, reads(layer)), layer, head, position)
