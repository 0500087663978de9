"""Who may do what in a class: its code as typed, the teacher's key and the read-only key (only
their hashes are stored), the one-time links and browser sessions that stand for them
(``passes.py``), ``authorise`` (a key or a session -> its role: ``TEACHER`` or ``VIEWER``), and
``Access``, which runs a teacher's read under either role and a change under the teacher's only,
exchanges a one-time link for a session, changes the teacher's key and ends a session: the
class store's ``store.access`` (``ClassStore``)."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection, Engine, select, update

from viz_transformer import settings
from viz_transformer.classroom import passes
from viz_transformer.classroom.database import run, upsert
from viz_transformer.classroom.passes import key_hash
from viz_transformer.classroom.rows import now
from viz_transformer.classroom.schema import class_settings, classes, retired_keys

CODE_LETTERS = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: read aloud or off a projector
CODE_LENGTH = 6
TEACHER, VIEWER = "teacher", "viewer"  # what a key lets one do: everything, or read only
READ_ONLY = "a read-only key sees the class but changes nothing."
REPLACED = (
    "the teacher made a new read-only link for this class: this one no longer opens it; ask "
    "the teacher for the new one."
)
T = TypeVar("T")


def class_code(code: str) -> str:
    """A class code as stored: capitals, no spaces (a student may type it in lower case)."""
    return "".join(str(code).split()).upper()


def new_code() -> str:
    """A class code drawn at random (``CODE_LENGTH`` of ``CODE_LETTERS``)."""
    return "".join(secrets.choice(CODE_LETTERS) for _ in range(CODE_LENGTH))


def new_key() -> str:
    """A new key (32 hex digits: never starts with "-", which a command line reads as an
    option)."""
    return secrets.token_hex(16)


def authorise(conn: Connection, code: str, key: str) -> str:
    """The role ``key`` has in class ``code`` (a stored code): ``TEACHER`` for the teacher's
    key or a session standing for it, ``VIEWER`` for the read-only key or its session.

    Raises:
        ValueError: unknown code. PermissionError: neither key, a read-only key replaced, or a
            session ended (left, past its time, or its key changed).
    """
    found = conn.execute(select(classes.c.key_hash).where(classes.c.code == code)).first()
    if found is None:
        raise ValueError(f"no class with code {code!r}; check the code.")
    hashed = key_hash(key)
    if hmac.compare_digest(found.key_hash, hashed):
        return TEACHER
    if hmac.compare_digest(_viewer_hash(conn, code) or "", hashed):
        return VIEWER
    stands_for = passes.session_key(conn, code, hashed)
    if stands_for is not None:
        return role_of(conn, code, stands_for)
    if _retired(conn, code, hashed):
        raise PermissionError(REPLACED)
    raise PermissionError("wrong teacher key for this class.")


def role_of(conn: Connection, code: str, stands_for: str) -> str:
    """The role of a pass standing for the key whose hash is ``stands_for``, if that key is
    still the class's.

    Raises:
        ValueError: unknown code. PermissionError: a read-only key replaced since
            (``REPLACED``), or a teacher's key changed since (``passes.ENDED``).
    """
    found = conn.execute(select(classes.c.key_hash).where(classes.c.code == code)).first()
    if found is None:
        raise ValueError(f"no class with code {code!r}; check the code.")
    if hmac.compare_digest(found.key_hash, stands_for):
        return TEACHER
    if hmac.compare_digest(_viewer_hash(conn, code) or "", stands_for):
        return VIEWER
    if _retired(conn, code, stands_for):
        raise PermissionError(REPLACED)
    raise PermissionError(passes.ENDED.format(code=code))


def _viewer_hash(conn: Connection, code: str) -> str | None:
    query = select(class_settings.c.viewer_hash).where(class_settings.c.code == code)
    return conn.execute(query).scalar_one_or_none()


def _retired(conn: Connection, code: str, hashed: str) -> bool:
    query = select(retired_keys.c.code).where(
        retired_keys.c.code == code, retired_keys.c.key_hash == hashed
    )
    return conn.execute(query).first() is not None


def require_teacher(conn: Connection, code: str, key: str) -> None:
    """Pass only the teacher's key of class ``code``: a read-only key raises.

    Raises:
        ValueError: unknown code. PermissionError: the read-only key, or neither key.
    """
    if authorise(conn, code, key) != TEACHER:
        raise PermissionError(READ_ONLY)


def set_settings(conn: Connection, code: str, **values: object) -> None:
    """Set some of class ``code``'s settings (columns of ``vt_class_settings``), the others
    kept; the caller has checked the teacher's key."""
    values["changed_at"] = now()
    upsert(conn, class_settings, {"code": code, **values}, update=values)


