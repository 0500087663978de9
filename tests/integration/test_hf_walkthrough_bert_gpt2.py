"""The Q/K/V walkthrough of a Hugging Face BERT (post-norm encoder) and GPT-2 (pre-norm LayerNorm
decoder, fused c_attn), tiny and random: every step recomputed by ``analysis.walkthrough`` equals
what the model computes. The reference is a second copy of each model loaded from the same folder
with transformers' own eager attention (``BertModel``, ``GPT2Model``), read with forward hooks on
its blocks, norms and projections and with ``output_attentions``: nothing of our capture path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertModel, GPT2LMHeadModel, GPT2Model

import viz_transformer as vt
from viz_transformer.analysis import walkthrough
from viz_transformer.models.results import QKV_NOTE
from viz_transformer.testing.hf import BUILDERS

TEXT = "the cat sat on the mat"
CASES = [(0, 0, 2), (1, 1, 4), (1, 0, 0)]  # (layer, head, query position)


def _draw_norms_and_biases(folder: Path, cls: type) -> Path:
    """Resave the model in ``folder`` with every LayerNorm gain and bias and every bias drawn
    away from their init (1 and 0), so a norm or bias left out of the walkthrough would show."""
    model = cls.from_pretrained(folder)
    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "ln_" in name or "LayerNorm" in name:
                noise = torch.randn(p.shape, generator=generator, device=device) * 0.3
                p.copy_(noise + (1.0 if name.endswith("weight") else 0.0))
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf-qkv")
    return {
        "bert": _draw_norms_and_biases(BUILDERS["bert"](root / "bert"), BertModel),
        "gpt2": _draw_norms_and_biases(BUILDERS["gpt2"](root / "gpt2"), GPT2LMHeadModel),
        "bart": BUILDERS["bart"](root / "bart"),
    }


@pytest.fixture(scope="module")
def models(folders: dict[str, Path]) -> dict[str, vt.LoadedModel]:
    return {f: vt.load_model(f"hf:{folder}") for f, folder in folders.items()}


def _keeper(seen: dict[str, np.ndarray], name: str, pre: bool):
    """A forward (pre-)hook keeping the first batch row of the module's input (pre) or output."""

    def hook(module, args, kwargs, *out):
        value = (args[0] if args else kwargs["hidden_states"]) if pre else out[0]
        value = value[0] if isinstance(value, tuple) else value
        seen[name] = value[0].detach().to("cpu", torch.float64).numpy()

    return hook


def _reference(module: torch.nn.Module, parts: dict[str, tuple[torch.nn.Module, bool]], ids):
    """Run ``module`` (eager attention) on ``ids`` with hooks on ``parts`` (name -> (module, pre));
    returns what they saw, plus ``"pattern"`` ``[L, h, T, T]`` from ``output_attentions``."""
    seen: dict[str, np.ndarray] = {}
    handles = [
        (m.register_forward_pre_hook if pre else m.register_forward_hook)(
            _keeper(seen, name, pre), with_kwargs=True
        )
        for name, (m, pre) in parts.items()
    ]
    try:
        batch = torch.tensor([ids], device=next(module.parameters()).device)
        with torch.no_grad():
            out = module(input_ids=batch, output_attentions=True)
    finally:
        for h in handles:
            h.remove()
    seen["pattern"] = np.stack([a[0].double().cpu().numpy() for a in out.attentions])
    return seen


def _check_attention(w: walkthrough.Walkthrough, seen: dict[str, np.ndarray]) -> None:
    """Steps 2 to 6 and W^O against the reference's projections, weights and output."""
    sl = slice(w.head * w.d_k, (w.head + 1) * w.d_k)
    np.testing.assert_allclose(w.q, seen["q"][w.position, sl], atol=1e-5)
    np.testing.assert_allclose(w.k, seen["k"][:, sl], atol=1e-5)
    np.testing.assert_allclose(w.v, seen["v"][:, sl], atol=1e-5)
    np.testing.assert_allclose(w.weights, seen["pattern"][w.layer, w.head, w.position], atol=1e-5)
    assert w.weights.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(w.concat, seen["concat"][w.position], atol=1e-5)
    np.testing.assert_allclose(w.z, seen["concat"][w.position, sl], atol=1e-5)
    np.testing.assert_allclose(w.out, seen["out"][w.position], atol=1e-5)


