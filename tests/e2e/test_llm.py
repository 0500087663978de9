"""Issue 14 in a real browser: the built-in ``smollm2`` on every page it makes sense on.

One server for the module, started with ``VT_CACHE_DIR`` of the run's one conversion (the session
fixture ``smollm2_model``), so the app loads the converted folder and never converts again; a
second, short-lived server gets a damaged cache. Numbers on the pages are checked against the
same model loaded in the test process.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import numpy as np
import pytest
from playwright.sync_api import Page, expect

import viz_transformer as vt
from viz_transformer.analysis.sampling import Sampling, sample_steps
from viz_transformer.models.hf import smollm2

pytestmark = pytest.mark.slow

TEXT = "The capital of France is"
PLOT = ".js-plotly-plot .main-svg"
# every figure drawn, as JSON (typed arrays as lists, NaN as null), in page order
FIGURES_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(el => JSON.stringify(
    {data: el.data, title: el.layout.title, meta: el.layout.meta, x: el.layout.xaxis,
     y: el.layout.yaxis},
    (k, v) => ArrayBuffer.isView(v) ? Array.from(v) : v))"""


@pytest.fixture(scope="module")
def llm_server(smollm2_model, serve_app) -> Iterator[str]:
    """The app with the run's converted smollm2 cache (``VT_CACHE_DIR`` of ``smollm2_model``)."""
    assert smollm2.is_converted()  # the fixture's cache: the server must not convert again
    with serve_app("test_llm", {"VT_CACHE_DIR": os.environ["VT_CACHE_DIR"]}) as url:
        yield url


def _settle(page: Page) -> None:
    """Wait until the script run ends (the status widget leaves) and no exception shows."""
    page.wait_for_timeout(400)
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    assert page.locator('[data-testid="stException"]').count() == 0


def _goto(page: Page, server: str, path: str, **params: str) -> None:
    page.goto(f"{server}/{path}?{urlencode({'model': 'smollm2', 'sentence': TEXT, **params})}")
    page.wait_for_selector("h1")
    _settle(page)


def _figures(page: Page) -> list[dict]:
    page.wait_for_selector(PLOT)
    _settle(page)
    return [json.loads(f) for f in page.evaluate(FIGURES_JS)]


def _title(fig: dict) -> str:
    """The figure's title, also when the page set it above the chart (kept in ``meta``; the
    chart's own title is then empty, or only the bold tags plotly.js wraps it in)."""
    title = fig["title"]
    text = (title.get("text") if isinstance(title, dict) else title) or ""
    meta = fig.get("meta")
    kept = meta.get("title") if isinstance(meta, dict) else None
    return text if re.sub(r"<[^>]+>", "", text).strip() or not kept else kept


def _array(spec: dict | list) -> np.ndarray:
    """A figure's array (plotly writes ``{"dtype", "bdata", "shape"}``, short ones as lists)."""
    if isinstance(spec, list):
        return np.array(spec, dtype=float)  # null (masked, grey) -> nan
    raw = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=spec["dtype"]).astype(float)
    shape = spec.get("shape")
    return raw.reshape([int(n) for n in str(shape).split(",")]) if shape else raw


def _text(page: Page) -> str:
    return page.locator("body").inner_text()


def _switch(page: Page, name: str) -> None:
    page.get_by_text(name, exact=True).click()  # the label: the input itself is covered
    _settle(page)


def _model_trace() -> np.ndarray:
    """``[layers, heads, q, k]`` of smollm2 on ``TEXT``, from the model loaded in this process."""
    arr = vt.trace(vt.load_model("smollm2"), TEXT).get("decoder")
    return np.stack([np.stack([np.asarray(arr[la, h]) for h in range(9)]) for la in range(30)])


