"""The attention-maps page on a grouped-query Llama (tiny, random): the overview groups the query
heads by their K/V head and says what GQA saves; the sinks map equals the first token's share
computed directly from the trace; the first-key-hidden map is labelled renormalised."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from viz_transformer.testing.hf import BUILDERS

PAGE = "pages/attention_maps.py"


def _titled(figs: list[dict], start: str) -> dict:
    titles = [f["layout"].get("title", {}).get("text", "") for f in figs]
    return figs[next(i for i, t in enumerate(titles) if start in t)]


def test_gqa_overview_and_sinks(
    open_page: Callable[..., AppTest], figures: Callable, decode_array: Callable, tmp_path: Path
) -> None:
    name = f"hf:{BUILDERS['llama'](tmp_path / 'llama')}"
    at = open_page(PAGE, model=name)
    overview = _titled(figures(at), "layers x 4 heads")
    assert overview["layout"]["xaxis"]["ticktext"] == [
        "head 0<br>K/V 0", "head 1<br>K/V 0", "head 2<br>K/V 1", "head 3<br>K/V 1"
    ]  # fmt: skip
    assert "4 query heads share 2 K/V heads" in overview["layout"]["title"]["text"]
    assert len(overview["layout"]["shapes"]) == 1  # one line between the two groups
    line = next(c.value for c in at.caption if "KV cache grows" in c.value)
    # 2 layers x 2 (K and V) x 2 K/V heads x d_head 8 x 4 bytes, and as MHA with 4 heads
    assert "256 bytes per token (float32) instead of 512" in line and "2x less" in line

    at.toggle(key="sinks").set_value(True).run()
    assert not at.exception, at.exception
    sink_fig = _titled(figures(at), "mean weight on the first token")
    trace = vt.trace(vt.load_model(name), at.text_area(key="sentence").value)
    want = trace.decoder[:, :, 1:, 0].mean(-1)  # skip row 0, which sees only the first token
    np.testing.assert_allclose(decode_array(sink_fig["data"][0]["z"]), want, atol=1e-6)

    at.toggle(key="no_sink").set_value(True).run()
    assert not at.exception, at.exception
    hidden = _titled(figures(at), "rows renormalised")
    z = decode_array(hidden["data"][0]["z"])
    assert z.shape == (trace.decoder.shape[2], trace.decoder.shape[3] - 1)
    np.testing.assert_allclose(np.nansum(z[1:], -1), 1.0, atol=1e-5)


def test_mha_model_keeps_plain_columns(open_page: Callable[..., AppTest], figures) -> None:
    at = open_page(PAGE, model="paper-en-pt")
    overview = _titled(figures(at), "heads")
    assert all("K/V" not in t for t in overview["layout"]["xaxis"]["ticktext"])
    assert not any("KV cache grows" in c.value for c in at.caption)
