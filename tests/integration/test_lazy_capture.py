"""Long inputs: HF traces keep queries and keys and compute each head on demand; every head equals
the eager capture (and ``output_attentions``) of the same input."""

from __future__ import annotations

import numpy as np
import pytest

from viz_transformer import settings
from viz_transformer.models.devices import default_device
from viz_transformer.models.hf.model import HFModel
from viz_transformer.models.hf.spec import hf_spec
from viz_transformer.networks.hooks import active_hook_names, hooks
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.testing.hf import BUILDERS, TARGET, TEXT

LAZY = ["marian", "bart", "bert", "gpt2", "llama", "t5"]  # every model through "vt"


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, HFModel]:
    root = tmp_path_factory.mktemp("lazy")
    return {
        n: HFModel.load(hf_spec(f"hf:{BUILDERS[n](root / n)}"), default_device()) for n in BUILDERS
    }


def test_every_model_through_our_attention_function_can_be_lazy(models):
    assert {n for n, m in models.items() if m.lazy_capable} == set(LAZY)
    assert all(m.module.config._attn_implementation == "vt" for m in models.values())


@pytest.mark.parametrize("name", LAZY)
@pytest.mark.parametrize("target", [None, TARGET])
def test_lazy_heads_equal_the_eager_capture(models, name, target, monkeypatch):
    model = models[name]
    if target is not None and model.spec.shows == ("encoder",):
        pytest.skip("an encoder-only model takes no target")
    eager = model.trace(TEXT, target)
    monkeypatch.setattr(settings, "LAZY_ABOVE", 1)
    lazy = model.trace(TEXT, target)
    assert lazy.tgt_tokens == eager.tgt_tokens and lazy.pred_tokens == eager.pred_tokens
    for kind in ("encoder", "decoder", "cross"):
        ref, arr = eager.get(kind), lazy.get(kind)
        assert (ref is None) == (arr is None)
        if ref is None:
            continue
        assert isinstance(arr, LazyPatterns) and arr.shape == ref.shape
        assert arr.device.type == model.device.type  # q and k stay where the model runs
        np.testing.assert_allclose(np.asarray(arr), ref, atol=2e-5, err_msg=f"{name} {kind}")
    assert active_hook_names() == []


def test_short_inputs_stay_whole_arrays(models):
    trace = models["bert"].trace(TEXT)
    assert isinstance(trace.encoder, np.ndarray)


def test_t5s_relative_bias_is_kept_as_its_diagonals(models, monkeypatch):
    """T5's bias depends on ``j - i`` alone: the lazy trace keeps ``2T - 1`` numbers per head,
    not the ``T x T`` tensor the model made, and no call is held whole."""
    monkeypatch.setattr(settings, "LAZY_ABOVE", 1)
    trace = models["t5"].trace(TEXT)
    for kind in ("encoder", "decoder"):
        arr = trace.get(kind)
        bias = arr.formula(0).bias
        n = arr.shape[2]
        assert bias.dense is None and bias.diagonals.shape == (arr.shape[1], 2 * n - 1)
        assert not any(arr.is_whole(i) for i in range(arr.shape[0]))
    assert not trace.messages


def test_no_capture_runs_the_fused_kernel(models, monkeypatch):
    """Outside a capture the attention function takes SDPA; capturing weights takes eager;
    both give the same hidden states."""
    import torch

    from viz_transformer.models.hf import attention as hf_attention

    fused = []
    real = hf_attention.sdpa_attention_forward
    monkeypatch.setattr(
        hf_attention, "sdpa_attention_forward", lambda *a, **k: fused.append(1) or real(*a, **k)
    )
    model = models["bert"]
    ids = torch.tensor([model.tokenizer(TEXT)["input_ids"]], device=model.device)
    with torch.no_grad():
        plain = model.module(input_ids=ids).last_hidden_state
    assert len(fused) == 2  # one per layer
    trace = model.trace(TEXT)  # eager inside the hooks block
    assert len(fused) == 2 and isinstance(trace.encoder, np.ndarray)
    with torch.no_grad(), hooks(model.module, {model.names["encoder"][0]: lambda x, n: None}):
        captured = model.module(input_ids=ids).last_hidden_state
    assert len(fused) == 3  # layer 0 eager (its weights are asked), layer 1 fused
    np.testing.assert_allclose(plain.cpu().numpy(), captured.cpu().numpy(), atol=1e-5)


def test_an_encoder_runs_only_as_far_as_the_layer_asked(models, monkeypatch):
    """A long encoder input runs no forward pass until a head is asked, then up to its layer."""
    import pickle
    from concurrent.futures import ThreadPoolExecutor

    model = models["bert"]
    eager = model.trace(TEXT).encoder
    monkeypatch.setattr(settings, "LAZY_ABOVE", 1)
    calls = []
    layer_1 = model.module.encoder.layer[1]
    handle = layer_1.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        lazy = model.trace(TEXT).encoder  # validate() reads layer 0 only
        assert lazy.fetched_layers() == [0] and not calls
        with ThreadPoolExecutor(4) as pool:  # sessions asking at once fetch layer 1 once
            heads = list(pool.map(lambda h: lazy[1, h % 2], range(8)))
        assert lazy.fetched_layers() == [0, 1] and len(calls) == 1
    finally:
        handle.remove()
    for h, head in enumerate(heads):
        np.testing.assert_allclose(head, eager[1, h % 2], atol=2e-5)
    copy = pickle.loads(pickle.dumps(lazy))
    np.testing.assert_allclose(np.asarray(copy), eager, atol=2e-5)
    assert active_hook_names() == []
