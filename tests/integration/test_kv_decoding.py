"""Cached step sessions of Hugging Face models and Bergamot against the uncached ones: every
prefix a greedy or beam search scores gives the same log-probabilities and attention rows. And
Bergamot's trace, whose rows come from its greedy steps, against a teacher-forced pass."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.analysis.decoding import _search
from viz_transformer.models import bergamot as bergamot_module
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.hf import steps as hf_steps
from viz_transformer.models.results import DecoderSession, StepScores
from viz_transformer.networks.hooks import collect

Scored = dict[tuple[int, ...], StepScores]


def _sessions(model: LoadedModel, text: str) -> tuple[DecoderSession, DecoderSession]:
    if model.spec.family == "hf":
        return hf_steps.decoder_session(model, text), hf_steps.decoder_session(
            model, text, use_cache=False
        )
    return model.decoder_session(text), model.decoder_session(text, use_cache=False)


def _same_search(
    model: LoadedModel, text: str, width: int, max_new: int, atol: float = 1e-5
) -> Scored:
    """Search with and without the cache; assert equal results (log-probabilities within
    ``atol``, rows within 1e-5); return the cached scores."""
    cached_session, whole_session = _sessions(model, text)
    best, history, cached = _search(cached_session, width, max_new)
    best_u, history_u, whole = _search(whole_session, width, max_new)
    assert best == best_u and cached.keys() == whole.keys()
    assert [[i for i, _ in b] for b in history] == [[i for i, _ in b] for b in history_u]
    for prefix, scores in cached.items():
        ref = whole[prefix]
        np.testing.assert_array_equal(np.isfinite(scores.logprobs), np.isfinite(ref.logprobs))
        finite = np.isfinite(ref.logprobs)
        np.testing.assert_allclose(scores.logprobs[finite], ref.logprobs[finite], atol=atol)
        for got, exp in ((scores.self_row, ref.self_row), (scores.cross_row, ref.cross_row)):
            assert (got is None) == (exp is None)
            if got is not None:
                np.testing.assert_allclose(got, exp, atol=1e-5)
    return cached


def _count_inputs(model: vt.LoadedModel, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record how many decoder inputs each forward pass of the HF module runs."""
    seen: list[int] = []
    forward = model.module.forward

    def spy(**batch: Any) -> Any:
        ids = batch.get("decoder_input_ids", batch.get("input_ids"))
        seen.append(ids.shape[1])
        return forward(**batch)

    monkeypatch.setattr(model.module, "forward", spy)
    return seen


@pytest.mark.parametrize("family", ["marian", "t5", "gpt2", "llama"])
@pytest.mark.parametrize("width", [1, 3])
def test_hf_cached_steps_equal_decoding_every_prefix_whole(load_tiny, family, width, monkeypatch):
    model = load_tiny(family)
    text = model.spec.example
    start = len(hf_steps.decoder_session(model, text).start_tokens)
    seen = _count_inputs(model, monkeypatch)
    scored = _same_search(model, text, width, 8)
    cached_calls = seen[: len(scored)]  # the cached search ran first
    assert len(scored) >= 8 and cached_calls[0] == start and set(cached_calls[1:]) == {1}
    assert seen[len(scored) :] == [start + len(p) for p in scored]  # uncached: whole prefixes


def test_hf_cache_branches_stay_apart(load_tiny):
    """Scoring two children of one prefix must not let the first child's token leak into the
    second's keys and values (transformers caches grow in place); a prefix whose parent was
    not scored (the first one here) runs whole."""
    model = load_tiny("marian")
    session, reference = _sessions(model, model.spec.example)
    for prefix in [(4, 6), (), (5,), (5, 7), (5, 9), (5, 7, 3), (5, 9, 3)]:
        got, exp = session.score(prefix), reference.score(prefix)
        np.testing.assert_allclose(got.logprobs, exp.logprobs, atol=1e-5)
        np.testing.assert_allclose(got.self_row, exp.self_row, atol=1e-5)


@pytest.fixture(scope="module")
def bergamot() -> vt.LoadedModel:
    return vt.load_model("bergamot-en-pt")


@pytest.mark.needs("bergamot")
@pytest.mark.parametrize("width", [1, 3])
def test_bergamot_cached_steps_equal_decoding_every_prefix_whole(bergamot, width):
    # Its logits reach 23: either float32 path (one step, or the whole prefix) lies 3e-5 from
    # the float64 computation, so the two agree to that and no closer.
    scored = _same_search(bergamot, "Where is the nearest train station?", width, 40, atol=1e-4)
    assert len(scored) >= 8 and all(s.self_row is None for s in scored.values())


@pytest.mark.needs("bergamot")
def test_bergamot_trace_rows_from_the_greedy_steps_equal_a_teacher_forced_pass(bergamot):
    text = "The committee will publish its final report next Tuesday."
    trace = bergamot.trace(text)
    src_ids = bergamot.encode_text(text)
    out_ids = bergamot.sp.encode(trace.output_text)
    assert trace.tgt_tokens[1:] == bergamot.pieces(out_ids)
    names = bergamot.module.pattern_hook_names()["cross"]
    with torch.no_grad(), collect(bergamot.module, names) as cache:
        memory, vocab, _ = bergamot._prepare(src_ids)
        logits = bergamot.module.decode(
            memory, torch.tensor([out_ids], device=memory.device), vocab
        )[0]  # (T, vocab)
    np.testing.assert_allclose(trace.cross, np.stack([cache[n] for n in names]), atol=1e-5)
    assert trace.pred_tokens == bergamot.pieces(logits.argmax(-1).tolist())


@pytest.mark.needs("bergamot")
def test_bergamot_output_cut_at_the_length_limit_is_traced_whole(bergamot, monkeypatch):
    text = "The committee will publish its final report next Tuesday."
    full = bergamot.trace(text)
    monkeypatch.setattr(bergamot_module, "MAX_LENGTH_FACTOR", 0.5)  # about half the output
    cut = bergamot.trace(text)
    T = len(cut.tgt_tokens)
    assert len(full.tgt_tokens) > T and cut.pred_tokens[-1] != "</s>"
    assert cut.cross.shape == (2, 8, T, len(full.src_tokens))
    np.testing.assert_allclose(cut.cross, full.cross[:, :, :T], atol=1e-5)
    assert cut.pred_tokens == full.pred_tokens[:T]
