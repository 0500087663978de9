"""The one pass every trace of a Hugging Face model runs: every attention call read in call order,
each kind's maps (whole, or ``LazyPatterns`` computed from the calls' queries, keys and formula
for a long input: ``long_inputs``), what else the pass read (``PassNotes``: notes, sink layers),
and each output row's most likely next id without the ``[T, vocabulary]`` logits."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from viz_transformer.models.hf.call_order import call_names, in_call_order, pattern_bases
from viz_transformer.models.hf.call_record import CallRecord
from viz_transformer.models.hf.heads import accepts
from viz_transformer.models.hf.long_inputs import deferrable, deferred_encoder, keeps_qk
from viz_transformer.models.hf.parts import HFParts
from viz_transformer.models.results import row_argmax
from viz_transformer.records.formula import Formula
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.records.trace import Patterns

ARGMAX_CELLS = 2**24  # logits per chunk of rows whose argmax ``next_ids`` takes (64 MB float32)
ROW_SUM_SLACK = 1e-3  # a map's row may sum below 1 (a sink's weight), never above this


@dataclass
class PassNotes:
    """What a pass read besides the maps: notes for the page, and the layers whose rows sum to
    1 with a sink's weight (``Trace.sink_layers``)."""

    messages: list[str] = field(default_factory=list)
    sink_layers: dict[AttentionKind, tuple[int, ...]] = field(default_factory=dict)

    def said(self) -> PassNotes:
        """These notes, their messages naming the layers with an attention sink."""
        self.messages += [
            f"The {kind} layers {', '.join(map(str, layers))} have an attention sink (a learned "
            "logit that joins each row's softmax): a row's weights on the tokens sum to 1 less "
            "the weight the sink takes."
            for kind, layers in self.sink_layers.items()
            if layers
        ]
        return self


def lazy_patterns(
    seen: list[tuple[str, torch.Tensor | CallRecord]],
    names: dict[AttentionKind, list[str]],
    notes: PassNotes,
) -> dict[AttentionKind, Patterns]:
    """Per kind, patterns from the recorded calls (``CallRecord``s, in call order): a call's
    head is computed from its queries, keys and formula when indexed, on the model's device; a
    call the tiles cannot read is kept whole, and a module without a softmax map is left out
    (both said in ``notes.messages``)."""
    out: dict[AttentionKind, Patterns] = {}
    for kind, ns in names.items():
        calls = softmax_calls(kind, [(b, r) for b, r in seen if b in set(pattern_bases(ns))], notes)
        recs = [r for _, r in calls]
        assert all(isinstance(r, CallRecord) for r in recs)
        whole = {i: r.weights for i, r in enumerate(recs) if r.weights is not None}
        notes.messages += [
            f"The {kind} map of call {i} ({base}) is the model's own, held whole: {r.why}."
            for i, (base, r) in enumerate(calls)
            if r.weights is not None
        ]
        formulas = [r.formula or Formula() for r in recs]
        sinks = tuple(i for i, f in enumerate(formulas) if f.sinks is not None)
        notes.sink_layers[kind] = sinks
        qs, ks = [r.q for r in recs], [r.k for r in recs]
        sizes = [
            r.weights.shape[1:] if r.weights is not None else (r.q.shape[1], r.k.shape[1])
            for r in recs
        ]
        one_shape(kind, [tuple(z) for z in sizes])
        out[kind] = LazyPatterns(qs, ks, kind == "decoder", formulas=formulas, whole=whole)
    return out


def one_shape(kind: AttentionKind, sizes: list[tuple[int, ...]]) -> None:
    """Check that every call of ``kind`` gives a map of one ``(queries, keys)`` shape.

    Raises:
        ValueError: some calls attend over keys that are not the tokens (compressed or merged
            keys), which no token x token map can show.
    """
    if len(set(sizes)) > 1:
        seen = ", ".join(map(str, sorted(set(sizes))))
        raise ValueError(
            f"The {kind} attention calls give maps of several shapes ({seen}): some attend over "
            "keys that are not the input's tokens (compressed or merged keys), and "
            "viz-transformer shows maps over the tokens only."
        )


def softmax_calls(kind: AttentionKind, calls: list, notes: PassNotes) -> list:
    """``calls`` without those of modules that have no softmax map (linear attention), named in
    ``notes.messages``."""
    linear = sorted({b for b, r in calls if not _is_softmax(r)})
    if linear:
        notes.messages.append(
            f"{', '.join(linear)}: linear attention, which has no softmax map; the {kind} maps "
            "are the other layers' (numbered in call order)."
        )
    return [(b, r) for b, r in calls if b not in linear]


