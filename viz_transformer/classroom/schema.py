"""The class store's tables (SQLAlchemy Core): a class, its students, the steps each opened,
every answer given, and the teacher's settings of the class; and ``migrate``, which brings a
database made by an earlier release to them. Times are UTC.

A table added later is created by ``create_all`` on a database made before it (a class without
a row in ``vt_class_settings`` has the default controls); a renamed table or an added column
needs a step in ``migrate``, run before ``create_all`` on every engine's first connection."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    inspect,
)

NAME_CHARS = 40  # a student's display name
ANSWER_CHARS = 2000  # an answer as typed (a free-text answer is a few sentences)

metadata = MetaData()

classes = Table(
    "vt_classes",
    metadata,
    Column("code", String(16), primary_key=True),  # what students type or follow in a link
    Column("lesson_name", String(200), nullable=False),
    Column("lesson_source", Text, nullable=False),  # the lesson file's text: any replica grades it
    Column("key_hash", String(64), nullable=False),  # sha256 of the teacher's key, never the key
    Column("created_at", DateTime(timezone=True), nullable=False),
)

students = Table(
    "vt_students",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("token", String(64), nullable=False, unique=True),  # in the student's URL
    Column("class_code", String(16), ForeignKey("vt_classes.code"), nullable=False, index=True),
    Column("name", String(NAME_CHARS), nullable=False),
    Column("place", Integer, nullable=False, default=0),  # the step last opened
    Column("joined_at", DateTime(timezone=True), nullable=False),
    Column("seen_at", DateTime(timezone=True), nullable=False),
)

visits = Table(  # the first time each student opened each step ("reached"; answer times)
    "vt_visits",
    metadata,
    Column("student_id", Integer, ForeignKey("vt_students.id"), primary_key=True),
    Column("step", Integer, primary_key=True),
    Column("opened_at", DateTime(timezone=True), nullable=False),
)

answers = Table(
    "vt_answers",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("class_code", String(16), ForeignKey("vt_classes.code"), nullable=False, index=True),
    Column("student_id", Integer, ForeignKey("vt_students.id"), nullable=False, index=True),
    Column("step", Integer, nullable=False),
    Column("answer", Text, nullable=False),
    Column("correct", Boolean, nullable=True),  # None: a free-text answer, not graded
    Column("expected", Text, nullable=False),  # what the model said when it was graded
    Column("feedback", Text, nullable=False),
    Column("readable", Boolean, nullable=True),  # False: not read at all; NULL: stored before
    Column("seconds", Float, nullable=True),  # from first opening the step to this answer
    Column("at", DateTime(timezone=True), nullable=False),
)

class_settings = Table(  # the teacher's controls; no row: no pace, not paused, names shown
    "vt_class_settings",
    metadata,
    Column("code", String(16), ForeignKey("vt_classes.code"), primary_key=True),
    Column("pace", Integer, nullable=True),  # the last step students may open, from 1; None: all
    Column("paused", Boolean, nullable=False, default=False),
    Column("hide_names", Boolean, nullable=False, default=False),
    Column("closed_at", DateTime(timezone=True), nullable=True),  # None: open
    Column("viewer_hash", String(64), nullable=True),  # sha256 of the read-only key, if made
    Column("changed_at", DateTime(timezone=True), nullable=False),
)

removed = Table(  # students the teacher removed: their page says so; whether the name may rejoin
    "vt_removed",
    metadata,
    Column("token", String(64), primary_key=True),  # the removed student's token
    Column("class_code", String(16), ForeignKey("vt_classes.code"), nullable=False, index=True),
    Column("name", String(NAME_CHARS), nullable=False),
    Column("may_rejoin", Boolean, nullable=False, default=False),
    Column("removed_at", DateTime(timezone=True), nullable=False),
)

retired_keys = Table(  # read-only keys a newer one replaced: their link says so
    "vt_retired_keys",
    metadata,
    Column("code", String(16), ForeignKey("vt_classes.code"), primary_key=True),
    Column("key_hash", String(64), primary_key=True),
)


passes = Table(  # one-time links and browser sessions, each standing for a key (classroom/passes)
    "vt_teacher_passes",
    metadata,
    Column("token_hash", String(64), primary_key=True),  # sha256 of the token, never the token
    Column("code", String(16), ForeignKey("vt_classes.code"), nullable=False, index=True),
    Column("kind", String(8), nullable=False),  # "link" (opens the class once) or "session"
    # sha256 of the key it stands for (the teacher's or the read-only one): a new key ends it
    Column("key_hash", String(64), nullable=False),
    Column("made_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("used_at", DateTime(timezone=True), nullable=True),  # a link used, a session left
)

OLD_SETTINGS = "vt_class_controls"  # vt_class_settings' name in databases made before it
# the PostgreSQL advisory lock that makes replicas starting at once migrate one after another
# (any fixed 64-bit number; this one spells "vt-class" in ASCII)
MIGRATION_LOCK = 0x76742D636C617373


def migrate(conn: Connection) -> list[str]:
    """Bring the tables of a database made by an earlier release to this schema, data kept (in
    the caller's transaction; run before ``create_all``): the teacher's settings table renamed
    from ``vt_class_controls``, the answers' ``readable`` column added (NULL in older rows).

    Safe when several replicas start at once on one database: on PostgreSQL the transaction
    first takes an advisory lock held until it ends (``pg_advisory_xact_lock``), so a second
    replica looks at the tables only once the first has committed, and finds nothing to do
    (PostgreSQL's DDL is transactional: without the lock both would see the old tables, and
    the second's ``ALTER TABLE`` would fail once the first committed). On SQLite the caller's
    write transaction (``BEGIN IMMEDIATE``) already holds the database's one write lock.

    Returns:
        What was done, one line per step (nothing for a current or a new database).
    """
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
    found = inspect(conn)
    tables, done = set(found.get_table_names()), []
    if OLD_SETTINGS in tables and class_settings.name not in tables:
        conn.exec_driver_sql(f"ALTER TABLE {OLD_SETTINGS} RENAME TO {class_settings.name}")
        done.append(f"renamed {OLD_SETTINGS} to {class_settings.name}")
    if answers.name in tables:
        columns = {c["name"] for c in found.get_columns(answers.name)}
        if "readable" not in columns:
            conn.exec_driver_sql(f"ALTER TABLE {answers.name} ADD COLUMN readable BOOLEAN")
            done.append(f"added {answers.name}.readable")
    return done
