"""The pages' views of why a head attends: the walkthrough's why section draws the library's scores
and splits (query and key picked as a map click would), What heads do shows what a head writes,
and Attention maps computes attention flow as a job within its token limit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from pages.sections.qkv_walkthrough.why import SPLIT_TITLES
from viz_transformer.analysis import flow, why, writes
from viz_transformer.testing.hf import BUILDERS

QKV = "pages/qkv_walkthrough.py"


def test_why_section_draws_the_models_scores_and_splits_that_add_up(
    open_page: Callable[..., AppTest], figures: Callable, decode_array: Callable, tmp_path: Path
) -> None:
    name = f"hf:{BUILDERS['gpt2'](tmp_path / 'gpt2')}"
    at = open_page(QKV, model=name)
    at.selectbox(key="head").set_value(1).run()
    at.selectbox(key="why_query").set_value(5).run()  # what a click on the map's cell sets
    at.selectbox(key="why_key").set_value(2).run()
    assert not at.exception, at.exception
    text = at.text_area(key="sentence").value
    scores = why.attention_scores(vt.load_model(name), text, "decoder", 0, 1)
    drawn = figures(at)[5:]  # after the walkthrough's five steps
    assert len(drawn) == 1 + 1 + 1 + 3  # map; dimension, input, component (two sides, pairs)
    shown = decode_array(drawn[0]["data"][0]["z"])
    np.testing.assert_allclose(shown, np.where(np.isfinite(scores), scores, np.nan), rtol=1e-6)
    assert drawn[0]["layout"]["shapes"][0]["x0"] == 1.5  # the picked key (2) outlined
    for fig in drawn[1:3] + drawn[5:]:  # every bar chart's bars add up to the score
        bars = decode_array(fig["data"][0]["y"])
        assert np.isclose(bars.sum(), scores[5, 2], rtol=1e-4, atol=1e-5)
    assert any("position.position depends on the positions alone" in c.value for c in at.caption)
    # each split is named once: by its chart's title, or (the component split's three charts)
    # by a heading above them
    shown = [f["layout"]["title"]["text"].split("<br>")[0] for f in drawn]
    shown += [m.value.strip("*") for m in at.markdown]
    for heading in SPLIT_TITLES.values():
        assert shown.count(heading) == 1, f"{heading!r} shown {shown.count(heading)} times"


def test_what_heads_do_shows_the_tokens_a_head_writes(
    open_page: Callable[..., AppTest], figures: Callable, tmp_path: Path
) -> None:
    name = f"hf:{BUILDERS['llama'](tmp_path / 'llama')}"
    at = open_page("pages/what_heads_do.py", model=name)
    at.selectbox(key="heads_layer").set_value(1).run()
    at.selectbox(key="heads_head").set_value(2).run()
    at.selectbox(key="writes_position").set_value(3).run()
    assert not at.exception, at.exception
    model, text = vt.load_model(name), at.text_area(key="sentence").value
    expected = writes.head_writes(model, text, "decoder", 1, 2, 3)
    title = "promotes and suppresses"
    chart = next(f for f in figures(at) if title in f["layout"]["title"]["text"])
    top = expected.promoted.iloc[0]
    assert chart["data"][0]["y"][0] == f"{top['token']} ({top['id']})"
    assert any("Pre-norm" in c.value for c in at.caption)


def test_an_exact_split_draws_no_rest_bar_beside_its_last_part(
    open_page: Callable[..., AppTest], figures: Callable, decode_array: Callable
) -> None:
    """paper-en-pt's cross L1 H3 at query 4, key 4: d31 is the largest part (6.76 of 41.70) and
    the rest is rounding; a rest bar drawn beside d31 left d31 unlabelled and read as "rest"."""
    params = {"kind": "cross", "layer": "1", "head": "3", "token": "4"}
    at = open_page(QKV, params=params)
    at.selectbox(key="why_key").set_value(4).run()
    assert not at.exception, at.exception
    model, text = vt.load_model("paper-en-pt"), at.text_area(key="sentence").value
    parts = why.score_parts(model, text, "cross", 1, 3, 4, 4, by="dimension")
    assert abs(parts.set_index("part").loc["rest", "value"]) < 1e-9
    bars = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("By dimension"))
    assert list(bars["data"][0]["x"]) == [f"d{i}" for i in range(32)]
    total = decode_array(bars["data"][0]["y"]).sum()
    assert np.isclose(total, why.attention_scores(model, text, "cross", 1, 3)[4, 4], rtol=1e-6)


def test_what_a_head_writes_names_each_position_by_the_token_predicted_there(
    open_page: Callable[..., AppTest], figures: Callable
) -> None:
    """The logits split at a position predict the next token, and the maps above label a cross
    row by it: position 3 of "I am a student." reads "um" and predicts "estudante"."""
    params = {"heads_kind": "cross", "heads_layer": "1", "heads_head": "3"}
    at = open_page("pages/what_heads_do.py", params=params)
    trace = vt.trace(vt.load_model("paper-en-pt"), at.text_area(key="sentence").value)
    assert trace.pred_tokens[3] == "estudante" and trace.tgt_tokens[3] == "um"
    picker = at.selectbox(key="writes_position")
    assert picker.options[3] == "3: um → estudante"
    # it opens on the last content token: "5: . → </s>" (where the model ends) is noise, and
    # "4: estudante → ." predicts punctuation
    assert picker.options[5] == "5: . → </s>" and picker.value == 3
    picker.set_value(3).run()
    assert not at.exception, at.exception
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert "L1 H3 at 3: um → estudante: tokens it promotes and suppresses" in titles
    picker.set_value(5).run()  # the end marker in the title is text, not a tag plotly drops
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert "L1 H3 at 5: . → &lt;/s&gt;: tokens it promotes and suppresses" in titles


def test_attention_flow_is_a_job_with_a_token_limit(
    open_page: Callable[..., AppTest], figures: Callable, decode_array: Callable
) -> None:
    at = open_page("pages/attention_maps.py", model="paper-reverse")
    at.segmented_control(key="attn_tab").set_value("Mean / max / rollout").run()
    at.radio(key="agg").set_value("flow").run()
    assert not at.exception, at.exception
    model, text = vt.load_model("paper-reverse"), at.text_area(key="sentence").value
    expected = flow.attention_flow(vt.trace(model, text), at.radio(key="kind").value)
    layer = at.selectbox(key="layer").value
    shown = decode_array(figures(at)[-1]["data"][0]["z"])
    np.testing.assert_allclose(shown, expected[layer], atol=1e-6)
    assert any(f"up to {flow.MAX_TOKENS} tokens" in c.value for c in at.caption)
    long = " ".join([text] * 40)
    at.text_area(key="sentence").set_value(long).run()
    assert any("attention flow is offered up to" in i.value for i in at.info)


def test_what_a_head_writes_starts_at_the_new_texts_own_position(
    open_page: Callable[..., AppTest],
) -> None:
    """A position picked for one sentence is not kept for the next (it names another token, or
    none): a new text opens on its own content position."""
    params = {"heads_kind": "cross", "heads_layer": "1", "heads_head": "3"}
    at = open_page("pages/what_heads_do.py", params=params)
    at.selectbox(key="writes_position").set_value(5).run()
    at.text_area(key="sentence").set_value("The cat sat on the mat.").run()
    assert not at.exception, at.exception
    model = vt.load_model("paper-en-pt")
    trace = vt.trace(model, "The cat sat on the mat.")
    expected = writes.content_position(trace.tgt_tokens, trace.pred_tokens)
    assert at.selectbox(key="writes_position").value == expected != 5
