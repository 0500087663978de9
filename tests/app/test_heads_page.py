"""The "What heads do" page: every section draws on the default model and a paper model, and
bad input gets a message, never a traceback."""

from __future__ import annotations

import numpy as np

import viz_transformer as vt

PAGE = "pages/what_heads_do.py"


def _importance(app, figures, decode_array) -> np.ndarray:
    """The importance grid the page drew (layers x heads), as numbers."""
    grid = next(f for f in figures(app) if "Importance of each" in str(f["layout"]["title"]))
    return decode_array(grid["data"][0]["z"])


def _titles(app, figures) -> list[str]:
    """Figure titles, and the titles too long for their chart, set above it in bold (issue 28)."""
    inside = [f["layout"].get("title", {}).get("text") for f in figures(app)]
    return [t for t in inside if t] + [m.value.strip("*") for m in app.markdown]


def test_page_draws_importance_head_maps_roles_and_lens(open_page, figures):
    app = open_page(PAGE, model="paper-reverse")
    titles = _titles(app, figures)
    assert any(t.startswith("Importance of each") for t in titles)
    assert any("weighted by value norm" in t for t in titles)
    assert any(t.startswith("Logit lens") for t in titles)
    assert any(t.startswith("Each output token's log-probability") for t in titles)
    assert app.slider(key="heads_top_k").value == 3  # the top 3 heads ablated together
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
    assert any(t.startswith("Fraction") for t in _titles(app, figures))
    app.text_input(key="heads_corrupted").set_value("happy king")
    app.button(key="heads_patch").click().run()
    assert any("same token length" in e.value for e in app.error)


def test_default_model_page_draws_every_heads_importance(open_page, figures, decode_array):
    app = open_page(PAGE)
    assert not app.error
    kind = app.radio(key="heads_kind").value
    grid = _importance(app, figures, decode_array)
    facts = vt.load_model(vt.default_model()).facts
    assert grid.shape == facts.shape(kind) and np.isfinite(grid).all()


def test_the_importance_drawn_is_the_librarys(open_page, figures, decode_array):
    """The grid is ``vt.head_importance`` of the page's model, sentence, kind and ablation, head
    for head (a transposed grid or another mode would differ)."""
    app = open_page(PAGE, model="paper-reverse", params={"heads_kind": "cross"})
    app.radio(key="heads_mode").set_value("mean").run()
    text, kind = app.text_area(key="sentence").value, app.radio(key="heads_kind").value
    expected = vt.head_importance(vt.load_model("paper-reverse"), text, kind, None, "mean")
    grid = _importance(app, figures, decode_array)
    assert kind == "cross" and grid.shape == expected.shape
    np.testing.assert_allclose(grid, expected, rtol=1e-4, atol=1e-5)


def test_attention_maps_toggle_weights_by_value_norm(open_page, figures):
    app = open_page("pages/attention_maps.py", model="paper-reverse")
    app.radio(key="weighting").set_value("weighted by value norm").run()
    assert not app.exception and not app.error
    assert any("value norms" in t for t in _titles(app, figures))


def test_a_stopped_importance_job_stays_stopped_until_asked_again(open_page, figures):
    from viz_transformer.ui.jobs import STOP_KEY

    app = open_page(PAGE, model="paper-reverse", params={"heads_kind": "encoder"})
    text = "red ship king happy"  # a sentence no other test computes (the stores are shared:
    # after another test's importance of the default sentence nothing would run to be stopped)
    app.session_state[STOP_KEY] = (("paper-reverse", text, "cross", "mean"),)
    app.text_area(key="sentence").set_value(text)
    app.radio(key="heads_kind").set_value("cross").run()
    app.radio(key="heads_mode").set_value("mean").run()
    assert any("Importance stopped" in i.value for i in app.info)
    assert not any(t.startswith("Importance") for t in _titles(app, figures))
    app.button(key="heads_resume").click().run()
    assert any(t.startswith("Importance") for t in _titles(app, figures))
    assert not app.exception and not app.error


def test_a_stopped_ablated_output_shows_no_stale_result_until_asked_again(open_page, figures):
    """Issue 28 point 4: the one-head ablated decode is a stoppable job; once stopped, the page
    says so and draws neither output nor token chart, its button decodes again, and importance,
    stopped before it, stays stopped."""
    from viz_transformer.ui.jobs import STOP_KEY

    app = open_page(PAGE, model="paper-reverse", params={"heads_kind": "cross"})
    text = "ship red king happy"  # a sentence no other test computes (the stores are shared)
    importance = ("paper-reverse", text, "cross", "zero")
    app.session_state[STOP_KEY] = (importance, ("paper-reverse", text, (("cross", 0, 1),), "zero"))
    app.text_area(key="sentence").set_value(text)
    app.selectbox(key="heads_head").set_value(1).run()
    said = [i.value for i in app.info]
    assert any("Importance stopped" in i for i in said)
    assert any("Ablated output stopped" in i for i in said)
    assert not any("head(s) ablated" in m.value for m in app.markdown)  # no output shown
    assert not any(t.startswith("Each output token's") for t in _titles(app, figures))
    app.button(key="ablate_one_resume").click().run()
    assert any("With 1 head(s) ablated" in m.value for m in app.markdown)
    assert any(t.startswith("Each output token's") for t in _titles(app, figures))
    assert [i.value for i in app.info if "stopped" in i.value] == [said[0]]  # importance's
    assert not app.exception and not app.error


