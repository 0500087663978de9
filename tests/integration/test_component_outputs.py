"""Each head's output as the library computes it (``z_h W^O_h``: ``writes.head_output``, the head
rows of ``why.residual_components``) checked against the attention block's output projection as
the model ran it, read by a PyTorch forward hook on that projection: the heads' outputs plus the
output bias are its output, and head h's output is what the projection makes of head h's slice of
its input alone. The component split takes each MLP as the remainder, so its sums cannot catch a
head credited with another head's output; this can (a swap of two heads' W^O slices fails it).

Every family the component and writes code reads: the paper model (encoder, decoder, cross), the
Bergamot network (built small, without the wheel), and the tiny Hugging Face Llama, GPT-2, BERT.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import viz_transformer as vt
from viz_transformer.analysis import walkthrough as wt
from viz_transformer.analysis import why, writes
from viz_transformer.models import own_qkv
from viz_transformer.networks.hooks import collect, qkv_hook_names
from viz_transformer.networks.marian import BergamotConfig, BergamotTransformer
from viz_transformer.records.kinds import head_label
from viz_transformer.records.qkv import KindCapture
from viz_transformer.testing.hf import BUILDERS
from viz_transformer.testing.paper import tiny_paper_model
from viz_transformer.testing.projections import (
    output_projections,
    per_head,
    projection_bias,
    recording,
)

PAPER_TEXT = "alpha beta gamma delta"
HF_TEXT = "the cat sat on the mat"
HF = {"llama": "decoder", "gpt2": "decoder", "bert": "encoder"}
ATOL = 1e-5


@pytest.fixture(scope="module")
def hf_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, vt.LoadedModel]:
    root: Path = tmp_path_factory.mktemp("outputs")
    torch.manual_seed(0)  # the builders draw from torch's global generator
    models = {f: vt.load_model(f"hf:{BUILDERS[f](root / f)}") for f in HF}
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():  # output biases away from 0, so a left-out bias shows
        for model in models.values():
            for proj in output_projections(model, HF[model_family(models, model)]):
                if getattr(proj, "bias", None) is not None:
                    proj.bias.copy_(
                        torch.randn(proj.bias.shape, generator=generator, device="cpu").to(
                            proj.bias.device
                        )
                        * 0.3
                    )
    return models


def model_family(models: dict[str, vt.LoadedModel], model: vt.LoadedModel) -> str:
    return next(f for f, m in models.items() if m is model)


def captured(model, text: str, kind: str) -> tuple[KindCapture, list[dict[str, torch.Tensor]]]:
    projs = output_projections(model, kind)
    with recording(projs) as kept:
        cap = wt.capture(model, text, kind)
    return cap, kept


def library_heads(cap: KindCapture, layer: int) -> np.ndarray:
    """``[h, T, d]`` of ``writes.head_output`` at every query position."""
    positions = range(len(cap.query_tokens))
    return np.stack(
        [[writes.head_output(cap, layer, h, p) for p in positions] for h in range(cap.n_heads)]
    )


def check_outputs(cap: KindCapture, projs: list[nn.Module], kept) -> None:
    """Every layer: the heads' outputs plus b_o are the projection's output; each head's output
    is the projection of its own slice."""
    assert len(kept) == cap.n_layers
    for layer, (proj, run) in enumerate(zip(projs, kept, strict=True)):
        heads = library_heads(cap, layer)  # (h, T, d)
        out = run["out"].double().cpu().numpy()  # (T, d)
        assert out.shape == heads.shape[1:]
        bias = projection_bias(proj, run["in"].shape[-1])
        np.testing.assert_allclose(cap.weights["b_o"][layer], bias, atol=1e-7)
        np.testing.assert_allclose(heads.sum(0) + cap.weights["b_o"][layer], out, atol=ATOL)
        np.testing.assert_allclose(heads, per_head(proj, run["in"], cap.n_heads), atol=ATOL)
        assert np.abs(heads[0] - heads[1]).max() > 1e-3  # two heads that could be told apart


def swapped(cap: KindCapture, layer: int, a: int, b: int) -> KindCapture:
    """``cap`` with heads ``a`` and ``b``'s rows of W^O at ``layer`` exchanged."""
    w_o = np.stack([cap.weights["w_o"][i] for i in range(cap.n_layers)])  # a copy, every layer
    rows_a, rows_b = (slice(h * cap.d_k, (h + 1) * cap.d_k) for h in (a, b))
    w_o[layer, rows_a], w_o[layer, rows_b] = (
        cap.weights["w_o"][layer, rows_b],
        cap.weights["w_o"][layer, rows_a],
    )
    return dataclasses.replace(cap, weights={**cap.weights, "w_o": w_o})


def check_swap_fails(cap: KindCapture, projs: list[nn.Module], kept) -> None:
    """The check above fails on a capture whose W^O gives a head another head's slice."""
    with pytest.raises(AssertionError):
        check_outputs(swapped(cap, cap.n_layers - 1, 0, 1), projs, kept)


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_paper_heads_outputs_are_the_output_projections(kind):
    model = tiny_paper_model()
    cap, kept = captured(model, PAPER_TEXT, kind)
    projs = output_projections(model, kind)
    check_outputs(cap, projs, kept)
    check_swap_fails(cap, projs, kept)


