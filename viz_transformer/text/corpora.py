"""The sample corpora shipped with the package, one sentence per line (``settings.CORPORA_DIR``)."""

from __future__ import annotations

import functools

from viz_transformer.settings import CORPORA_DIR

# file stem -> what a reader sees
BUILTIN = {
    "english-heldout-1000": "1,000 English sentences paper-en-pt never trained on (npm data)",
}


@functools.cache
def builtin_sentences(name: str = "english-heldout-1000") -> tuple[str, ...]:
    """The non-blank lines of the shipped corpus ``name``.

    Raises:
        ValueError: an unknown name.
    """
    if name not in BUILTIN:
        raise ValueError(f"unknown corpus {name!r}; built in: {', '.join(BUILTIN)}.")
    text = (CORPORA_DIR / f"{name}.txt").read_text(encoding="utf-8")
    return tuple(s for line in text.splitlines() if (s := line.strip()))
