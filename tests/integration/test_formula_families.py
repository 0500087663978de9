"""Attention beyond ``softmax(q k^T * scale)``, read from each call: every map of a tiny model of
each family (soft-capping and windows, sinks, relative bias, a shared module, two calls per
layer, a local bidirectional window) equals the same model's eager ``output_attentions`` within
1e-5 in float32, on the default path and on the long-input path (``settings.LAZY_ABOVE`` 1,
nothing held whole); and a window model's long path builds no ``T x T`` mask."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM

from viz_transformer import settings
from viz_transformer.analysis.decoding import decode_steps
from viz_transformer.models.hf import calls as hf_calls
from viz_transformer.models.hf import trace_pass
from viz_transformer.models.hf.call_record import PROBE_ROWS
from viz_transformer.models.hf.generation import decoder_start
from viz_transformer.models.hf.model import HFModel
from viz_transformer.models.hf.spec import hf_spec
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.testing.formula_models import FORMULA_BUILDERS
from viz_transformer.testing.hf import BUILDERS, TARGET, TEXT

FAMILIES = {**FORMULA_BUILDERS, "t5": BUILDERS["t5"]}
LONGER = f"{TEXT} and the cat sat on the mat"  # longer than every window
AUTO = {"encoder-only": AutoModel, "decoder-only": AutoModelForCausalLM,
        "encoder-decoder": AutoModelForSeq2SeqLM}  # fmt: skip
CALLS_PER_LAYER = {"diffllama": 2}  # differential attention: two calls on the same q and k
# T5's scores are unscaled and its tiny model's queries and keys drawn wide: the fused kernel's
# rounding in layer 0's output (the long path's forward) moves layer 1's weights by up to 2e-5;
# each stack's first self-attention call, whose inputs are the same on both paths, to 1e-6
ATOL = {"t5": 2e-5}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory):
    root, models = tmp_path_factory.mktemp("formula"), {}

    def load(name: str) -> tuple[HFModel, Path]:
        if name not in models:
            folder = FAMILIES[name](root / name)
            models[name] = HFModel.load(hf_spec(f"hf:{folder}"), "cpu"), folder
        return models[name]

    return load


def _eager(model: HFModel, folder: Path, ids: list[int], target: list[int] | None):
    """kind -> ``[layers, heads, q, k]`` from the same weights loaded with eager attention."""
    ref = AUTO[model.spec.architecture].from_pretrained(folder, attn_implementation="eager")
    batch = {"input_ids": torch.tensor([ids], device="cpu")}
    if target is not None:
        batch["decoder_input_ids"] = torch.tensor([target], device="cpu")
    with torch.no_grad():
        out = ref.eval()(**batch, output_attentions=True)
    stack = lambda maps: np.stack([a[0].numpy() for a in maps])  # noqa: E731
    if target is None:
        return {model.spec.shows[0]: stack(out.attentions)}
    return {
        "encoder": stack(out.encoder_attentions),
        "decoder": stack(out.decoder_attentions),
        "cross": stack(out.cross_attentions),
    }


@pytest.mark.parametrize("path", ["default", "lazy"])
@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_map_equals_eager_output_attentions(loaded, name, path, monkeypatch):
    model, folder = loaded(name)
    monkeypatch.setattr(settings, "LAZY_ABOVE", 1 if path == "lazy" else 10**12)
    seq2seq = model.spec.encoder_decoder
    trace = model.trace(TEXT, TARGET) if seq2seq else model.trace(LONGER)
    ids = model.encode_text(TEXT if seq2seq else LONGER)
    target = None
    if seq2seq:
        out = [i for i in model.target_ids(TARGET) if i not in model.eos_ids()]
        target = [decoder_start(model.module), *out]
    reference = _eager(model, folder, ids, target)
    assert trace.kinds == list(reference)
    for kind, want in reference.items():
        arr = trace.get(kind)
        assert isinstance(arr, LazyPatterns) == (path == "lazy")
        want = np.repeat(want, CALLS_PER_LAYER.get(name, 1), axis=0)
        got = np.asarray(arr)
        np.testing.assert_allclose(got, want, atol=ATOL.get(name, 1e-5), err_msg=f"{name} {kind}")
        if kind != "cross":  # the first call's inputs are the same on both paths
            np.testing.assert_allclose(got[0], want[0], atol=1e-6, err_msg=f"{name} {kind} 0")
        if path == "lazy":
            assert not any(arr.is_whole(i) for i in range(arr.shape[0]))
    # no call held whole, no layer left out; only gpt-oss's sinks are named
    assert all("attention sink" in m for m in trace.messages) and len(trace.messages) == (
        name == "gpt_oss"
    )


@pytest.mark.parametrize("path", ["default", "lazy"])
def test_a_sinks_weight_is_what_a_row_lacks_of_1(loaded, path, monkeypatch):
    model, _ = loaded("gpt_oss")
    monkeypatch.setattr(settings, "LAZY_ABOVE", 1 if path == "lazy" else 10**12)
    trace = model.trace(LONGER)  # validate() accepted rows that sum below 1
    assert trace.sink_layers == {"decoder": (0, 1)}
    maps = np.asarray(trace.decoder)
    assert (maps.sum(-1) < 1 - 1e-3).any()
    if path == "lazy":
        for layer in range(2):
            sink = np.stack([trace.decoder.sink_weights(layer, h) for h in range(4)])
            np.testing.assert_allclose(maps[layer].sum(-1) + sink, 1.0, atol=1e-5)


def test_a_window_models_long_path_builds_no_dense_mask(loaded, monkeypatch):
    """Mistral's window at 300 tokens, its calls computed 24 query rows at a time: no
    ``T x T`` mask is made (no eager mask, the predicate never made dense), the model's own
    function sees only the rows each call is checked on, and every map is exact."""
    model, folder = loaded("mistral")
    text = " ".join([LONGER] * 10)
    ids = model.encode_text(text)
    n = len(ids)
    assert n > 250
    monkeypatch.setattr(settings, "LAZY_ABOVE", 1)
    monkeypatch.setattr(hf_calls, "ROW_CELLS", 4 * 24 * n)  # batch 1 x 4 heads x 24 rows x n
    seen = {"eager mask": 0, "dense": 0, "blocks": [], "eager rows": []}
    real_mask, real_rows = hf_calls.eager_mask, hf_calls.mask_rows

    def mask_rows(*args, **kwargs):
        block = real_rows(*args, **kwargs)
        seen["blocks"].append(block.shape)
        return block

    monkeypatch.setattr(hf_calls, "eager_mask", lambda **k: seen.update(x=1) or real_mask(**k))
    monkeypatch.setattr(hf_calls, "mask_rows", mask_rows)
    modeling = __import__(type(model.module).__module__, fromlist=["eager_attention_forward"])
    real_eager = modeling.eager_attention_forward
    monkeypatch.setattr(
        modeling,
        "eager_attention_forward",
        lambda *a, **k: seen["eager rows"].append(a[1].shape[2]) or real_eager(*a, **k),
    )
    trace = model.trace(text)
    assert "x" not in seen  # eager_mask never ran: the mask stayed a predicate
    assert seen["blocks"] and max(b[-2] for b in seen["blocks"]) <= 24
    assert seen["eager rows"] and max(seen["eager rows"]) <= PROBE_ROWS
    monkeypatch.setattr(modeling, "eager_attention_forward", real_eager)
    want = _eager(model, folder, ids, None)["decoder"]
    np.testing.assert_allclose(np.asarray(trace.decoder), want, atol=1e-5)


def test_decoding_steps_read_the_calls_in_the_traces_order(loaded):
    """DiffLlama calls attention twice per layer: each step's row of every call equals the
    trace's row of the same call, in call order."""
    model, _ = loaded("diffllama")
    dec = decode_steps(model, LONGER, max_steps=3)
    ids, out = model.encode_text(LONGER), list(dec.output_ids[:-1])
    _, arrays, _ = trace_pass.run(
        model, input_ids=[*ids, *out], attention_mask=[1] * (len(ids) + 2)
    )
    assert len(dec.steps) == 3
    for t, step in enumerate(dec.steps):
        q = len(ids) - 1 + t
        assert step.self_row.shape[0] == arrays["decoder"].shape[0]  # one row per call
        np.testing.assert_allclose(step.self_row, arrays["decoder"][:, :, q, : q + 1], atol=1e-5)


