"""A lesson's course fields (order, topic, minutes, goals, prerequisites): read into the
``Lesson``, optional (a teacher's lesson outside the course needs none), and each wrong one
named at its line by validation."""

from __future__ import annotations

from pathlib import Path

import pytest

import viz_transformer as vt

COURSE = """\
title: Tiny course lesson
model: lesson-tiny
order: 3
topic: Reading one map
minutes: 20
goals:
  - Read a cell
  - Name a head
prerequisites: [paper_tour]
steps:
  - title: one
    check: {kind: token, sentence: "delta alpha", step: 1}
"""
# what to replace in COURSE, with what, the line blamed, words of the message
CASES = {
    "order zero": ("order: 3", "order: 0", 3, "'order' must be a whole number from 1"),
    "order as text": ("order: 3", "order: third", 3, "'order' must be a whole number"),
    "minutes beyond a day's lab": ("minutes: 20", "minutes: 900", 5, "from 1 to 600"),
    "minutes as text": ("minutes: 20", "minutes: twenty", 5, "'minutes' must be a whole"),
    "empty topic": ("topic: Reading one map", 'topic: ""', 4, "'topic' must be non-empty"),
    "goals as one text": ("goals:\n  - Read a cell\n  - Name a head", "goals: read", 6,
                          "'goals' must be a list of non-empty texts"),
    "a number as goals": ("goals:\n  - Read a cell\n  - Name a head", "goals: 3", 6,
                          "'goals' must be a list"),
    "an empty goal": ("  - Name a head", '  - ""', 8, "'goals' must be a list"),
    "unknown prerequisite": ("[paper_tour]", "[paper_tour, paper_tuor]", 9,
                             "prerequisite 'paper_tuor' is not another lesson here"),
    "itself as prerequisite": ("[paper_tour]", "[tiny]", 9, "prerequisite 'tiny'"),
}  # fmt: skip


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    return path


def test_the_course_fields_are_read(tmp_path, lesson_model):
    path = write(tmp_path, COURSE)
    assert vt.validate_lesson(path) == []
    lesson = vt.load_lesson(path)
    assert (lesson.order, lesson.topic, lesson.minutes) == (3, "Reading one map", 20)
    assert lesson.goals == ("Read a cell", "Name a head")
    assert lesson.prerequisites == ("paper_tour",)


def test_a_lesson_outside_a_course_needs_no_course_fields(tmp_path, lesson_model):
    head, steps = COURSE.split("order: 3\n")[0], COURSE[COURSE.index("steps:") :]
    lesson = vt.load_lesson(write(tmp_path, head + steps))
    assert (lesson.order, lesson.topic, lesson.minutes) == (None, "", None)
    assert lesson.goals == () and lesson.prerequisites == ()


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_wrong_course_field_is_named_at_its_line(case, tmp_path, lesson_model):
    old, new, line, words = CASES[case]
    assert old in COURSE, case
    path = write(tmp_path, COURSE.replace(old, new, 1))
    problems = vt.validate_lesson(path)
    assert any(p.startswith(f"{path}:{line}: ") and words in p for p in problems), problems
    if "prerequisite" not in words:  # the others are the file's shape: loading refuses them
        with pytest.raises(ValueError, match=f"{path}:{line}: "):
            vt.load_lesson(path)


def test_the_built_in_course_reads_in_order():
    orders = {name: vt.load_lesson(name).order for name in ("paper_tour", "attention_maps")}
    assert orders == {"paper_tour": 1, "attention_maps": 2}


VIEW = """\
title: Views
model: lesson-tiny
steps:
  - title: one
    page: qkv_walkthrough
    view: {sentence: "delta alpha", kind: encoder, layer: 0, head: 0, token: 1, why_key: 2}
  - title: two
    page: decoder_steps
    view: {sentence: "delta alpha", step: 1}
"""


@pytest.mark.parametrize(
    ("old", "new", "line", "words"),
    [
        ("token: 1", "token: 3", 6, "token 3 does not exist: the query tokens"),
        ("why_key: 2", "why_key: 5", 6, "why_key 5 does not exist: the key tokens"),
        ("token: 1, why_key: 2", "why_query: 9", 6, "why_query 9 does not exist"),
        ("step: 1", "step: 12", 9, "step 12 does not exist: the decoder's input"),
    ],
)
def test_a_view_names_a_token_its_sentence_has(tmp_path, lesson_model, old, new, line, words):
    """The walkthrough's query token and the why section's query and key (of the view's kind)
    and the decoder's step are indices into the view's sentence; the page would show another."""
    path = write(tmp_path, VIEW)
    assert vt.validate_lesson(path) == []
    problems = vt.validate_lesson(write(tmp_path, VIEW.replace(old, new)))
    assert any(p.startswith(f"{path}:{line}: ") and words in p for p in problems), problems
