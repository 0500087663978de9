"""``trace()``: one entry point from text to a validated ``Trace``, whatever the model family.

Each family captures through hook points inside a per-thread ``hooks()`` block, writing into a
dictionary local to the call, so concurrent sessions on one shared model never mix their records
and leave nothing registered. Every path ends in ``Trace.validate()``.
"""

from __future__ import annotations

from viz_transformer.models.base import LoadedModel
from viz_transformer.records.trace import Trace
from viz_transformer.text.checks import check_text

__all__ = ["trace"]


def trace(model: LoadedModel, text: str, target: str | None = None) -> Trace:
    """Run ``text`` through ``model`` and record every layer's and head's attention.

    Args:
        model: a handle from ``vt.load_model``.
        text: the source sentence.
        target: a reference output for teacher forcing; ``None`` decodes greedily and records
            the pass over the model's own output.

    Returns:
        A validated ``Trace``.
    """
    text = check_text(text)
    if target is not None:
        target = check_text(target, "target")
    return model.trace(text, target).validate()