def test_attention_maps_masked_overview_grouped_by_kv_head_and_sinks(page, llm_server):
    want = _model_trace()
    n = want.shape[-1]
    _goto(page, llm_server, "attention_maps", attn_tab="Maps", kind="decoder", layer="3")
    ask = page.get_by_text("Overview of every head")
    if ask.count():  # a lazy capture draws the overview on request
        ask.click()
        _settle(page)
    figs = _figures(page)
    overview = next(f for f in figs if "30 layers x 9 heads" in _title(f))
    assert "grouped-query attention: 9 query heads share 3 K/V heads" in _title(overview)
    assert len(overview["x"]["ticktext"]) == 9 and len(overview["y"]["ticktext"]) == 30
    assert [t.rsplit("K/V ", 1)[1] for t in overview["x"]["ticktext"]] == list("000111222")
    assert "9 query heads share 3 K/V heads" in _text(page)  # with the KV-cache bytes saved
    head = next(f for f in figs if "layer 3, head 0" in _title(f))
    z = _array(head["data"][0]["z"])
    assert z.shape == (n, n)
    assert np.isnan(z[np.triu_indices(n, 1)]).all()  # the future is masked
    assert np.allclose(z[np.tril_indices(n)], want[3, 0][np.tril_indices(n)], atol=1e-5)

    _switch(page, "Attention sinks: how much each head gives the first token")
    sink = next(f for f in _figures(page) if "mean weight on the first token" in _title(f))
    mass = _array(sink["data"][0]["z"])
    assert np.allclose(mass, want[:, :, 1:, 0].mean(axis=2), atol=1e-5)  # row 0 sees only it
    page.get_by_text(re.compile("Hide the first token in head 0")).click()
    hidden = next(f for f in _figures(page) if "rows renormalised" in _title(f))
    rows = _array(hidden["data"][0]["z"])
    assert rows.shape == (n, n - 1) and np.isnan(rows[0]).all()  # row 0 has nothing left
    rest = want[3, 0, 1:, 1:]
    expected = np.where(np.tril(np.ones_like(rest)) > 0, rest, np.nan)
    expected = expected / np.nansum(expected, axis=1, keepdims=True)
    assert np.allclose(rows[1:], expected, atol=1e-5, equal_nan=True)


def _chips(page: Page, step: int) -> list[str]:
    """The decoder input tokens the page shows at ``step``."""
    line = page.locator('[data-testid="stMarkdownContainer"]').filter(
        has_text=f"Decoder input at step {step}"
    )
    return [t.strip() for t in line.locator("code").all_inner_texts()]


def _tokens(tokens: tuple[str, ...]) -> list[str]:
    return [t.replace("`", "ˋ").strip() for t in tokens]


def test_decoder_next_adds_a_row_and_seeded_sampling_is_reproducible(page, llm_server):
    _goto(page, llm_server, "decoder_steps", max_steps="6", step="0")
    first = _chips(page, 0)
    assert first and "Decoder-only model" in _text(page)
    page.get_by_role("button", name="Next").click()
    page.get_by_text("Decoder input at step 1").wait_for()
    _settle(page)
    assert _chips(page, 1)[:-1] == first and len(_chips(page, 1)) == len(first) + 1
    rows = [f for f in _figures(page) if "masked" in _title(f).lower()]
    assert rows, [_title(f) for f in _figures(page)]

    model = vt.load_model("smollm2")
    _goto(page, llm_server, "decoder_steps", max_steps="6", step="5")
    _switch(page, "Sample")
    for seed in (0, 7):
        if seed:
            seed_box = page.get_by_label("Seed")
            seed_box.fill(str(seed))
            seed_box.press("Enter")
            _settle(page)
        want = sample_steps(model, TEXT, 6, Sampling(0.8, 50, 0.95, seed))
        shown = int(re.search(r"Decoder input at step (\d+)", _text(page)).group(1))
        if shown == 0:  # a new decoding may start over at step 0: walk to the sampled tokens
            page.get_by_role("button", name="Next").click()
            page.get_by_text("Decoder input at step 1").wait_for()
            _settle(page)
            shown = 1
        assert _chips(page, shown) == _tokens(want.steps[shown].input_tokens), seed
        assert f"seed {seed} makes the draw reproducible" in _text(page)


