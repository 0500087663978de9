"""The needle-in-a-haystack prompt of the retrieval score, as text and character spans.

The needle goes in at the sentence boundary of the haystack nearest ``depth`` (0 = start, 1 = end).
What follows the haystack is the prompt's form (``FORMS``):

- ``"copy"`` (the default): a blank line and the needle's first half (its words up to half,
  rounded down, at least one), so that the model should go on by copying the second half (the
  *answer*) from where the needle stands: long-range copying (induction).
- ``"question"`` (Wu et al. 2024's form): a blank line and ``QUESTION`` asking ``question``
  (``CHAT_QUESTION`` inside a chat template, ``chat``); the answer is the needle's tail
  (``answer_of``), which the model must first look up by meaning.

Character spans of the needle and of the answer in the prompt let the caller find their token
positions with any tokenizer (``token_span``); ``rouge1_recall`` says whether an output holds the
answer, as Wu et al.'s code counts it. Pure text: no model here.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")
_WORD = re.compile(r"\w+")
Form = Literal["copy", "question"]
FORMS: tuple[Form, ...] = ("copy", "question")
# Wu et al.'s template ("Based on the content of the book, Question: ...\nAnswer:"), for any text
QUESTION = "\n\nBased on the content of the text, Question: {question}\nAnswer:"
# the same ask as a user message (an instruction-tuned model answers in its chat template)
CHAT_QUESTION = "\n\nBased on the content of the text, answer the question: {question}"
FOUND_AT = 0.5  # ROUGE-1 recall of the answer above this: the needle was retrieved (Wu et al.)


@dataclass(frozen=True)
class NeedlePrompt:
    """A prompt with a needle in it.

    Attributes:
        text: the exact text fed to the model.
        needle: the needle as given (stripped); first, second: its two halves as words.
        needle_span: ``(start, end)`` characters of the inserted needle in ``text``.
        answer_span: ``(start, end)`` characters of the answer there (what the model should
            repeat: the second half in the copy form, the tail the question asks for else).
        depth: the depth asked; at: the relative depth of the boundary used (0..1).
        form: ``"copy"`` or ``"question"``; question: the question asked ("" in the copy form);
        answer: the answer's text (a tail of the needle); chat: the text is a chat template's
        user message (``within``).
    """

    text: str
    needle: str
    first: str
    second: str
    needle_span: tuple[int, int]
    answer_span: tuple[int, int]
    depth: float
    at: float
    form: Form = "copy"
    question: str = ""
    answer: str = ""
    chat: bool = False

    def within(self, before: str, after: str) -> NeedlePrompt:
        """This prompt with ``before`` and ``after`` around its text (a chat template's parts),
        its spans moved with it."""
        n = len(before)
        return replace(
            self,
            text=f"{before}{self.text}{after}",
            needle_span=(self.needle_span[0] + n, self.needle_span[1] + n),
            answer_span=(self.answer_span[0] + n, self.answer_span[1] + n),
        )


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


def words(text: str) -> list[str]:
    """The words ROUGE-1 counts: runs of letters, digits or ``_``, case folded."""
    return _WORD.findall(text.casefold())


def answer_of(needle: str, question: str, answer: str | None = None) -> str:
    """The needle's tail that answers ``question``: ``answer`` if given (it must end the needle),
    else the needle from its first word the question does not hold (all of it if none)."""
    parts = needle.split()
    if answer is not None:
        answer = " ".join(answer.split())
        if not answer or not needle.endswith(answer):
            raise ValueError(
                f"The answer {answer!r} is not a tail of the needle: the question form scores "
                "the needle's tokens the answer repeats, so give the end of the needle."
            )
        return answer
    asked = set(words(question))
    start = next((i for i, w in enumerate(parts) if not set(words(w)) <= asked), 0)
    return " ".join(parts[start:])


def build_prompt(
    haystack: str,
    needle: str,
    depth: float = 0.5,
    form: Form = "copy",
    question: str | None = None,
    answer: str | None = None,
    chat: bool = False,
) -> NeedlePrompt:
    """The prompt of ``needle`` hidden in ``haystack`` at ``depth``, in ``form``.

    Args:
        form: ``"copy"`` (end with the needle's first half) or ``"question"`` (end by asking
            ``question``, whose answer is ``answer_of(needle, question, answer)``).
        chat: the question form's ask as a user message (``CHAT_QUESTION``), to be wrapped in a
            chat template (``within``); else ``QUESTION``, ending "Answer:".

    Raises:
        ValueError: bad input (``check_needle``), a depth outside 0..1, an unknown form, the
            question form without a question or with an answer that does not end the needle.
    """
    if not 0.0 <= float(depth) <= 1.0:
        raise ValueError(f"depth={depth} must lie between 0 (start) and 1 (end).")
    if form not in FORMS:
        raise ValueError(f"prompt={form!r}: pick one of {', '.join(map(repr, FORMS))}.")
    haystack, needle = check_needle(haystack, needle)
    question = " ".join((question or "").split())
    if form == "question" and not question:
        raise ValueError(
            "The question form asks a question whose answer is the needle's tail: give one "
            "(for Wu et al.'s needle, 'What is the best thing to do in San Francisco?')."
        )
    cut = min(boundaries(haystack), key=lambda b: (abs(b - depth * len(haystack)), b))
    before, after = haystack[:cut], haystack[cut:]
    if cut == len(haystack):
        before, after = before + " ", ""
    start = len(before)
    with_needle = f"{before}{needle}{' ' if after else ''}{after}"
    parts = needle.split()
    k = max(1, len(parts) // 2)
    first, second = " ".join(parts[:k]), " ".join(parts[k:])
    if form == "copy":
        said, tail = second, f"\n\n{first}"
    else:
        ask = CHAT_QUESTION if chat else QUESTION
        said, tail = answer_of(needle, question, answer), ask.format(question=question)
    end = start + len(needle)
    return NeedlePrompt(
        text=f"{with_needle}{tail}",
        needle=needle,
        first=first,
        second=second,
        needle_span=(start, end),
        answer_span=(end - len(said), end),
        depth=float(depth),
        at=cut / len(haystack),
        form=form,
        question=question if form == "question" else "",
        answer=said,
        chat=chat and form == "question",
    )


def token_span(offsets: Sequence[tuple[int, int]], span: tuple[int, int]) -> list[int]:
    """Positions of the tokens whose character offsets overlap ``span`` (``(start, end)``);
    special tokens (offsets ``(0, 0)``) never do."""
    lo, hi = span
    return [i for i, (a, b) in enumerate(offsets) if b > a and a < hi and b > lo]


def rouge1_recall(answer: str, output: str) -> float:
    """ROUGE-1 recall of ``answer`` in ``output``: the answer's words the output holds (each
    counted at most as often as the output has it) over the answer's words; 0 for an empty
    answer. Words as ``words`` reads them (rouge_score keeps only ``[a-z0-9]``, no stemming)."""
    want, got = Counter(words(answer)), Counter(words(output))
    total = sum(want.values())
    return sum(min(n, got[w]) for w, n in want.items()) / total if total else 0.0


def found(answer: str, output: str) -> bool:
    """Whether the output retrieved the answer: ROUGE-1 recall above ``FOUND_AT`` (Wu et al.
    count a run only then)."""
    return rouge1_recall(answer, output) > FOUND_AT
