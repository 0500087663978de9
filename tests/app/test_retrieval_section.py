"""The "Retrieval heads" section of What heads do on a tiny Llama with a planted copying head
(testing.planted): the grid, the output, the flagged head's links, bad input as messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from viz_transformer.testing.planted import NEEDLE, PLANTED, build_planted, haystack

PAGE = "pages/what_heads_do.py"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"hf:{build_planted(tmp_path_factory.mktemp('planted'))}"


def _open(open_page, model: str, text: str):
    app = open_page(PAGE, model=model, params={})
    app.radio(key="ret_source").set_value("paste").run()
    app.text_area(key="ret_text").set_value(text)
    app.text_input(key="ret_needle").set_value(NEEDLE)
    return app


def test_the_planted_head_is_found_and_linked(open_page, figures, planted, monkeypatch) -> None:
    import streamlit

    opened: list[str] = []  # a page file run alone has no navigation to switch in
    monkeypatch.setattr(streamlit, "switch_page", opened.append)
    app = _open(open_page, planted, haystack())
    app.button(key="ret_start").click().run()
    assert not app.exception and not app.error
    grid = [f for f in figures(app) if "Retrieval score" in str(f["layout"].get("title"))]
    assert len(grid) == 1
    assert any("iota kappa lambda" in m.value and "found" in m.value for m in app.markdown)
    layer, head = PLANTED
    assert any(m.value.startswith(f"**L{layer} H{head}**: retrieval 1.00") for m in app.markdown)
    app.button(key=f"ret_map_{layer}_{head}").click().run()
    assert not app.exception and opened == ["pages/attention_maps.py"]
    state = app.session_state
    assert (state["layer"], state["head"], state["kind"]) == (layer, head, "decoder")
    assert "\n\nzeta eta theta iota kappa lambda" in state["sentence"]
    # the first copy: the last prompt position (82) on "iota" (39); the needle starts at 36
    assert (state["zoom"], state["zoom_q"], state["zoom_k"], state["zoom_size"]) == (
        True,
        74,
        28,
        32,
    )
    app.button(key=f"ret_why_{layer}_{head}").click().run()
    assert opened[-1] == "pages/qkv_walkthrough.py"
    assert (state["why_query"], state["token"]) == (82, 82)  # the last prompt position
    assert state["why_key"] == 39


def test_bad_input_gets_a_message_never_a_traceback(open_page, planted: str) -> None:
    app = _open(open_page, planted, haystack())
    cases = [
        (haystack(), "", "needle is empty"),
        (haystack(), "alone", "at least two words"),
        ("the cat sat.", NEEDLE, "not shorter than the haystack"),
        (haystack(200), NEEDLE, "context of 512 tokens"),
    ]
    for text, needle, said in cases:
        app.text_area(key="ret_text").set_value(text)
        app.text_input(key="ret_needle").set_value(needle)
        app.button(key="ret_start").click().run()
        assert not app.exception
        assert any(said in e.value for e in app.error), said
    app = open_page(PAGE, model="paper-reverse", params={})
    assert any("decoder-only" in i.value for i in app.info)


def test_a_head_link_opens_its_map_in_the_app(server_layout, planted: str, figures) -> None:
    """Through app.py's navigation, as on a server: the link lands on Attention maps, on the
    run's prompt + output, at the planted head."""
    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    app.session_state["model"] = planted
    app.run()
    app.switch_page(str(ROOT / PAGE)).run()
    app.radio(key="ret_source").set_value("paste").run()
    app.text_area(key="ret_text").set_value(haystack(9, seed=3))
    app.text_input(key="ret_needle").set_value(NEEDLE)
    app.button(key="ret_start").click().run()
    app.button(key="ret_map_1_2").click().run()
    assert not app.exception
    titles = [f["layout"].get("title", {}).get("text") or "" for f in figures(app)]
    assert any(t.startswith("Decoder masked self-attention, layer 1, head 2") for t in titles)
    assert "\n\nzeta eta theta iota kappa lambda" in app.text_area(key="sentence").value


def test_five_depths_give_each_heads_mean(open_page, figures, planted: str) -> None:
    app = _open(open_page, planted, haystack(11, seed=4))
    app.toggle(key="ret_sweep").set_value(True)
    app.button(key="ret_start").click().run()
    assert not app.exception and not app.error
    assert any(m.value == "Needle copied in 100% of 5 runs." for m in app.markdown)
    table = app.dataframe[0].value
    assert list(table.columns[:4]) == ["layer", "head", "retrieval", "retrieval_std"]
    assert (table.iloc[0]["layer"], table.iloc[0]["head"], table.iloc[0]["retrieval"]) == (
        *PLANTED,
        1.0,
    )
    assert any("mean over depths" in str(f["layout"].get("title")) for f in figures(app))
