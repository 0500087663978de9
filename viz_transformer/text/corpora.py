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


# long texts to hide a needle in (the retrieval heads of What heads do): file stem -> what it is
HAYSTACKS = {
    "haystack-harbour-town": "A harbour town (an essay written for this app, ~1,400 tokens)",
}


@functools.cache
def builtin_haystack(name: str = "haystack-harbour-town") -> str:
    """The shipped long text ``name``, paragraphs kept.

    Raises:
        ValueError: an unknown name.
    """
    if name not in HAYSTACKS:
        raise ValueError(f"unknown haystack {name!r}; built in: {', '.join(HAYSTACKS)}.")
    return (CORPORA_DIR / f"{name}.txt").read_text(encoding="utf-8").strip()
