"""What a head writes: its output at one position, ``z_h W^O_h`` (section 3.2.2), read through the
output layer as the tokens it pushes up and down (direct logit attribution).

A pre-norm model's final norm is made linear by holding its scale at the value it had on the
final residual stream in the run (``LoadedModel.held_unembed``); then every component's logits
(``logit_parts``) plus the biases sum to the model's final logits. In a post-norm model the
LayerNorms after the head rescale and recentre the stream, so its numbers are the head's output
read straight through the output layer, not a share of the final logits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from viz_transformer.analysis.aggregate import is_special
from viz_transformer.analysis.components import residual_components
from viz_transformer.analysis.walkthrough import capture
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.qkv import KindCapture, Needs, rows_of

POST_NORM_NOTE = (
    "Post-norm: the LayerNorms after this layer rescale and recentre the stream, so these are "
    "the head's output read straight through the output layer, not an exact share of the logits."
)
HELD_NOTE = (
    "Pre-norm: with the final norm's scale held at its value in this run, these are exactly "
    "this head's share of the logits at this position."
)


@dataclass(frozen=True)
class HeadWrites:
    """The tokens one head's output promotes and suppresses at one position.

    Attributes:
        promoted, suppressed: ``k`` rows each (``token``, ``id``, ``logit``), largest push up
            first and largest push down first.
        token: the position's token; exact: True where the logits are an exact share (pre-norm).
        note: what the numbers are (``HELD_NOTE`` or ``POST_NORM_NOTE``).
    """

    layer: int
    head: int
    position: int
    token: str
    promoted: pd.DataFrame
    suppressed: pd.DataFrame
    exact: bool
    note: str


def _logits(
    model: LoadedModel, cap: KindCapture, parts: np.ndarray, position: int
) -> tuple[np.ndarray, np.ndarray]:
    """``model.held_unembed`` of ``parts`` ``(n, d)`` at ``position``: ``(n, vocab)``, bias."""
    if cap.resid is not None and cap.final is None:
        raise ValueError(f"{cap.model_name}: the final residual stream was not recorded.")
    stream = cap.final[position] if cap.final is not None else np.zeros(parts.shape[-1])
    parts_t, stream_t = (
        torch.as_tensor(np.asarray(a), dtype=torch.float32, device=model.device)
        for a in (parts, stream)
    )
    logits, bias = model.held_unembed(parts_t, stream_t)
    return logits.double().cpu().numpy(), bias.double().cpu().numpy()


def head_output(cap: KindCapture, layer: int, head: int, position: int) -> np.ndarray:
    """``z_h W^O_h`` ``(d,)`` float64: what ``head`` adds to the stream at ``position``.

    Raises:
        ValueError: an index out of range, or a model whose heads' outputs were not recorded.
    """
    cap.check(layer, head, position=position)
    if "z" not in cap.captured:
        raise ValueError(f"{cap.model_name}: its heads' outputs were not recorded in this run.")
    rows = slice(head * cap.d_k, (head + 1) * cap.d_k)
    z = rows_of(cap.captured["z"], layer, [position])[head, 0].astype(np.float64)  # (d_k,)
    return z @ cap.weights["w_o"][layer][rows].astype(np.float64)


def content_position(tokens: Sequence[str], predicted: Sequence[str] = ()) -> int:
    """The position to look at first: the last whose token, and the token predicted there (when
    ``predicted`` has one per position), are content (a letter or digit, not a marker such as
    ``</s>``): what a head writes where the model ends the sentence is noise. The last position
    when none is."""

    def content(token: str) -> bool:
        return not is_special(token) and any(c.isalnum() for c in token)

    known = len(predicted) == len(tokens)
    found = [i for i, t in enumerate(tokens) if content(t) and (not known or content(predicted[i]))]
    return found[-1] if found else len(tokens) - 1


def writes_of(
    model: LoadedModel, cap: KindCapture, layer: int, head: int, position: int, k: int = 10
) -> HeadWrites:
    """``head_writes`` of a capture.

    Raises:
        ValueError: an encoder head (it reaches the output only through cross-attention), a
            model without an output layer, or an index out of range.
    """
    if cap.kind == "encoder":
        raise ValueError(
            "An encoder head writes into the encoder's output, which reaches the logits only "
            "through cross-attention (an encoder-only model has no output layer); pick a decoder "
            "or cross-attention head."
        )
    out = head_output(cap, layer, head, position)
    logits = _logits(model, cap, out[None], position)[0][0]  # (vocab,)
    k = max(1, min(k, len(logits) // 2))
    order = np.argsort(logits)
    frames = []
    for ids in (order[::-1][:k], order[:k]):
        tokens = model.output_tokens([int(i) for i in ids])
        frames.append(pd.DataFrame({"token": tokens, "id": ids, "logit": logits[ids]}))
    exact = cap.resid is not None
    return HeadWrites(
        layer,
        head,
        position,
        cap.query_tokens[position],
        frames[0],
        frames[1],
        exact,
        HELD_NOTE if exact else POST_NORM_NOTE,
    )


def head_writes(
    model: LoadedModel,
    text: str,
    kind: AttentionKind,
    layer: int,
    head: int,
    position: int,
    k: int = 10,
    target: str | None = None,
) -> HeadWrites:
    """The ``k`` tokens the head's output at ``position`` promotes most and suppresses most,
    with their logit contributions (models with an output layer: decoders, encoder-decoders).

    Args:
        model: from ``vt.load_model``; text: the input (greedy output, or ``target`` forced).
        kind: ``"decoder"`` or ``"cross"``; layer, head, position: counted from 0.

    Raises:
        ValueError: see ``writes_of``, or a model, kind or text the capture cannot read.
    """
    return writes_of(
        model, capture(model, text, kind, target, reads(layer, position)), layer, head, position, k
    )


def reads(layer: int, position: int) -> Needs:
    """What a head's writes at ``layer`` and ``position`` read: that layer's heads' outputs at
    that position, and the final stream (its norm scale); no pattern, no other layer."""
    return Needs({"z": frozenset({layer}), "final": None}, frozenset({position}))


def logit_parts(
    model: LoadedModel, cap: KindCapture, position: int
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every component of a pre-norm model's final stream at ``position`` read as logits.

    Returns:
        names, ``(C, vocab)`` logits and ``(vocab,)`` bias: rows plus bias sum to the model's
        final logits at ``position``.

    Raises:
        ValueError: a post-norm model (``residual_components``).
    """
    names, parts = residual_components(cap, cap.n_layers, [position])  # (C, 1, d)
    logits, bias = _logits(model, cap, parts[:, 0], position)
    return names, logits, bias