def test_stopped_roles_patching_and_lens_show_no_stale_result_until_asked_again(open_page, figures):
    """Issue 28 point 4: head roles, patching and the logit lens are stoppable jobs; once
    stopped, each says so and draws nothing, and its button computes it again."""
    from pages.sections.what_heads_do.experiments import PATCH_ASKED
    from viz_transformer.ui.jobs import STOP_KEY

    app = open_page(PAGE, model="paper-reverse", params={"heads_kind": "decoder"})
    text = "happy ship king red"  # a sentence no other test computes (the stores are shared)
    pair = (app.text_input(key="heads_clean").value, app.text_input(key="heads_corrupted").value)
    patch = ("patch", "paper-reverse", *pair, "decoder")
    stopped = (("roles", "paper-reverse", text, "decoder"), ("lens", "paper-reverse", text), patch)
    app.session_state[STOP_KEY], app.session_state[PATCH_ASKED] = stopped, patch
    app.text_area(key="sentence").set_value(text).run()
    said = " ".join(i.value for i in app.info)
    assert all(f"{job} stopped" in said for job in ("Head roles", "Patching", "Logit lens"))
    drawn = _titles(app, figures)
    assert not any(t in ("previous", "induction") or t.startswith(("Fraction", "Logit lens"))
                   for t in drawn)  # fmt: skip
    for job, title in (("roles", "induction"), ("patching", "Fraction"), ("lens", "Logit lens")):
        app.button(key=f"{job}_resume").click().run()
        assert any(t.startswith(title) for t in _titles(app, figures)), job
    assert not any("stopped" in i.value for i in app.info)
    assert not app.exception and not app.error


def test_a_stop_holds_the_pages_other_long_jobs_for_its_run(open_page, figures):
    """A Stop means quiet: in the run it starts, the page's jobs not computed yet (here the
    one-head ablated output) wait for their button instead of starting; app.py ends the hold
    with that run, so the next interaction computes as usual."""
    from viz_transformer.ui.jobs import HOLD_KEY, STOP_KEY

    app = open_page(PAGE, model="paper-reverse", params={"heads_kind": "cross"})
    text = "king ship happy red"  # a sentence no other test computes (the stores are shared)
    app.session_state[STOP_KEY] = (("paper-reverse", text, "cross", "zero"),)
    app.session_state[HOLD_KEY] = True  # what the Stop button's callback sets
    app.text_area(key="sentence").set_value(text)
    app.selectbox(key="heads_head").set_value(2).run()
    said = [i.value for i in app.info]
    assert any("Importance stopped" in i for i in said)
    assert any("Not started: you pressed Stop" in i for i in said)
    assert not any("head(s) ablated" in m.value for m in app.markdown)
    app.button(key="ablate_one_go").click().run()
    assert HOLD_KEY not in app.session_state
    assert any("With 1 head(s) ablated" in m.value for m in app.markdown)
    assert not any("Not started" in i.value for i in app.info)
    assert not app.exception and not app.error


def test_the_app_ends_a_stops_hold_with_the_run_it_started(open_page):
    from viz_transformer.ui.jobs import HOLD_KEY

    app = open_page("app.py")
    app.session_state[HOLD_KEY] = True
    app.run()
    assert HOLD_KEY not in app.session_state and not app.exception


def test_head_widgets_round_trip_through_the_url(open_page):
    params = {"heads_kind": "cross", "heads_mode": "mean", "heads_layer": "1", "heads_head": "3"}
    app = open_page(PAGE, model="paper-reverse", params=params)
    assert app.radio(key="heads_kind").value == "cross"
    assert app.radio(key="heads_mode").value == "mean"
    assert (app.selectbox(key="heads_layer").value, app.selectbox(key="heads_head").value) == (1, 3)
    assert app.query_params["heads_head"] == ["3"] or app.query_params["heads_head"] == "3"
    bad = open_page(PAGE, model="paper-reverse", params={"heads_kind": "nope", "heads_head": "9"})
    assert bad.radio(key="heads_kind").value == "encoder" and not bad.exception


def test_one_click_on_the_demo_changes_the_default_models_output(open_page, figures):
    """Issue 28: the searched sentence, kind and head arrive with one click; the output changes
    and each token's probability with and without the head is drawn."""
    app = open_page(PAGE)
    app.button(key="heads_demo").click().run()
    assert not app.exception and not app.error
    import viz_transformer as vt
    from viz_transformer.analysis.effects import demo_for

    demo = demo_for(vt.load_model(vt.default_model()))
    assert app.session_state["sentence"] == demo.text
    assert app.selectbox(key="heads_layer").value == demo.heads[0][0]
    assert any("**changed**" in m.value for m in app.markdown)
    assert any("lost most" in c.value for c in app.caption)
