"""The "Retrieval heads" section of What heads do on a tiny Llama with a planted copying head
(testing.planted): the counts, the grid, the flagged head's real links and the views they open
(a new tab's session: app.py run on the link's query string), the sweep's depth x length picture,
bad input as messages."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import numpy as np
import pytest

from viz_transformer.testing.planted import NEEDLE, PLANTED, build_planted, haystack

PAGE = "pages/what_heads_do.py"
ROOT = Path(__file__).resolve().parents[2]
LONG = 60  # sentences: 371 tokens with the needle, so the map is drawn zoomable (over 256)


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"hf:{build_planted(tmp_path_factory.mktemp('planted'))}"


def _open(open_page, model: str, text: str):
    app = open_page(PAGE, model=model, params={})
    app.radio(key="ret_source").set_value("paste").run()
    app.text_area(key="ret_text").set_value(text)
    app.text_input(key="ret_needle").set_value(NEEDLE)
    return app


def _follow(url: str, page: str):
    """The link opened in a new tab: a fresh session of app.py on the link's query string."""
    from streamlit.testing.v1 import AppTest

    path, query = url.split("?")
    assert path == page  # relative to the page it is on: /<page> of the same app
    tab = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    tab.query_params.update(dict(parse_qsl(query)))
    tab.run()
    tab.switch_page(str(ROOT / f"pages/{page}.py")).run()
    assert not tab.exception, tab.exception
    return tab


def _titles(figures, app) -> list[str]:
    return [f["layout"].get("title", {}).get("text") or "" for f in figures(app)]


def test_the_planted_head_is_found_counted_and_linked(open_page, figures, planted) -> None:
    app = _open(open_page, planted, haystack(LONG))
    sentence = app.session_state["sentence"]
    app.button(key="ret_start").click().run()
    assert not app.exception and not app.error
    assert sum("Retrieval score" in t for t in _titles(figures, app)) == 1
    said = " ".join(m.value for m in app.markdown)
    # 1 of 2 x 4 heads; the prompt's last position (370) copies "iota" (183): 187 tokens back
    assert "**1 of 8 heads** passed the threshold (retrieval ≥ 0.1)" in said
    assert "Prompt: 371 tokens, the needle at positions 180–185" in said
    assert "the copy reaches back **187 tokens**" in said  # from query 370 to "iota" at 183
    assert "iota kappa lambda" in said and "needle found: ROUGE-1 recall 1.00" in said
    layer, head = PLANTED
    assert any(m.value.startswith(f"**L{layer} H{head}**: retrieval 1.00") for m in app.markdown)
    urls = [b.proto.url for b in app.get("link_button")]
    assert len(urls) == 2  # map and score split of the one flagged head
    view = dict(parse_qsl(urls[0].split("?")[1]))
    assert view["ret_run"].endswith("|0.5|0|copy|" + NEEDLE)
    assert (view["layer"], view["head"], view["kind"], view["attn_tab"]) == (
        "1",
        "2",
        "decoder",
        "Maps",
    )
    assert (view["zoom"], view["zoom_q"], view["zoom_k"], view["zoom_size"]) == (
        "True",
        "362",
        "172",
        "32",
    )
    assert view["sentence"] == sentence  # the sidebar's own sentence rides along
    assert app.session_state["sentence"] == sentence  # nothing of the run entered the sidebar
    flagged = app.dataframe[0].value
    assert list(flagged["head"]) == ["L1 H2"] and list(flagged["map"]) == urls[:1]


def test_the_map_link_reproduces_the_zoomed_view(open_page, figures, planted) -> None:
    app = _open(open_page, planted, haystack(LONG, seed=1))
    app.button(key="ret_start").click().run()
    sentence = app.session_state["sentence"]
    tab = _follow(app.get("link_button")[0].proto.url, "attention_maps")
    state = tab.session_state
    assert (state["layer"], state["head"], state["kind"]) == (*PLANTED, "decoder")
    assert (state["zoom"], state["zoom_size"]) == (True, 32)
    assert (state["zoom_q"], state["zoom_k"]) == (362, 172)
    zoomed = [t for t in _titles(figures, tab) if "layer 1, head 2" in t]
    assert zoomed and "queries 362-381, keys 172-203 of 382 x 382" in zoomed[0]
    assert tab.text_area(key="sentence").value == sentence  # the sidebar keeps its sentence
    notes = [i.value for i in tab.info]
    assert any("Showing a retrieval run's prompt + output" in n for n in notes)
    assert not any("sentences. The models were trained" in n for n in notes)
    assert not any("##s" in c.value for c in tab.caption)  # a BPE model: no WordPiece note
    assert tab.query_params["ret_run"] == state["ret_run"]  # the view stays in the URL
    tab.button(key="ret_leave").click().run()  # back to the sidebar's sentence
    assert "ret_run" not in tab.query_params and "ret_run" not in tab.session_state
    assert not any("Showing a retrieval run" in i.value for i in tab.info)
    assert not any("382 x 382" in t for t in _titles(figures, tab))  # the sentence's own map


