"""Every step of the built-in course opens its page in its view, as the step's link does: no
error or exception on the page, and each view key's widget holds the view's value (a question
is answered from what that page shows, so the page must show it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from viz_transformer.ui.lesson_links import view_values

APP = str(Path(__file__).resolve().parents[2] / "app.py")
WHEELS = {"smollm2": "smollm2", "minilm": "minilm"}  # tests/conftest.py OPTIONAL
COURSE = ("paper_tour", "attention_maps", "positions", "softmax_scaling", "decoder",
          "what_heads_do", "why_heads_attend", "modern_decoder")  # fmt: skip


def _views(lesson: vt.Lesson) -> dict[tuple, int]:
    """Each distinct (page, view) of the lesson -> its first step."""
    found: dict[tuple, int] = {}
    for i, step in enumerate(lesson.steps):
        if step.page:
            found.setdefault((step.page, tuple(sorted(step.view.items()))), i)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("name", COURSE)
def test_every_step_opens_its_page_in_its_view(name: str, need) -> None:
    lesson = vt.load_lesson(name)
    if lesson.model in WHEELS:
        need(WHEELS[lesson.model])
    for (page, view), index in _views(lesson).items():
        values = view_values(lesson.model, dict(view))
        at = AppTest.from_file(APP, default_timeout=300)
        at.query_params.update({k: str(v) for k, v in values.items()})
        at.run()
        at.switch_page(f"pages/{page}.py").run()
        where = f"{name} step {index} on {page}"
        assert not at.exception, f"{where}: {at.exception}"
        assert not at.error, f"{where}: {[e.value for e in at.error]}"
        for key, value in values.items():
            if key in at.session_state:
                assert at.session_state[key] == value, f"{where}: {key}"
