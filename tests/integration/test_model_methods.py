"""What differs by model family is a method of ``LoadedModel``: head scale, input embedding,
source ids, hook names, training curves and the walkthrough's run, for each family."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.models.hf.parts import HFParts
from viz_transformer.models.results import QKV_NOTE, HeadScale
from viz_transformer.networks.hooks import ATTENTION_POINTS, hook_names
from viz_transformer.networks.marian import marian_positions
from viz_transformer.networks.positional import sinusoidal_table
from viz_transformer.testing.hf import BUILDERS
from viz_transformer.testing.paper import tiny_paper_model


@pytest.fixture(scope="module")
def hf(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {f: vt.load_model(f"hf:{BUILDERS[f](root / f)}") for f in ("bert", "bart", "llama")}


@pytest.fixture(scope="module")
def bergamot(need):
    need("bergamot")
    return vt.load_model("bergamot-en-pt")


def test_paper_head_scale_follows_its_config(tiny):
    assert tiny.head_scale() == HeadScale(8, True)
    assert tiny_paper_model(scale_scores=False).head_scale() == HeadScale(8, False)


def test_bergamot_and_hf_head_scales(bergamot, hf):
    assert bergamot.head_scale() == HeadScale(32, True)
    assert hf["bert"].head_scale().scaled and hf["llama"].head_scale().scaled
    config = hf["llama"].module.config
    assert hf["llama"].head_scale().d_k == config.hidden_size // config.num_attention_heads


def test_paper_hook_names_are_its_hook_points(tiny):
    names = hook_names(tiny.module)
    for kind, patterns in tiny.module.pattern_hook_names().items():
        for layer, pattern in enumerate(patterns):
            assert tiny.hook_name(kind, layer, "hook_pattern") == pattern
            assert all(tiny.hook_name(kind, layer, p) in names for p in ATTENTION_POINTS)
    assert tiny.hook_name("cross", 1, "hook_q") == "decoder.layers.1.cross_attn.hook_q"
    assert tiny.hook_name("decoder", 0, "hook_z") == "decoder.layers.0.self_attn.hook_z"
    with pytest.raises(ValueError, match="unknown hook points"):
        tiny.hook_name("encoder", 2, "hook_q")  # two layers: 0 and 1
    with pytest.raises(ValueError, match="start with 'hook_'"):
        tiny.hook_name("encoder", 0, "q")


def test_bergamot_hook_names_and_its_missing_decoder_self_attention(bergamot):
    names = hook_names(bergamot.module)
    assert bergamot.hook_name("encoder", 5, "hook_pattern") == (
        "encoder.layers.5.self_attn.hook_pattern"
    )
    assert bergamot.hook_name("cross", 1, "hook_v") == "decoder.layers.1.cross_attn.hook_v"
    for kind, patterns in bergamot.module.pattern_hook_names().items():
        assert [bergamot.hook_name(kind, i, "hook_pattern") for i in range(len(patterns))] == (
            patterns
        )
        assert all(bergamot.hook_name(kind, 0, p) in names for p in ATTENTION_POINTS)
    with pytest.raises(ValueError, match="recurrent"):
        bergamot.hook_name("decoder", 0, "hook_pattern")


def test_hf_hook_names_sit_beside_each_attention_modules_pattern(hf):
    bart = hf["bart"]
    names = hook_names(bart.module)
    for kind, patterns in bart.names.items():
        for layer, pattern in enumerate(patterns):
            assert bart.hook_name(kind, layer, "hook_pattern") == pattern
            assert bart.hook_name(kind, layer, "hook_q") in names
    assert bart.hook_name("cross", 0, "hook_k") == "model.decoder.layers.0.encoder_attn.hook_k"
    with pytest.raises(ValueError, match="no decoder masked self attention"):
        hf["bert"].hook_name("decoder", 0, "hook_pattern")
    with pytest.raises(ValueError, match="layer 9 does not exist"):
        bart.hook_name("encoder", 9, "hook_pattern")
    with pytest.raises(ValueError, match="unknown hook points"):
        bart.hook_name("encoder", 0, "hook_scores")  # q, k, v, the pattern and z are dispatched


def test_paper_input_embedding(tiny):
    emb = tiny.input_embedding()
    assert emb.weight.shape == (tiny.module.cfg.vocab_size, 16) and emb.scale == 4.0
    np.testing.assert_array_equal(emb.positions, sinusoidal_table(tiny.module.cfg.max_len, 16))
    assert "sinusoid" in emb.source and emb.note is None


def test_bergamot_input_embedding_is_marians_sinusoid_with_a_note(bergamot):
    emb = bergamot.input_embedding()
    assert emb.weight.shape == (32000, 256) and emb.scale == pytest.approx(16.0)
    expected = marian_positions(0, 256, 256, torch.device("cpu")).numpy()
    np.testing.assert_array_equal(emb.positions, expected)
    assert emb.positions.dtype == np.float32
    assert "exp(−i·log 10000 / (d/2 − 1))" in emb.note and "1/10000" in emb.note


def test_hf_input_embedding_learned_and_rotary(hf):
    bert = hf["bert"].input_embedding()
    config = hf["bert"].module.config
    assert bert.weight.shape == (config.vocab_size, config.hidden_size) and bert.scale == 1.0
    np.testing.assert_array_equal(bert.positions, hf["bert"].position_table())
    assert bert.source == "learned positions" and bert.note is None
    llama = hf["llama"].input_embedding()
    assert llama.positions is None and llama.source == "rotary positions"


def test_source_ids_and_their_tokens_per_family(tiny, bergamot, hf):
    ids, tokens = tiny.source_ids("alpha beta gamma")
    assert tokens == ("alpha", "beta", "gamma", "</s>")
    assert [tiny.vocab.tokens[i] for i in ids] == list(tokens)
    with pytest.raises(ValueError, match="'purple'"):
        tiny.source_ids("alpha purple")
    ids, tokens = bergamot.source_ids("Hello world.")
    assert ids == bergamot.encode_text("Hello world.") and ids[-1] == bergamot.module.cfg.eos_id
    assert tokens == bergamot.pieces(ids) and tokens[-1] == "</s>"
    ids, tokens = hf["bert"].source_ids("the cat sat")
    assert ids == hf["bert"].encode_text("the cat sat")
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and len(tokens) == len(ids)


def test_training_curves_only_where_both_runs_were_recorded(tiny, bergamot, hf):
    dates = vt.load_model("paper-dates")
    curves = dates.training_curves()
    assert curves is not None and {"scaled", "unscaled"} <= set(curves)
    assert curves["unscaled"]["loss"] == dates.meta["curves"]["unscaled"]["loss"]
    assert vt.model_info("paper-dates").curves
    en_pt = vt.load_model("paper-en-pt")  # its own run without the scale, from the same start
    assert vt.model_info("paper-en-pt").curves and en_pt.training_note()
    assert en_pt.training_curves()["unscaled"]["step"][-1] == en_pt.meta["unscaled_run"]["steps"]
    assert dates.training_note() is None  # its two runs recorded no caption
    assert tiny.training_curves() is None  # no meta.json
    assert bergamot.training_curves() is None and hf["bert"].training_curves() is None
    assert not vt.model_info("bergamot-en-pt").curves


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_paper_qkv_run_reads_every_point_the_walkthrough_needs(tiny, kind):
    run = tiny.qkv_run("alpha beta gamma", kind, target="beta alpha")
    src, tgt = ("alpha", "beta", "gamma", "</s>"), ("<s>", "beta", "alpha")
    queries, keys = {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)}[kind]
    assert (run.query_tokens, run.key_tokens) == (queries, keys) and run.scaled
    assert set(run.captured) == {p.removeprefix("hook_") for p in ATTENTION_POINTS}
    assert run.captured["pattern"].shape == (2, 2, len(queries), len(keys))
    assert run.x_q.shape == (2, len(queries), 16) and run.x_kv.shape == (2, len(keys), 16)
    assert run.weights["w_q"].shape == (2, 16, 16) and run.n_heads == 2
    if kind == "encoder":  # layer 0 reads sqrt(d_model) * embedding + sinusoid
        np.testing.assert_allclose(run.embed + run.pos, run.x_q[0], atol=1e-6)
        weight = tiny.module.src_embed.weight.detach().cpu().numpy()
        np.testing.assert_allclose(run.embed[0], weight[tiny.vocab.index["alpha"]] * math.sqrt(16))
    if kind == "cross":  # keys and values come from the encoder's output, embeddings from none
        assert run.embed is None and np.array_equal(run.x_kv[0], run.x_kv[1])


def test_bergamot_qkv_run_and_what_has_none(bergamot, hf):
    run = bergamot.qkv_run("Hello world.", "cross")
    assert run.query_tokens[0] == "<s>" and run.key_tokens[-1] == "</s>"
    assert run.captured["pattern"].shape[2:] == (len(run.query_tokens), len(run.key_tokens))
    with pytest.raises(ValueError, match="recurrent"):
        bergamot.qkv_run("Hello world.", "decoder")
    with pytest.raises(ValueError) as caught:
        hf["bart"].qkv_run("the cat sat", "encoder")  # BERT has one now
    assert str(caught.value) == QKV_NOTE


def test_hf_model_has_every_member_its_helpers_read(hf):
    """The hf/ helpers take ``HFParts``; a loaded model must provide each of its members."""
    members = set(HFParts.__annotations__) | {
        n for n in vars(HFParts) if not n.startswith("_") and callable(getattr(HFParts, n))
    }
    members |= {n for n, v in vars(HFParts).items() if isinstance(v, property)}
    assert {"module", "names", "encode_text", "target_ids", "eos_ids", "name"} <= members
    for model in hf.values():
        assert not [m for m in members if not hasattr(model, m)]
