"""Database engines for the class store, one per URL per process: SQLite in WAL mode with a busy
timeout and write transactions that take the write lock first (``BEGIN IMMEDIATE``), so replicas
of ``serve`` on one machine share one file without "database is locked"; PostgreSQL through
psycopg for replicas on several machines."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, Table, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.pool import StaticPool

from viz_transformer.classroom.schema import metadata, migrate

BUSY_MS = 30_000  # a SQLite writer waits this long for another's lock before failing
PG_POOL = 20  # PostgreSQL connections a replica keeps open
RETRIES = 5  # a write that still finds the database busy is tried again, with a growing pause
_ENGINES: dict[str, Engine] = {}
_LOCK = threading.Lock()
_WRITERS: dict[Engine, threading.Lock] = {}  # one writer at a time per SQLite engine
_WRITERS_LOCK = threading.Lock()  # guards _WRITERS (make_engine may run outside _LOCK)
T = TypeVar("T")


def normalise_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` go through psycopg 3 (the driver installed).

    Raises:
        ValueError: text that is not a database URL, or a database other than SQLite and
            PostgreSQL.
    """
    try:
        parsed = make_url(url.strip())
    except ArgumentError:
        raise ValueError(
            f"{url!r} is not a database URL; give sqlite:///path/to/file.sqlite3 or "
            "postgresql://user:password@host:5432/database."
        ) from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise ValueError(
            f"{parsed.get_backend_name()} databases are not supported; use SQLite or PostgreSQL."
        )
    return parsed.render_as_string(hide_password=False)


def _sqlite_events(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # transactions begun below, not by the driver
        cursor = dbapi_connection.cursor()
        for pragma in (
            "journal_mode=WAL",
            f"busy_timeout={BUSY_MS}",
            "synchronous=NORMAL",
            "foreign_keys=ON",
        ):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # a deferred transaction that reads and then writes can fail at once with "locked"
        # (no busy wait); taking the write lock first makes writers queue instead
        write = conn.get_execution_options().get("vt_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def engine_for(url: str) -> Engine:
    """The process's engine for ``url`` (made once by ``make_engine``).

    Raises:
        ValueError: a bad URL (see ``normalise_url``).
        OperationalError: a database that cannot be reached.
    """
    url = normalise_url(url)
    with _LOCK:
        if url not in _ENGINES:
            _ENGINES[url] = make_engine(url)
        return _ENGINES[url]


def make_engine(url: str) -> Engine:
    """A new engine for ``url`` with the settings above; the tables are created when missing,
    and those of an earlier release brought up to date (``schema.migrate``).
    Each engine stands for one replica: use ``engine_for`` to share one in a process.
    ``sqlite://`` is a database in memory, new with each engine (for tests)."""
    url = normalise_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(url, pool_size=10, max_overflow=20, pool_timeout=60)
        else:  # in memory (``sqlite://``): one connection, or each would see a database of its own
            engine = create_engine(
                url, poolclass=StaticPool, connect_args={"check_same_thread": False}
            )
        _sqlite_events(engine)
        with _WRITERS_LOCK:
            _WRITERS[engine] = threading.Lock()
    else:
        # a PostgreSQL connection is a server process, slow to open: keep as many as a class
        # answering at once uses (PG_POOL per replica; its default max_connections of 100 serves
        # four replicas at their peak)
        engine = create_engine(
            url, pool_size=PG_POOL, max_overflow=5, pool_timeout=60, pool_pre_ping=True
        )
    _create_tables(engine)
    return engine


def _create_tables(engine: Engine) -> None:
    for attempt in range(RETRIES):  # two replicas starting at once may race on CREATE TABLE
        try:
            with engine.connect() as conn:
                conn.execution_options(vt_write=True)
                with conn.begin():
                    migrate(conn)
                    metadata.create_all(conn, checkfirst=True)
            return
        except Exception:
            if attempt == RETRIES - 1:
                raise
            time.sleep(0.1 * (attempt + 1))


def upsert(
    conn: Connection, table: Table, row: dict[str, Any], update: dict[str, Any] | None = None
) -> None:
    """Insert ``row`` into ``table``; where a row with its primary key exists, set ``update``'s
    columns there instead (None: leave that row as it is). SQLite and PostgreSQL alike."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    insert = dialect.insert(table).values(row)
    keys = [column.name for column in table.primary_key]
    if update is None:
        conn.execute(insert.on_conflict_do_nothing(index_elements=keys))
    else:
        conn.execute(insert.on_conflict_do_update(index_elements=keys, set_=update))


def _busy(exc: OperationalError) -> bool:
    text = str(exc.orig).lower()
    return "locked" in text or "busy" in text or "could not serialize" in text


def run(engine: Engine, work: Callable[[Connection], T], write: bool = False) -> T:
    """``work(conn)`` inside one transaction, committed when it returns.

    A write on SQLite holds the write lock from its first statement; one that still finds the
    database busy after ``BUSY_MS`` is tried again (``RETRIES`` times), so a busy moment never
    reaches a student as an error.
    """
    # SQLite's busy handler sleeps between polls (up to 100 ms), so writers of one process queue
    # on a lock that wakes the next at once; only one per process waits on the file
    with _WRITERS_LOCK:
        queue = _WRITERS.get(engine) if write else None
    for attempt in range(RETRIES):
        try:
            with queue or contextlib.nullcontext(), engine.connect() as conn:
                conn.execution_options(vt_write=write)
                with conn.begin():
                    return work(conn)
        except OperationalError as exc:
            if not _busy(exc) or attempt == RETRIES - 1:
                raise
            time.sleep(0.05 * 2**attempt)
    raise AssertionError("unreachable")
