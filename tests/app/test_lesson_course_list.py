"""The Lesson page without a lesson in the URL lists the built-in course in order, each lesson
with its topic, minutes, steps, model, prerequisites (by title) and goals; a teacher's lesson
outside the course comes after it, and one whose model this machine lacks says why."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from viz_transformer.ui import lesson_place

ROOT = Path(__file__).resolve().parents[2]
APP, LESSON = str(ROOT / "app.py"), "pages/lesson.py"
OWN = """\
title: My own lesson
model: paper-en-pt
steps:
  - title: one
    page: attention_maps
"""


@pytest.fixture
def teacher_dir(tmp_path, monkeypatch) -> Path:
    """A teacher's lesson folder: a lesson outside the course, one on a model not here."""
    (tmp_path / "my_own.yaml").write_text(OWN)
    (tmp_path / "elsewhere.yaml").write_text(OWN.replace("paper-en-pt", "gpt-9"))
    monkeypatch.setenv("VT_LESSON_DIR", str(tmp_path))
    lesson_place.lesson.clear()
    yield tmp_path
    lesson_place.lesson.clear()


def _chooser() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(LESSON).run()
    assert not at.exception, at.exception
    return at


def test_the_course_is_listed_in_order_with_its_facts(teacher_dir):
    at = _chooser()
    built_in = [vt.load_lesson(n) for n in vt.lessons() if n not in ("my_own", "elsewhere")]
    course = sorted((c for c in built_in if c.order), key=lambda lesson: lesson.order)
    assert len(course) >= 7
    starts = [b for b in at.button if b.key and b.key.startswith("start-")]
    labels = [b.label for b in starts]
    assert labels[: len(course)] == [f"{c.order}. {c.title}" for c in course]
    assert labels[len(course)] == "My own lesson"  # outside the course: after it
    captions = [str(c.value).replace("\\", "") for c in at.caption]  # as read: no escapes
    titles = {c.name: c.title for c in course}
    for lesson in course:
        line = next(c for c in captions if c.startswith(f"{lesson.topic} · "))
        assert f"{lesson.minutes} min" in line and f"{len(lesson.steps)} steps" in line
        assert lesson.model in line
        for name in lesson.prerequisites:
            assert titles[name] in line
    goals = [e for e in at.expander if e.label == "Goals"]
    assert len(goals) == len(course)
    shown = [str(m.value) for e in goals for m in e.markdown]
    assert all(goal.split()[0] in "".join(shown) for c in course for goal in c.goals)
    assert any("elsewhere" in c and "cannot open here" in c and "gpt-9" in c for c in captions)


def test_a_course_lesson_starts_from_its_button(teacher_dir):
    at = _chooser()
    at.button(key="start-decoder").click().run()
    assert at.query_params["lesson"] == "decoder"
    assert at.title[0].value == vt.load_lesson("decoder").title
