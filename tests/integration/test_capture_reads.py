"""A pass captures only what is read (issue 46), on the tiny Llama loaded in bfloat16 (lazy maps):
the score split and what a head writes hook no pattern, so no eager attention and no dense mask
run; a trace keeps queries and keys in the model's dtype, reads the output layer a chunk of rows
at a time with no cache, and still predicts what the whole logits predict; what a head writes is
float32 whatever the model's dtype."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.analysis.walkthrough import capture
from viz_transformer.analysis.why import reads
from viz_transformer.models.hf import attention as hf_attention
from viz_transformer.models.hf import calls as hf_calls
from viz_transformer.models.hf import heads as hf_heads
from viz_transformer.models.hf import lazy as hf_lazy
from viz_transformer.models.hf import qkv as hf_qkv
from viz_transformer.models.hf.call_record import PROBE_ROWS
from viz_transformer.networks import hooks as vt_hooks
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.records.qkv import Layers
from viz_transformer.testing.hf import BUILDERS, TEXT
from viz_transformer.text.after import labels_after


@pytest.fixture(scope="module")
def half(tmp_path_factory: pytest.TempPathFactory) -> vt.LoadedModel:
    path = BUILDERS["llama"](tmp_path_factory.mktemp("reads") / "llama")
    model = vt.load_model(f"hf:{path}", "cpu", "bfloat16")
    assert model.lazy_capable and model.module.dtype == torch.bfloat16
    return model


@pytest.fixture()
def spies(half, monkeypatch) -> dict[str, list]:
    """What each pass hooked, the query rows of each eager attention it ran, and each dense mask
    it made."""
    seen: dict[str, list] = {"hooked": [], "eager": [], "dense mask": []}
    real_collect = vt_hooks.collect_calls

    def collect(model, names, *args, **kwargs):
        seen["hooked"] += list(names)
        return real_collect(model, names, *args, **kwargs)

    monkeypatch.setattr(hf_qkv, "collect_calls", collect)
    modeling = sys.modules[type(half.module.model.layers[0].self_attn).__module__]
    real_eager, real_mask = modeling.eager_attention_forward, hf_attention.eager_mask
    monkeypatch.setattr(
        modeling,
        "eager_attention_forward",
        lambda *a, **k: seen["eager"].append(a[1].shape[2]) or real_eager(*a, **k),
    )
    for where in (hf_attention, hf_calls):
        monkeypatch.setattr(
            where, "eager_mask", lambda *a, **k: seen["dense mask"].append(1) or real_mask(*a, **k)
        )
    return seen


@pytest.mark.parametrize("by", ["dimension", "component"])
def test_a_score_split_hooks_no_pattern_and_runs_no_eager_attention(half, spies, by):
    parts = vt.score_parts(half, TEXT, "decoder", 1, 2, 5, 1, by=by)
    assert spies["hooked"] and not any("pattern" in n for n in spies["hooked"])
    attention = sorted(n.split(".layers.")[1] for n in spies["hooked"] if "self_attn" in n)
    assert attention == (  # the asked layer's queries and keys, earlier heads' outputs
        ["0.self_attn.hook_z"] if by == "component" else []
    ) + ["1.self_attn.hook_k", "1.self_attn.hook_q"]
    assert not spies["eager"] and not spies["dense mask"]
    score = vt.attention_scores(half, TEXT, "decoder", 1, 2)[5, 1]
    assert float(parts["value"].sum()) == pytest.approx(score, abs=1e-3)


def test_what_a_head_writes_hooks_no_pattern_and_reads_one_layer(half, spies):
    writes = vt.head_writes(half, TEXT, "decoder", 1, 2, 4)
    attention = [n for n in spies["hooked"] if "self_attn" in n]
    assert attention == ["model.layers.1.self_attn.hook_z"]  # and the final stream
    assert not spies["eager"] and not spies["dense mask"]
    assert len(writes.promoted) == 10


def test_the_walkthrough_still_captures_every_pattern(half, spies):
    cap = capture(half, TEXT, "decoder")
    assert cap.captured["pattern"].shape[:2] == (2, 4) and len(spies["eager"]) == 2


def test_a_bfloat16_trace_keeps_its_queries_and_keys_in_bfloat16(half, spies):
    trace = half.trace(TEXT)
    assert isinstance(trace.decoder, LazyPatterns)
    assert trace.decoder.kept_dtype == torch.bfloat16  # the capture keeps the model's dtype
    assert not spies["dense mask"]  # SDPA masks causally by itself
    # the model's own function ran only on the few rows each call's formula is checked on
    assert len(spies["eager"]) == 2 and max(spies["eager"]) <= PROBE_ROWS
    rows = np.asarray(trace.decoder).sum(-1)
    np.testing.assert_allclose(rows, 1.0, atol=1e-5)


def test_the_trace_takes_each_rows_argmax_a_chunk_at_a_time(half, monkeypatch):
    module = half.module
    monkeypatch.setattr(hf_lazy, "ARGMAX_CELLS", 2 * module.config.vocab_size)  # 2 rows
    rows, cache = [], []
    head = module.get_output_embeddings().register_forward_hook(
        lambda m, args, out: rows.append(args[0].shape[0])
    )
    base = module.base_model.register_forward_pre_hook(
        lambda m, args, kwargs: cache.append(kwargs.get("use_cache")), with_kwargs=True
    )
    try:
        trace = half.trace(TEXT)
    finally:
        head.remove()
        base.remove()
    ids = half.tokenizer(TEXT)["input_ids"]
    assert max(rows) == 2 and sum(rows) == len(ids) and cache == [False]
    with torch.no_grad():
        logits = module(input_ids=torch.tensor([ids], device=module.device)).logits[0].float()
    assert trace.pred_tokens == labels_after(half.output_tokens, ids, logits.argmax(-1).tolist())


def test_what_a_head_writes_is_float32_on_a_bfloat16_model(half, monkeypatch):
    monkeypatch.setattr(hf_heads, "UNEMBED_CELLS", 7 * half.module.config.hidden_size)  # 7 rows
    rng = np.random.default_rng(0)
    d = half.module.config.hidden_size
    parts, stream = (
        torch.from_numpy(rng.normal(size=s).astype(np.float32)).to(half.module.device)
        for s in ((3, d), d)
    )
    logits, bias = half.held_unembed(parts, stream)
    assert logits.dtype == bias.dtype == torch.float32
    gain = half.module.model.norm.weight.detach().double()
    weight = half.module.lm_head.weight.detach().double()
    eps = half.module.config.rms_norm_eps
    scale = 1 / torch.sqrt(stream.double().pow(2).mean() + eps)
    ref = (parts.double() * scale * gain) @ weight.T
    np.testing.assert_allclose(logits.numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    assert not bias.any()


def test_a_split_keeps_only_the_block_inputs_it_reads(half):
    dimension = capture(half, TEXT, "decoder", needs=reads(1, "dimension"))
    assert dimension.n_layers == 2 and isinstance(dimension.x_q, Layers)
    assert not dimension.x_q.arrays and not dimension.resid.arrays  # none read
    component = capture(half, TEXT, "decoder", needs=reads(0, "component"))
    assert sorted(component.resid.arrays) == [0]  # layer 0's input only (layer 1 would: both)
    full = capture(half, TEXT, "decoder")
    np.testing.assert_array_equal(component.resid[0], full.resid[0])
    with pytest.raises(ValueError, match=r"layer 1 was not captured in this run \(kept: none\)"):
        dimension.resid[1, 0]
