"""The paper model against hand-computed references: Eq. 1, masks, scaling, PE, post-norm."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from viz_transformer.networks.paper_decode import greedy_decode
from viz_transformer.networks.positional import sinusoidal_table
from viz_transformer.testing.paper import tiny_paper_model

SRC = [4, 5, 6, 7, 2]  # four words then </s>
TGT = [1, 8, 9, 10]  # <s> then three outputs


def _names(kind: str, layer: int, what: str) -> str:
    stack, attn = {"encoder": ("encoder", "self_attn"), "decoder": ("decoder", "self_attn"),
                   "cross": ("decoder", "cross_attn")}[kind]  # fmt: skip
    return f"{stack}.layers.{layer}.{attn}.hook_{what}"


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
@pytest.mark.parametrize("layer", [0, 1])
def test_pattern_equals_softmax_of_scaled_scores_from_captured_q_k(tiny, kind, layer):
    names = [_names(kind, layer, w) for w in ("q", "k", "pattern")]
    _, cache = tiny.run_with_cache(SRC, TGT, names)
    q, k, pattern = (cache[n].astype(np.float64) for n in names)  # (h, T, d_k)
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(tiny.module.cfg.d_k)
    if kind == "decoder":  # M: -inf above the diagonal
        scores = scores + np.triu(np.full(scores.shape[-2:], -np.inf), k=1)
    np.testing.assert_allclose(pattern, _softmax(scores), atol=1e-6)


def test_unscaled_scores_are_exactly_sqrt_dk_times_larger():
    scaled, unscaled = tiny_paper_model(seed=3), tiny_paper_model(seed=3, scale_scores=False)
    unscaled.module.load_state_dict(scaled.module.state_dict())
    name = _names("encoder", 0, "scores")
    _, a = scaled.run_with_cache(SRC, TGT, [name])
    _, b = unscaled.run_with_cache(SRC, TGT, [name])
    d_k = scaled.module.cfg.d_k
    np.testing.assert_allclose(b[name], a[name] * math.sqrt(d_k), rtol=1e-5, atol=1e-6)
    assert not np.allclose(b[name], a[name])


def test_decoder_masked_scores_are_minus_inf_and_pattern_upper_triangle_zero(tiny):
    names = [_names("decoder", 1, "scores"), _names("decoder", 1, "pattern")]
    _, cache = tiny.run_with_cache(SRC, TGT, names)
    scores, pattern = cache[names[0]], cache[names[1]]
    upper = np.triu(np.ones(scores.shape[-2:], dtype=bool), k=1)
    assert np.isneginf(scores[:, upper]).all()
    assert np.isfinite(scores[:, ~upper]).all()
    assert (pattern[:, upper] == 0.0).all()
    np.testing.assert_allclose(pattern.sum(-1), 1.0, atol=1e-6)


def test_teacher_forced_prefix_equals_stepwise_decoding_at_every_position(tiny):
    module, dev = tiny.module, tiny.device
    src = torch.tensor([SRC], device=dev)
    with torch.no_grad():
        memory = module.encode(src)
        full = module.decode(memory, None, torch.tensor([TGT], device=dev))[0]  # (T, V)
        for t in range(1, len(TGT) + 1):
            step = module.decode(memory, None, torch.tensor([TGT[:t]], device=dev))[0, -1]
            torch.testing.assert_close(step, full[t - 1], atol=1e-5, rtol=1e-5)
    name = _names("cross", 1, "pattern")
    _, whole = tiny.run_with_cache(SRC, TGT, [name])
    for t in range(1, len(TGT) + 1):
        _, prefix = tiny.run_with_cache(SRC, TGT[:t], [name])
        np.testing.assert_allclose(prefix[name], whole[name][:, :t], atol=1e-6)


def test_greedy_decode_feeds_outputs_shifted_right(tiny):
    module = tiny.module
    src = torch.tensor([SRC], device=tiny.device)
    with torch.no_grad():
        (out,) = greedy_decode(module, module.encode(src), 6, bos_id=1, eos_id=2)
        logits = module(src, torch.tensor([[1, *out[:-1]]], device=tiny.device))[0]
    assert logits.argmax(-1).tolist() == out


def test_embeddings_scaled_by_sqrt_d_model_plus_sinusoid(tiny):
    cfg = tiny.module.cfg
    _, cache = tiny.run_with_cache(SRC, TGT, ["hook_src_embed", "hook_src_pos"])
    table = tiny.module.src_embed.weight.detach().cpu().numpy()
    np.testing.assert_allclose(
        cache["hook_src_embed"], table[SRC] * math.sqrt(cfg.d_model), rtol=1e-6
    )
    np.testing.assert_allclose(cache["hook_src_pos"], sinusoidal_table(len(SRC), cfg.d_model))


def test_post_norm_every_sublayer_output_is_layer_normalised(tiny):
    names = ["encoder.layers.0.hook_resid_mid", "decoder.layers.1.hook_resid_cross",
             "decoder.layers.1.hook_resid_post"]  # fmt: skip
    _, cache = tiny.run_with_cache(SRC, TGT, names)
    for name in names:  # post-LN with identity affine at init: zero mean, unit variance
        np.testing.assert_allclose(cache[name].mean(-1), 0.0, atol=1e-5)
        np.testing.assert_allclose(cache[name].var(-1), 1.0, atol=1e-3)


def test_tied_embeddings_share_one_matrix(tiny):
    m = tiny.module
    assert m.src_embed.weight is m.tgt_embed.weight is m.generator.weight
    untied = tiny_paper_model(tie_embeddings=False).module
    assert untied.generator.weight is not untied.src_embed.weight


def test_too_long_input_is_refused_with_the_limit():
    m = tiny_paper_model(max_len=8)
    with pytest.raises(ValueError, match="exceed this model's 8 positions"):
        m.module.encode(torch.zeros(1, 9, dtype=torch.long, device=m.device))


def test_a_long_input_or_target_is_cut_to_the_positions_with_a_note():
    m = tiny_paper_model(max_len=8)
    text = " ".join(["alpha", "beta", "gamma"] * 4)  # 12 words + </s>
    tr = m.trace(text)
    assert len(tr.src_tokens) == 8 and tr.src_tokens[-1] == "</s>"
    assert tr.src_tokens[:7] == tuple(text.split()[:7])
    assert any("13 tokens" in msg and "5 were dropped" in msg for msg in tr.messages)
    forced = m.trace("alpha beta", target=text)
    assert len(forced.tgt_tokens) == 8 and forced.messages[0].startswith("Target:")
    assert m.trace("alpha beta").messages == ()


def test_positional_table_matches_closed_form():
    table = sinusoidal_table(50, 32)
    for pos in (0, 1, 17, 49):
        for i in range(16):
            angle = pos / 10000 ** (2 * i / 32)
            assert table[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-6)
    split = sinusoidal_table(50, 32, "split")
    np.testing.assert_array_equal(split[:, :16], table[:, 0::2])
    np.testing.assert_array_equal(split[:, 16:], table[:, 1::2])
    with pytest.raises(ValueError, match="even"):
        sinusoidal_table(4, 7)


def test_position_table_is_the_models_sinusoid(tiny):
    cfg = tiny.module.cfg
    np.testing.assert_array_equal(tiny.position_table(), sinusoidal_table(cfg.max_len, cfg.d_model))