def _is_softmax(r: torch.Tensor | CallRecord) -> bool:
    """Whether a call's weights are a softmax's: nonnegative rows summing to at most 1 (less
    with a sink)."""
    if isinstance(r, CallRecord):
        return r.softmax
    sums = r.sum(-1)
    return bool((r >= 0).all() and (sums <= 1 + ROW_SUM_SLACK).all() and (sums > 0).all())


def run(
    model: HFParts, **inputs: list[int]
) -> tuple[list[int] | None, dict[AttentionKind, Patterns], PassNotes]:
    """One forward pass of ``model`` over ``inputs`` reading every attention call, in call
    order. Long inputs (``lazy``) keep each call's queries, keys and formula on the model's
    device and return ``LazyPatterns``.

    Returns:
        the most likely next id at every output row (``next_ids``; None for a model without a
        head), kind -> ``[calls, H, q, k]``, and what else the pass read (``PassNotes``).
    """
    keep_qk = keeps_qk(model, **inputs)
    flat = call_names(model.names) if keep_qk else [n for ns in model.names.values() for n in ns]
    batch = {k: torch.tensor([v], device=model.device) for k, v in inputs.items()}
    with torch.no_grad(), in_call_order(model.module, flat) as seen:
        preds = next_ids(model, batch)
    missing = sorted(
        set(pattern_bases([n for ns in model.names.values() for n in ns])) - {b for b, _ in seen}
    )
    if missing:
        raise RuntimeError(
            f"{model.name} returned no attention weights at {missing[:2]}; it must run with "
            "attn_implementation='vt' or 'eager' (HFModel.load sets it)."
        )
    notes = PassNotes()
    if keep_qk:
        return preds, lazy_patterns(seen, model.names, notes), notes.said()
    arrays: dict[AttentionKind, Patterns] = {}
    for kind, ns in model.names.items():
        calls = softmax_calls(kind, [(b, r) for b, r in seen if b in set(pattern_bases(ns))], notes)
        sinks = (i for i, (_, r) in enumerate(calls) if getattr(r, "vt_sinks", False))
        notes.sink_layers[kind] = tuple(sinks)
        one_shape(kind, [tuple(r.shape[-2:]) for _, r in calls])
        arrays[kind] = np.stack([r[0].detach().to("cpu", torch.float32).numpy() for _, r in calls])
    return preds, arrays, notes.said()


def run_single(
    model: HFParts, ids: list[int]
) -> tuple[list[int] | None, dict[AttentionKind, Patterns], PassNotes]:
    """``run`` over one stack's input ``ids``; a long input of an encoder that runs one call
    per layer (``deferrable``) runs nothing until a head is asked (``deferred_encoder``)."""
    if deferrable(model) and keeps_qk(model, input_ids=ids):
        encoder = deferred_encoder(model.module, model.names["encoder"], ids)
        return None, {"encoder": encoder}, PassNotes()
    return run(model, input_ids=ids, attention_mask=[1] * len(ids))


def next_ids(model: HFParts, batch: dict[str, torch.Tensor]) -> list[int] | None:
    """One pass over ``batch`` (no cache kept): each output row's most likely next id. A
    decoder-only model's base model gives its last hidden states and the output layer reads them
    ``ARGMAX_CELLS`` logits at a time: never the ``[T, vocabulary]`` logits (7.8 GB in bfloat16
    at 32,768 tokens of Llama 3) only to take their argmax. The logits' post-processing of some
    models (a positive scale, soft-capping) keeps each row's argmax."""
    module = model.module
    extra = {"use_cache": False} if accepts(module, "use_cache") else {}
    head = module.get_output_embeddings()
    base = module.base_model is not module  # Llama 4's causal LM is its own base model
    if model.spec.decoder_only and head is not None and base and accepts(module, "logits_to_keep"):
        hidden = module.base_model(**batch, **extra).last_hidden_state[0]  # (T, d)
        rows = max(1, ARGMAX_CELLS // head.weight.shape[0])
        return [
            i
            for r0 in range(0, len(hidden), rows)
            for i in row_argmax(head(hidden[r0 : r0 + rows]))
        ]
    logits = getattr(module(**batch, **extra), "logits", None)
    return None if logits is None else row_argmax(logits[0])
