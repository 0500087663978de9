"""Q, K, V walkthrough: one query token through one head of one layer, step by step, in numbers.

``capture()`` reads a loaded model of our own (paper or Bergamot) through its hook points: every
layer's input, the attention weights and the q, k, v, scores, pattern and z the forward pass
recorded. ``explain()`` recomputes Eq. 1 and section 3.2.2 for one query row from the layer input
and the weights alone, so each step can be checked against what the model itself computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from viz_transformer.models.base import LoadedModel
from viz_transformer.models.paper import PaperModel, greedy_decode
from viz_transformer.networks.hooks import collect
from viz_transformer.records.kinds import KINDS, AttentionKind
from viz_transformer.text.checks import check_text

if TYPE_CHECKING:
    from viz_transformer.models.bergamot import BergamotModel

HF_NOTE = (
    "The walkthrough needs the q, k and v hook points of our own implementations (the paper and "
    "Bergamot models); for this Hugging Face model, the Attention maps page shows its weights."
)
CAPTURED = ("q", "k", "v", "scores", "pattern", "z")
_ATTN = {  # the attention sub-layer of each kind
    "encoder": "encoder.layers.{}.self_attn",
    "decoder": "decoder.layers.{}.self_attn",
    "cross": "decoder.layers.{}.cross_attn",
}
_INPUT = {  # its query-side input; cross-attention reads the stream after the first sub-layer
    "encoder": "encoder.layers.{}.hook_resid_pre",
    "decoder": "decoder.layers.{}.hook_resid_pre",
    "cross": "decoder.layers.{}.hook_resid_mid",
}
# what one forward pass gives: hook name -> array, source tokens, decoder tokens, scaled flag
_Run = tuple[dict[str, np.ndarray], tuple[str, ...], tuple[str, ...], bool]
_EMBED = {
    "encoder": ("hook_src_embed", "hook_src_pos"),
    "decoder": ("hook_tgt_embed", "hook_tgt_pos"),
}


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
        captured: name in ``CAPTURED`` -> ``[L, h, T, .]`` what the hook points recorded.
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

    @property
    def n_layers(self) -> int:
        return self.x_q.shape[0]

    @property
    def d_k(self) -> int:
        return self.x_q.shape[-1] // self.n_heads


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

    def arrays(self) -> dict[str, np.ndarray]:
        """The numbers of every step, by name, for downloads."""
        names = ("x", "embed", "pos", "q", "k", "v", "raw", "scaled", "weights", "z", "concat")
        found = {n: getattr(self, n) for n in (*names, "out") if getattr(self, n) is not None}
        return {**found, "keep": self.keep.astype(np.int8)}

    def meta(self) -> dict[str, Any]:
        """What the arrays describe, JSON-ready."""
        return {
            "model": self.model_name, "kind": self.kind, "layer": self.layer, "head": self.head,
            "position": self.position, "query_token": self.query_tokens[self.position],
            "key_tokens": list(self.key_tokens), "d_k": self.d_k, "n_heads": self.n_heads,
            "divided_by_sqrt_d_k": self.divided,
        }  # fmt: skip


def hook_names(kind: AttentionKind, n_layers: int, n_encoder_layers: int) -> list[str]:
    """Hook points ``capture`` reads for ``kind``: per layer its input, q, k, v, scores, pattern,
    z, plus the embedding parts (self-attention) or the encoder output (cross-attention)."""
    names = [*_EMBED.get(kind, (f"encoder.layers.{n_encoder_layers - 1}.hook_resid_post",))]
    for i in range(n_layers):
        names += [_INPUT[kind].format(i), *(f"{_ATTN[kind].format(i)}.hook_{c}" for c in CAPTURED)]
    return names


def _run_paper(model: PaperModel, text: str, kind: AttentionKind, target: str | None) -> _Run:
    vocab, module = model.vocab, model.module
    try:
        src_ids = vocab.encode(text)
    except ValueError as exc:
        raise ValueError(f"{exc} A sentence it can read: “{model.spec.example}”.") from None
    src = torch.tensor([src_ids], device=model.device)
    if target is not None:
        out_ids = vocab.encode(target, add_eos=False)
    elif kind == "encoder":
        out_ids = []
    else:  # the trace's greedy output, so rows match ``vt.trace``
        out = greedy_decode(module, src, None, vocab.bos_id, vocab.eos_id, module.cfg.max_len - 1)
        out_ids = [i for i in out[0] if i != vocab.eos_id]
    tgt_in = [vocab.bos_id, *out_ids]
    names = hook_names(kind, len(_layers(module, kind)), len(module.encoder.layers))
    with torch.no_grad(), collect(module, names) as cache:
        module(src, torch.tensor([tgt_in], device=model.device))
    src_tokens = tuple(vocab.tokens[i] for i in src_ids)
    return cache, src_tokens, tuple(vocab.tokens[i] for i in tgt_in), module.cfg.scale_scores


def _run_bergamot(model: BergamotModel, text: str, kind: AttentionKind, target: str | None) -> _Run:
    from viz_transformer.models.bergamot import DECODER_NOTE, START_TOKEN

    if kind == "decoder":
        raise ValueError(DECODER_NOTE)
    module, eos = model.module, model.module.cfg.eos_id
    src_ids = model.source_ids(text)
    out_ids: list[int] = []
    if kind == "cross" and target is not None:
        out_ids = model.sp.encode(target)
    elif kind == "cross":  # the trace's greedy output (with the shortlist), so rows match
        out_ids = [i for i in model.output_ids(text) if i != eos]
    names = hook_names(kind, len(_layers(module, kind)), len(module.encoder.layers))
    with torch.no_grad(), collect(module, names) as cache:
        memory = module.encode(torch.tensor([src_ids], device=model.device))
        if kind == "cross":
            module.decode(memory, torch.tensor([out_ids], dtype=torch.long, device=model.device))
    tgt_tokens = (START_TOKEN, *model.pieces(out_ids))
    return cache, model.pieces(src_ids), tgt_tokens, True


def _layers(module: torch.nn.Module, kind: AttentionKind) -> torch.nn.ModuleList:
    return module.encoder.layers if kind == "encoder" else module.decoder.layers


def attention_module(model: LoadedModel, kind: AttentionKind, layer: int) -> torch.nn.Module:
    """The attention sub-layer of ``kind`` in ``layer``: its ``W_q``, ``W_k``, ``W_v``, ``W_o``."""
    return getattr(
        _layers(model.module, kind)[layer], "cross_attn" if kind == "cross" else "self_attn"
    )


def _linear(lin: torch.nn.Linear) -> tuple[np.ndarray, np.ndarray]:
    w = lin.weight.detach().to("cpu", torch.float32).numpy().T.copy()  # (d_in, d_out): x @ w
    return w, lin.bias.detach().to("cpu", torch.float32).numpy().copy()


def capture(
    model: LoadedModel, text: str, kind: AttentionKind, target: str | None = None
) -> KindCapture:
    """Run ``text`` once and keep everything the walkthrough of ``kind`` needs, for every layer.

    Args:
        model: a paper or Bergamot model from ``vt.load_model``.
        text: the source sentence; target: forced decoder output, None for the greedy output
            (the one ``vt.trace`` records).
        kind: "encoder", "decoder" (masked self) or "cross".

    Raises:
        ValueError: a Hugging Face model, a kind the model lacks, or text it cannot read.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; use one of {', '.join(KINDS)}.")
    text = check_text(text)
    target = None if target is None else check_text(target, "target")
    family = model.spec.family
    if family == "paper":
        cache, src, tgt, scaled = _run_paper(model, text, kind, target)
    elif family == "bergamot":
        cache, src, tgt, scaled = _run_bergamot(model, text, kind, target)
    else:
        raise ValueError(HF_NOTE)
    n = len(_layers(model.module, kind))
    mods = [attention_module(model, kind, i) for i in range(n)]
    weights: dict[str, np.ndarray] = {}
    for part in "qkvo":
        pairs = [_linear(getattr(m, f"W_{part}")) for m in mods]
        weights[f"w_{part}"] = np.stack([w for w, _ in pairs])
        weights[f"b_{part}"] = np.stack([b for _, b in pairs])
    x_q = np.stack([cache[_INPUT[kind].format(i)] for i in range(n)])
    if kind == "cross":
        memory = cache[f"encoder.layers.{len(model.module.encoder.layers) - 1}.hook_resid_post"]
        x_kv, embed, pos = np.stack([memory] * n), None, None
    else:
        x_kv, (embed, pos) = x_q, (cache[h] for h in _EMBED[kind])
    captured = {
        c: np.stack([cache[f"{_ATTN[kind].format(i)}.hook_{c}"] for i in range(n)])
        for c in CAPTURED
    }
    queries, keys = (src, src) if kind == "encoder" else (tgt, tgt if kind == "decoder" else src)
    return KindCapture(
        model.name, kind, queries, keys, mods[0].h, scaled, x_q, x_kv, embed, pos, weights, captured
    )


