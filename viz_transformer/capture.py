"""``trace()``: one entry point from text to a validated ``Trace``, whatever the model family.

Each family captures through hook points inside a per-thread ``hooks()`` block, writing into a
dictionary local to the call, so concurrent sessions on one shared model never mix their records
and leave nothing registered. Every path ends in ``Trace.validate()``.
"""

from __future__ import annotations

import re

from viz_transformer.models.base import LoadedModel
from viz_transformer.record import KINDS, AttentionKind, Trace
from viz_transformer.settings import MAX_CHARS

__all__ = ["KINDS", "MAX_CHARS", "AttentionKind", "Trace", "check_text", "trace"]

# control characters (NUL included) are invisible and mean nothing to a tokenizer: read them as
# spaces; tabs and newlines are already white space
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def check_text(text: str, what: str = "sentence") -> str:
    """The stripped text with control characters read as spaces, or a ValueError that says what
    to type instead."""
    text = _CONTROL.sub(" ", text).strip()
    if not text:
        raise ValueError(f"The {what} is empty: type a {what} or pick the example.")
    if len(text) > MAX_CHARS:
        raise ValueError(f"The {what} has {len(text):,} characters; the limit is {MAX_CHARS:,}.")
    return text


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
