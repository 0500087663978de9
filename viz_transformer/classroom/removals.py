"""Students the teacher removed (a test join, a mistaken name): their open page tells them so,
not that their token is unknown, and the teacher decides whether their name may join again
(``may_rejoin``, set when removing or later: the Teacher page and ``class rejoin``)."""

from __future__ import annotations

from sqlalchemy import Connection, select, update

from viz_transformer.classroom.rows import now
from viz_transformer.classroom.schema import removed

REMOVED = "Your teacher removed you from this class."
MAY_REJOIN = " You may join again with your name."
ASK = " Ask your teacher before you join again."


def record(conn: Connection, code: str, token: str, name: str, may_rejoin: bool) -> None:
    """Keep that the student ``token`` named ``name`` was removed from class ``code``."""
    row = {"token": token, "class_code": code, "name": name, "may_rejoin": bool(may_rejoin)}
    conn.execute(removed.insert(), {**row, "removed_at": now()})


def said_to(conn: Connection, code: str, token: str) -> str | None:
    """What the removed student ``token`` is told (None: never removed from class ``code``)."""
    query = select(removed.c.may_rejoin).where(
        removed.c.token == str(token), removed.c.class_code == code
    )
    found = conn.execute(query).first()
    if found is None:
        return None
    return REMOVED + (MAY_REJOIN if found.may_rejoin else ASK)


def check_name(conn: Connection, code: str, name: str) -> None:
    """Pass a name that may join class ``code``: one the teacher removed and did not let back
    raises.

    Raises:
        ValueError: a removed name without leave to rejoin.
    """
    query = select(removed.c.name, removed.c.may_rejoin).where(removed.c.class_code == code)
    for row in conn.execute(query):
        if row.name.casefold() == name.casefold() and not row.may_rejoin:
            raise ValueError(
                f"Your teacher removed the name {name!r} from this class; ask your teacher "
                "before you join again."
            )


def let_rejoin(conn: Connection, code: str, name: str, allowed: bool = True) -> int:
    """Let the removed name ``name`` join class ``code`` again (``allowed=False``: not);
    how many removals of that name it changed.

    Raises:
        ValueError: no student of that name was removed.
    """
    query = select(removed.c.token, removed.c.name).where(removed.c.class_code == code)
    tokens = [r.token for r in conn.execute(query) if r.name.casefold() == name.casefold()]
    if not tokens:
        raise ValueError(f"no removed student {name!r} in class {code}.")
    conn.execute(update(removed).where(removed.c.token.in_(tokens)).values(may_rejoin=allowed))
    return len(tokens)


def names(conn: Connection, code: str) -> dict[str, bool]:
    """The names removed from class ``code`` and whether each may join again."""
    query = select(removed.c.name, removed.c.may_rejoin).where(removed.c.class_code == code)
    return {row.name: bool(row.may_rejoin) for row in conn.execute(query.order_by(removed.c.name))}
