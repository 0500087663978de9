"""The teacher's controls on a real PostgreSQL server (the unit tier runs them on SQLite,
tests/unit/test_class_controls.py): each set through one replica's store and read through
another's (databases of earlier releases: test_class_migrations.py)."""

from __future__ import annotations

import threading

import pytest

import viz_transformer as vt
from viz_transformer.classroom import Controls
from viz_transformer.classroom.database import make_engine
from viz_transformer.course import read_lesson
from viz_transformer.testing.classroom import COUNTING_LESSON


def test_every_control_on_postgres_reaches_another_replica(postgres_url, lesson_model):
    store, replica = vt.ClassStore(make_engine(postgres_url)), vt.classroom(postgres_url)
    code, key = store.teacher.create(read_lesson(COUNTING_LESSON, "counting"))
    ana, bo = store.students.join(code, "Ana"), store.students.join(code, "Bo")
    store.teacher.set_pace(code, key, 2)
    with pytest.raises(ValueError, match="Wait for your teacher"):
        replica.students.move(code, ana, 2)
    store.teacher.pause(code, key)
    store.teacher.hide_names(code, key)
    assert replica.students.board(code, ana).controls == Controls(
        pace=2, paused=True, hide_names=True
    )
    assert replica.students.submit(code, ana, 1, "cosine").correct  # kept during a pause
    pseudonyms = replica.teacher.roster(code, key)["pseudonym"].tolist()
    assert (
        pseudonyms == store.teacher.roster(code, key)["pseudonym"].tolist()
        and len(set(pseudonyms)) == 2
    )
    assert replica.teacher.remove(code, key, "bo") == "Bo"
    with pytest.raises(ValueError, match="Your teacher removed you"):
        store.students.board(code, bo)
    viewer = store.access.viewer_key(code, key)
    assert replica.access.check_key(code, viewer) == "viewer"
    with pytest.raises(PermissionError, match="read-only"):
        replica.teacher.resume(code, viewer)
    store.teacher.resume(code, key)
    store.teacher.set_pace(code, key, None)
    replica.teacher.close(code, key)
    assert store.teacher.controls(code) == Controls(hide_names=True, closed=True)
    with pytest.raises(ValueError, match="closed"):
        store.students.join(code, "Cy")
    assert store.teacher.answers(code, viewer)["student"].tolist() == ["Ana"]
    store.engine.dispose()


def test_one_time_links_sessions_and_a_new_key_across_replicas_on_postgres(
    postgres_url, lesson_model
):
    """Issue 55 on PostgreSQL: a link opened by two replicas at once opens one browser; a new
    key from one replica ends the sessions another made; "Leave" ends one session."""
    store, replica = (
        vt.ClassStore(make_engine(postgres_url)),
        vt.ClassStore(make_engine(postgres_url)),
    )
    code, key = store.teacher.create(read_lesson(COUNTING_LESSON, "counting"))
    once, opened, refused = store.access.one_time_link(code, key), [], []
    start = threading.Barrier(2)

    def open_it(through: vt.ClassStore) -> None:
        start.wait()
        try:
            opened.append(through.access.open_link(code, once))
        except PermissionError as exc:
            refused.append(str(exc))

    threads = [threading.Thread(target=open_it, args=(s,)) for s in (store, replica)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(opened) == 1 and len(refused) == 1 and "already used" in refused[0]
    session = opened[0][0]
    other = replica.access.open_session(code, key)
    replica.teacher.pause(code, session)
    assert store.access.leave(code, other) and store.teacher.controls(code).paused
    with pytest.raises(PermissionError, match="has ended"):
        replica.access.check_key(code, other)
    new = replica.access.rotate(code, session)
    with pytest.raises(PermissionError, match="has ended"):
        store.teacher.resume(code, session)
    store.teacher.resume(code, new)
    assert not replica.teacher.controls(code).paused
    store.engine.dispose()
    replica.engine.dispose()