def test_then_and_now_reads_both_columns_from_the_models(page, llm_server):
    _goto(page, llm_server, "then_and_now")
    table = page.locator('[data-testid="stTable"]')
    text = table.inner_text().replace("→", "->")  # Streamlit's markdown draws -> as an arrow
    header = table.locator("thead").inner_text()
    assert "paper-en-pt" in header and "smollm2" in header
    arch = vt.load_model("smollm2").architecture().rows()
    paper = vt.load_model("paper-en-pt").architecture().rows()
    for rows in (arch, paper):
        for line in rows.values():
            assert line in text, line
    assert "decoder-only" in arch["Architecture"] and "pre-norm" in arch["Normalisation"]
    assert "encoder-decoder" in paper["Architecture"] and "post-norm" in paper["Normalisation"]


def test_positional_page_rotary_section(page, llm_server):
    _goto(page, llm_server, "positional_encoding")
    page.get_by_role("heading", name="Rotary positions in smollm2").wait_for()
    text = _text(page)
    assert "Nothing is added to the token embedding" in text
    error = float(re.search(r"changes the score by at most ([0-9.e+-]+) of", text).group(1))
    assert error < 1e-4  # exactly invariant up to float rounding
    titles = [_title(f) for f in _figures(page)]
    assert len(titles) >= 2


def test_qkv_walkthrough_of_smollm2(page, llm_server):
    layer, head, token = 2, 4, 3
    _goto(page, llm_server, "qkv_walkthrough", layer=str(layer), head=str(head), token=str(token))
    figs = _figures(page)
    table = next(f for f in figs if "Steps 3 to 5" in _title(f))
    assert f"head {head}" in _title(table) and f"({token})" in _title(table)
    weights = [float(a) for a in table["data"][0]["cells"]["values"][4]]
    want = _model_trace()[layer, head, token]
    assert np.allclose(weights, want, atol=1e-4)  # 4 decimals on the page
    assert math.isclose(sum(weights), 1, abs_tol=1e-3)
    norm = vt.load_model("smollm2").architecture().norm_type  # LlamaRMSNorm
    caption = page.locator('[data-testid="stCaptionContainer"]').filter(has_text="d_k = 64")
    assert f"Pre-norm: x is the block's input after its {norm}" in caption.inner_text()
    assert "neither does smollm2" in caption.inner_text()  # Llama's projections have no biases
    assert f"Query head {head} shares K/V head {head // 3}" in caption.inner_text()
    assert "post-norm" not in _text(page)


def test_a_corrupt_cache_gives_one_message_and_the_app_keeps_working(
    browser, serve_app, tmp_path: Path
):
    broken = tmp_path / smollm2.FOLDER
    broken.mkdir()
    (broken / "model.safetensors").write_bytes(b"half")
    (broken / smollm2.MARKER).write_text(json.dumps({"files": {"model.safetensors": 1000}}))
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(90_000)
    with serve_app("test_llm-corrupt", {"VT_CACHE_DIR": str(tmp_path)}) as url:
        _goto(page, url, "attention_maps")
        alerts = page.locator('[data-testid="stAlert"]').filter(has_text="damaged")
        # waited for, not counted at once: a fresh server's first request draws the page's
        # skeleton, then reruns through app.py (pages/nav/via_app.py), and the status widget
        # can leave between the two runs, before the message is drawn (CI saw 0 once)
        expect(alerts).to_have_count(1, timeout=60_000)
        assert f"Delete {broken}" in alerts.inner_text()
        page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
        page.get_by_role("option").filter(has_text="paper-en-pt ·").click()
        page.get_by_text("Decoder masked self-attention", exact=True).wait_for()
        page.wait_for_selector(PLOT)
        _settle(page)
        assert "damaged" not in _text(page)
    context.close()
