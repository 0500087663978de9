"""Checks every typed or uploaded text passes before a model reads it."""

from __future__ import annotations

import re

from viz_transformer.settings import MAX_CHARS

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
