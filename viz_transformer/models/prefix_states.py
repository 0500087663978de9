"""Decoder states kept by output prefix, so a step-by-step session decodes only the newest token.

``decoding._search`` scores prefixes in order of length: greedy extends the previous prefix by one
token, beam search extends one of the live ones. A session stores the decoder state (key/value
cache, recurrent cells) after each prefix and extends the state of ``prefix[:-1]``; states two
steps old can no longer be extended by the search and are dropped, which bounds the memory to two
steps' beams.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

State = TypeVar("State")


class PrefixStates(Generic[State]):
    """Decoder state after ``start + prefix``, for the prefixes of the last two lengths."""

    def __init__(self) -> None:
        self._states: dict[tuple[int, ...], State] = {}

    def parent(self, prefix: Sequence[int]) -> State | None:
        """The state after ``prefix[:-1]``, or None (an empty prefix, or a parent not kept)."""
        if not prefix:
            return None
        return self._states.get(tuple(prefix[:-1]))

    def put(self, prefix: Sequence[int], state: State) -> None:
        """Keep ``state`` for ``prefix``; drop the states of prefixes shorter than its parent."""
        n = len(prefix)
        for key in [k for k in self._states if len(k) < n - 1]:
            del self._states[key]
        self._states[tuple(prefix)] = state

    def __len__(self) -> int:
        return len(self._states)
