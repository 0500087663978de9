"""``paper-en-pt``: the paper's Transformer distilled from the Bergamot EN->PT translator.

Its recorded chrF holds on held-out sentences the teacher translates afresh, its traces carry all
three attention kinds, a cross-attention head aligns a simple sentence, and it decodes step by step.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.analysis.decoding import decode_steps
from viz_transformer.training.en_pt.bitext import held_out, teacher_translate
from viz_transformer.training.en_pt.distill import OUT_DIR, scores, translate
from viz_transformer.training.en_pt.everyday import EVERYDAY, score_everyday

NAME = "paper-en-pt"
TARGET_CHRF = 80.0  # issue 18's bar against the teacher
MIN_STRICT = 17  # of the 20 everyday sentences, with every Portuguese content word of the teacher
SAMPLE = 80  # held-out sentences translated by student and teacher: about 5 s on one CPU thread
# Measured (CPU, shipped weights): these 80 sentences score chrF 87.27 against 88.41 recorded over
# all 3,956, a fixed offset of 1.14 (a sample, not the whole set); 0.86 more leaves room for a
# token that flips on another device (a GPU run is not measured yet). The same model with
# Gaussian noise (0.1 of each decoder weight's std) added to its decoder scores 86.11 here and
# fails; with 0.2, 80.82.
CHRF_TOLERANCE = 2.0


@pytest.fixture(scope="module")
def model() -> vt.LoadedModel:
    return vt.load_model(NAME)


def test_registry_lists_it_as_a_paper_model_with_sentencepiece(model):
    assert NAME in vt.available_models()
    assert model.spec.family == "paper" and model.spec.shows == ("encoder", "decoder", "cross")
    cfg = model.module.cfg
    assert (cfg.n_heads, cfg.norm, cfg.tie_embeddings, cfg.scale_scores) == (8, "post", True, True)
    assert len(model.vocab) == 32002  # the teacher's shared vocabulary, <pad> and <s> in front
    ids = model.vocab.encode("I am a student.")
    assert ids[-1] == model.vocab.eos_id and model.vocab.decode(ids) == "I am a student."
    assert not any("▁" in model.vocab.tokens[i] for i in ids)  # displayed without the word mark


def test_recorded_scores_are_measured_on_the_whole_held_out_set(model):
    recorded = model.meta["held_out"]
    assert recorded["n"] >= 1000 and model.meta["data"]["held_out"] == recorded["n"]
    assert 0 < recorded["chrf"] <= 100 and 0 <= recorded["identical"] <= 1


def test_loading_and_tracing_it_never_imports_transformers():
    """Issue 18: loaded in well under 2 s. transformers alone takes seconds to import, so a fresh
    process that loads paper-en-pt and traces a sentence must not import it."""
    code = (
        "import sys, viz_transformer as vt; m = vt.load_model('paper-en-pt', 'cpu'); "
        "vt.trace(m, 'I am a student.'); assert vt.default_model(); "
        "print(sorted(n for n in ('transformers', 'streamlit') if n in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[]"


def test_weights_fit_the_budget_and_the_docs_state_the_training_time(model):
    """Issue 18: within ~60 MB of float16 safetensors, and docs/training.md says how long
    training took (every resumed run's seconds add up in ``meta.json``) and how many sentences
    are held out."""
    assert (OUT_DIR / "model.safetensors").stat().st_size <= 60 * 2**20
    minutes = round(model.meta["seconds"] / 60)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "training.md").read_text()
    doc = " ".join(doc.split())  # a phrase may wrap across lines
    assert f"after {minutes} minutes of training" in doc
    assert f"{model.meta['data']['held_out']:,} sentences are held out" in doc


@pytest.mark.needs("bergamot")
def test_it_is_the_default_and_its_teacher_is_one_click_away(model):
    assert vt.default_model() == NAME == vt.available_models()[0]
    assert model.spec.teacher == "bergamot-en-pt" in vt.available_models()
    assert "production" in vt.model_info("bergamot-en-pt").description


@pytest.mark.needs("bergamot")
def test_20_everyday_sentences_keep_the_teachers_content_words(model):
    """Issue 18: school, weather, family, travel and food sentences, translated by the student
    and by the teacher's native engine; none drops a listed content word that the teacher keeps
    (``everyday.CONTENT``: each English word with the Portuguese words that render it). The
    stricter same-Portuguese-word measure holds at what the shipped weights reach."""
    students = translate(model.module, model.vocab, list(EVERYDAY))
    rows = score_everyday(students, list(teacher_translate(list(EVERYDAY))))
    assert len(rows) == 20
    assert [r for r in rows if r.missing] == []  # a failure lists the sentences and words
    assert sum(not r.dropped for r in rows) >= MIN_STRICT, [r for r in rows if r.dropped]


@pytest.mark.needs("bergamot")
def test_chrf_against_the_teacher_recomputed_on_a_fixed_held_out_sample(model):
    """chrF of the student's greedy translations against the teacher's, both run now, on the
    first ``SAMPLE`` sentences of ``held_out_sample.json`` (a fixed draw from the split training
    skipped), must stay within ``CHRF_TOLERANCE`` of the figure ``meta.json`` records for the
    whole held-out set. Unlike the recorded number, this fails when the weights, the vocabulary
    or greedy decoding change."""
    sample = json.loads((OUT_DIR / "held_out_sample.json").read_text())[:SAMPLE]
    sources = [s for s, _ in sample]
    assert len(sources) == SAMPLE and all(held_out(s) for s in sources)
    references = list(teacher_translate(sources))  # the teacher again, not the stored targets
    measured = scores(translate(model.module, model.vocab, sources), references)
    recorded = model.meta["held_out"]["chrf"]
    assert measured["chrf"] >= TARGET_CHRF, measured
    assert abs(measured["chrf"] - recorded) <= CHRF_TOLERANCE, (measured, recorded)


def test_trace_validates_with_all_three_attention_kinds(model):
    tr = vt.trace(model, "The weather is nice today.").validate()
    assert all(tr.get(kind) is not None for kind in ("encoder", "decoder", "cross"))
    assert (tr.encoder.shape[:2], tr.decoder.shape[:2]) == ((6, 8), (2, 8))  # 6 + 2 layers
    assert tr.cross.shape[2:] == (len(tr.tgt_tokens), len(tr.src_tokens))
    assert tr.output_text and tr.pred_tokens[-1] == "</s>"
    upper = np.triu(tr.decoder[0, 0], k=1)
    assert np.all(upper == 0)  # masked self-attention sees no future position


def _word_groups(model: vt.LoadedModel, ids: list[int]) -> list[list[int]]:
    """Positions of ``ids`` grouped into words (a piece starting with "▁" opens a word)."""
    groups: list[list[int]] = []
    for pos, i in enumerate(ids):
        piece = model.vocab.pieces[i]
        if piece.startswith("▁") or not groups:
            groups.append([pos])
        else:
            groups[-1].append(pos)
    return groups


def test_a_cross_attention_head_aligns_a_simple_sentence_monotonically(model):
    source, target = "I am a student.", "Eu sou um estudante."
    tr = vt.trace(model, source, target=target).validate()
    src_words = _word_groups(model, model.vocab.encode(source, add_eos=False))[:4]  # I am a student
    tgt_ids = model.vocab.encode(target, add_eos=False)
    tgt_words = [[p + 1 for p in g] for g in _word_groups(model, tgt_ids)][:4]  # after "<s>"
    aligned = []
    for layer in range(tr.cross.shape[0]):
        for head in range(tr.cross.shape[1]):
            pattern = tr.cross[layer, head]  # (target rows, source columns)
            per_word = np.stack([pattern[:, g].sum(-1) for g in src_words], axis=-1)
            for shift in (0, 1):  # the row reading the word, or the row predicting it
                best = [int(per_word[[q - shift for q in g]].mean(0).argmax()) for g in tgt_words]
                if best == sorted(set(best)) and len(best) == 4:
                    aligned.append((layer, head, shift))
    assert aligned, "no cross-attention head aligns I/am/a/student with Eu/sou/um/estudante"


def test_step_by_step_decoding_matches_the_greedy_trace(model):
    text = "I am a student."
    dec = decode_steps(model, text, max_steps=60)
    tr = vt.trace(model, text)
    assert dec.ended and dec.output_tokens == tr.tgt_tokens[1:]
    assert dec.steps[0].input_tokens == ("<s>",)
    assert dec.steps[1].input_tokens == ("<s>", dec.steps[0].chosen)  # shifted right
    assert "estudante" in "".join(dec.output_tokens)
    for t, step in enumerate(dec.steps[: len(tr.tgt_tokens)]):
        np.testing.assert_allclose(step.cross_row, tr.cross[:, :, t, :], atol=1e-5)
        np.testing.assert_allclose(step.self_row, tr.decoder[:, :, t, : t + 1], atol=1e-5)
