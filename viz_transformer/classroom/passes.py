"""What a browser holds instead of a class's key (``vt_teacher_passes``; only hashes stored):
a one-time link, which opens the class once and is then worthless, and the session it is
exchanged for, which a browser keeps for ``settings.teacher_minutes()`` at most.

Each stands for the key it was made from (its ``key_hash``): a new teacher key (``class
rotate``) or a new read-only link ends every pass of the key before, on every replica at its
next check, without a list of sessions to visit. A session left ("Leave this class on this
browser") or past its time is refused however its cookie lives on. Why not the key itself in a
cookie: Streamlit sets no cookie from a page but through the page's JavaScript, which cannot
make it ``HttpOnly``; a session token in such a cookie is still readable by page scripts, but it
is good for one class and one lesson's time, ends on "Leave" and on a new key, and tells
nothing of the key (docs/classroom.md, "The teacher's keys")."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from sqlalchemy import Connection, Row, select, update

from viz_transformer.classroom.rows import now, utc
from viz_transformer.classroom.schema import passes

LINK, SESSION = "link", "session"
LINK_HOURS = 24  # an unused one-time link opens the class within this many hours of its making
NEW_LINK = "python -m viz_transformer class link {code}"  # how a teacher gets a new one
USED = (
    "this one-time link was already used: it opened the class once and opens nothing now. Get "
    f"a new one with `{NEW_LINK}` (the teacher's key in VT_TEACHER_KEY), or with \"One-time "
    'link for another browser" on a Teacher page that has the class open.'
)
EXPIRED = (
    f"this one-time link is more than {LINK_HOURS} hours old and no longer opens the class. Get "
    f"a new one with `{NEW_LINK}`."
)
NOT_A_LINK = f"this is not a one-time link of class {{code}}. Get one with `{NEW_LINK}`."
ENDED = (
    "this browser's access to class {code} has ended: the teacher's key was changed, the class "
    "was left on this browser, or its time ran out. Open a new one-time link: `" + NEW_LINK + "`."
)


def new_token() -> str:
    """A pass's token: 32 random bytes, URL-safe (43 characters)."""
    return secrets.token_urlsafe(32)


def key_hash(secret: str) -> str:
    """What the database keeps of a key or a pass's token: its SHA-256, in hex."""
    return hashlib.sha256(str(secret).encode()).hexdigest()


def make(conn: Connection, code: str, kind: str, stands_for: str, seconds: float) -> str:
    """A new pass of ``kind`` for class ``code`` standing for the key whose hash is
    ``stands_for``, good for ``seconds``; its token (only the token's hash is stored)."""
    token, made = new_token(), now()
    row = {
        "token_hash": key_hash(token),
        "code": code,
        "kind": kind,
        "key_hash": stands_for,
        "made_at": made,
        "expires_at": made + timedelta(seconds=seconds),
        "used_at": None,
    }
    conn.execute(passes.insert(), row)
    return token


def _row(conn: Connection, code: str, token_hash: str, kind: str) -> Row | None:
    query = select(passes).where(
        passes.c.token_hash == token_hash, passes.c.code == code, passes.c.kind == kind
    )
    return conn.execute(query).first()


def exchange(conn: Connection, code: str, token_hash: str) -> str:
    """Use the one-time link whose token hashes to ``token_hash``: mark it used (once, also when
    two browsers open it at the same moment) and return the hash of the key it stands for; the
    caller checks that key is still the class's and makes the session.

    Raises:
        PermissionError: not a link of this class, used before, or past ``LINK_HOURS``.
    """
    row = _row(conn, code, token_hash, LINK)
    if row is None:
        raise PermissionError(NOT_A_LINK.format(code=code))
    if row.used_at is not None:
        raise PermissionError(USED.format(code=code))
    if utc(row.expires_at) <= now():
        raise PermissionError(EXPIRED.format(code=code))
    used = update(passes).where(passes.c.token_hash == token_hash, passes.c.used_at.is_(None))
    if conn.execute(used.values(used_at=now())).rowcount != 1:  # another browser was first
        raise PermissionError(USED.format(code=code))
    return row.key_hash


def session_key(conn: Connection, code: str, token_hash: str) -> str | None:
    """The hash of the key the session with this token hash stands for; None when no session
    of class ``code`` has it (it may be a key).

    Raises:
        PermissionError: a session left or past its time (``ENDED``).
    """
    row = _row(conn, code, token_hash, SESSION)
    if row is None:
        return None
    if row.used_at is not None or utc(row.expires_at) <= now():
        raise PermissionError(ENDED.format(code=code))
    return row.key_hash


def leave(conn: Connection, code: str, token_hash: str) -> bool:
    """End the session with this token hash (its cookie then opens nothing); whether one was
    open."""
    query = update(passes).where(
        passes.c.token_hash == token_hash,
        passes.c.code == code,
        passes.c.kind == SESSION,
        passes.c.used_at.is_(None),
    )
    return conn.execute(query.values(used_at=now())).rowcount == 1
