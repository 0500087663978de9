"""A pass captures only what is read (issues 46, 53), on the tiny Llama loaded in bfloat16 (lazy
maps): the score split, what a head writes and the Q, K, V walkthrough hook no pattern, so no
eager attention and no dense mask run, hook one layer's attention (and earlier layers at two
positions), ask no ``output_hidden_states`` and keep q, k and the streams in the model's dtype;
a trace keeps queries and keys in the model's dtype, reads the output layer a chunk of rows at a
time with no cache, and still predicts what the whole logits predict; what a head writes is
float32 whatever the model's dtype."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer import settings
from viz_transformer.analysis import walkthrough
from viz_transformer.analysis.walkthrough import capture
from viz_transformer.analysis.why import reads
from viz_transformer.models.hf import attention as hf_attention
from viz_transformer.models.hf import calls as hf_calls
from viz_transformer.models.hf import heads as hf_heads
from viz_transformer.models.hf import qkv as hf_qkv
from viz_transformer.models.hf import trace_pass
from viz_transformer.models.hf.call_record import PROBE_ROWS
from viz_transformer.networks import hooks as vt_hooks
from viz_transformer.notebook import query_key
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.records.qkv import Layers, rows_of
from viz_transformer.testing.hf import BUILDERS, TEXT
from viz_transformer.text.after import labels_after


@pytest.fixture(scope="module")
def half(tmp_path_factory: pytest.TempPathFactory) -> vt.LoadedModel:
    path = BUILDERS["llama"](tmp_path_factory.mktemp("reads") / "llama")
    model = vt.load_model(f"hf:{path}", "cpu", "bfloat16")
    assert model.lazy_capable and model.module.dtype == torch.bfloat16
    return model


@pytest.fixture()
def spies(half, monkeypatch) -> Iterator[dict[str, list]]:
    """What each pass hooked, the query rows of each eager attention it ran, each dense mask it
    made, and whether it asked every layer's hidden states."""
    seen: dict[str, list] = {"hooked": [], "eager": [], "dense mask": [], "all states": []}
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
    handle = half.module.register_forward_pre_hook(
        lambda m, a, k: seen["all states"].append(bool(k.get("output_hidden_states"))),
        with_kwargs=True,
    )
    yield seen
    handle.remove()


@pytest.mark.parametrize("by", ["dimension", "component"])
def test_a_score_split_hooks_no_pattern_and_runs_no_eager_attention(half, spies, by):
    parts = vt.score_parts(half, TEXT, "decoder", 1, 2, 5, 1, by=by)
    assert spies["hooked"] and not any("pattern" in n for n in spies["hooked"])
    attention = sorted(n.split(".layers.")[1] for n in spies["hooked"] if "self_attn" in n)
    assert attention == (  # the asked layer's queries and keys, earlier heads' outputs
        ["0.self_attn.hook_z"] if by == "component" else []
    ) + ["1.self_attn.hook_k", "1.self_attn.hook_q"]
    assert not spies["eager"] and not spies["dense mask"] and spies["all states"] == [False]
    score = vt.attention_scores(half, TEXT, "decoder", 1, 2)[5, 1]
    assert float(parts["value"].sum()) == pytest.approx(score, abs=1e-3)
    window = vt.attention_scores(half, TEXT, "decoder", 1, 2, queries=range(4, 6), keys=range(3))
    assert window.shape == (2, 3) and window[1, 1] == score


def test_what_a_head_writes_hooks_no_pattern_and_reads_one_layer(half, spies):
    writes = vt.head_writes(half, TEXT, "decoder", 1, 2, 4)
    attention = [n for n in spies["hooked"] if "self_attn" in n]
    assert attention == ["model.layers.1.self_attn.hook_z"]  # and the final stream
    assert not spies["eager"] and not spies["dense mask"] and spies["all states"] == [False]
    assert len(writes.promoted) == 10


