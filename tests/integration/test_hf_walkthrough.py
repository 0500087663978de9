"""The Q/K/V walkthrough of a Hugging Face Llama (tiny, random, grouped-query): every step
recomputed by ``analysis.walkthrough`` equals what the model's own modules computed, read here
with forward hooks on the block, q_proj, k_proj and o_proj, and its weights equal the trace's row
(``cells``: the one row the page shows, never a whole head). The capture reads one layer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.analysis import walkthrough
from viz_transformer.records.lazy import is_lazy
from viz_transformer.testing.hf import BUILDERS

TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> vt.LoadedModel:
    return vt.load_model(f"hf:{BUILDERS['llama'](tmp_path_factory.mktemp('llama'))}")


def _module_reads(model: vt.LoadedModel, layer: int) -> dict[str, np.ndarray]:
    """Block input, q_proj and k_proj outputs, o_proj input and output of ``layer``: ``[T, .]``."""
    block = model.module.model.layers[layer]
    attn = block.self_attn
    seen: dict[str, np.ndarray] = {}

    def keep(name: str, pre: bool):
        def hook(module, args, kwargs, *out):
            value = (args[0] if args else kwargs["hidden_states"]) if pre else out[0]
            value = value[0] if isinstance(value, tuple) else value
            seen[name] = value[0].detach().to("cpu", torch.float32).numpy()

        return hook

    handles = [
        block.register_forward_pre_hook(keep("resid", True), with_kwargs=True),
        attn.o_proj.register_forward_pre_hook(keep("concat", True), with_kwargs=True),
        attn.q_proj.register_forward_hook(keep("q", False), with_kwargs=True),
        attn.k_proj.register_forward_hook(keep("k", False), with_kwargs=True),
        attn.o_proj.register_forward_hook(keep("out", False), with_kwargs=True),
    ]
    try:
        ids = model.encode_text(TEXT)
        batch = torch.tensor([ids], device=model.device)
        with torch.no_grad():
            model.module(input_ids=batch)
    finally:
        for h in handles:
            h.remove()
    return seen


def trace_row(model: vt.LoadedModel, text: str, layer: int, head: int, position: int):
    """The trace's weights of one query row of the prompt ``text`` (a lazy trace computes that
    row alone), its keys cut to the row's own (the trace runs on with the greedy output)."""
    pattern = model.trace(text).decoder
    if is_lazy(pattern):
        row = pattern.cells(layer, head, [position])[0]
    else:
        row = np.asarray(pattern[layer, head, position])
    return row[: len(model.encode_text(text))]


@pytest.mark.parametrize(("layer", "head", "position"), [(0, 0, 3), (1, 3, 5), (1, 2, 0)])
def test_every_step_equals_the_model(llama: vt.LoadedModel, layer, head, position) -> None:
    cap = walkthrough.capture(llama, TEXT, "decoder", needs=walkthrough.reads(layer))
    assert "pattern" not in cap.captured and list(cap.x_q.arrays) == [layer]
    assert cap.n_heads == 4 and cap.kv_heads == 2 and cap.d_k == 8
    w = walkthrough.explain(cap, layer, head, position)
    seen = _module_reads(llama, layer)
    d = w.d_k
    kv = head // 2  # 4 query heads over 2 K/V heads
    assert w.kv_head == kv
    np.testing.assert_allclose(w.resid, seen["resid"][position], atol=1e-5)
    np.testing.assert_allclose(w.normed, w.x, atol=1e-5)  # our RMSNorm = the model's
    np.testing.assert_allclose(w.q_plain, seen["q"][position, head * d : (head + 1) * d], atol=1e-5)
    np.testing.assert_allclose(w.k_plain, seen["k"][: len(w.k), kv * d : (kv + 1) * d], atol=1e-5)
    np.testing.assert_allclose(w.weights, trace_row(llama, TEXT, layer, head, position), atol=1e-5)
    assert np.all(w.weights[position + 1 :] == 0) and w.weights.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(w.concat, seen["concat"][position], atol=1e-5)
    np.testing.assert_allclose(w.z, seen["concat"][position, head * d : (head + 1) * d], atol=1e-5)
    np.testing.assert_allclose(w.out, seen["out"][position], atol=1e-5)
    # RoPE rotates: without it the scores differ (position 0 is the one it leaves alone)
    if position > 0:
        assert not np.allclose(w.k_plain @ w.q_plain, w.raw, atol=1e-4)


def test_unsupported_families_say_why(tmp_path) -> None:
    t5 = vt.load_model(f"hf:{BUILDERS['t5'](tmp_path / 't5')}")  # BERT and GPT-2 are walked
    with pytest.raises(ValueError, match="Llama-family"):
        walkthrough.capture(t5, TEXT, "encoder")


def test_wrong_kind_for_a_decoder_only(llama: vt.LoadedModel) -> None:
    with pytest.raises(ValueError, match="decoder-only"):
        llama.qkv_run(TEXT, "encoder")


@pytest.mark.slow
def test_smollm2_walkthrough_equals_its_attention(smollm2_model) -> None:
    text = "The capital of France is"
    assert smollm2_model.kv_groups("decoder") == (0, 0, 0, 1, 1, 1, 2, 2, 2)
    for layer, head in ((0, 0), (15, 4), (29, 8)):
        cap = walkthrough.capture(smollm2_model, text, "decoder", needs=walkthrough.reads(layer))
        assert (cap.n_heads, cap.kv_heads, cap.d_k) == (9, 3, 64)
        last = len(cap.query_tokens) - 1
        w = walkthrough.explain(cap, layer, head, last)
        assert w.kv_head == head // 3
        np.testing.assert_allclose(w.normed, w.x, atol=1e-4)
        row = trace_row(smollm2_model, text, layer, head, last)
        np.testing.assert_allclose(w.weights, row, atol=1e-5)
