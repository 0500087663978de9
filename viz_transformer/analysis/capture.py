"""``trace()``: one entry point from text to a validated ``Trace``, whatever the model family.

Each family captures through hook points inside a per-thread ``hooks()`` block, writing into a
dictionary local to the call, so concurrent sessions on one shared model never mix their records
and leave nothing registered. Every path ends in ``Trace.validate()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from viz_transformer.analysis.ablation import (
    Ablation,
    ablation_hooks,
    check_heads,
    check_mode,
)
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.kinds import KindHead, kind_head_label
from viz_transformer.records.trace import Trace
from viz_transformer.text.checks import check_text

__all__ = ["trace"]


def trace(
    model: LoadedModel,
    text: str,
    target: str | None = None,
    ablate: Sequence[KindHead] | None = None,
    ablation: Ablation = "zero",
) -> Trace:
    """Run ``text`` through ``model`` and record every layer's and head's attention.

    Args:
        model: a handle from ``vt.load_model``.
        text: the source sentence.
        target: a reference output for teacher forcing; ``None`` decodes greedily and records
            the pass over the model's own output.
        ablate: heads ``(kind, layer, head)`` whose output z (``hook_z``) is replaced for the
            whole run, greedy decoding included, so the output can change; empty or None: a
            plain trace, bit for bit.
        ablation: ``"zero"`` puts zeros; ``"mean"`` puts the head's mean z over the positions
            of one clean teacher-forced pass over this input and its clean output.

    Returns:
        A validated ``Trace``; an ablated one says which heads in ``messages``.

    Raises:
        ValueError: bad text, a head the model lacks, an unknown ablation mode.
    """
    text = check_text(text)
    if target is not None:
        target = check_text(target, "target")
    heads = check_heads(model, list(ablate or ()))
    mode = check_mode(ablation)
    if not heads:
        return model.trace(text, target).validate()
    fns = ablation_hooks(model, text, heads, mode, target)
    with model.hooked(fns):
        tr = model.trace(text, target).validate()
    fns.check()
    named = ", ".join(kind_head_label(h) for h in heads)
    return replace(tr, messages=(*tr.messages, f"Heads ablated ({mode}): {named}."))
