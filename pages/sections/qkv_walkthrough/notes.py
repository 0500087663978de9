"""What the Q/K/V walkthrough says under its numbers, read from the model, not typed in."""

from __future__ import annotations

from viz_transformer.analysis import walkthrough
from viz_transformer.ui import caches, widgets


def caption(name: str, cap: walkthrough.KindCapture, w: walkthrough.Walkthrough) -> str:
    """What follows the numbers, read from the model: biases or none, RoPE and the shared K/V
    head when the model has them, and where its norm sits (``LoadedModel.architecture``)."""
    bias = "these implementations add them" if cap.biased else f"neither does {name}"
    note = f"d_k = {w.d_k}. The paper writes the projections without biases; {bias}."
    if w.q_plain is not None:
        note += " q and k were rotated by their positions (RoPE) before they met."
    if cap.kv_heads and cap.kv_heads < cap.n_heads:
        note += f" Query head {w.head} shares K/V head {w.kv_head} (grouped-query attention)."
    try:
        arch = caches.architecture(name)
    except widgets.LOAD_ERRORS:
        return note  # the model does not describe itself: say nothing about its norms
    if arch.norm_placement == "pre":
        return note + (
            f" Pre-norm: x is the block's input after its {arch.norm_type}; the output is added "
            "to the un-normalised residual stream, which no norm touches inside the block."
        )
    return note + f" The output then joins the residual: {arch.norm_type}(x + output) (post-norm)."
