"""The pseudonyms that stand for students' names on the Teacher page when the teacher hides
them: stable ("Swift Otter" on every replica and redraw) and distinct within a class."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

ADJECTIVES = (  # noqa: SIM905 (32 words: a list literal would take 32 lines)
    "Amber Brave Calm Clever Coral Daring Eager Fair Gentle Golden Happy Honest Jolly Keen Kind "
    "Lively Lucky Merry Mighty Noble Polite Proud Quick Quiet Rapid Silver Steady Sunny Swift "
    "Tidy Witty Zesty"
).split()
ANIMALS = (  # noqa: SIM905
    "Badger Beaver Bison Crane Dolphin Eagle Falcon Ferret Gecko Heron Ibis Jaguar Koala Lemur "
    "Lynx Marten Moose Newt Otter Owl Panda Puffin Quail Raven Robin Seal Stork Tapir Tiger "
    "Walrus Wombat Zebra"
).split()


def pseudonym(code: str, student_id: int, attempt: int = 0) -> str:
    """A student's stable pseudonym in class ``code`` ("Swift Otter"), the same on every replica
    and redraw. Within a class it is a one-to-one map of the student's id (an odd multiplier
    and an offset drawn from the class code, then a xorshift and a second odd multiplier, all
    invertible modulo the 1,024 names), so two students of a class share a name only when their
    ids differ by a multiple of 1,024; ``pseudonyms`` redraws those (``attempt``)."""
    digest = hashlib.sha256(f"{code}:{attempt}".encode()).digest()
    size = len(ADJECTIVES) * len(ANIMALS)  # a power of two: every odd number is invertible
    mul, add, mix = (int.from_bytes(digest[i : i + 8], "big") for i in (0, 8, 16))
    x = ((2 * mul + 1) * student_id + add) % size
    x = ((x ^ (x >> 5)) * (2 * mix + 1)) % size  # neighbours' names spread over the lists
    adjective, animal = divmod(x, len(ANIMALS))
    return f"{ADJECTIVES[adjective]} {ANIMALS[animal]}"


def pseudonyms(code: str, student_ids: Iterable[int]) -> list[str]:
    """One pseudonym per student, in the order given (joining order), none twice: a student
    whose pseudonym an earlier one has draws again, so earlier students keep theirs."""
    taken: set[str] = set()
    out = []
    for student_id in student_ids:
        attempt, name = 0, pseudonym(code, student_id)
        while name in taken:
            attempt += 1
            name = pseudonym(code, student_id, attempt)
        taken.add(name)
        out.append(name)
    return out
