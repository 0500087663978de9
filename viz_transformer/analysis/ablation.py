"""KindHead ablation through ``hook_z``: the chosen heads' outputs z (pattern @ v, before W^O) are
replaced by zeros or by their mean over the positions of the input, for one run or, batched, a
different set of heads in each row of a batch.

A zeroed head adds nothing to the residual stream but W^O's bias, which every head shares, so
ablating all heads of a layer leaves that attention sub-layer's output equal to the bias.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch

from viz_transformer.models.base import HookFn, LoadedModel
from viz_transformer.records.kinds import AttentionKind, KindHead

Ablation = Literal["zero", "mean"]
MODES = ("zero", "mean")


def check_mode(mode: str) -> Ablation:
    """``mode`` once it is ``"zero"`` or ``"mean"``."""
    if mode not in MODES:
        raise ValueError(f"ablation={mode!r} is not a mode: use 'zero' or 'mean'.")
    return mode  # type: ignore[return-value]


def check_heads(model: LoadedModel, heads: Sequence[KindHead]) -> list[KindHead]:
    """Each ``(kind, layer, head)`` checked against the model.

    Raises:
        ValueError: an entry that is not a triple, a kind the model lacks, a layer or head out
            of range; the message says what to write instead.
    """
    checked: list[KindHead] = []
    for item in heads:
        if not (isinstance(item, (tuple, list)) and len(item) == 3):
            raise ValueError(
                f"{item!r} is not a head: write (kind, layer, head), e.g. ('encoder', 0, 1)."
            )
        kind, layer, head = item
        layers, n_heads = model.attention_shape(kind)
        for what, value, count in (("layer", layer, layers), ("head", head, n_heads)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
                raise ValueError(
                    f"{what} {value!r} of {kind} attention does not exist in {model.name}: "
                    f"choose 0 to {count - 1}."
                )
        checked.append((kind, int(layer), int(head)))
    return checked


def record_z(
    model: LoadedModel, names: Sequence[str]
) -> tuple[dict[str, HookFn], dict[str, torch.Tensor]]:
    """Hook functions keeping each named ``hook_z`` tensor of the last call (whole batch), and
    the dictionary they fill."""
    kept: dict[str, torch.Tensor] = {}

    def keep(z: torch.Tensor, name: str) -> None:
        kept[name] = z.detach()

    return dict.fromkeys(names, keep), kept


def head_means(
    model: LoadedModel, text: str, out_ids: Sequence[int], names: Sequence[str]
) -> dict[str, torch.Tensor]:
    """Each named ``hook_z``'s mean over the query positions of one clean teacher-forced pass
    over ``text`` and ``out_ids``: name -> ``(h, d_k)`` on the model's device."""
    fns, kept = record_z(model, names)
    with model.hooked(fns):
        model.forced_logprobs(text, out_ids)
    checker = Replacements(model.name)
    checker.update(fns)
    checker.fired.update(kept)
    checker.check()
    return {name: z[0].mean(dim=1) for name, z in kept.items()}  # (h, Tq, d_k) -> (h, d_k)


def replace_heads(
    model: LoadedModel,
    kind: AttentionKind,
    rows: Sequence[Sequence[tuple[int, int]]],
    values: dict[str, torch.Tensor] | None = None,
    into: Replacements | None = None,
) -> Replacements:
    """Hook functions that, in batch row b, replace each head ``(layer, head)`` of ``rows[b]``.

    Args:
        model: the model; kind: the attention kind of every head.
        rows: per batch row, the heads to replace (empty: the row runs clean).
        values: hook name -> what goes in: ``(h, d_k)`` (a mean, broadcast over positions) or
            ``(1, h, Tq, d_k)`` (another run's z, for patching); None puts zeros.
        into: add to these replacements (another kind's) rather than to new ones.

    Returns:
        hook name -> function, for ``model.hooked(...)``; ``check()`` after the run.
    """
    where: dict[int, tuple[list[int], list[int]]] = {}
    for b, heads in enumerate(rows):
        for layer, head in heads:
            batch_rows, head_ids = where.setdefault(layer, ([], []))
            batch_rows.append(b)
            head_ids.append(head)
    fns = Replacements(model.name) if into is None else into
    for layer, (batch_rows, head_ids) in where.items():
        name = model.hook_name(kind, layer, "hook_z")
        b_idx = torch.tensor(batch_rows, dtype=torch.long, device=model.device)  # (n,)
        h_idx = torch.tensor(head_ids, dtype=torch.long, device=model.device)  # (n,)
        value = None if values is None else values[name]
        fns[name] = _replacer(b_idx, h_idx, value, fns.fired)
    return fns


class Replacements(dict[str, HookFn]):
    """Hook functions that replace heads, noting which hook points ran (``fired``)."""

    def __init__(self, model_name: str) -> None:
        super().__init__()
        self.model_name = model_name
        self.fired: set[str] = set()

    def check(self) -> None:
        """Raise when a hook point never ran: its model computes attention elsewhere (a Hugging
        Face model loaded with eager attention), so the ablation would silently do nothing."""
        missing = sorted(set(self) - self.fired)
        if missing:
            raise ValueError(
                f"{self.model_name} never ran {missing[0]}: its attention code does not expose "
                "the heads' outputs, so heads cannot be ablated or patched in it; pick a paper, "
                "Bergamot or Llama/BART/Marian/BERT/GPT-2-family model."
            )


def _replacer(
    b_idx: torch.Tensor, h_idx: torch.Tensor, value: torch.Tensor | None, fired: set[str]
) -> HookFn:
    def replace(z: torch.Tensor, name: str) -> torch.Tensor:  # z (B, h, Tq, d_k)
        fired.add(name)
        z = z.clone()
        if value is None:
            z[b_idx, h_idx] = 0.0
        elif value.dim() == 2:  # a mean (h, d_k): the same vector at every position
            z[b_idx, h_idx] = value[h_idx][:, None, :].to(z.dtype)
        else:  # another run's z (1, h, Tq, d_k), position by position
            z[b_idx, h_idx] = value[0, h_idx].to(z.dtype)
        return z

    return replace


def ablation_hooks(
    model: LoadedModel,
    text: str,
    heads: Sequence[KindHead],
    mode: Ablation,
    target: str | None,
    out_ids: Sequence[int] | None = None,
) -> Replacements:
    """Hook functions ablating every head of ``heads`` (already checked) in a run of one; for
    ``"mean"``, the means come from one clean pass over ``text`` and its clean output
    (``out_ids`` when the caller has them, else ``model.reference_ids(text, target)``)."""
    fns = Replacements(model.name)
    by_kind: dict[AttentionKind, list[tuple[int, int]]] = {}
    for kind, layer, head in heads:
        by_kind.setdefault(kind, []).append((layer, head))
    means = None
    if mode == "mean":
        names = [model.hook_name(k, layer, "hook_z") for k, layer, _ in heads]
        if out_ids is None:
            out_ids = model.reference_ids(text, target)
        means = head_means(model, text, out_ids, sorted(set(names)))
    for kind, kind_heads in by_kind.items():
        replace_heads(model, kind, [kind_heads], means, into=fns)
    return fns
