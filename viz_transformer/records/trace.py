"""The one capture record, ``Trace``: attention of one input as CPU float32 numpy arrays.

Every model family fills it; figures and analysis read only it. ``validate()`` is the boundary
check every capture path runs (shapes against tokens, rows summing to 1, causal triangle, finite).
For long inputs a kind's array is a ``LazyPatterns``, which indexes the same way and computes a
head when asked (see ``viz_transformer.records.lazy``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from viz_transformer.records.kinds import KINDS, AttentionKind
from viz_transformer.records.lazy import LazyPatterns

Patterns = np.ndarray | LazyPatterns  # [layers, heads, q, k]; lazy for long inputs


@dataclass(frozen=True)
class Trace:
    """Attention of one input, CPU float32 numpy, batch dimension removed.

    Attributes:
        src_tokens: source tokens as shown (special tokens kept, e.g. ``</s>``).
        tgt_tokens: decoder input tokens, one per decoder query row: ``<s>`` then the outputs
            so far ("shifted right").
        pred_tokens: the model's most likely next token at each decoder row.
        encoder: ``[layers, heads, src, src]`` encoder self-attention, or None.
        decoder: ``[layers, heads, tgt, tgt]`` masked self-attention (upper triangle 0), or None.
        cross: ``[layers, heads, tgt, src]`` encoder-decoder attention, or None.
        output_text: the model's translation (greedy) or the forced target.
        scaled: whether scores were divided by sqrt(d_k).
        sink_layers: kind -> layers whose heads have an attention sink (gpt-oss): a row's
            weights on the keys sum to 1 less the sink's weight (``LazyPatterns.sink_weights``;
            1 - the row's sum for a whole array).
    """

    model_name: str
    src_tokens: tuple[str, ...]
    tgt_tokens: tuple[str, ...]
    pred_tokens: tuple[str, ...]
    encoder: Patterns | None
    decoder: Patterns | None
    cross: Patterns | None
    output_text: str = ""
    forced: bool = False  # True: teacher forcing with a given target
    scaled: bool = True
    notes: dict[str, str] = field(default_factory=dict)  # kind -> why it has no map
    messages: tuple[str, ...] = ()  # what the capture changed in the input (e.g. truncation)
    sink_layers: dict[AttentionKind, tuple[int, ...]] = field(default_factory=dict)

    def get(self, kind: AttentionKind) -> Patterns | None:
        return getattr(self, kind)

    @property
    def kinds(self) -> list[AttentionKind]:
        """The attention kinds this trace has a map of, in ``KINDS`` order."""
        return [k for k in KINDS if self.get(k) is not None]

    def tokens_for(self, kind: AttentionKind) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(query tokens, key tokens) labelling the rows and columns of ``kind``'s maps."""
        if kind == "encoder":
            return self.src_tokens, self.src_tokens
        if kind == "decoder":
            return self.tgt_tokens, self.tgt_tokens
        return self.tgt_tokens, self.src_tokens

    def map_labels(self, kind: AttentionKind) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(row labels, column labels) of ``kind``'s maps as every map, lesson question and
        grade names them: ``tokens_for``, except that a cross-attention row is labelled by the
        token predicted there (the word it gathers the source for), not by the decoder's input
        (shifted right)."""
        rows, cols = self.tokens_for(kind)
        return (self.pred_tokens if kind == "cross" and self.pred_tokens else rows), cols

    def validate(self) -> Trace:
        """Check shapes against token counts, rows summing to 1, the causal triangle, finiteness
        (of a lazy kind: 64 rows, evenly spread, of its first head and of the deepest computed
        layer's last head, so a long input is never made whole).

        Raises:
            ValueError: what is wrong and how to fix it.
        """
        if len(self.pred_tokens) not in (0, len(self.tgt_tokens)):
            raise ValueError(
                f"{len(self.pred_tokens)} predictions for {len(self.tgt_tokens)} decoder rows; "
                "record one prediction per decoder input position."
            )
        for kind in KINDS:
            arr = self.get(kind)
            if arr is None:
                continue
            rows, cols = self.tokens_for(kind)
            where = f"Trace.{kind} of {self.model_name}"
            if arr.ndim != 4 or arr.shape[2:] != (len(rows), len(cols)):
                raise ValueError(
                    f"{where} has shape {arr.shape}; expected [layers, heads, {len(rows)}, "
                    f"{len(cols)}] to match the tokens. Capture with vt.trace, which removes the "
                    "batch dimension and keeps every token."
                )
            if isinstance(arr, np.ndarray):
                arr.flags.writeable = False  # records are shared between sessions: read-only
            at = np.arange(arr.shape[2])  # the rows checked: all, or a sample of a lazy map
            finite = True
            sinks = set(self.sink_layers.get(kind, ()))
            sink_w: np.ndarray | float = 0.0
            if isinstance(arr, LazyPatterns):  # layer 0 and the deepest layer computed
                at = (
                    np.linspace(0, arr.shape[2] - 1, min(arr.shape[2], 64)).round().astype(np.int64)
                )
                first = arr.cells(0, 0, at)  # fetches layer 0 of a deferred encoder
                deep = max(arr.fetched_layers())
                deepest = arr.cells(deep, -1, at)
                finite = arr.finite()  # every row's queries and keys, not only the sampled rows
                sink_w = np.stack([arr.sink_weights(0, 0, at), arr.sink_weights(deep, -1, at)])
                sink_w = sink_w[None]
                arr = np.stack([first, deepest])[None]
                sinks = set()  # the sink's own weight is added to the rows instead
            if arr.dtype != np.float32:
                raise ValueError(f"{where} is {arr.dtype}; convert with .astype(np.float32).")
            sums = arr.sum(-1) + sink_w  # one pass: a NaN or inf anywhere makes its sum non-finite
            if not (finite and np.isfinite(sums).all()):
                raise ValueError(
                    f"{where} holds NaN or inf: a row was masked entirely; check the masks."
                )
            if sinks:  # the sink's weight is what a row lacks of 1: at least 0
                sums = sums.copy()
                sums[sorted(sinks)] = np.maximum(sums[sorted(sinks)], 1.0)
            worst = float(np.abs(sums - 1.0).max()) if sums.size else 0.0
            if worst > 1e-5:
                raise ValueError(
                    f"{where}: a row sums to 1 +- {worst:.2e}; pass softmax outputs, not scores."
                )
            future = np.arange(arr.shape[-1])[None, :] > at[:, None]
            if kind == "decoder" and arr[..., future].any():
                raise ValueError(
                    f"{where} attends to future positions; the causal mask was not applied."
                )
        return self


def truncation_note(n_tokens: int, limit: int) -> str:
    """The message a trace carries when an input of ``n_tokens`` was cut to ``limit`` tokens."""
    return (
        f"The input has {n_tokens} tokens and this model reads at most {limit}: the last "
        f"{n_tokens - limit} were dropped. Shorten the text to see all of it."
    )
