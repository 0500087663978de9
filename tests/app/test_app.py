"""The whole app: Home renders with the loaded model and device, every page is reachable, the
URL restores a view, and presenter mode and downloads work."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from pages.nav import table

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGE = str(ROOT / "pages" / "attention_maps.py")
PAGES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*.py"))


def test_home_names_the_model_and_its_device():
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    device = vt.default_device().type  # the page names the device the model is on
    assert any(vt.default_model() in s.value and device in s.value for s in at.success)
    assert any(f"Models run on **{vt.default_device()}**." in c.value for c in at.sidebar.caption)
    assert any("in **float32**" in s.value for s in at.success)


def test_vt_dtype_reaches_hf_models_and_leaves_the_paper_model_in_float32(monkeypatch):
    from viz_transformer import settings

    monkeypatch.setattr(settings, "DTYPE", "bfloat16")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception  # the default paper-en-pt is not refused under VT_DTYPE
    assert any("in **float32**" in s.value for s in at.success)
    assert any("hf: models in **bfloat16**" in c.value for c in at.sidebar.caption)


def test_home_shows_figure_1s_three_attentions_of_the_default_model(decode_array, figures):
    """Issue 18: the first screen shows one head of encoder self-attention, decoder masked
    self-attention and cross-attention, each the captured pattern of the sidebar's sentence."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    spec = vt.model_info(vt.default_model())
    assert spec.shows == ("encoder", "decoder", "cross")
    trace = vt.trace(vt.load_model(spec.name), spec.example)
    figs = figures(at)
    assert len(figs) == 3
    # a third of the page is too narrow for the titles: each is set above its chart (issue 28)
    titles = [m.value for m in at.markdown if m.value.startswith("**")]
    for fig, kind, title in zip(figs, spec.shows, titles, strict=True):
        last = trace.get(kind).shape[0] - 1
        assert fig["layout"]["title"]["text"].endswith(f"attention, layer {last}, head 0")
        assert title.endswith(f"attention, layer {last}, head 0**")
        z = decode_array(fig["data"][0]["z"])  # masked weights are drawn blank (NaN)
        np.testing.assert_allclose(np.nan_to_num(z), trace.get(kind)[last, 0], atol=1e-6)


def test_a_missing_vt_device_is_one_message_in_the_sidebar(monkeypatch):
    from viz_transformer import settings

    monkeypatch.setattr(settings, "DEVICE", "meta")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.sidebar.error]  # shown escaped, literal
    assert errors == ["VT_DEVICE=meta: models run on cpu, cuda, cuda:N or mps, not meta."]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_its_title_and_content(page):
    """Every file in pages/ (a new page is covered by itself; pages/sections/ and pages/nav/ hold
    helpers) is in the page table and draws, on the default model, its title and its content: a
    chart, a table, or on a page that waits for the user the button that starts it; no error."""
    assert page in {entry.file for entry in table.PAGES}, f"{page} is missing from the page table"
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(page).run()
    assert not at.exception, (page, at.exception)
    assert not at.error, [e.value for e in at.error]
    assert len(at.main.title) == 1, f"{page} drew no title"
    drawn = at.main.get("plotly_chart") or at.main.table or at.main.dataframe or at.main.button
    assert drawn, f"{page} drew nothing but its title"


def test_url_parameters_restore_a_view(decode_array, figures):
    at = AppTest.from_file(PAGE, default_timeout=60)
    params = {"model": "paper-dates", "sentence": "21/11/2026", "kind": "cross", "layer": "1",
              "head": "2"}  # fmt: skip
    at.query_params.update(params)
    at.run()
    assert not at.exception
    assert at.selectbox(key="model").value == "paper-dates"
    assert at.text_area(key="sentence").value == "21/11/2026"
    head = figures(at)[1]
    assert "layer 1, head 2" in head["layout"]["title"]["text"]
    tr = vt.trace(vt.load_model("paper-dates"), "21/11/2026")
    np.testing.assert_allclose(decode_array(head["data"][0]["z"]), tr.cross[1, 2], atol=1e-6)
    at.selectbox(key="head").set_value(3).run()
    assert at.query_params["head"] == ["3"] or at.query_params["head"] == "3"


