"""Who may do what in a class: its code as typed, the teacher's key and the read-only key (only
their hashes are stored), ``authorise`` (a key -> its role: ``TEACHER`` or ``VIEWER``), and
``Access``, which runs a teacher's read under either key and a change under the teacher's key
only."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection, Engine, select

from viz_transformer.classroom.database import run, upsert
from viz_transformer.classroom.records import now
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


def key_hash(key: str) -> str:
    """What the database keeps of a key: its SHA-256, in hex."""
    return hashlib.sha256(str(key).encode()).hexdigest()


def authorise(conn: Connection, code: str, key: str) -> str:
    """The role ``key`` has in class ``code`` (a stored code): ``TEACHER`` for the teacher's
    key, ``VIEWER`` for its read-only key.

    Raises:
        ValueError: unknown code. PermissionError: neither key.
    """
    found = conn.execute(select(classes.c.key_hash).where(classes.c.code == code)).first()
    if found is None:
        raise ValueError(f"no class with code {code!r}; check the code.")
    if hmac.compare_digest(found.key_hash, key_hash(key)):
        return TEACHER
    query = select(class_settings.c.viewer_hash).where(class_settings.c.code == code)
    viewer = conn.execute(query).scalar_one_or_none()
    if viewer is not None and hmac.compare_digest(viewer, key_hash(key)):
        return VIEWER
    retired = select(retired_keys.c.code).where(
        retired_keys.c.code == code, retired_keys.c.key_hash == key_hash(key)
    )
    if conn.execute(retired).first() is not None:
        raise PermissionError(REPLACED)
    raise PermissionError("wrong teacher key for this class.")


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
        """A new read-only key for class ``code`` (a co-teacher's link: sees the class, changes
        nothing); a read-only key made before stops working. Only its hash is stored.

        Raises:
            ValueError: unknown code. PermissionError: not the teacher's key.
        """
        viewer = new_key()
        self.change(code, key, lambda conn, c: _replace_viewer(conn, c, key_hash(viewer)))
        return viewer


def _replace_viewer(conn: Connection, code: str, new_hash: str) -> None:
    """Make ``new_hash`` class ``code``'s read-only key, the one before kept as replaced."""
    query = select(class_settings.c.viewer_hash).where(class_settings.c.code == code)
    old = conn.execute(query).scalar_one_or_none()
    if old is not None:
        conn.execute(retired_keys.insert(), {"code": code, "key_hash": old})
    set_settings(conn, code, viewer_hash=new_hash)
