"""The "2017 vs today" page: the paper model's column read from the model, the LLM's conversion
offered while its cache is empty, an hf: model from the sidebar as a third column."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from viz_transformer.models.hf import smollm2
from viz_transformer.testing.hf import BUILDERS

PAGE = "pages/then_and_now.py"


def _table(at: AppTest):
    assert len(at.table) == 1, [e.value for e in at.error]
    return at.table[0].value


def test_paper_column_and_conversion_offer(
    open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("VT_CACHE_DIR", str(tmp_path))  # smollm2 not converted here
    at = open_page(PAGE, model="paper-en-pt")
    table = _table(at)
    assert list(table.columns) == ["paper-en-pt"]
    assert table.loc["Attention heads", "paper-en-pt"].startswith("MHA: 8 query heads, 8 K/V")
    assert table.loc["Normalisation", "paper-en-pt"].startswith("post-norm LayerNorm")
    kv = table.loc["KV cache per token", "paper-en-pt"]
    assert kv == "4,096 bytes (float32)"  # 2 decoder layers x (K, V) x 256 x 4 bytes
    assert any("one-time conversion" in i.value for i in at.info)
    assert [b.label for b in at.button if b.key == "convert_llm"] == ["Convert smollm2 now"]
    assert not (tmp_path / smollm2.FOLDER).exists()  # nothing converted without the button


def test_hf_model_from_the_sidebar_fills_a_column(
    open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("VT_CACHE_DIR", str(tmp_path / "cache"))
    name = f"hf:{BUILDERS['llama'](tmp_path / 'llama')}"
    table = _table(open_page(PAGE, model=name))
    assert list(table.columns) == ["paper-en-pt", name]
    assert table.loc["Attention heads", name] == "GQA: 4 query heads, 2 K/V heads (2 query " \
        "heads share each), d_head 8"  # fmt: skip
    assert table.loc["Feed-forward", name].startswith("SwiGLU: 32 -> 64 -> 32")
    assert "RoPE" in table.loc["Positions", name]


@pytest.mark.slow
def test_smollm2_column(open_page: Callable[..., AppTest], smollm2_model) -> None:
    table = _table(open_page(PAGE, model="paper-en-pt"))
    assert list(table.columns) == ["paper-en-pt", "smollm2"]
    column = table["smollm2"]
    assert column["Attention heads"].startswith("GQA: 9 query heads, 3 K/V heads")
    assert column["KV cache per token"].startswith("46,080 bytes (float32); as MHA 138,240")
    assert column["Normalisation"].startswith("pre-norm LlamaRMSNorm")
    assert column["Architecture"] == "decoder-only: 30 decoder layers"
