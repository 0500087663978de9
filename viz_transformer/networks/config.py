"""Configuration of the paper's Transformer (section 3); invalid values say how to fix them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class TransformerConfig:
    """Hyper-parameters of the encoder-decoder Transformer of "Attention Is All You Need".

    The defaults are a small model that trains on a 2-core CPU in minutes; the paper's base model is
    ``d_model=512, n_heads=8, n_layers=6, d_ff=2048``.
    """

    vocab_size: int  # one vocabulary shared by source and target (section 3.4)
    d_model: int = 128  # width of every residual-stream vector
    n_heads: int = 4  # h in section 3.2.2; d_k = d_v = d_model / h
    n_encoder_layers: int = 2  # N for the encoder stack
    n_decoder_layers: int = 2  # N for the decoder stack
    d_ff: int = 512  # inner width of the position-wise FFN (section 3.3)
    dropout: float = 0.1  # P_drop (section 5.4), only active in training
    max_len: int = 256  # rows of the sinusoidal table
    norm: Literal["post"] = (
        "post"  # the paper's LayerNorm(x + Sublayer(x)); pre-norm is not offered
    )
    scale_scores: bool = True  # divide q.k by sqrt(d_k) (Eq. 1); False shows the unscaled softmax
    tie_embeddings: bool = True  # share source, target and pre-softmax weights (section 3.4)
    pe_layout: Literal["interleaved", "split"] = "interleaved"  # paper's sin/cos interleaving
    # a learned bias on the pre-softmax linear transformation (section 3.4 names none; Marian,
    # hence a student initialised from a Bergamot teacher, has one)
    output_bias: bool = False

    def __post_init__(self) -> None:
        if self.vocab_size < 4:
            raise ValueError(
                f"vocab_size={self.vocab_size}: a vocabulary needs at least 4 entries."
            )
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                "choose n_heads among the divisors of d_model (d_k = d_model / n_heads)."
            )
        if self.d_model % 2:
            raise ValueError(f"d_model={self.d_model} must be even for the sin/cos encoding.")
        if self.norm != "post":
            raise ValueError(f"norm={self.norm!r}: only the paper's post-norm ('post') is built.")
        if self.pe_layout not in ("interleaved", "split"):
            raise ValueError(f"pe_layout={self.pe_layout!r}: use 'interleaved' or 'split'.")
        if min(self.n_encoder_layers, self.n_decoder_layers, self.d_ff, self.max_len) < 1:
            raise ValueError("layer counts, d_ff and max_len must all be at least 1.")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout={self.dropout} must lie in [0, 1).")

    @property
    def d_k(self) -> int:
        """Width of one head's queries and keys (section 3.2.2)."""
        return self.d_model // self.n_heads

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TransformerConfig:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown config keys {unknown}; known keys are {sorted(known)}.")
        return cls(**data)