@pytest.mark.parametrize(("layer", "head", "position"), CASES)
def test_gpt2_every_step_equals_the_model(models, folders, layer, head, position) -> None:
    model = models["gpt2"]
    ref = GPT2Model.from_pretrained(folders["gpt2"], attn_implementation="eager").eval()
    block = ref.h[layer]
    parts = {"resid": (block, True), "x": (block.ln_1, False), "qkv": (block.attn.c_attn, False),
             "concat": (block.attn.c_proj, True), "out": (block.attn, False)}  # fmt: skip
    seen = _reference(ref, parts, model.encode_text(TEXT))
    seen["q"], seen["k"], seen["v"] = np.split(seen.pop("qkv"), 3, axis=1)  # [W_Q | W_K | W_V]
    cap = walkthrough.capture(model, TEXT, "decoder")
    assert (cap.norm, cap.n_heads, cap.d_k, cap.rotary) == ("layer", 2, 8, None) and cap.biased
    w = walkthrough.explain(cap, layer, head, position)
    # step 1: the block input and ln_1 of it (gain and bias), recomputed = the model's own
    np.testing.assert_allclose(w.resid, seen["resid"][position], atol=1e-5)
    np.testing.assert_allclose(w.x, seen["x"][position], atol=1e-5)
    np.testing.assert_allclose(w.normed, seen["x"][position], atol=1e-5)
    _check_attention(w, seen)
    # the causal mask: nothing after the query position, and -inf before the softmax
    assert np.all(w.weights[position + 1 :] == 0) and np.isneginf(w.scaled[position + 1 :]).all()
    assert w.weights[: position + 1].min() > 0


@pytest.mark.parametrize(("layer", "head", "position"), CASES)
def test_bert_every_step_equals_the_model(models, folders, layer, head, position) -> None:
    model = models["bert"]
    ref = BertModel.from_pretrained(folders["bert"], attn_implementation="eager").eval()
    block = ref.encoder.layer[layer]
    own, out = block.attention.self, block.attention.output
    parts = {"x": (block, True), "q": (own.query, False), "k": (own.key, False),
             "v": (own.value, False), "concat": (out.dense, True), "out": (out.dense, False),
             "post": (block.attention, False)}  # fmt: skip
    seen = _reference(ref, parts, model.encode_text(TEXT))
    cap = walkthrough.capture(model, TEXT, "encoder")
    assert (cap.norm, cap.resid, cap.n_heads, cap.d_k) == ("none", None, 2, 8) and cap.biased
    w = walkthrough.explain(cap, layer, head, position)
    # step 1: the block input itself, no norm before attention
    np.testing.assert_allclose(w.x, seen["x"][position], atol=1e-5)
    assert w.resid is None and w.normed is None
    _check_attention(w, seen)
    assert w.keep.all() and np.all(w.weights > 0)  # one sentence: no padding, nothing masked
    # post-norm: the block adds the output to x, then its LayerNorm (the caption's claim)
    with torch.no_grad():
        summed = torch.tensor(w.x + w.out, dtype=torch.float32, device=out.dense.weight.device)
        post = out.LayerNorm(summed).double().cpu().numpy()
    np.testing.assert_allclose(post, seen["post"][position], atol=1e-5)


def test_layer_zero_reads_the_embedding_output(models) -> None:
    """BERT's layer 0 reads its embeddings after their LayerNorm; GPT-2's ln_1 reads wte + wpe."""
    bert, gpt2 = models["bert"], models["gpt2"]
    for model, kind in ((bert, "encoder"), (gpt2, "decoder")):
        ids = torch.tensor([model.encode_text(TEXT)], device=model.device)
        base = model.module.base_model
        with torch.no_grad():
            if kind == "encoder":
                embedded = base.embeddings(input_ids=ids)[0]
            else:
                positions = torch.arange(ids.shape[1], device=model.device)
                embedded = base.wte(ids)[0] + base.wpe(positions)
        cap = walkthrough.capture(model, TEXT, kind)
        first = cap.x_q[0] if cap.resid is None else cap.resid[0]
        np.testing.assert_allclose(first, embedded.cpu().numpy(), atol=1e-6)


def test_other_families_and_kinds_say_why(models) -> None:
    with pytest.raises(ValueError) as caught:
        walkthrough.capture(models["bart"], TEXT, "encoder")
    assert str(caught.value) == QKV_NOTE
    with pytest.raises(ValueError, match="encoder-only: its one attention kind is the encoder"):
        models["bert"].qkv_run(TEXT, "decoder")
    with pytest.raises(ValueError, match="decoder-only"):
        models["gpt2"].qkv_run(TEXT, "encoder")


def test_capture_leaves_nothing_attached(models, own_hooks) -> None:
    for model, kind in ((models["bert"], "encoder"), (models["gpt2"], "decoder")):
        before = own_hooks(model.module)
        walkthrough.capture(model, TEXT, kind)
        assert own_hooks(model.module) == before


@pytest.mark.needs("minilm")
def test_shipped_minilm_walks_through() -> None:
    minilm = vt.load_model("minilm")
    text = "The cat sat on the mat."
    cap = walkthrough.capture(minilm, text, "encoder")
    assert (cap.n_layers, cap.n_heads, cap.d_k, cap.norm) == (6, 12, 32, "none")
    assert cap.query_tokens[0] == "[CLS]" and cap.query_tokens[-1] == "[SEP]"
    trace = vt.trace(minilm, text)
    for layer, head in ((0, 0), (5, 11)):
        w = walkthrough.explain(cap, layer, head, 2)
        np.testing.assert_allclose(w.weights, trace.get("encoder")[layer, head, 2], atol=1e-5)
