"""The built-in lessons name each row and column of an Attention maps view as the map labels it:
a student reads the labels, the check grades token indices of ``vt.trace``, and a cross-attention
map labels a row by the token predicted there, not by the token the decoder reads."""

from __future__ import annotations

import re

import pytest

import viz_transformer as vt
from viz_transformer.figures.heatmap import axes

MAP_PAGE = "attention_maps"


def _head_checks_on_maps() -> list[tuple[str, int]]:
    """(lesson, step) of every ``head`` check whose step opens the Attention maps page."""
    found = []
    for name in vt.lessons():
        for i, step in enumerate(vt.load_lesson(name).steps):
            if step.check is not None and step.check.kind == "head" and step.page == MAP_PAGE:
                found.append((name, i))
    return found


@pytest.mark.parametrize(("name", "index"), _head_checks_on_maps())
def test_a_head_question_names_its_row_and_column_as_the_map_labels_them(
    name: str, index: int
) -> None:
    lesson = vt.load_lesson(name)
    check = lesson.steps[index].check
    args = check.args
    trace = vt.trace(vt.load_model(lesson.model), args["sentence"])
    rows, cols, *_ = axes(trace, args["attention"], hide_special=False)
    question = check.question or lesson.steps[index].title
    row, col = rows[args["query"]], cols[args["key"]]
    where = f"{name} step {index}: the map labels"
    assert f'"{row}"' in question, f"{where} row {args['query']} {row!r}"
    assert f'"{col}"' in question, f"{where} column {args['key']} {col!r}"


@pytest.mark.needs("streamlit")
def test_a_view_a_step_names_is_one_attention_maps_has() -> None:
    """A step that says 'the "X" view' on the Attention maps page names one of its views."""
    from pages.sections.attention_maps import TABS  # the page imports Streamlit

    for name in vt.lessons():
        for i, step in enumerate(vt.load_lesson(name).steps):
            if step.page == MAP_PAGE:
                for view in re.findall(r'"([^"]+)" view', step.text):
                    assert view in TABS, f"{name} step {i}: no view {view!r}; there are {TABS}"
