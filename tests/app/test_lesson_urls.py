"""A lesson named in the URL is one of ``vt.lessons()``: a path in ``?lesson=`` reads no file of
the server, even one that is a valid lesson."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

import viz_transformer as vt

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_a_path_in_the_url_is_not_read(tmp_path):
    elsewhere = tmp_path / "secret_lesson.yaml"
    elsewhere.write_text(vt.load_lesson("paper_tour").source.replace(
        "Attention Is All You Need in 45 minutes", "A file elsewhere"))  # fmt: skip
    assert vt.load_lesson(elsewhere).title == "A file elsewhere"  # a valid lesson, by path
    for name in (str(elsewhere), f"../../../../../..{elsewhere}"):
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params["lesson"] = name
        at.run()
        at.switch_page("pages/lesson.py").run()
        assert not at.exception, at.exception
        shown = " ".join(str(e.value) for e in [*at.title, *at.header, *at.markdown, *at.error])
        assert "A file elsewhere" not in shown
        assert any("unknown lesson" in e.value for e in at.error), shown