def test_bad_url_values_fall_back_without_exception():
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params.update({"model": "no-such", "layer": "x", "head": "99", "kind": "nope"})
    at.run()
    assert not at.exception
    assert at.selectbox(key="model").value == vt.default_model()


def test_presenter_mode_enlarges_figure_fonts(figures):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.toggle(key="presenter").set_value(True).run()
    assert not at.exception
    fig = figures(at)[1]
    assert fig["layout"]["font"]["size"] == 19.2  # 1.6 x plotly's 12 px; explicit sizes scale too
    assert fig["layout"]["title"]["font"]["size"] == 27.2


def test_json_and_npz_downloads_are_offered(data_downloads):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    buttons = [b.proto for b in data_downloads(at)]
    assert [b.label for b in buttons] == ["Data as JSON", "Data as NPZ"]
    # written on click (tests/e2e checks the file), not on every rerun
    assert all(b.deferred_file_id for b in buttons) and not any(b.url for b in buttons)


def _open_save_menus(at: AppTest) -> list[str]:
    """Open every chart's "Save figure" menu (keyed like its "Show the numbers" switch) and rerun:
    a menu draws its buttons only when it opens."""
    menus = [
        f"save-{t.key.removeprefix('numbers-')}" for t in at.toggle if t.key.startswith("numbers-")
    ]
    for menu in menus:
        at.session_state[menu] = True
    at.run()
    return menus


def test_every_chart_saves_as_svg_pdf_and_png(figures):
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not [b for b in at.get("download_button") if b.label in ("SVG", "PDF", "PNG")]
    assert len(_open_save_menus(at)) == len(figures(at)) > 0  # one menu under every chart
    saves = [b.proto for b in at.get("download_button") if b.label in ("SVG", "PDF", "PNG")]
    assert len(saves) == 3 * len(figures(at))
    assert [b.label for b in saves[:3]] == ["SVG", "PDF", "PNG"]
    assert [b.id.split("-save-", 1)[1] for b in saves[:3]] == [
        f"encoder-overview-{fmt}" for fmt in ("svg", "pdf", "png")
    ]  # keyed (and named) like the chart's PNG
    assert len({b.id for b in saves}) == len(saves)
    assert all(b.deferred_file_id and not b.url for b in saves)  # rendered only on a click
    each = re.compile(r"Each figure takes about \d+ s on the server\.$")  # a guess, then measured
    assert any(each.search(c.value) for c in at.caption)


def test_an_open_save_menu_says_how_long_the_line_is_or_that_it_is_full(monkeypatch):
    import threading

    from viz_transformer.ui import figure_files
    from viz_transformer.ui.export_queue import ExportQueue

    line = ExportQueue(waiting=1, workers=1, first_guess=5.0)
    monkeypatch.setattr(figure_files, "QUEUE", line)
    release, started = threading.Event(), threading.Event()
    jobs = [lambda: (started.set(), release.wait(30)), lambda: release.wait(30)]
    threads = [threading.Thread(target=line.run, args=(job,), daemon=True) for job in jobs]
    try:
        threads[0].start()
        assert started.wait(10)
        at = AppTest.from_file(PAGE, default_timeout=60).run()
        _open_save_menus(at)
        words = " ".join(c.value for c in at.caption)
        assert "1 figure is being saved, so yours starts in about 5 s." in words
        threads[1].start()  # the line is full now: the menu says so and offers no download
        while line.line().busy < 2:
            threading.Event().wait(0.01)
        at.run()
        assert next(w.value for w in at.warning if "being saved" in w.value) == (
            "2 figures are being saved; try again in about 5 s."
        )
        assert not [b for b in at.get("download_button") if b.label in ("SVG", "PDF", "PNG")]
        assert any(b.label == "Try again" for b in at.button)
    finally:
        release.set()
        for thread in threads:
            thread.join(10)


def test_the_app_sets_torch_threads_per_computation_itself(monkeypatch):
    import threading

    import torch

    from viz_transformer import settings

    monkeypatch.setattr(settings, "TORCH_THREADS", 2)  # tests run with 1: a value to notice
    try:
        AppTest.from_file(APP, default_timeout=60).run()
        seen: list[int] = []
        reader = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
        reader.start()
        reader.join()
        assert seen == [2]  # a new thread (the next session's script) adopts it
    finally:
        torch.set_num_threads(1)