def test_an_argument_the_tiles_do_not_read_keeps_that_calls_map_whole(loaded, monkeypatch):
    """With soft-capping taken as unknown, every Gemma 2 call is held whole as its own eager
    function computed it, the trace says why, and the maps are still the model's."""
    model, folder = loaded("gemma2")
    monkeypatch.setattr(hf_calls, "KNOWN", hf_calls.KNOWN - {"softcap"})
    monkeypatch.setattr(settings, "LAZY_ABOVE", 1)
    trace = model.trace(LONGER)
    arr = trace.decoder
    assert all(arr.is_whole(i) for i in range(arr.shape[0]))
    assert len(trace.messages) == 2 and all("softcap" in m for m in trace.messages)
    want = _eager(model, folder, model.encode_text(LONGER), None)["decoder"]
    np.testing.assert_allclose(np.asarray(arr), want, atol=1e-5)


def test_a_function_that_does_more_than_its_arguments_say_is_caught(loaded, monkeypatch):
    """A model whose eager function scales the queries by what no argument says: the rows the
    formula is checked on differ, so each call is held whole, equal to the default path."""
    model, _ = loaded("mistral")
    modeling = sys.modules[type(model.module).__module__]
    real = modeling.eager_attention_forward
    monkeypatch.setattr(
        modeling,
        "eager_attention_forward",
        lambda module, q, *rest, **kw: real(module, q * 1.5, *rest, **kw),
    )
    monkeypatch.setattr(settings, "LAZY_ABOVE", 10**12)
    default = np.asarray(model.trace(LONGER).decoder)
    monkeypatch.setattr(settings, "LAZY_ABOVE", 1)
    trace = model.trace(LONGER)
    assert all(trace.decoder.is_whole(i) for i in range(2))
    assert all("other weights" in m for m in trace.messages) and len(trace.messages) == 2
    np.testing.assert_allclose(np.asarray(trace.decoder), default, atol=1e-6)
