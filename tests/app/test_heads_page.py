"""The "What heads do" page: every section draws on the default model and a paper model, and
bad input gets a message, never a traceback."""

from __future__ import annotations

PAGE = "pages/what_heads_do.py"


def test_page_draws_importance_head_maps_roles_and_lens(open_page, figures):
    app = open_page(PAGE, model="paper-reverse")
    titles = [f["layout"]["title"]["text"] for f in figures(app)]
    assert any(t.startswith("Importance of each") for t in titles)
    assert any("weighted by value norm" in t for t in titles)
    assert any(t.startswith("Logit lens") for t in titles)
    assert any("Pick one or more heads" in i.value for i in app.info)
    assert not app.error


def test_a_set_of_heads_ablated_together_changes_the_reversal(open_page):
    app = open_page(PAGE, model="paper-reverse", params={})
    app.radio(key="heads_kind").set_value("cross").run()
    app.multiselect(key="heads_set").set_value(["L1 H0", "L1 H1", "L1 H2", "L1 H3"]).run()
    assert not app.exception
    assert any("**changed**" in m.value for m in app.markdown)


def test_patching_form_works_and_refuses_unequal_lengths(open_page, figures):
    app = open_page(PAGE, model="paper-reverse")
    app.radio(key="heads_kind").set_value("cross").run()
    app.button(key="heads_patch").click().run()  # the pre-filled pair
    assert not app.exception and not app.error
    assert any(f["layout"]["title"]["text"].startswith("Fraction") for f in figures(app))
    app.text_input(key="heads_corrupted").set_value("happy king")
    app.button(key="heads_patch").click().run()
    assert any("same token length" in e.value for e in app.error)


def test_default_model_page_draws(open_page):
    app = open_page(PAGE)
    assert not app.error


def test_attention_maps_toggle_weights_by_value_norm(open_page, figures):
    app = open_page("pages/attention_maps.py", model="paper-reverse")
    app.radio(key="weighting").set_value("weighted by value norm").run()
    assert not app.exception and not app.error
    assert any("value norms" in f["layout"]["title"]["text"] for f in figures(app))


def test_a_stopped_importance_job_stays_stopped_until_asked_again(open_page, figures):
    from viz_transformer.ui.jobs import STOP_KEY

    app = open_page(PAGE, model="paper-reverse", params={"heads_kind": "encoder"})
    text = app.session_state["sentence"]
    app.session_state[STOP_KEY] = ("paper-reverse", text, "cross", "mean")
    app.radio(key="heads_kind").set_value("cross").run()
    app.radio(key="heads_mode").set_value("mean").run()
    assert any("Importance stopped" in i.value for i in app.info)
    assert not any(f["layout"]["title"]["text"].startswith("Importance") for f in figures(app))
    app.button(key="heads_resume").click().run()
    assert any(f["layout"]["title"]["text"].startswith("Importance") for f in figures(app))
    assert not app.exception and not app.error


def test_head_widgets_round_trip_through_the_url(open_page):
    params = {"heads_kind": "cross", "heads_mode": "mean", "heads_layer": "1", "heads_head": "3"}
    app = open_page(PAGE, model="paper-reverse", params=params)
    assert app.radio(key="heads_kind").value == "cross"
    assert app.radio(key="heads_mode").value == "mean"
    assert (app.selectbox(key="heads_layer").value, app.selectbox(key="heads_head").value) == (1, 3)
    assert app.query_params["heads_head"] == ["3"] or app.query_params["heads_head"] == "3"
    bad = open_page(PAGE, model="paper-reverse", params={"heads_kind": "nope", "heads_head": "9"})
    assert bad.radio(key="heads_kind").value == "encoder" and not bad.exception