def _head(cap: KindCapture, layer: int, head: int, x: np.ndarray, keep: np.ndarray) -> dict:
    """Steps 2 to 6 of one head for the query vector ``x`` ``(d,)``, in float64."""
    sl = slice(head * cap.d_k, (head + 1) * cap.d_k)
    w = {n: a[layer].astype(np.float64) for n, a in cap.weights.items()}
    xs = cap.x_kv[layer].astype(np.float64)  # (Tk, d)
    q = x @ w["w_q"][:, sl] + w["b_q"][sl]  # (d_k,)
    k = xs @ w["w_k"][:, sl] + w["b_k"][sl]  # (Tk, d_k)
    v = xs @ w["w_v"][:, sl] + w["b_v"][sl]  # (Tk, d_k)
    raw = k @ q  # (Tk,)
    scaled = np.where(keep, raw / math.sqrt(cap.d_k) if cap.scaled else raw, -np.inf)
    # -inf -> exp 0: masked keys get exactly zero weight (section 3.2.3)
    e = np.exp(scaled - scaled[keep].max())
    weights = e / e.sum()
    return {"q": q, "k": k, "v": v, "raw": raw, "scaled": scaled, "weights": weights,
            "z": weights @ v}  # fmt: skip


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
    heads = [_head(cap, layer, h, x, keep) for h in range(cap.n_heads)]
    concat = np.concatenate([h["z"] for h in heads])  # (d,)
    out = concat @ cap.weights["w_o"][layer].astype(np.float64) + cap.weights["b_o"][layer]
    at_start = layer == 0 and cap.embed is not None and cap.pos is not None
    return Walkthrough(
        cap.model_name, cap.kind, layer, head, position, cap.query_tokens, cap.key_tokens,
        cap.d_k, cap.n_heads, cap.scaled, x,
        cap.embed[position].astype(np.float64) if at_start else None,
        cap.pos[position].astype(np.float64) if at_start else None,
        keep=keep, concat=concat, out=out, **heads[head],
    )  # fmt: skip


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
