"""Why a head attends (``why.split_score``): each pair of the input and component splits against
its definition computed here from the model's own weights and hidden states (not the capture):
each side's part through the held pre-attention norm and this head's W^Q or W^K, their dot
product times 1/sqrt(d_k). The parts' sum is the score whichever part is credited with what, so
the sum tests elsewhere cannot catch a bias or a norm given to the wrong part; these can.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import viz_transformer as vt
from viz_transformer.analysis import walkthrough as wt
from viz_transformer.analysis import why
from viz_transformer.records.kinds import head_label
from viz_transformer.testing.hf import BUILDERS
from viz_transformer.testing.paper import tiny_paper_model
from viz_transformer.testing.projections import output_projections, per_head

PAPER_TEXT = "alpha beta gamma delta"
HF_TEXT = "the cat sat on the mat"


def numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().cpu().numpy()


def pair_values(q_parts: dict, k_parts: dict, scale: float) -> dict[str, float]:
    """``"a.b"`` -> (q part a) . (k part b) * scale, for projected parts ``(d_k,)``."""
    return {
        f"{a}.{b}": float(qa @ kb) * scale for a, qa in q_parts.items() for b, kb in k_parts.items()
    }


def check_pairs(parts: pd.DataFrame, want: dict[str, float]) -> None:
    got = parts[parts["part"] != "rest"].set_index("part")["value"]
    assert list(got.index) == list(want)
    np.testing.assert_allclose(got.to_numpy(), list(want.values()), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(("layer_head", "query", "key"), [((0, 1), 2, 0), ((0, 0), 0, 3)])
def test_paper_input_split_is_content_and_position_through_w_q_and_w_k(layer_head, query, key):
    model = tiny_paper_model()
    net = model.module
    _, head = layer_head
    attn = net.encoder.layers[0].self_attn
    d_k, cols = attn.d_k, slice(head * attn.d_k, (head + 1) * attn.d_k)
    ids, _ = model.source_ids(PAPER_TEXT)
    with torch.no_grad():
        content = numpy(net.src_embed(torch.tensor(ids, device=model.device))) * math.sqrt(
            net.cfg.d_model
        )
    position = numpy(net.pe[: len(ids)])
    sides = []
    for proj, pos in ((attn.W_q, query), (attn.W_k, key)):
        w, b = numpy(proj.weight)[cols], numpy(proj.bias)[cols]  # (d_k, d), (d_k,)
        sides.append({"content": w @ content[pos], "position": w @ position[pos], "bias": b})
    cap = wt.capture(model, PAPER_TEXT, "encoder")
    parts = why.split_score(cap, 0, head, query, key, "input")
    check_pairs(parts, pair_values(*sides, 1 / math.sqrt(d_k)))


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory: pytest.TempPathFactory) -> vt.LoadedModel:
    root: Path = tmp_path_factory.mktemp("why-defs")
    torch.manual_seed(0)
    model = vt.load_model(f"hf:{BUILDERS['gpt2'](root / 'gpt2')}")
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():  # biases and norm gains away from 0 and 1: none can be left out
        for name, p in model.module.named_parameters():
            if name.endswith("bias") or ".ln_" in name:
                noise = torch.randn(p.shape, generator=generator, device="cpu") * 0.3
                p.copy_(noise.to(p.device) + (1.0 if name.endswith("weight") else 0.0))
    return model


@torch.no_grad()
def gpt2_components(model, cap, kept, layer: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The stream entering block ``layer`` ``[T, d]`` as its writers, from the model's own
    weights and hidden states: embeddings (wte + wpe), each head's output (its slice of c_proj's
    input through c_proj, as the model ran it), c_proj's bias, each MLP's output (the block's
    change less its attention output); and that stream as the model computed it."""
    net = model.module.transformer
    ids = torch.tensor([model.encode_text(HF_TEXT)], device=model.device)
    hidden = [
        numpy(h[0]) for h in model.module(input_ids=ids, output_hidden_states=True).hidden_states
    ]
    positions = torch.arange(ids.shape[1], device=model.device)
    parts = {"embeddings": numpy(net.wte(ids[0]) + net.wpe(positions))}
    projs = output_projections(model, "decoder")
    for lay in range(layer):
        heads = per_head(projs[lay], kept[lay]["in"], cap.n_heads)
        bias = numpy(projs[lay].bias)
        parts |= {head_label((lay, h)): heads[h] for h in range(cap.n_heads)}
        parts[f"L{lay} attention bias"] = np.broadcast_to(bias, heads.shape[1:])
        parts[f"L{lay} MLP"] = hidden[lay + 1] - hidden[lay] - heads.sum(0) - bias
    return parts, hidden[layer]