def test_the_walkthrough_reads_one_layer_and_no_pattern(half, spies):
    cap = capture(half, TEXT, "decoder", needs=walkthrough.reads(1))
    attention = sorted(n.split(".layers.")[1] for n in spies["hooked"] if "self_attn" in n)
    assert attention == ["1.self_attn.hook_k", "1.self_attn.hook_q", "1.self_attn.hook_z"]
    assert not spies["eager"] and not spies["dense mask"] and spies["all states"] == [False]
    assert "pattern" not in cap.captured and list(cap.x_q.arrays) == list(cap.resid.arrays) == [1]
    kept = [cap.x_q.arrays[1], cap.resid.arrays[1], cap.captured["q"].arrays[1]]
    assert all(t.dtype == torch.bfloat16 for t in kept)  # the model's dtype, float32 when read
    w = walkthrough.explain(cap, 1, 2, 5)
    row = half.trace(TEXT).decoder.cells(1, 2, [5])[0][: len(w.weights)]  # the row it shows
    np.testing.assert_allclose(w.weights, row, atol=2e-2)  # q, k in float64 against bfloat16
    with pytest.raises(ValueError, match=r"layer 0 was not captured in this run \(kept: 1\)"):
        walkthrough.explain(cap, 0, 2, 5)


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
    monkeypatch.setattr(trace_pass, "ARGMAX_CELLS", 2 * module.config.vocab_size)  # 2 rows
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
    rows = capture(half, TEXT, "decoder", needs=reads(1, "component", (5, 1)))
    assert sorted(rows.resid.arrays) == [0, 1] and rows.resid.shape[1:] == (2, full.resid.shape[2])
    np.testing.assert_array_equal(rows_of(rows.resid, 1, [5, 1]), full.resid[1][[5, 1]])
    assert rows.captured["z"].shape[1:] == (4, 2, 8)  # heads x the two positions x d_k
    with pytest.raises(ValueError, match=r"position 3 was not captured in this run"):
        rows_of(rows.resid, 0, [3])
    with pytest.raises(ValueError, match="read them with rows_of"):
        rows.resid[0]


def test_the_notebook_panel_reads_one_row_of_one_layer(half, spies, monkeypatch):
    trace = half.trace(TEXT)
    monkeypatch.setattr(LazyPatterns, "head", lambda *a: pytest.fail("a whole head was made"))
    cache: dict = {}
    got = query_key.parts(half, TEXT, trace, "decoder", 1, 2, 5, cache)
    attention = sorted(n.split(".layers.")[1] for n in spies["hooked"] if "self_attn" in n)
    assert attention == ["1.self_attn.hook_k", "1.self_attn.hook_q"]  # one layer's, no pattern
    row = trace.decoder.cells(1, 2, [5])[0]
    assert got["keys"] == [int(k) for k in np.argsort(-row, kind="stable")[: len(got["keys"])]]
    assert got["weights"] == pytest.approx([float(row[k]) for k in got["keys"]])
    query_key.parts(half, TEXT, trace, "decoder", 0, 2, 5, cache)
    assert cache["at"] == ("decoder", 0) and list(cache["capture"].captured["q"].arrays) == [0]


def test_scores_are_made_for_the_window_asked_alone(half, monkeypatch):
    whole = vt.attention_scores(half, TEXT, "decoder", 1, 2)
    monkeypatch.setattr(settings, "MAX_MATERIALISE", 8)  # fewer scores than the whole head
    with pytest.raises(ValueError, match="pass queries= and keys= ranges"):
        vt.attention_scores(half, TEXT, "decoder", 1, 2)
    window = vt.attention_scores(half, TEXT, "decoder", 1, 2, queries=range(3, 5), keys=range(2, 6))
    np.testing.assert_array_equal(window, whole[3:5, 2:6])  # masked keys -inf as in the whole
    with pytest.raises(ValueError, match="query 998 does not exist"):
        vt.attention_scores(half, TEXT, "decoder", 1, 2, queries=range(998, 1000), keys=range(2))