def test_the_score_split_link_opens_at_the_copy(open_page, planted) -> None:
    app = _open(open_page, planted, haystack(LONG, seed=2))
    app.button(key="ret_start").click().run()
    url = app.get("link_button")[1].proto.url
    view = dict(parse_qsl(url.split("?")[1]))
    tab = _follow(url, "qkv_walkthrough")
    state = tab.session_state
    assert (state["layer"], state["head"]) == PLANTED
    assert (state["why_query"], state["why_key"]) == (int(view["why_query"]), int(view["why_key"]))
    assert state["why_query"] == 370  # the prompt's last position: the first output step
    key_label = tab.selectbox(key="why_key").options[state["why_key"]]
    assert key_label.endswith("iota")  # the needle's token the head copies first
    assert any(h.value == "Why this head looks there" for h in tab.subheader)
    assert any("Score of" in m.value for m in tab.markdown)


def test_a_link_recomputes_a_run_the_server_forgot(open_page, figures, planted) -> None:
    from viz_transformer.ui import retrieval_view

    app = _open(open_page, planted, haystack(LONG, seed=3))
    app.button(key="ret_start").click().run()
    url = app.get("link_button")[0].proto.url
    ref = dict(parse_qsl(url.split("?")[1]))["ret_run"]
    kept = retrieval_view.views()[(planted, ref)]
    retrieval_view.views.clear()  # the run is recomputed from the link's parameters
    tab = _follow(url, "attention_maps")
    assert retrieval_view.views()[(planted, ref)] == kept
    assert any("layer 1, head 2" in t for t in _titles(figures, tab))


def test_the_sweep_draws_each_heads_score_per_depth_and_length(
    open_page, figures, decode_array, planted
) -> None:
    import viz_transformer as vt

    text = haystack(LONG, seed=4)
    app = _open(open_page, planted, text)
    app.toggle(key="ret_sweep").set_value(True).run()
    app.multiselect(key="ret_depths").set_value([0.1, 0.9]).run()
    assert app.multiselect(key="ret_lengths").value == [256, 0]  # what the context allows
    app.button(key="ret_start").click().run()
    assert not app.exception and not app.error
    said = " ".join(m.value for m in app.markdown)
    assert "**4 runs** (2 depths × 2 lengths); needle found in 100% of them." in said
    assert "**1 of 8 heads** reach the threshold (retrieval ≥ 0.1)" in said
    fig = next(f for f in figures(app) if "most often retrieving" in f["layout"]["title"]["text"])
    heads = [t.get("name") for t in fig["data"]]
    assert heads[0] == "L1 H2" and len(heads) == 4
    model = vt.load_model(planted)
    for col, name in enumerate(heads):
        layer, head = int(name[1]), int(name[4])
        z = decode_array(fig["data"][col]["z"])
        for i, depth in enumerate((0.1, 0.9)):  # each cell: that run's score of that head
            for j, n in enumerate((256, None)):
                s = vt.retrieval_heads(model, [text], NEEDLE, depths=[depth], lengths=[n])
                assert z[i, j] == pytest.approx(s.runs[0].retrieval[layer, head], abs=1e-6)
    assert np.all(decode_array(fig["data"][0]["z"]) == 1.0)
    links = [a["text"] for a in fig["layout"]["annotations"] if "href" in a.get("text", "")]
    assert len(links) == 16 and all("attention_maps?" in a for a in links)
    runs = app.dataframe[0].value
    assert list(runs["prompt length"]) == ["256", "256", "whole text", "whole text"]
    assert runs["found"].all() and list(runs["best head"]) == ["L1 H2"] * 4
    assert (runs["prompt tokens"] <= 256).sum() == 2
    means = app.dataframe[1].value
    assert list(means.columns[:4]) == ["layer", "head", "retrieval", "retrieval_std"]
    assert (means.iloc[0]["layer"], means.iloc[0]["head"], means.iloc[0]["retrieval"]) == (
        1,
        2,
        1.0,
    )
    # a cell's link opens that run (256 tokens, depth 0.9) zoomed on its needle
    url = links[2].split('href="')[1].split('"')[0]
    assert "|0.9|256|copy|" in url  # plotly-safe: | and : written bare
    tab = _follow(url, "attention_maps")
    assert any("layer 1, head 2" in t for t in _titles(figures, tab))
    assert any("depth 0.9 of a pasted text, cut to 256 tokens" in i.value for i in tab.info)


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
    app.toggle(key="ret_sweep").set_value(True).run()
    app.text_area(key="ret_text").set_value(haystack())
    app.text_input(key="ret_needle").set_value(NEEDLE)
    app.multiselect(key="ret_depths").set_value([]).run()
    app.button(key="ret_start").click().run()
    assert any("at least one depth" in e.value for e in app.error)
    app = open_page(PAGE, model="paper-reverse", params={})
    assert any("decoder-only" in i.value for i in app.info)


