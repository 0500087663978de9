"""Shipped models: recorded accuracy holds on fresh held-out data; attention is right; every
model can patch its pair; the committed ablation demonstration still changes the output."""

from __future__ import annotations

import math

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.analysis import effects
from viz_transformer.training.tasks.catalog import TASKS, pairs
from viz_transformer.training.tasks.train import exact_match

SHIPPED = ["paper-reverse", "paper-dates", "paper-sov"]


@pytest.mark.needs("bergamot")
def test_registry_offers_the_shipped_models_default_first():
    names = vt.available_models()
    assert set(SHIPPED) <= set(names)
    assert names[0] == vt.default_model() == vt.DEFAULT_MODEL  # the wheel is a requirement
    with pytest.raises(
        ValueError, match="unknown model 'nope'; available here: paper-en-pt, bergamot-en-pt"
    ):
        vt.load_model("nope")


def test_load_model_is_cached_per_device():
    a = vt.load_model("paper-reverse")
    assert a.device.type == vt.default_device().type  # VT_DEVICE, else the machine's best
    assert vt.load_model("paper-reverse", device=str(vt.default_device())) is a
    assert not a.module.training


@pytest.mark.slow
@pytest.mark.parametrize("name", SHIPPED)
def test_recorded_accuracy_holds_on_a_fresh_held_out_sample(name):
    model = vt.load_model(name)
    recorded = model.meta["held_out"]["exact_match"]
    assert recorded >= 0.99, f"{name} was shipped with held-out accuracy {recorded}"
    n = 400
    fresh = pairs(TASKS[model.meta["task"]], n, seed=20261121, split="held_out")
    accuracy = exact_match(model.module, model.vocab, fresh)
    tolerance = 3 * math.sqrt(recorded * (1 - recorded) / n) + 1 / n  # binomial noise
    assert accuracy >= recorded - tolerance, f"{name}: {accuracy:.4f} vs recorded {recorded:.4f}"


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("paper-reverse", "happy king red ship blue sea", "sea blue ship red king happy"),
        ("paper-dates", "the twenty-first of November 2026", "2026-11-21"),
        ("paper-dates", "Nov 21, 2026", "2026-11-21"),
        ("paper-dates", "21/11/2026", "2026-11-21"),
        ("paper-sov", "the old farmers feed a small black cat",
         "gabrin vesun le miro nero piki un nutran"),
    ],
)  # fmt: skip
def test_examples_translate_correctly_and_traces_validate(name, text, expected):
    tr = vt.trace(vt.load_model(name), text)
    assert tr.output_text == expected
    assert tr.pred_tokens[-1] == "</s>"
    assert tr.encoder.shape[2] == len(tr.src_tokens) and tr.cross.shape[2] == len(tr.tgt_tokens)


def test_reversal_model_has_an_anti_diagonal_cross_attention_head():
    model = vt.load_model("paper-reverse")
    hits = np.zeros(model.module.cfg.n_decoder_layers * model.module.cfg.n_heads)
    total = 0
    for src, _ in pairs(TASKS["reverse"], 60, seed=7, split="held_out"):
        tr = vt.trace(model, src)
        n = len(src.split())  # source positions 0..n-1 are words, n is </s>
        argmax = tr.cross[:, :, :n, :].argmax(-1).reshape(len(hits), n)  # (layers*heads, n)
        hits += (argmax == np.arange(n)[::-1]).sum(-1)
        total += n
    best = hits.max() / total
    assert best >= 0.9, f"best head mirrors the source for only {best:.1%} of target positions"


PATCHABLE = [n for n in vt.available_models() if vt.model_info(n).family != "hf"]


@pytest.mark.parametrize("name", PATCHABLE)
def test_every_shipped_model_brings_a_patching_pair_that_it_can_patch(name):
    """Equal token counts (``patch_heads`` refuses others) and outputs that differ (else
    patching has no logit difference to restore)."""
    model = vt.load_model(name)
    clean, corrupted = model.facts.patch_pair
    assert clean != corrupted
    assert len(model.source_ids(clean)[0]) == len(model.source_ids(corrupted)[0])
    assert vt.trace(model, clean).output_text != vt.trace(model, corrupted).output_text


def test_the_committed_demo_changes_the_default_models_output():
    """bench/ablation_demo.py's find: one head, one click, another output (rechecked here)."""
    model = vt.load_model(vt.default_model())
    demo = effects.demo_for(model)
    assert demo is not None and demo.model == model.name
    heads_ = [(demo.kind, *demo.heads[0])]
    assert effects.changes_output(model, demo.text, heads_, demo.mode) == (
        demo.normal,
        demo.ablated,
    )
