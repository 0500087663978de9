"""The teacher's controls on a real PostgreSQL server (the unit tier runs them on SQLite,
tests/unit/test_class_controls.py): each set through one replica's store and read through
another's, and a PostgreSQL database made before the controls existed gets their table when a
replica opens it, its classes kept."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

import viz_transformer as vt
from viz_transformer.classroom import Controls
from viz_transformer.classroom.database import make_engine, normalise_url
from viz_transformer.classroom.schema import metadata, students
from viz_transformer.classroom.store_base import now
from viz_transformer.course import read_lesson
from viz_transformer.testing.classroom import COUNTING_LESSON


def test_every_control_on_postgres_reaches_another_replica(postgres_url, lesson_model):
    store, replica = vt.ClassStore(make_engine(postgres_url)), vt.classroom(postgres_url)
    code, key = store.create(read_lesson(COUNTING_LESSON, "counting"))
    ana, bo = store.join(code, "Ana"), store.join(code, "Bo")
    store.set_pace(code, key, 2)
    with pytest.raises(ValueError, match="Wait for your teacher"):
        replica.move(code, ana, 2)
    store.pause(code, key)
    store.hide_names(code, key)
    assert replica.view(code, ana).controls == Controls(pace=2, paused=True, hide_names=True)
    assert replica.submit(code, ana, 1, "cosine").correct  # kept during a pause
    pseudonyms = replica.roster(code, key)["pseudonym"].tolist()
    assert pseudonyms == store.roster(code, key)["pseudonym"].tolist() and len(set(pseudonyms)) == 2
    assert replica.remove(code, key, "bo") == "Bo"
    with pytest.raises(ValueError, match="unknown student"):
        store.view(code, bo)
    viewer = store.viewer_key(code, key)
    assert replica.check_key(code, viewer) == "viewer"
    with pytest.raises(PermissionError, match="read-only"):
        replica.resume(code, viewer)
    store.resume(code, key)
    store.set_pace(code, key, None)
    replica.close(code, key)
    assert store.controls(code) == Controls(hide_names=True, closed=True)
    with pytest.raises(ValueError, match="closed"):
        store.join(code, "Cy")
    assert store.answers(code, viewer)["student"].tolist() == ["Ana"]
    store.engine.dispose()


def test_a_postgres_database_made_before_the_controls_gets_them(postgres_url, lesson_model):
    schema = f"old_{uuid.uuid4().hex[:8]}"  # a database of its own: a schema on the server
    with sa.create_engine(normalise_url(postgres_url)).begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = normalise_url(postgres_url) + f"?options=-csearch_path%3D{schema}"
    old = sa.create_engine(url)
    before = [t for name, t in metadata.tables.items() if name != "vt_class_controls"]
    metadata.create_all(old, tables=before)
    code, key = vt.ClassStore(old).create(read_lesson(COUNTING_LESSON, "counting"))
    with old.begin() as conn:
        row = {"token": "t0", "class_code": code, "name": "Ana", "place": 1}
        conn.execute(students.insert(), {**row, "joined_at": now(), "seen_at": now()})
    assert "vt_class_controls" not in sa.inspect(old).get_table_names()
    old.dispose()
    for again in (False, True):  # opened again: the table created once, then found, kept
        store = vt.ClassStore(make_engine(url))
        assert "vt_class_controls" in sa.inspect(store.engine).get_table_names()
        assert store.view(code, "t0").controls == Controls(paused=again)
        store.pause(code, key)
        assert store.student(code, "t0").place == 1
        store.engine.dispose()
