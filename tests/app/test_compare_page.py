"""The "Compare two models" page: the default pair (paper-en-pt and its teacher), the view in
the URL, bad input as a message, and a live run's checkpoints with the drift chart."""

from __future__ import annotations

import re

import pytest

from viz_transformer import settings
from viz_transformer.figures.common import labels
from viz_transformer.training.checkpoints import new_run_folder
from viz_transformer.training.live.train import train_live
from viz_transformer.ui import compare_caches

PAGE = "pages/compare_models.py"


def test_the_default_pair_is_the_student_and_its_teacher(open_page, figures):
    app = open_page(PAGE)
    assert not app.error
    assert (app.session_state["cmp_a"], app.session_state["cmp_b"]) == (
        "paper-en-pt",
        "bergamot-en-pt",
    )
    titles = [f["layout"]["title"]["text"] for f in figures(app)]
    assert titles[0].startswith("JS distance of every head pair")
    assert titles[1].startswith("Encoder self-attention: matched pair")
    table = app.dataframe[0].value
    assert len(table) == 48 and table["JS distance"].is_monotonic_increasing
    assert (table["A head"] == table["B head"]).all()  # the student kept its teacher's encoder
    assert (
        app.query_params["cmp_a"] == ["paper-en-pt"] or app.query_params["cmp_a"] == "paper-en-pt"
    )


def test_the_view_round_trips_through_the_url(open_page, figures, decode_array):
    params = {
        "cmp_a": "paper-reverse",
        "cmp_b": "paper-reverse",
        "cmp_kind": "cross",
        "cmp_text": "red ship\nhappy king blue sea",
        "cmp_pair": "3",
        "cmp_sentence": "1",
    }
    app = open_page(PAGE, params=params)
    assert not app.error
    assert app.radio(key="cmp_kind").value == "cross"
    assert app.selectbox(key="cmp_pair").value == 3
    assert app.selectbox(key="cmp_sentence").value == 1
    pair = figures(app)[1]
    assert "distance 0.0000" in pair["layout"]["title"]["text"]
    diff = decode_array(pair["data"][2]["z"])
    assert diff.shape == (5, 5) and abs(diff).max() == 0  # a model against itself
    app.selectbox(key="cmp_pair").set_value(5).run()
    assert app.query_params["cmp_pair"] in ("5", ["5"])


@pytest.mark.parametrize(
    ("b", "message"),
    [
        ("paper:/x/run", "is not a folder"),
        ("paper-reverse", "type at least one sentence"),
    ],
)
def test_bad_input_gets_a_message(open_page, b, message):
    params = {"cmp_a": "paper-reverse", "cmp_b": b, "cmp_text": "red ship"}
    if b == "paper-reverse":
        params["cmp_text"] = " \n "
    app = open_page(PAGE, params=params)
    shown = [*app.error, *app.info]
    assert shown and re.search(message, shown[0].value.replace("\\", ""), re.I)  # unescaped


def test_models_with_other_tokenizers_are_marked_and_stop_before_loading(open_page):
    app = open_page(PAGE)  # A: paper-en-pt
    labels = app.selectbox(key="cmp_b").options
    assert "bergamot-en-pt" in labels  # the teacher: the same pieces
    assert "smollm2 · another tokenizer than A" in labels
    assert "bergamot-pt-en · another tokenizer than A" in labels
    app = open_page(PAGE, params={"cmp_a": "paper-reverse", "cmp_b": "paper-dates"})
    assert "different tokenizers" in app.warning[0].value
    assert not app.error and not app.dataframe  # nothing loaded or compared
    app.toggle(key="cmp_anyway").set_value(True).run()  # the user insists: the reason per sentence
    assert re.search(
        "paper-dates, sentence 1 .* does not know", app.error[0].value.replace("\\", "")
    )


def test_the_hugging_face_models_this_session_added_are_offered(open_page, tmp_path):
    from viz_transformer.testing.hf import BUILDERS

    bert = f"hf:{BUILDERS['bert'](tmp_path / 'bert')}"
    app = open_page(PAGE)
    app.session_state["_extra_models"] = [bert]  # as the sidebar's "Add model" leaves it
    app.run()
    for key in ("cmp_a", "cmp_b"):
        assert any(o.startswith(bert) for o in app.selectbox(key=key).options)
    app.selectbox(key="cmp_a").set_value(bert).run()
    app.selectbox(key="cmp_b").set_value(bert).run()
    assert not app.error and app.dataframe  # a model against itself: compared


def test_a_live_runs_checkpoints_show_their_drift(open_page, figures):
    folder = new_run_folder("reverse", settings.CHECKPOINTS_DIR)
    train_live("reverse", seed=0, max_steps=20, save_to=folder, save_every=10)
    # a link made before the mode's rename still opens it
    app = open_page(PAGE, params={"cmp_mode": "Checkpoints of a live run", "cmp_kind": "cross"})
    assert not app.error
    titles = [f["layout"]["title"]["text"] for f in figures(app)]
    assert titles[0].startswith("Each head's distance to where it ended")
    assert titles[1].endswith("L0 H0 at each checkpoint")
    app.selectbox(key="cmp_head").set_value(3).run()
    assert not app.exception
    assert [f["layout"]["title"]["text"] for f in figures(app)][1].endswith(
        "L1 H1 at each checkpoint"
    )


def test_cross_attention_pairs_read_by_their_peaks_rows_by_the_predicted_token(open_page, figures):
    app = open_page(PAGE, params={"cmp_kind": "cross"})  # paper-en-pt and its teacher
    assert not app.error
    table = app.dataframe[0].value
    # the student's cross heads focus where its teacher's do, only sharper or softer: not
    # "changed" although their JS distances are 0.14-0.4
    focus = table["reads as"].str.startswith("same focus")
    assert focus.sum() >= 6 and (table.loc[focus, "JS distance"] >= 0.1).all()
    assert (table["peaks agree"].str.rstrip("%").astype(int)[focus] >= 80).all()
    pair = figures(app)[1]
    result = compare_caches.compare(
        "paper-en-pt", "bergamot-en-pt", tuple(app.session_state["cmp_text"].splitlines()), "cross"
    )
    predicted = labels(result.traces_a[0].pred_tokens)
    assert pair["layout"]["yaxis"]["ticktext"] == predicted  # what A predicts in each row
    assert pair["data"][2]["colorbar"]["tickformat"] == ".2~g"  # 0.0004, never "400µ"
