"""One capture record, ``Trace``, and the functions that fill it from a model's hook points.

Every capture path ends in ``Trace.validate()``. Hook functions write into a dictionary local to
the call, inside a per-thread ``hooks()`` block, so concurrent sessions on one shared model never
mix their records and leave nothing registered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from viz_transformer.decoding import greedy_decode
from viz_transformer.hooks import hooks
from viz_transformer.models.registry import AttentionKind, LoadedModel

KINDS: tuple[AttentionKind, ...] = ("encoder", "decoder", "cross")
MAX_CHARS = 2000  # longer text is refused before tokenising


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
    """

    model_name: str
    src_tokens: tuple[str, ...]
    tgt_tokens: tuple[str, ...]
    pred_tokens: tuple[str, ...]
    encoder: np.ndarray | None
    decoder: np.ndarray | None
    cross: np.ndarray | None
    output_text: str = ""
    forced: bool = False  # True: teacher forcing with a given target
    scaled: bool = True
    notes: dict[str, str] = field(default_factory=dict)  # kind -> why it has no map

    def get(self, kind: AttentionKind) -> np.ndarray | None:
        return getattr(self, kind)

    def tokens_for(self, kind: AttentionKind) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(query tokens, key tokens) labelling the rows and columns of ``kind``'s maps."""
        if kind == "encoder":
            return self.src_tokens, self.src_tokens
        if kind == "decoder":
            return self.tgt_tokens, self.tgt_tokens
        return self.tgt_tokens, self.src_tokens

    def validate(self) -> Trace:
        """Check shapes against token counts, rows summing to 1, the causal triangle, finiteness.

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
            if arr.dtype != np.float32:
                raise ValueError(f"{where} is {arr.dtype}; convert with .astype(np.float32).")
            if not np.isfinite(arr).all():
                raise ValueError(
                    f"{where} holds NaN or inf: a row was masked entirely; check the masks."
                )
            worst = float(np.abs(arr.sum(-1, dtype=np.float64) - 1.0).max()) if arr.size else 0.0
            if worst > 1e-5:
                raise ValueError(
                    f"{where}: a row sums to 1 +- {worst:.2e}; pass softmax outputs, not scores."
                )
            if kind == "decoder" and np.triu(arr, k=1).any():
                raise ValueError(
                    f"{where} attends to future positions; the causal mask was not applied."
                )
        return self


def run_with_cache(
    model: LoadedModel, src_ids: list[int], tgt_in: list[int], names: list[str]
) -> tuple[torch.Tensor, dict[str, np.ndarray]]:
    """One teacher-forced forward pass, reading the named hook points.

    Args:
        model: a loaded paper model.
        src_ids: source ids (``</s>`` included); tgt_in: decoder input (``<s>`` first).
        names: hook-point names, e.g. ``"encoder.layers.0.self_attn.hook_q"``.

    Returns:
        logits ``(T, vocab)`` and name -> float32 array with the batch dimension removed.
    """
    cache: dict[str, np.ndarray] = {}

    def record(x: torch.Tensor, name: str) -> None:
        cache[name] = x[0].detach().to("cpu", torch.float32).numpy()

    src = torch.tensor([src_ids], device=model.device)
    tgt = torch.tensor([tgt_in], device=model.device)
    with torch.no_grad(), hooks(model.module, dict.fromkeys(names, record)):
        logits = model.module(src, tgt)
    return logits[0], cache


def check_text(text: str) -> str:
    """The stripped text, or a ValueError that says what to type instead."""
    text = text.strip()
    if not text:
        raise ValueError("The sentence is empty: type a sentence or pick an example.")
    if len(text) > MAX_CHARS:
        raise ValueError(f"The text has {len(text):,} characters; the limit is {MAX_CHARS:,}.")
    return text


def trace(model: LoadedModel, text: str, target: str | None = None) -> Trace:
    """Run ``text`` through ``model`` and record every layer's and head's attention.

    Args:
        model: a handle from ``vt.load_model``.
        text: the source sentence.
        target: a reference output for teacher forcing; ``None`` decodes greedily and records the
            pass over the model's own output.

    Returns:
        A validated ``Trace``.
    """
    vocab, module = model.vocab, model.module
    src_ids = vocab.encode(check_text(text))
    if target is None:
        src = torch.tensor([src_ids], device=model.device)
        out = greedy_decode(module, src, None, vocab.bos_id, vocab.eos_id, module.cfg.max_len - 1)
        out_ids = [i for i in out[0] if i != vocab.eos_id]
    else:
        out_ids = vocab.encode(check_text(target), add_eos=False)
    tgt_in = [vocab.bos_id, *out_ids]
    names = module.pattern_hook_names()
    logits, cache = run_with_cache(model, src_ids, tgt_in, [n for ns in names.values() for n in ns])
    arrays = {k: np.stack([cache[n] for n in ns]) for k, ns in names.items()}
    return Trace(
        model_name=model.name,
        src_tokens=tuple(vocab.tokens[i] for i in src_ids),
        tgt_tokens=tuple(vocab.tokens[i] for i in tgt_in),
        pred_tokens=tuple(vocab.tokens[i] for i in logits.argmax(-1).tolist()),
        encoder=arrays["encoder"],
        decoder=arrays["decoder"],
        cross=arrays["cross"],
        output_text=vocab.decode(out_ids),
        forced=target is not None,
        scaled=module.cfg.scale_scores,
    ).validate()