def bergamot_capture(kind: str) -> tuple[KindCapture, list[nn.Module], list[dict]]:
    """A small Bergamot network (random weights, no wheel) captured as ``BergamotModel.qkv_run``
    captures it (its hook points through ``own_qkv.kind_capture``), its projections recorded."""
    torch.manual_seed(0)
    cfg = BergamotConfig(vocab_size=12, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=2,
                         n_decoder_layers=2)  # fmt: skip
    net = BergamotTransformer(cfg).eval()
    src, out = [3, 5, 7, 4, 0], [6, 2, 9, 8]
    projs = output_projections(net, kind)
    names = qkv_hook_names(net, kind)
    with recording(projs) as kept, torch.inference_mode(), collect(net, names) as cache:
        memory = net.encode(torch.tensor([src], device="cpu"))
        if kind == "cross":
            net.decode(memory, torch.tensor([out], device="cpu"))
    tokens = tuple(map(str, src)), ("<s>", *map(str, out))
    cap = own_qkv.kind_capture("bergamot-small", net, kind, cache, tokens, True)
    return cap, projs, kept


@pytest.mark.parametrize("kind", ["encoder", "cross"])
def test_bergamot_heads_outputs_are_the_output_projections(kind):
    cap, projs, kept = bergamot_capture(kind)
    check_outputs(cap, projs, kept)
    check_swap_fails(cap, projs, kept)


@pytest.mark.parametrize("family", list(HF))
def test_hf_heads_outputs_are_the_output_projections(hf_models, family):
    model, kind = hf_models[family], HF[family]
    cap, kept = captured(model, HF_TEXT, kind)
    projs = output_projections(model, kind)
    check_outputs(cap, projs, kept)
    check_swap_fails(cap, projs, kept)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_components_name_each_head_with_its_own_output(hf_models, family):
    """``residual_components``: the row named ``head_label((l, h))`` is head h's projection of
    layer l, ``L{l} attention bias`` the projection's bias, and the stream entering the next
    block is the sum (the MLP row the remainder)."""
    model = hf_models[family]
    cap, kept = captured(model, HF_TEXT, "decoder")
    projs = output_projections(model, "decoder")
    positions = [0, 2, len(cap.query_tokens) - 1]
    names, parts = why.residual_components(cap, cap.n_layers, positions)
    rows = dict(zip(names, parts, strict=True))
    for layer, (proj, run) in enumerate(zip(projs, kept, strict=True)):
        heads = per_head(proj, run["in"], cap.n_heads)[:, positions]
        for h in range(cap.n_heads):
            np.testing.assert_allclose(rows[head_label((layer, h))], heads[h], atol=ATOL)
        bias = projection_bias(proj, run["in"].shape[-1])
        if family == "gpt2":
            np.testing.assert_allclose(rows[f"L{layer} attention bias"][0], bias, atol=1e-7)
        else:
            assert f"L{layer} attention bias" not in rows and not bias.any()
    np.testing.assert_allclose(parts.sum(0), cap.final[positions], atol=ATOL)
    bad = swapped(cap, 0, 0, 1)
    names, parts = why.residual_components(bad, cap.n_layers, positions)
    moved = parts[names.index("L0 H0")] - rows["L0 H0"]
    assert np.abs(moved).max() > 1e-3  # a swapped W^O shows in the head's row


@pytest.mark.parametrize("case", ["encoder", "decoder", "cross", *HF])
def test_per_head_w_o_and_the_walkthroughs_output_are_the_projections(hf_models, case):
    """``model.head_output_weight`` (what value-weighted attention reads): head h's slice of the
    projection's input times its ``[h]`` is head h's output; ``walkthrough.explain``'s output
    (Concat(heads) W^O + b, recomputed from q, k, v) is the projection's output."""
    model = hf_models[case] if case in HF else tiny_paper_model()
    kind = HF.get(case, case)
    cap, kept = captured(model, HF_TEXT if case in HF else PAPER_TEXT, kind)
    projs = output_projections(model, kind)
    last = len(cap.query_tokens) - 1
    for layer, (proj, run) in enumerate(zip(projs, kept, strict=True)):
        w = model.head_output_weight(kind, layer).double().cpu().numpy()  # (h, d_k, d)
        x = run["in"].double().cpu().numpy()  # (T, h * d_k)
        d_k = w.shape[1]
        heads = per_head(proj, run["in"], cap.n_heads)
        for h in range(cap.n_heads):
            np.testing.assert_allclose(x[:, h * d_k : (h + 1) * d_k] @ w[h], heads[h], atol=ATOL)
        out = run["out"].double().cpu().numpy()
        for position in (0, last):
            explained = wt.explain(cap, layer, cap.n_heads - 1, position)
            np.testing.assert_allclose(explained.out, out[position], atol=ATOL)
