"""The one table of question kinds (``course/question_kinds.py``): each kind's row names an answer
widget there is, its fields are what a lesson file may give each kind, and a question about an
attention kind the model does not record is a located problem at validation, never a crash; an
answer to a step without a question is a ValueError the page shows, not an assert."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import viz_transformer as vt
from viz_transformer.course import QUESTION_KINDS, read_lesson, validation
from viz_transformer.course.lesson import Lesson
from viz_transformer.models.registry import forget_memory_models, offer_memory_model

SENTENCE = "delta alpha"
# one check of each kind with every field it may have, as a lesson file writes it
FULL = {
    "head": {"attention": "cross", "sentence": SENTENCE, "query": 1, "key": 0, "layers": [0]},
    "token": {"sentence": SENTENCE, "step": 1},
    "number": {"quantity": "pe_value", "args": {"position": 1, "dim": 0, "d_model": 8},
               "tolerance": 0.1},
    "choice": {"options": ["yes", "no"], "correct": 1},
    "text": {},
}  # fmt: skip


def lesson_text(kind: str, fields: dict, model: str = "lesson-tiny") -> str:
    check = {"kind": kind, **fields}
    return f"title: t\nmodel: {model}\nsteps:\n  - title: s\n    check: {check!r}\n"


def problems(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "one.yaml"
    path.write_text(text)
    return vt.validate_lesson(path)


@pytest.mark.needs("streamlit")
def test_every_kind_names_an_answer_widget_that_takes_a_question():
    """Each row's ``widget`` is a widget of ``ui/answer_widgets.py`` (looked up by that name)."""
    from viz_transformer.ui.answer_widgets import WIDGETS

    assert set(WIDGETS) == {"head_answer", "typed_answer", "choice_answer", "free_answer"}
    assert {kind: rule.widget for kind, rule in QUESTION_KINDS.items()} == {
        "head": "head_answer", "token": "typed_answer", "number": "typed_answer",
        "choice": "choice_answer", "text": "free_answer",
    }  # fmt: skip


@pytest.mark.parametrize("kind", list(QUESTION_KINDS))
def test_a_kind_takes_exactly_its_rows_fields(kind, tmp_path, lesson_model):
    rule = QUESTION_KINDS[kind]
    assert set(FULL[kind]) == set(rule.required) | set(rule.optional)
    assert problems(tmp_path, lesson_text(kind, FULL[kind])) == []
    for field in rule.required:
        rest = {k: v for k, v in FULL[kind].items() if k != field}
        assert f"lacks {field!r}" in " ".join(problems(tmp_path, lesson_text(kind, rest)))
    for field in rule.optional:
        rest = {k: v for k, v in FULL[kind].items() if k != field}
        assert problems(tmp_path, lesson_text(kind, rest)) == []
    extra = problems(tmp_path, lesson_text(kind, {**FULL[kind], "colour": "red"}))
    assert len(extra) == 1 and "unknown field 'colour'" in extra[0]


def test_a_graded_kind_is_graded_and_text_is_kept(lesson_model):
    for kind, rule in QUESTION_KINDS.items():
        question = vt.Question(kind, FULL[kind], "lesson-tiny")
        result = vt.grade(question, "yes")
        assert (result.correct is None) is (not rule.graded), kind


def test_a_question_on_a_kind_the_model_does_not_show_is_a_value_error_on_loading(
    tmp_path, lesson_model
):
    spec = dataclasses.replace(lesson_model.spec, name="lesson-nocross", shows=("encoder",))
    offer_memory_model(dataclasses.replace(lesson_model, spec=spec))
    try:
        found = problems(tmp_path, lesson_text("head", FULL["head"], "lesson-nocross"))
        with pytest.raises(ValueError, match="shows no 'cross' attention; it shows encoder"):
            vt.load_lesson(tmp_path / "one.yaml")  # from the model's spec: nothing is traced
    finally:
        forget_memory_models("lesson-nocross")
    assert len(found) == 1 and ":5: " in found[0]
    assert "shows no 'cross' attention; it shows encoder" in found[0]


def test_a_kind_the_trace_lacks_is_a_located_problem_at_validation(
    tmp_path, lesson_model, monkeypatch
):
    real = vt.trace(lesson_model, SENTENCE)
    no_cross = dataclasses.replace(real, cross=None, notes={"cross": "not recorded here"})
    monkeypatch.setattr(validation, "traced", lambda name, sentence: no_cross)
    found = problems(tmp_path, lesson_text("head", FULL["head"]))
    assert len(found) == 1 and ":5: " in found[0]
    assert f"records no cross attention for {SENTENCE!r} (not recorded here)" in found[0]


def test_validation_traces_each_sentence_once(tmp_path, lesson_model, monkeypatch):
    asked: list[str] = []

    def traced(name: str, sentence: str) -> vt.Trace:
        asked.append(sentence)
        return vt.trace(lesson_model, sentence)

    monkeypatch.setattr(validation, "traced", traced)
    text = lesson_text("head", FULL["head"]) + "  - title: u\n    check: " + repr(
        {"kind": "token", **FULL["token"]}
    ) + "\n"  # fmt: skip
    assert problems(tmp_path, text) == [] and asked == [SENTENCE]
    assert isinstance(vt.load_lesson(tmp_path / "one.yaml"), Lesson)


@pytest.mark.needs("streamlit")
def test_an_answer_to_a_step_without_a_question_is_a_value_error_the_page_shows(lesson_model):
    from viz_transformer.ui.lesson_place import Place

    lesson = read_lesson(
        lesson_text("token", FULL["token"]).replace("steps:\n", "steps:\n  - title: read\n"), "t"
    )
    with pytest.raises(ValueError, match="Step 1 has no question to answer"):
        Place(lesson, 0).submit(0, "anything")
    assert Place(lesson, 1).submit(1, "x").correct is False
