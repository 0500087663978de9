"""The teacher's controls on a real PostgreSQL server (the unit tier runs them on SQLite,
tests/unit/test_class_controls.py): each set through one replica's store and read through
another's (databases of earlier releases: test_class_migrations.py)."""

from __future__ import annotations

import pytest

import viz_transformer as vt
from viz_transformer.classroom import Controls
from viz_transformer.classroom.database import make_engine
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
    with pytest.raises(ValueError, match="Your teacher removed you"):
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
