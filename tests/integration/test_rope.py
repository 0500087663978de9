"""Rotary positions (``analysis.rope``) against transformers' own ``apply_rotary_pos_emb``, with
cos/sin from the model's rotary module (``LoadedModel.rotary_tables``), and the offset property."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

import viz_transformer as vt
from viz_transformer.analysis import rope
from viz_transformer.testing.hf import BUILDERS


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> vt.LoadedModel:
    return vt.load_model(f"hf:{BUILDERS['llama'](tmp_path_factory.mktemp('llama'))}")


def test_rotation_matches_transformers(llama: vt.LoadedModel) -> None:
    cos, sin = llama.rotary_tables(32)
    d_head = llama.module.config.head_dim
    assert cos.shape == sin.shape == (32, d_head)
    gen = torch.Generator(device="cpu").manual_seed(0)
    q = torch.randn((1, 2, 32, d_head), generator=gen, device="cpu")  # (B, h, T, d)
    k = torch.randn((1, 2, 32, d_head), generator=gen, device="cpu")
    cos_t = torch.tensor(cos, device="cpu")[None]  # (1, T, d)
    sin_t = torch.tensor(sin, device="cpu")[None]
    want_q, want_k = apply_rotary_pos_emb(q, k, cos_t, sin_t)
    np.testing.assert_allclose(rope.rotate(q.numpy(), cos, sin), want_q.numpy(), atol=1e-6)
    np.testing.assert_allclose(rope.rotate(k.numpy(), cos, sin), want_k.numpy(), atol=1e-6)


def test_score_depends_only_on_offset(llama: vt.LoadedModel) -> None:
    cos, sin = llama.rotary_tables(64)
    q, k = rope.fixed_pair(cos.shape[1])
    table = rope.scores(q, k, cos, sin)
    assert rope.shift_error(table, 5) < 1e-5
    rows = rope.score_by_offset(table, [0, 10, 20])
    np.testing.assert_allclose(rows[1:], np.broadcast_to(rows[0], rows[1:].shape), atol=1e-4)
    assert np.ptp(rows[0]) > 0.1  # the score does change with the offset
    angles = rope.pair_angles(cos, sin)
    assert np.allclose(angles[0], 0) and angles[1, 0] == pytest.approx(1.0, abs=1e-6)  # θ_0 = 1


def test_non_rotary_models_have_no_tables(tiny) -> None:
    assert tiny.rotary_tables(8) is None
