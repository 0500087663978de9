"""What a loaded model is built of (``ArchitectureSummary``), one record per model: the facts the
"2017 vs today" page lines up. The adapter describes its model (``LoadedModel.architecture``: its
config's facts plus ``models.architecture.summarize``, which reads the modules), this record
holds it, and pages read the record without touching the model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PARTS = ("embeddings", "attention", "feed-forward", "norms", "output", "other")
TIED = {
    True: "yes: the output layer is the input embedding",
    False: "no: a separate output layer",
    None: "no output layer (an encoder only)",
}
ACTIVATION_NAMES = {
    "relu": "ReLU", "gelu": "GELU", "gelu_new": "GELU", "silu": "SiLU", "swish": "SiLU",
}  # fmt: skip


@dataclass(frozen=True)
class ArchitectureSummary:
    """One model's architecture, every field read from the loaded model.

    Attributes:
        name: the model's registry name.
        architecture: ``encoder-decoder``, ``decoder-only`` or ``encoder-only``.
        layers: stack -> number of blocks (``{"encoder": 3, "decoder": 3}``).
        d_model: width of the residual stream; vocab: rows of the token embedding.
        norm_placement: ``pre`` (a norm runs before the block's first matrix product) or ``post``
            (the block's first matrix product runs before any norm: LayerNorm(x + Sublayer(x))),
            found by running the model once and recording the order its modules are entered.
        norm_type: the norm's class (``LayerNorm``, ``LlamaRMSNorm``).
        block: module path of the block read (``decoder.layers.0``).
        block_norms: the norms of that block, in call order, relative to it.
        outside_norms: norms outside every block (a final ``model.norm``, an embedding norm).
        positions: how positions enter, in words (added table or rotation of q and k).
        heads, kv_heads, d_head: query heads, key/value heads (fewer: grouped-query attention),
            and the width of one head.
        kv_bytes_per_token: bytes the decoder's self-attention K/V cache grows by per token
            (2 x layers x kv_heads x d_head x bytes per value), None without such a cache.
        mha_kv_bytes_per_token: the same with one K/V head per query head (plain MHA).
        dtype: the parameters' dtype (``float32``).
        ffn_activation: the FFN's activation (``relu``, ``silu``, ``gelu``).
        ffn_gated: a gated FFN (SwiGLU, GeGLU: three matrices) rather than two.
        d_ff: the FFN's inner width.
        tied_embeddings: the output layer is the input embedding (one tensor); None: no output
            layer (an encoder only).
        parameters: part (``PARTS``) -> parameter count, shared tensors counted once.
        context_length: the most positions the model takes; None: no fixed limit (relative
            positions, a tokenizer without one).
    """

    name: str
    architecture: str
    layers: dict[str, int]
    d_model: int
    vocab: int
    norm_placement: Literal["pre", "post"]
    norm_type: str
    block: str
    block_norms: tuple[str, ...]
    outside_norms: tuple[str, ...]
    positions: str
    heads: int
    kv_heads: int
    d_head: int
    kv_bytes_per_token: int | None
    mha_kv_bytes_per_token: int | None
    dtype: str
    ffn_activation: str
    ffn_gated: bool
    d_ff: int
    tied_embeddings: bool | None
    parameters: dict[str, int]
    context_length: int | None

    @property
    def attention(self) -> str:
        """``MHA``, ``GQA`` or ``MQA`` (one K/V head), from the head counts."""
        if self.kv_heads == self.heads:
            return "MHA"
        return "MQA" if self.kv_heads == 1 else "GQA"

    @property
    def ffn_name(self) -> str:
        """``ReLU FFN``, ``SwiGLU``, ``GeGLU``, ... from the activation and the gate."""
        act = self.ffn_activation.lower()
        if not self.ffn_gated:
            return f"{ACTIVATION_NAMES.get(act, act)} FFN"
        if act in ("silu", "swish"):
            return "SwiGLU"
        return "GeGLU" if act.startswith("gelu") else f"{act}-gated GLU"

    def rows(self) -> dict[str, str]:
        """The page's lines, aspect -> text, in a fixed order."""
        stacks = " + ".join(f"{n} {stack}" for stack, n in self.layers.items())
        where = "before" if self.norm_placement == "pre" else "after"
        norm = (
            f"{self.norm_placement}-norm {self.norm_type}, {where} each sub-layer: "
            f"{', '.join(self.block_norms)} in {self.block}"
        )
        if self.outside_norms:
            norm += f"; outside the blocks: {', '.join(self.outside_norms)}"
        group = self.heads // max(1, self.kv_heads)
        heads = f"{self.attention}: {self.heads} query heads, {self.kv_heads} K/V heads"
        if self.attention != "MHA":
            heads += f" ({group} query heads share each)"
        kv = "no self-attention K/V cache (nothing grows per token)"
        if self.kv_bytes_per_token is not None:
            kv = f"{self.kv_bytes_per_token:,} bytes ({self.dtype})"
            if self.mha_kv_bytes_per_token != self.kv_bytes_per_token:
                kv += f"; as MHA {self.mha_kv_bytes_per_token:,} (GQA saves {group}x)"
        ffn = f"{self.ffn_name}: {self.d_model} -> {self.d_ff} -> {self.d_model}, "
        ffn += "3 matrices (gate, up, down)" if self.ffn_gated else "2 matrices"
        total = sum(self.parameters.values())
        parts = ", ".join(f"{p} {_millions(n)}" for p, n in self.parameters.items() if n)
        return {
            "Architecture": f"{self.architecture}: {stacks} layers",
            "Width": f"d_model {self.d_model}, vocabulary {self.vocab:,}",
            "Normalisation": norm,
            "Positions": self.positions,
            "Attention heads": f"{heads}, d_head {self.d_head}",
            "KV cache per token": kv,
            "Feed-forward": ffn,
            "Tied embeddings": TIED[self.tied_embeddings],
            "Parameters": f"{_millions(total)} ({parts})",
            "Context length": "no fixed limit"
            if self.context_length is None
            else f"{self.context_length:,} positions",
        }


def _millions(n: int) -> str:
    return f"{n / 1e6:.2f} M" if n >= 10_000 else f"{n:,}"
