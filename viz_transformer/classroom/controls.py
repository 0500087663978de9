"""The teacher's controls of a class, as stored (``vt_class_controls``): the pace (the last step
students may open), a pause, names hidden, the class closed, and the hash of a read-only key;
and the pseudonyms that stand for names when they are hidden. Every replica reads them from the
database on each redraw: none is kept in a process's memory."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.dialects import postgresql, sqlite

from viz_transformer.classroom.schema import controls
from viz_transformer.classroom.store_base import now

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


@dataclass(frozen=True)
class Controls:
    """What the teacher set for a class (``ClassStore.controls``).

    Attributes:
        pace: the last step students may open, counted from 1 as on screen; None: every step.
        paused: every student's page shows "Eyes on the teacher" and nothing else.
        hide_names: the Teacher page shows pseudonyms instead of names.
        closed: no more joins or answers (the answers stay and export).
    """

    pace: int | None = None
    paused: bool = False
    hide_names: bool = False
    closed: bool = False

    def allows(self, step: int) -> bool:
        """Whether a student may open ``step`` (0-based) under the pace."""
        return self.pace is None or step < self.pace


def read(conn: Connection, code: str) -> Controls:
    """Class ``code``'s controls (the defaults when the teacher set none)."""
    row = conn.execute(select(controls).where(controls.c.code == code)).first()
    if row is None:
        return Controls()
    return Controls(row.pace, bool(row.paused), bool(row.hide_names), row.closed_at is not None)


def viewer_hash(conn: Connection, code: str) -> str | None:
    """The hash of class ``code``'s read-only key, if one was made."""
    query = select(controls.c.viewer_hash).where(controls.c.code == code)
    return conn.execute(query).scalar_one_or_none()


def write(conn: Connection, code: str, **values: Any) -> None:
    """Set some of class ``code``'s controls (columns of ``vt_class_controls``), the others kept."""
    values["changed_at"] = now()
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    insert = dialect.insert(controls).values(code=code, **values)
    conn.execute(insert.on_conflict_do_update(index_elements=["code"], set_=values))


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