def test_opening_a_zoomed_view_logs_no_widget_warning(
    open_page, planted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streamlit logs "created with a default value but also had its value set via the Session
    State API" (once per process) when a widget keyed like a link's URL value has a default."""
    import logging

    from streamlit.elements.lib import policies

    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger(policies.__name__)
    logger.addHandler(handler)
    try:
        app = _open(open_page, planted, haystack(LONG, seed=5))
        app.button(key="ret_start").click().run()
        tab = _follow(app.get("link_button")[0].proto.url, "attention_maps")
        tab.number_input(key="zoom_q").set_value(300).run()  # the user moves the window
    finally:
        logger.removeHandler(handler)
    assert tab.session_state["zoom_q"] == 300 and not tab.exception
    assert not [m for m in seen if "Session State API" in m], seen


def test_the_question_prompt_is_linked_and_compared(open_page, planted) -> None:
    """The question form travels in the link (its text recomputes the same prompt), and the
    comparison names the heads that retrieve under one prompt only: the planted head copies the
    cue's continuation, and the question (of words it has no query for) gets no copy."""
    from viz_transformer.ui import retrieval_view

    app = _open(open_page, planted, haystack(LONG, seed=6))
    app.radio(key="ret_form").set_value("question").run()
    app.text_input(key="ret_question").set_value("zeta eta theta").run()
    app.toggle(key="ret_sweep").set_value(True).run()
    app.multiselect(key="ret_depths").set_value([0.5]).run()
    app.multiselect(key="ret_lengths").set_value([0]).run()
    app.button(key="ret_start").click().run()
    assert not app.exception and not app.error
    app.toggle(key="ret_compare").set_value(True).run()
    assert not app.exception and not app.error
    said = [m.value for m in app.markdown]
    assert "**Both prompts, 0.1 or more:** none" in said
    assert "**The copy prompt only:** L1 H2" in said
    assert "**The question prompt only:** none" in said
    url = app.dataframe[0].value["map"][0]
    ref = dict(parse_qsl(url.split("?")[1]))["ret_run"]
    assert "|question:zeta%20eta%20theta|" in ref
    kept = retrieval_view.views()[(planted, ref)]
    assert "Question: zeta eta theta\nAnswer:" in kept
    retrieval_view.views.clear()  # the link's parameters make the same prompt again
    tab = _follow(url, "attention_maps")
    assert retrieval_view.views()[(planted, ref)] == kept
    assert any("asked 'zeta eta theta'" in i.value for i in tab.info)


def test_no_score_split_link_where_the_walkthrough_would_refuse(
    open_page, planted, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walkthrough captures every layer and refuses what passes a job's memory: its link is
    not offered then, and the page says why (the map's link stays)."""
    from viz_transformer import settings

    monkeypatch.setattr(settings, "JOB_MEMORY_MB", 0)  # no job fits
    app = _open(open_page, planted, haystack(LONG, seed=7))
    app.button(key="ret_start").click().run()
    assert not app.exception and not app.error
    assert [b.proto.label for b in app.get("link_button")] == ["Map at the needle"]
    assert any(
        c.value.startswith("No score split link: the Q, K, V walkthrough") for c in app.caption
    )
    assert app.dataframe[0].value["why"].isna().all()


def test_a_new_sentence_or_a_model_that_cannot_run_it_ends_the_runs_view(
    open_page, figures, planted
) -> None:
    from viz_transformer.ui import retrieval_view

    app = _open(open_page, planted, haystack(LONG, seed=8))
    app.button(key="ret_start").click().run()
    url = app.get("link_button")[0].proto.url
    tab = _follow(url, "attention_maps")
    tab.text_area(key="sentence").set_value("zeta eta theta").run()  # the user types anew
    assert not tab.exception and "ret_run" not in tab.query_params
    assert not any("Showing a retrieval run" in i.value for i in tab.info)
    assert not any("382 x 382" in t for t in _titles(figures, tab))
    retrieval_view.views.clear()  # a link naming a model that cannot run it: a message
    view = {**dict(parse_qsl(url.split("?")[1])), "model": "paper-reverse"}
    tab = _follow(f"attention_maps?{urlencode(view)}", "attention_maps")
    assert any("found in decoder" in e.value for e in tab.error) and not tab.exception
    assert tab.button(key="ret_leave")  # and the way back to the sidebar's sentence
