"""``RunRef``: a retrieval-heads run named by its parameters, so a link can carry it (the URL key
``ret_run``) and the page it opens can find or recompute the run's prompt + output without the
user's sentence being touched.

The key reads ``<haystack>|<depth>|<length>|<form>|<needle>``: the haystack is ``b:<name>``
(a built-in text, recomputable anywhere) or ``h:<16 hex>`` (a pasted or uploaded text, known by
the server that received it); ``length`` is the prompt's length in tokens asked (0: the whole
text); ``form`` the prompt form, ``copy`` or ``question:<the question, percent-encoded>``; the
needle comes last, so it may hold ``|``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

FORMS = ("copy", "question")  # the prompt forms of analysis.retrieval
_HAYSTACK = re.compile(r"b:[A-Za-z0-9_.-]+|h:[0-9a-f]{16}")


@dataclass(frozen=True)
class RunRef:
    """One retrieval run's parameters (the model is the view's own ``model`` key)."""

    haystack: str  # "b:<built-in name>" or "h:<first 16 hex digits of its sha256>"
    depth: float
    length: int  # the prompt's tokens asked (0: the whole text)
    form: str
    needle: str
    question: str = ""  # the question form's question

    def __post_init__(self) -> None:
        if not _HAYSTACK.fullmatch(self.haystack):
            raise ValueError(f"haystack {self.haystack!r}: b:<name> or h:<16 hex digits>")
        if not 0.0 <= self.depth <= 1.0 or self.length < 0 or self.form not in FORMS:
            raise ValueError(f"depth {self.depth}, length {self.length} or form {self.form!r}")
        if not self.needle.strip() or (self.form == "question") != bool(self.question.strip()):
            raise ValueError("a run needs its needle, and a question in the question form only")

    @property
    def key(self) -> str:
        """The URL value (``parse`` reads it back to an equal ``RunRef``)."""
        form = f"question:{quote(self.question, safe='')}" if self.form == "question" else "copy"
        return f"{self.haystack}|{self.depth:g}|{self.length}|{form}|{self.needle}"

    @property
    def builtin(self) -> str | None:
        """The built-in haystack's name, or None for a pasted text."""
        return self.haystack[2:] if self.haystack.startswith("b:") else None

    def describe(self) -> str:
        """In words: ``needle at depth 0.5 of haystack-harbour-town, cut to 512 tokens``."""
        text = self.builtin or "a pasted text"
        cut = f", cut to {self.length:,} tokens" if self.length else ""
        form = f", asked {self.question!r}" if self.form == "question" else ""
        return f"needle at depth {self.depth:g} of {text}{cut}{form}"


def parse(key: str) -> RunRef:
    """The ``RunRef`` of a URL value.

    Raises:
        ValueError: a value that is not a run's key.
    """
    parts = str(key).split("|", 4)
    if len(parts) != 5:
        raise ValueError(f"{key!r} is not a retrieval run (haystack|depth|length|form|needle)")
    haystack, depth, length, form, needle = parts
    form, _, question = form.partition(":")
    return RunRef(haystack, float(depth), int(length), form, needle, unquote(question))


def run_key(value: str) -> str:
    """The URL reader of ``ret_run``: the value itself once it parses (else ValueError)."""
    return parse(value).key