def held_sides(model, layer: int, head: int, ends: tuple[int, int], comps: dict, stream) -> list:
    """Per side (query, key): each part at that end through block ``layer``'s ln_1 with the
    scale it has on ``stream``, then this head's W^Q or W^K columns of c_attn; ``bias``: ln_1's
    bias through them plus c_attn's bias."""
    block = model.module.transformer.h[layer]
    d = stream.shape[-1]
    d_k = d // model.module.config.n_head
    w_attn, b_attn = numpy(block.attn.c_attn.weight), numpy(block.attn.c_attn.bias)  # (d, 3d)
    gain, shift, eps = numpy(block.ln_1.weight), numpy(block.ln_1.bias), block.ln_1.eps
    sides = []
    for offset, pos in zip((0, d), ends, strict=True):  # W^Q then W^K columns of c_attn
        cols = slice(offset + head * d_k, offset + (head + 1) * d_k)
        scale = gain / math.sqrt(stream[pos].var() + eps)
        side = {n: ((c[pos] - c[pos].mean()) * scale) @ w_attn[:, cols] for n, c in comps.items()}
        side["bias"] = shift @ w_attn[:, cols] + b_attn[cols]
        sides.append(side)
    return sides


@pytest.mark.parametrize(
    ("layer", "head", "query", "key"), [(1, 0, 5, 2), (1, 1, 3, 3), (0, 1, 4, 0)]
)
def test_gpt2_component_split_is_each_writer_through_the_held_layer_norm(
    gpt2, layer, head, query, key, captured
):
    cap, kept = captured(gpt2, HF_TEXT, "decoder")
    comps, stream = gpt2_components(gpt2, cap, kept, layer)
    sides = held_sides(gpt2, layer, head, (query, key), comps, stream)
    d_k = stream.shape[-1] // cap.n_heads
    parts = why.split_score(cap, layer, head, query, key, "component")
    check_pairs(parts, pair_values(*sides, 1 / math.sqrt(d_k)))
    query_side, key_side = why.marginals(parts)
    rows = parts[parts["part"] != "rest"]
    for side, got in (("query_part", query_side), ("key_part", key_side)):
        want = rows.groupby(side)["value"].sum()
        np.testing.assert_allclose(got[want.index], want, rtol=1e-9)
        assert list(got.abs()) == sorted(got.abs(), reverse=True)
    assert query_side.sum() != pytest.approx(0.0, abs=1e-3)


def test_marginals_are_the_sides_totals_largest_magnitude_first():
    pairs = pd.DataFrame(
        {"part": ["a.x", "a.y", "b.x", "b.y", "rest"], "value": [1.0, -4.0, 2.0, 0.5, 9.0],
         "query_part": ["a", "a", "b", "b", None], "key_part": ["x", "y", "x", "y", None]}
    )  # fmt: skip
    query_side, key_side = why.marginals(pairs)
    assert query_side.to_dict() == {"a": -3.0, "b": 2.5}
    assert list(query_side.index) == ["a", "b"]
    assert key_side.to_dict() == {"y": -3.5, "x": 3.0}
    assert list(key_side.index) == ["y", "x"]


def test_gpt2_input_split_is_token_and_position_embeddings_through_the_held_layer_norm(gpt2):
    cap = wt.capture(gpt2, HF_TEXT, "decoder")
    net = gpt2.module.transformer
    ids = torch.tensor(gpt2.encode_text(HF_TEXT), device=gpt2.device)
    with torch.no_grad():
        positions = torch.arange(len(ids), device=gpt2.device)
        comps = {"content": numpy(net.wte(ids)), "position": numpy(net.wpe(positions))}
    stream = comps["content"] + comps["position"]
    for head, query, key in [(0, 5, 2), (1, 2, 2)]:
        sides = held_sides(gpt2, 0, head, (query, key), comps, stream)
        parts = why.split_score(cap, 0, head, query, key, "input")
        check_pairs(parts, pair_values(*sides, 1 / math.sqrt(cap.d_k)))
