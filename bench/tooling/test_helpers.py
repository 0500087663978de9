"""The helpers of the benchmark scripts, without a browser or bertviz: bench_views, bench_bertviz
and common."""

from __future__ import annotations

import json
import types

import numpy as np
import pytest
import torch

from bench.harness.browser import PLOTLY_JS, plotly_page
from bench.harness.common import pick_device, replace_marked
from bench.harness.counting import counting
from bench.harness.synthetic import HEADS, LAYERS, attention, tokens
from viz_transformer.figures.attention import overview_figure
from viz_transformer.records.trace import Trace


def test_synthetic_attention_is_softmax_rows_with_one_pattern_per_head():
    n = 16
    arr = attention(n)
    assert arr.shape == (LAYERS, HEADS, n, n) and arr.dtype == np.float32
    np.testing.assert_allclose(arr.sum(-1), 1.0, atol=1e-5)
    Trace("synthetic", tuple(tokens(n)), (), (), arr, None, None).validate()
    top = arr[-1].argmax(-1)  # [heads, q]: where each query looks most in the last layer
    rows = np.arange(n)
    assert (top[0] == rows).mean() > 0.9  # head 0: itself
    assert (top[1, 1:] == rows[:-1]).mean() > 0.9  # head 1: the previous token
    assert (top[2] == 0).mean() > 0.9  # head 2: the first token
    assert (top[3] == rows).mean() < 0.5  # head 3: noise only
    assert not np.array_equal(attention(n, seed=1), arr)


def test_tokens_have_the_asked_length_and_special_ends():
    toks = tokens(64)
    assert len(toks) == 64 and toks[0] == "[CLS]" and toks[-1] == "[SEP]"


def test_plotly_page_embeds_the_figure_intact_beside_a_local_plotly_js(tmp_path):
    toks = ("<s>", "a", "</s>")  # "</s>" would end the script if written as is
    arr = np.full((2, 2, 3, 3), 1 / 3, np.float32)
    fig_json = overview_figure(Trace("t", toks, (), (), arr, None, None), "encoder").to_json()
    html = plotly_page(fig_json, tmp_path).read_text()
    script = html.split("const fig = ", 1)[1].split(";\nconst t0", 1)[0]
    assert "</" not in script
    assert json.loads(script) == json.loads(fig_json)
    assert '<script src="plotly.min.js">' in html
    assert (tmp_path / "plotly.min.js").stat().st_size == PLOTLY_JS.stat().st_size


def test_counting_counts_calls_and_restores_the_functions():
    module = types.SimpleNamespace(f=lambda x: x + 1, g=lambda: 0)
    original = module.f
    with counting(module, ("f", "g")) as calls:
        assert module.f(1) == 2 and module.f(2) == 3
    assert calls == {"f": 2}
    assert module.f is original


def test_pick_device_takes_the_argument_else_cuda_when_present(monkeypatch):
    from viz_transformer import settings

    monkeypatch.setattr(settings, "DEVICE", None)  # VT_DEVICE unset
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pick_device() == "cuda" and pick_device("cpu") == "cpu"
    monkeypatch.setattr(settings, "DEVICE", "cpu")  # VT_DEVICE=cpu wins over a present GPU
    assert pick_device() == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(settings, "DEVICE", None)
    assert pick_device() == "cpu"
    with pytest.raises(SystemExit, match="--device cuda but torch sees no CUDA device"):
        pick_device("cuda")


def test_replace_marked_replaces_between_the_markers_else_appends_under_the_heading():
    text = "# Doc\n\nbefore\n<!-- run -->\nold\n<!-- /run -->\nafter\n"
    new = "<!-- run -->\nnew\n<!-- /run -->"
    assert replace_marked(text, "run", new) == "# Doc\n\nbefore\n" + new + "\nafter\n"
    assert replace_marked(text, "other", "<!-- other -->x<!-- /other -->", "## Other") == (
        text.rstrip() + "\n\n## Other\n\n<!-- other -->x<!-- /other -->\n"
    )
    assert replace_marked("# Doc\n", "run", new) == "# Doc\n\n" + new + "\n"
