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
