"""What a page's long jobs take above the loaded model, estimated from the model's shape
(``LoadedModel.architecture``) and the input's length before they start (``ui.budget`` refuses
what would not fit). Each formula follows what the library call holds, and says what it was
checked against."""

from __future__ import annotations

from viz_transformer.records.architecture import ArchitectureSummary

F32 = 4  # bytes of a float32: what the captures keep on the host


def capture_bytes(
    arch: ArchitectureSummary, layers: int, n_q: int, n_k: int, pattern_layers: int
) -> int:
    """Peak bytes of a walkthrough capture (``LoadedModel.qkv_run``) above the model: per layer
    its inputs, q, k, v and z on the host in float32, ``pattern_layers`` layers' ``heads x n_q x
    n_k`` patterns kept (3.5 times over at the peak, as measured on smollm2 at 800 tokens: 2.9
    GB for 0.7 GB of patterns: the hooks' tensors, their host copies and the stacked array),
    one layer's eager attention while it runs, every layer's attention weights restacked as
    float32, and the pass itself (one MLP's activations and the logits of every position).

    Args:
        arch: the model's shape (``LoadedModel.architecture``).
        layers: layers of the kind captured; n_q, n_k: its query and key positions.
        pattern_layers: layers whose whole pattern the capture keeps (0: none).
    """
    d, heads = arch.d_model, arch.heads or 1
    pattern = F32 * heads * n_q * n_k
    per_layer = F32 * d * (4 * n_q + 3 * n_k)  # x_q, resid, q, z; x_kv, k, v
    weights = F32 * 4 * d * d * layers
    passing = F32 * n_q * (3 * (arch.d_ff or 4 * d) + arch.vocab)
    eager = 3 * pattern if pattern_layers else 0
    return layers * per_layer + pattern_layers * pattern * 7 // 2 + eager + weights + passing


def decode_bytes(arch: ArchitectureSummary, n_prompt: int, steps: int, beam: int) -> int:
    """Peak bytes of a step-by-step decoding (``analysis.decoding``) above the model: the first
    pass over the prompt (one layer's eager attention while it runs, the logits of every
    position, one MLP's activations) and the key/value caches each live beam forks per step
    (measured on smollm2: 0.48 GB at 1,500 prompt tokens, 1.19 GB at 3,000; this gives 0.7 and
    1.7).

    Args:
        arch: the model's shape; n_prompt: the decoder's first input (a decoder-only model's
            prompt); steps: the most output tokens; beam: the beam width.
    """
    d, heads, n = arch.d_model, arch.heads or 1, n_prompt + steps
    layers = max(arch.layers.values(), default=1)
    d_head = arch.d_head or d // heads
    pattern = F32 * heads * n_prompt * n_prompt
    passing = F32 * n_prompt * (3 * (arch.d_ff or 4 * d) + arch.vocab)
    cache = F32 * 2 * layers * (arch.kv_heads or heads) * d_head * n
    return 2 * pattern + passing + 2 * (beam + 1) * cache
