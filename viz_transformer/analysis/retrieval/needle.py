"""The needle-in-a-haystack prompt of the retrieval score, as text and character spans.

The needle goes in at the sentence boundary of the haystack nearest ``depth`` (0 = start, 1 = end);
after the haystack come a blank line and the needle's first half (its words up to half, rounded
down, at least one), so that the model should go on by copying the second half from where the
needle stands. Character spans of the needle and of its second half in the prompt let the caller
find their token positions with any tokenizer (``token_span``). Pure text: no model here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")


@dataclass(frozen=True)
class NeedlePrompt:
    """A prompt with a needle in it.

    Attributes:
        text: the exact text fed to the model.
        needle: the needle as given (stripped); first, second: its two halves as words.
        needle_span: ``(start, end)`` characters of the inserted needle in ``text``.
        answer_span: ``(start, end)`` characters of its second half there (what the model
            should copy).
        depth: the depth asked; at: the relative depth of the boundary used (0..1).
    """

    text: str
    needle: str
    first: str
    second: str
    needle_span: tuple[int, int]
    answer_span: tuple[int, int]
    depth: float
    at: float


def check_needle(haystack: str, needle: str) -> tuple[str, str]:
    """The stripped haystack and needle.

    Raises:
        ValueError: an empty haystack or needle, a needle of one word (nothing is left to
            copy after its first half), a needle longer than the haystack.
    """
    haystack, needle = (haystack or "").strip(), " ".join((needle or "").split())
    if not needle:
        raise ValueError("The needle is empty: type a sentence to hide in the text.")
    if not haystack:
        raise ValueError("The haystack is empty: paste or upload a long text, or pick one.")
    if len(needle.split()) < 2:
        raise ValueError(
            "The needle needs at least two words: the prompt ends with its first half and the "
            "model is asked to copy the rest."
        )
    if len(needle) >= len(haystack):
        raise ValueError(
            f"The needle ({len(needle):,} characters) is not shorter than the haystack "
            f"({len(haystack):,}): the test hides a short sentence in a long text. Use a "
            "longer text or a shorter needle."
        )
    return haystack, needle


def boundaries(text: str) -> list[int]:
    """Character positions where a sentence starts: 0, after each ``.``, ``!`` or ``?`` followed
    by white space (closing quotes and brackets kept with their sentence), and ``len(text)``."""
    return sorted({0, *(m.end() for m in _SENTENCE_END.finditer(text)), len(text)})


def build_prompt(haystack: str, needle: str, depth: float = 0.5) -> NeedlePrompt:
    """The prompt of ``needle`` hidden in ``haystack`` at ``depth``.

    Raises:
        ValueError: bad input (``check_needle``), a depth outside 0..1.
    """
    if not 0.0 <= float(depth) <= 1.0:
        raise ValueError(f"depth={depth} must lie between 0 (start) and 1 (end).")
    haystack, needle = check_needle(haystack, needle)
    cut = min(boundaries(haystack), key=lambda b: (abs(b - depth * len(haystack)), b))
    before, after = haystack[:cut], haystack[cut:]
    if cut == len(haystack):
        before, after = before + " ", ""
    start = len(before)
    with_needle = f"{before}{needle}{' ' if after else ''}{after}"
    words = needle.split()
    k = max(1, len(words) // 2)
    first, second = " ".join(words[:k]), " ".join(words[k:])
    second_at = start + len(first) + 1
    return NeedlePrompt(
        text=f"{with_needle}\n\n{first}",
        needle=needle,
        first=first,
        second=second,
        needle_span=(start, start + len(needle)),
        answer_span=(second_at, start + len(needle)),
        depth=float(depth),
        at=cut / len(haystack),
    )


def token_span(offsets: Sequence[tuple[int, int]], span: tuple[int, int]) -> list[int]:
    """Positions of the tokens whose character offsets overlap ``span`` (``(start, end)``);
    special tokens (offsets ``(0, 0)``) never do."""
    lo, hi = span
    return [i for i, (a, b) in enumerate(offsets) if b > a and a < hi and b > lo]


def found(second: str, output: str) -> bool:
    """Whether the output holds the needle's second half (white space and case ignored)."""
    want = " ".join(second.split()).casefold()
    return bool(want) and want in " ".join(output.split()).casefold()
