"""Issue 55, the class's keys in the store (SQLite): a one-time link opens the class once and is
then worthless, the session it gives ends on "Leave", on a new teacher's key (``rotate``), on a
new read-only link (for a read-only session) and after ``VT_TEACHER_MINUTES``; only hashes are
stored; a code typed in lower case or with spaces is the same class."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
import sqlalchemy as sa

import viz_transformer as vt
from viz_transformer.classroom import passes, schema
from viz_transformer.classroom.access import REPLACED
from viz_transformer.classroom.database import make_engine
from viz_transformer.classroom.rows import now
from viz_transformer.course import read_lesson
from viz_transformer.testing.classroom import COUNTING_LESSON as LESSON


@pytest.fixture
def room(lesson_model, tmp_path):
    store = vt.ClassStore(make_engine(f"sqlite:///{tmp_path / 'classes.sqlite3'}"))
    code, key = store.teacher.create(read_lesson(LESSON, "counting"))
    return store, code, key, vt.ClassStore(store.engine)  # the last: another replica


def test_a_one_time_link_opens_the_class_once_and_then_says_how_to_get_another(room):
    store, code, key, replica = room
    once = store.access.one_time_link(code, key)
    # the code as a student might type it
    session, role = replica.access.open_link(code.lower(), once)
    assert role == "teacher" and store.access.check_key(code, session) == "teacher"
    store.teacher.pause(code, session)  # the session changes the class as the key does
    assert replica.teacher.board(f" {code[:3]} {code[3:]} ", session).controls.paused
    with pytest.raises(PermissionError, match="already used") as used:
        store.access.open_link(code, once)
    assert f"python -m viz_transformer class link {code}" in str(used.value)
    with pytest.raises(PermissionError, match="wrong teacher key"):  # a link is not a session
        store.access.check_key(code, once)
    with pytest.raises(PermissionError, match="not a one-time link"):
        store.access.open_link(code, passes.new_token())
    other, other_key = store.teacher.create(read_lesson(LESSON, "counting"))
    with pytest.raises(PermissionError, match="not a one-time link"):  # another class's link
        store.access.open_link(code, store.access.one_time_link(other, other_key))


def test_a_link_opened_by_many_browsers_at_once_opens_one(room):
    store, code, key, _ = room
    once, opened, refused = store.access.one_time_link(code, key), [], []
    start = threading.Barrier(6)

    def open_it() -> None:
        start.wait()
        try:
            opened.append(vt.ClassStore(store.engine).access.open_link(code, once))
        except PermissionError:
            refused.append(1)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(opened) == 1 and len(refused) == 5


def test_a_new_teachers_key_ends_the_old_key_its_links_and_every_session(room):
    store, code, key, replica = room
    first, _ = store.access.open_link(code, store.access.one_time_link(code, key))
    second = store.access.open_session(code, key)  # a class opened on the page
    unused = store.access.one_time_link(code, key)
    new = replica.access.rotate(code, first)  # the page's button: a session may rotate
    assert new != key and store.access.check_key(code, new) == "teacher"
    with pytest.raises(PermissionError, match="wrong teacher key"):
        store.teacher.pause(code, key)
    for session in (first, second):
        with pytest.raises(PermissionError, match=r"access to class \w+ has ended"):
            replica.teacher.board(code, session)
    with pytest.raises(PermissionError, match="has ended"):
        store.access.open_link(code, unused)
    session, role = store.access.open_link(code, store.access.one_time_link(code, new))
    assert role == "teacher" and not store.teacher.controls(code).paused
    store.teacher.pause(code, session)
    assert replica.teacher.controls(code).paused


def test_leaving_ends_that_browsers_session_only(room):
    store, code, key, replica = room
    here = store.access.open_session(code, key)
    there, _ = store.access.open_link(code, store.access.one_time_link(code, key))
    assert replica.access.leave(code.lower(), here) is True
    assert store.access.leave(code, here) is False  # left already
    with pytest.raises(PermissionError, match="has ended"):
        store.access.check_key(code, here)
    assert (
        store.access.check_key(code, there) == "teacher"
        and store.access.check_key(code, key) == "teacher"
    )


def test_a_session_lasts_the_minutes_set_and_an_unused_link_a_day(room, monkeypatch):
    store, code, key, _ = room
    monkeypatch.setenv("VT_TEACHER_MINUTES", "45")
    session = store.access.open_session(code, key)
    link, kept = store.access.one_time_link(code, key), store.access.one_time_link(code, key)
    with store.engine.connect() as conn:
        rows = {r.kind: r for r in conn.execute(sa.select(schema.passes))}
    assert rows["session"].expires_at - rows["session"].made_at == timedelta(minutes=45)
    assert rows["link"].expires_at - rows["link"].made_at == timedelta(hours=passes.LINK_HOURS)
    later = now() + timedelta(minutes=46)
    monkeypatch.setattr(passes, "now", lambda: later)
    with pytest.raises(PermissionError, match="has ended"):
        store.access.check_key(code, session)
    assert store.access.open_link(code, link)[1] == "teacher"  # a link lives a day
    monkeypatch.setattr(passes, "now", lambda: later + timedelta(hours=passes.LINK_HOURS))
    with pytest.raises(PermissionError, match="more than 24 hours old"):
        store.access.open_link(code, kept)
    monkeypatch.setenv("VT_TEACHER_MINUTES", "0")
    with pytest.raises(ValueError, match="VT_TEACHER_MINUTES=0 must be at least 1"):
        store.access.open_session(code, key)


def test_a_read_only_link_gives_a_session_that_reads_and_a_newer_link_ends_it(room):
    store, code, key, replica = room
    viewer, role = replica.access.open_link(code, store.access.read_only_link(code, key))
    assert role == "viewer" and len(store.teacher.board(code, viewer).roster) == 0
    for change in (
        lambda: store.teacher.pause(code, viewer),
        lambda: store.access.one_time_link(code, viewer),
        lambda: store.access.rotate(code, viewer),
    ):
        with pytest.raises(PermissionError, match="read-only"):
            change()
    key = store.access.rotate(code, key)  # a new teacher's key leaves the read-only link as it is
    assert store.access.check_key(code, viewer) == "viewer"
    newer, _ = store.access.open_link(code, replica.access.read_only_link(code, key))
    with pytest.raises(PermissionError) as replaced:
        store.access.check_key(code, viewer)
    assert str(replaced.value) == REPLACED and store.access.check_key(code, newer) == "viewer"


def test_the_database_keeps_no_key_link_or_session_only_their_hashes(room):
    store, code, key, _ = room
    secrets = [key, store.access.one_time_link(code, key), store.access.open_session(code, key)]
    secrets.append(store.access.read_only_link(code, key))
    secrets.append(store.access.open_link(code, secrets[1])[0])
    secrets.append(store.access.rotate(code, secrets[2]))
    with store.engine.connect() as conn:
        kept = " ".join(
            str(row)
            for table in schema.metadata.sorted_tables
            for row in conn.execute(sa.select(table))
        )
    assert code in kept and not [s for s in secrets if s in kept]
