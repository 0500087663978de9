"""Step-by-step decoding of the real Bergamot translator and tiny Hugging Face models, checked
against their teacher-forced traces, their own beam search and ``generate``."""

from __future__ import annotations

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.analysis.decoding import decode_steps
from viz_transformer.models.bergamot_spec import DECODER_NOTE
from viz_transformer.models.hf import trace_pass


@pytest.fixture(scope="module")
def bergamot() -> vt.LoadedModel:
    return vt.load_model("bergamot-en-pt")


def _check_rows(dec, trace, first: int = 0) -> None:
    """Step t's rows are row ``first + t`` of the parallel pass (``first``: prompt length - 1)."""
    for t, step in enumerate(dec.steps[: len(trace.tgt_tokens) - first]):
        q = first + t
        if step.self_row is not None:
            np.testing.assert_allclose(step.self_row, trace.decoder[:, :, q, : q + 1], atol=1e-5)
        if step.cross_row is not None:
            np.testing.assert_allclose(step.cross_row, trace.cross[:, :, q, :], atol=1e-5)


@pytest.mark.needs("bergamot")
def test_bergamot_greedy_steps_are_the_trace(bergamot):
    text = bergamot.spec.example
    trace = vt.trace(bergamot, text)
    dec = decode_steps(bergamot, text, max_steps=200)
    assert [s.chosen for s in dec.steps] == list(trace.pred_tokens) and dec.ended
    assert dec.output_tokens == trace.tgt_tokens[1:]
    assert dec.notes == {"decoder": DECODER_NOTE}
    shape = (2, 8, len(trace.src_tokens))
    assert all(s.self_row is None and s.cross_row.shape == shape for s in dec.steps)
    _check_rows(dec, trace)


@pytest.mark.needs("bergamot")
def test_bergamot_beam_equals_the_models_own_beam_search(bergamot):
    text = "Where is the nearest train station?"
    hyps = bergamot.beam(text, 4)
    dec = decode_steps(bergamot, text, max_steps=200, beam=4)
    assert [s.chosen for s in dec.steps] == list(bergamot.pieces(list(hyps[0].ids)))
    assert (
        decode_steps(bergamot, text, beam=1).output_tokens
        == vt.trace(bergamot, text).tgt_tokens[1:]
    )
    assert max(len(s.beams) for s in dec.steps) == 4
    best_path = [b for s in dec.steps for b in s.beams if b.on_path]
    assert len(best_path) == len(dec.steps)


@pytest.mark.parametrize("family", ["marian", "bart", "t5"])
def test_hf_encoder_decoder_steps_equal_generate_and_the_trace(load_tiny, family):
    model = load_tiny(family)
    text = model.spec.example
    trace = vt.trace(model, text)
    dec = decode_steps(model, text, max_steps=64)
    n_out = len(trace.tgt_tokens) - 1
    assert dec.output_tokens == trace.tgt_tokens[1:]  # generate()'s greedy output
    assert [s.chosen for s in dec.steps[:n_out]] == list(trace.pred_tokens[:n_out])
    assert dec.src_tokens == trace.src_tokens and dec.start_tokens == trace.tgt_tokens[:1]
    _check_rows(dec, trace)


def test_hf_step_labels_are_the_traces_after_the_start_token(load_tiny, monkeypatch):
    """A piece that continues no word ("b" right after ``<pad>``, Marian's start) reads as the
    trace's teacher-forced pass labels it, not "##b" as it reads on its own: the outputs, and
    each of the first step's candidates (each read after the start, not after the others)."""
    model = load_tiny("marian")
    text, vocab = model.spec.example, model.tokenizer.get_vocab()

    def forced(ids: list[int]) -> vt.Trace:  # a trace whose output is exactly ``ids``
        monkeypatch.setattr(model, "target_ids", lambda target: [*ids, 0])
        return vt.trace(model, text, target="forced")

    ids = [vocab[p] for p in ("b", "at", "ma")]  # no "▁": each alone would read "##b", ...
    trace = forced(ids)
    assert trace.tgt_tokens[1:] == ("b", "##at", "##ma")
    assert model.decoder_session(text).tokens(ids) == trace.tgt_tokens[1:]
    first = decode_steps(model, text, max_steps=1, top_k=8).steps[0]
    shown = [(t, i) for t, i in zip(first.top_tokens, first.top_ids, strict=True) if i != 0]
    assert [t for t, _ in shown] == [forced([i]).tgt_tokens[1] for _, i in shown]  # not </s>
    assert sum(t.isalnum() for t, _ in shown) >= 2  # bare pieces, each after the start


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_hf_decoder_only_steps_continue_the_prompt(load_tiny, family):
    model = load_tiny(family)
    prompt = model.spec.example
    dec = decode_steps(model, prompt, max_steps=6)
    assert len(dec.steps) == 6 and dec.src_tokens == () and "cross" in dec.notes
    p = len(dec.start_tokens)
    ids = model.encode_text(prompt)
    assert dec.start_tokens == model.token_labels(ids)
    assert dec.steps[0].chosen == vt.trace(model, prompt).pred_tokens[-1]
    # the whole continuation in one causal pass: step t's row is row p - 1 + t
    out_ids = list(dec.output_ids[:-1])
    mask = [1] * (p + len(out_ids))
    _, arrays, _ = trace_pass.run(model, input_ids=[*ids, *out_ids], attention_mask=mask)
    for t, step in enumerate(dec.steps):
        q = p - 1 + t
        assert step.self_row.shape[-1] == q + 1 and step.cross_row is None
        np.testing.assert_allclose(step.self_row, arrays["decoder"][:, :, q, : q + 1], atol=1e-5)


@pytest.mark.needs("minilm")
def test_an_encoder_only_model_has_no_steps():
    with pytest.raises(ValueError, match="no decoder"):
        decode_steps(vt.load_model("minilm"), "The cat sat on the mat.")
