"""Issue 28's smaller points in pages, without a browser."""

from __future__ import annotations


def test_a_picked_sentence_keeps_its_paragraph(open_page):
    """Issue 28: picking one sentence of a pasted paragraph keeps the paragraph: the student
    steps to the next sentence and back to the whole paragraph."""
    app = open_page("pages/attention_maps.py")
    paragraph = "I am a student. The cat sleeps. Where is the station?"
    app.sidebar.text_area(key="sentence").set_value(paragraph).run()
    app.selectbox(key="sentence_part").set_value(1).run()
    assert app.session_state["sentence"] == "The cat sleeps."
    assert any("Sentence 2 of the 3" in c.value for c in app.caption)
    app.button(key="part_next").click().run()
    assert app.session_state["sentence"] == "Where is the station?"
    assert app.button(key="part_next").disabled
    app.button(key="part_all").click().run()
    assert app.session_state["sentence"] == paragraph and not app.exception