class Access:
    """The keys of the classes in one database.

    Args:
        engine: the database's engine (``database.engine_for``).
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def check_key(self, code: str, key: str) -> str:
        """``"teacher"`` when ``key`` is the teacher's key of class ``code``, ``"viewer"`` when
        it is its read-only key (``viewer_key``: sees the class, changes nothing).

        Raises:
            ValueError: unknown code. PermissionError: neither key.
        """
        code = class_code(code)
        return run(self.engine, lambda conn: authorise(conn, code, key))

    def read(self, code: str, key: str, work: Callable[[Connection, str], T]) -> T:
        """``work(conn, code)`` in one transaction once ``key`` is either key of the class."""
        code = class_code(code)

        def checked(conn: Connection) -> T:
            authorise(conn, code, key)
            return work(conn, code)

        return run(self.engine, checked)

    def change(self, code: str, key: str, work: Callable[[Connection, str], T]) -> T:
        """``work(conn, code)`` in one write transaction once ``key`` is the teacher's key (a
        read-only key raises ``PermissionError``)."""
        code = class_code(code)

        def checked(conn: Connection) -> T:
            require_teacher(conn, code, key)
            return work(conn, code)

        return run(self.engine, checked, write=True)

    def viewer_key(self, code: str, key: str) -> str:
        """A new read-only key for class ``code`` (sees the class, changes nothing); the
        read-only key made before, its links and sessions stop working. Only its hash is
        stored.

        Raises:
            ValueError: unknown code. PermissionError: not the teacher's key or session.
        """
        viewer = new_key()
        self.change(code, key, lambda conn, c: _replace_viewer(conn, c, key_hash(viewer)))
        return viewer

    def one_time_link(self, code: str, key: str) -> str:
        """A new one-time link's token for class ``code`` that opens the Teacher page as its
        teacher, once, within ``passes.LINK_HOURS``.

        Raises:
            ValueError: unknown code. PermissionError: not the teacher's key or session.
        """
        return self.change(code, key, lambda conn, c: _link(conn, c, _key_of(conn, c)))

    def read_only_link(self, code: str, key: str) -> str:
        """A new read-only key (``viewer_key``: the one before, its links and sessions end)
        and a one-time link's token standing for it; the read-only key itself is never shown."""
        viewer = key_hash(new_key())

        def work(conn: Connection, c: str) -> str:
            _replace_viewer(conn, c, viewer)
            return _link(conn, c, viewer)

        return self.change(code, key, work)

    def open_link(self, code: str, token: str) -> tuple[str, str]:
        """Use a one-time link (``token``: the end of its URL): ``(session, role)``, the session
        a browser keeps for ``settings.teacher_minutes()`` and passes as its key.

        Raises:
            ValueError: unknown code. PermissionError: not a link of the class, used before
                (``passes.USED``), too old, or its key changed since.
        """
        code = class_code(code)

        def work(conn: Connection) -> tuple[str, str]:
            stands_for = passes.exchange(conn, code, key_hash(token))
            role = role_of(conn, code, stands_for)
            return _session(conn, code, stands_for), role

        return run(self.engine, work, write=True)

    def open_session(self, code: str, key: str) -> str:
        """A browser session standing for ``key`` (the teacher's or read-only key, or a session
        of either): what the Teacher page keeps instead of a key it was handed.

        Raises:
            ValueError: unknown code. PermissionError: not a key of the class.
        """
        code = class_code(code)

        def work(conn: Connection) -> str:
            role = authorise(conn, code, key)
            stands_for = _key_of(conn, code) if role == TEACHER else _viewer_hash(conn, code)
            return _session(conn, code, stands_for or "")

        return run(self.engine, work, write=True)

    def rotate(self, code: str, key: str) -> str:
        """A new teacher's key for class ``code``; the old one opens nothing, and every one-time
        link and browser session made from it ends at its next check (a Teacher page's next
        redraw). Only its hash is stored.

        Raises:
            ValueError: unknown code. PermissionError: not the teacher's key or session.
        """
        new = new_key()
        change = update(classes).values(key_hash=key_hash(new))
        self.change(code, key, lambda conn, c: conn.execute(change.where(classes.c.code == c)))
        return new

    def leave(self, code: str, session: str) -> bool:
        """End a browser session (``Leave this class on this browser``); whether it was open."""
        code = class_code(code)
        return run(self.engine, lambda conn: passes.leave(conn, code, key_hash(session)), True)


def _key_of(conn: Connection, code: str) -> str:
    return conn.execute(select(classes.c.key_hash).where(classes.c.code == code)).scalar_one()


def _link(conn: Connection, code: str, stands_for: str) -> str:
    return passes.make(conn, code, passes.LINK, stands_for, passes.LINK_HOURS * 3600)


def _session(conn: Connection, code: str, stands_for: str) -> str:
    seconds = settings.teacher_minutes() * 60
    return passes.make(conn, code, passes.SESSION, stands_for, seconds)


def _replace_viewer(conn: Connection, code: str, new_hash: str) -> None:
    """Make ``new_hash`` class ``code``'s read-only key, the one before kept as replaced."""
    old = _viewer_hash(conn, code)
    if old is not None:
        conn.execute(retired_keys.insert(), {"code": code, "key_hash": old})
    set_settings(conn, code, viewer_hash=new_hash)
