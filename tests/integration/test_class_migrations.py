"""A class store database made by an earlier release, opened by this one, on SQLite and on a
real PostgreSQL server: the teacher's settings table renamed (``vt_class_controls`` ->
``vt_class_settings``) or created, the answers' ``readable`` column added, every row kept; and
opened again, nothing done twice; two replicas migrating one PostgreSQL database at once."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

import viz_transformer as vt
from viz_transformer.classroom import Controls, Student
from viz_transformer.classroom.access import key_hash
from viz_transformer.classroom.database import make_engine, normalise_url
from viz_transformer.classroom.schema import migrate
from viz_transformer.course import Grade, read_lesson
from viz_transformer.testing.classroom import COUNTING_LESSON

AT = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)
OLD_GRADE = Grade(False, "cosine", "Not quite: the model says cosine.")


def fill_old(url: str, settings: bool) -> str:
    """A class of the last release in the old tables at ``url``: a student at step 3 with one
    wrong answer, and (``settings``) a pace of 3, a pause and a read-only key "v"; its code."""
    old = sa.create_engine(url)
    tables = sa.MetaData()
    tables.reflect(old)
    lesson = read_lesson(COUNTING_LESSON, "counting")
    row = {"lesson_name": "counting", "lesson_source": lesson.source, "key_hash": key_hash("k")}
    with old.begin() as conn:
        conn.execute(
            tables.tables["vt_classes"].insert(), {**row, "code": "OLDONE", "created_at": AT}
        )
        student = {"token": "t0", "class_code": "OLDONE", "name": "Ana", "place": 2}
        done = conn.execute(
            tables.tables["vt_students"].insert(), {**student, "joined_at": AT, "seen_at": AT}
        )
        sid = done.inserted_primary_key[0]
        conn.execute(
            tables.tables["vt_visits"].insert(), {"student_id": sid, "step": 1, "opened_at": AT}
        )
        answer = {"class_code": "OLDONE", "student_id": sid, "step": 1, "answer": "sine"}
        grade = {"correct": False, "expected": "cosine", "feedback": OLD_GRADE.feedback}
        conn.execute(
            tables.tables["vt_answers"].insert(), {**answer, **grade, "seconds": 4.0, "at": AT}
        )
        if settings:
            values = {"pace": 3, "paused": True, "hide_names": False, "closed_at": None}
            conn.execute(
                tables.tables["vt_class_controls"].insert(),
                {**values, "code": "OLDONE", "viewer_hash": key_hash("v"), "changed_at": AT},
            )
    old.dispose()
    return "OLDONE"


@pytest.mark.parametrize("settings", [True, False], ids=["with-controls", "before-controls"])
def test_an_earlier_releases_database_is_brought_up_to_date_with_its_rows_kept(
    empty_database_url, old_class_tables, lesson_model, settings
):
    url = empty_database_url
    old_class_tables(url, settings=settings)
    code = fill_old(url, settings)
    for again in (False, True):  # opened again: migrated once, then found as it is
        store = vt.ClassStore(make_engine(url))
        found = sa.inspect(store.engine)
        assert "vt_class_settings" in found.get_table_names()
        assert "vt_class_controls" not in found.get_table_names()
        assert "readable" in {c["name"] for c in found.get_columns("vt_answers")}
        assert store.teacher.controls(code) == Controls(
            pace=3 if settings else None, paused=settings and not again
        )
        assert store.access.check_key(code, "k") == "teacher"
        if settings:
            assert store.access.check_key(code, "v") == "viewer"
        view = store.students.board(code, "t0")
        assert view.student == Student("Ana", 2, AT)
        assert view.answers[0].grade == OLD_GRADE and view.answers[0].at == AT  # NULL: readable
        funnel = store.teacher.funnel(code, "k").set_index("step")
        assert funnel.loc[2, ["reached", "answered", "correct"]].tolist() == [1, 1, 0]
        if not again:
            store.teacher.resume(code, "k")
            assert store.students.submit(code, "t0", 1, "banana").readable is False
        grades = [a.grade for a in store.students.answers_of(code, "t0")]
        assert [g.readable for g in grades] == [True, False] and grades[1].correct is False
        assert store.teacher.controls(code) == Controls(pace=3 if settings else None)
        with store.engine.begin() as conn:
            assert migrate(conn) == []  # nothing left to do
        store.engine.dispose()


@pytest.mark.parametrize("empty_database_url", ["postgresql"], indirect=True)
def test_a_second_replica_migrating_while_the_first_has_not_committed_waits_and_finds_it_done(
    empty_database_url, old_class_tables
):
    """PostgreSQL's DDL is transactional: without the migration's lock the second replica sees
    the old tables while the first has not committed, and its ALTER TABLE fails afterwards."""
    url = normalise_url(empty_database_url)
    old_class_tables(url, settings=True)
    first, second = sa.create_engine(url), sa.create_engine(url)
    migrated, said = threading.Event(), {}

    def later() -> None:
        migrated.wait()
        with second.begin() as conn:
            said["second"] = migrate(conn)

    thread = threading.Thread(target=later)
    thread.start()
    with first.begin() as conn:
        said["first"] = migrate(conn)
        migrated.set()
        time.sleep(0.5)  # the second replica starts meanwhile: it waits for this commit
    thread.join(30)
    assert said == {
        "first": ["renamed vt_class_controls to vt_class_settings", "added vt_answers.readable"],
        "second": [],
    }
    first.dispose()
    second.dispose()


REPLICA = """import sys, time
from viz_transformer.classroom import ClassStore
from viz_transformer.classroom.database import make_engine, normalise_url
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))  # both start together
store = ClassStore(make_engine(sys.argv[1]))
print(store.access.check_key("OLDONE", "k"))
"""


@pytest.mark.parametrize("empty_database_url", ["postgresql"], indirect=True)
def test_two_replicas_starting_at_once_on_an_old_postgresql_database_both_come_up(
    empty_database_url, old_class_tables, lesson_model
):
    url = normalise_url(empty_database_url)
    old_class_tables(url, settings=True)
    code = fill_old(url, settings=True)
    start = str(time.time() + 3)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    replicas = [
        subprocess.Popen(
            [sys.executable, "-c", REPLICA, url, start],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in replicas]
    assert [p.returncode for p in replicas] == [0, 0], outs
    assert [out.strip() for out, _ in outs] == ["teacher", "teacher"]
    store = vt.ClassStore(make_engine(url))
    assert (
        store.access.check_key(code, "k") == "teacher"
        and store.access.check_key(code, "v") == "viewer"
    )
    with store.engine.begin() as conn:
        assert migrate(conn) == []
    store.engine.dispose()
