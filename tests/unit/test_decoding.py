"""Step-by-step decoding against the teacher-forced trace, a scripted beam search, and alignment."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.analysis.decoding import (
    align,
    decode_steps,
    reference_tokens,
    step_arrays,
    step_meta,
)
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.results import DecoderSession, StepScores
from viz_transformer.models.spec import ModelSpec
from viz_transformer.networks.marian_decode import beam_search
from viz_transformer.testing.paper import tiny_paper_model


@pytest.fixture(scope="module")
def reverse() -> LoadedModel:
    return vt.load_model("paper-reverse")


@pytest.mark.parametrize("which", ["tiny", "paper-reverse"])
def test_greedy_steps_are_the_trace_rows_and_predictions(which, reverse):
    model = tiny_paper_model() if which == "tiny" else reverse
    text = model.spec.example
    trace = vt.trace(model, text)
    dec = decode_steps(model, text, max_steps=100)
    n = len(dec.steps)  # a random model never ends: the trace then has one more row
    assert len(trace.pred_tokens) == n + (not dec.ended) and (which == "tiny") != dec.ended
    assert [s.chosen for s in dec.steps] == list(trace.pred_tokens[:n])
    assert dec.output_tokens == trace.tgt_tokens[1:] and dec.src_tokens == trace.src_tokens
    for t, step in enumerate(dec.steps):
        assert step.index == t and step.input_tokens == trace.tgt_tokens[: t + 1]
        assert step.self_row.shape == (*trace.decoder.shape[:2], t + 1)
        np.testing.assert_allclose(step.self_row, trace.decoder[:, :, t, : t + 1], atol=1e-5)
        np.testing.assert_allclose(step.cross_row, trace.cross[:, :, t, :], atol=1e-5)
        assert len(step.beams) == 1 and step.beams[0].on_path
    assert dec.ended == (dec.steps[-1].chosen == "</s>") and "</s>" not in dec.output_tokens


def test_top_k_is_the_softmax_of_the_output_layer(reverse):
    text = reverse.spec.example
    dec = decode_steps(reverse, text, top_k=4)
    vocab, module = reverse.vocab, reverse.module
    src = torch.tensor([vocab.encode(text)], device=reverse.device)
    ids = [vocab.index[t] for t in dec.steps[-1].input_tokens]
    with torch.no_grad():
        logits = module(src, torch.tensor([ids], device=reverse.device))[0]  # (T, vocab)
    probs = logits.softmax(-1).cpu().numpy()
    for t, step in enumerate(dec.steps):
        expected = np.sort(probs[t])[::-1][:4]
        np.testing.assert_allclose(step.top_probs, expected, atol=1e-5)
        assert step.top_tokens[0] == step.chosen == vocab.tokens[int(probs[t].argmax())]
        assert step.top_ids[0] == step.chosen_id == int(probs[t].argmax())
        assert step.chosen_prob == pytest.approx(float(probs[t].max()), abs=1e-5)


def test_beam_width_one_is_greedy_and_step_records_are_read_only(reverse):
    text = reverse.spec.example
    greedy = decode_steps(reverse, text, beam=1)
    wide = decode_steps(reverse, text, beam=4)
    assert wide.output_tokens == greedy.output_tokens  # a trained model: greedy is already best
    assert all(len(s.beams) >= 1 for s in wide.steps) and len(wide.steps[1].beams) == 4
    assert all(sum(b.on_path for b in s.beams) == 1 for s in wide.steps)
    step = greedy.steps[2]
    with pytest.raises(ValueError, match="read-only"):
        step.self_row[0, 0, 0] = 1.0
    arrays, meta = step_arrays(step), step_meta(greedy, step)
    assert set(arrays) == {"self_row", "cross_row", "top_probs"} and meta["step"] == 2


@dataclass(eq=False)
class Scripted(LoadedModel):
    """A decoder whose next-token probabilities are a table: tokens a=0, b=1, end=2."""

    table: dict[tuple[int, ...], list[float]]
    spec = ModelSpec("scripted", "paper", "", "x", ("cross",), "sinusoidal", ".")
    device = torch.device("cpu")

    def decoder_session(self, text: str) -> DecoderSession:
        def score(outputs: Sequence[int]) -> StepScores:
            probs = np.array(self.table.get(tuple(outputs), [0.0, 0.0, 1.0]), np.float64)
            with np.errstate(divide="ignore"):
                return StepScores(np.log(probs).astype(np.float32), None, None)

        names = "ab$"
        return DecoderSession(
            ("x",), ("<s>",), frozenset({2}), 10, score, lambda ids: tuple(names[i] for i in ids)
        )

    def trace(self, text: str, target: str | None = None) -> vt.Trace:
        raise NotImplementedError


# greedy takes "a" (0.6) then "a": p 0.6 * 0.35; beam 2 keeps "b" and finds "b a": p 0.4 * 0.9
TABLE = {(): [0.6, 0.4, 0.0], (0,): [0.35, 0.35, 0.3], (0, 0): [0, 0, 1], (0, 1): [0, 0, 1],
         (1,): [0.9, 0.1, 0.0], (1, 0): [0, 0, 1], (1, 1): [0, 0, 1]}  # fmt: skip


def test_beam_search_finds_what_greedy_misses_and_records_the_beams():
    model = Scripted(TABLE)
    greedy = decode_steps(model, "x", beam=1)
    assert greedy.output_tokens == ("a", "a") and greedy.ended
    beam = decode_steps(model, "x", beam=2, top_k=3)
    assert beam.output_tokens == ("b", "a") and [s.chosen for s in beam.steps] == ["b", "a", "$"]
    first, second, last = beam.steps
    assert [b.tokens for b in second.beams] == [("a",), ("b",)]  # a leads after step 0 ...
    assert [b.on_path for b in second.beams] == [False, True]  # ... but b's path wins
    assert second.beams[0].log_prob == pytest.approx(np.log(0.6), abs=1e-6)
    assert second.input_tokens == ("<s>", "b") and last.input_tokens == ("<s>", "b", "a")
    np.testing.assert_allclose(second.top_probs, [0.9, 0.1, 0.0], atol=1e-6)
    assert first.top_tokens == ("a", "b", "$") and second.self_row is None


def test_max_steps_cuts_the_output_and_options_are_checked(reverse):
    dec = decode_steps(reverse, reverse.spec.example, max_steps=3)
    assert len(dec.steps) == 3 and not dec.ended and len(dec.output_tokens) == 3
    with pytest.raises(ValueError, match="beam width"):
        decode_steps(reverse, "happy king", beam=0)
    with pytest.raises(ValueError, match="empty"):
        decode_steps(reverse, "  ")


def test_teacher_forcing_reports_the_first_divergent_position(reverse):
    text = reverse.spec.example  # its greedy output: sea blue ship red king happy
    greedy = decode_steps(reverse, text)
    forced = vt.trace(reverse, text, target="sea blue king red ship happy")
    ref = reference_tokens(forced, len(greedy.start_tokens))
    assert ref == ("sea", "blue", "king", "red", "ship", "happy")
    result = align(greedy.output_tokens, ref)
    assert result.diverges_at == 2 and result.model == greedy.output_tokens
    assert align(greedy.output_tokens, greedy.output_tokens).diverges_at is None
    assert align(("a", "b"), ("a", "b", "c")).diverges_at == 2  # the model stops early
    assert align((), ("a",)).diverges_at == 0


def test_a_model_without_decoder_says_so():
    class EncoderOnly(LoadedModel):
        spec = ModelSpec("enc", "hf", "", "x", ("encoder",), "learned", ".")

        def trace(self, text: str, target: str | None = None) -> vt.Trace:
            raise NotImplementedError

    with pytest.raises(ValueError, match="has no decoder"):
        decode_steps(EncoderOnly(), "some text")


# "$" ends at once (p 0.4, score log 0.4 = -0.92); "a $" ends one step later with a smaller
# probability (0.6 * 0.6 = 0.36) but a better score per token (log 0.36 / 2 = -0.51): Marian's
# length normalisation ranks "a $" first, the raw log-probability "$".
UNEVEN = {(): [0.6, 0.0, 0.4], (0,): [0.3, 0.1, 0.6]}


class _ScriptedNetwork:
    """The interface ``networks.marian_decode.beam_search`` uses (``start``, ``decode_step``,
    ``cfg.eos_id``, ``state.select``), answering from a table of next-token probabilities."""

    @dataclass(frozen=True)
    class Cfg:
        eos_id: int = 2

    @dataclass(frozen=True)
    class State:
        prefixes: tuple[tuple[int, ...], ...]

        def select(self, rows: torch.Tensor) -> _ScriptedNetwork.State:
            return type(self)(tuple(self.prefixes[r] for r in rows.tolist()))

    cfg = Cfg()

    def __init__(self, table: dict[tuple[int, ...], list[float]]) -> None:
        self.table = table

    def start(self, memory: torch.Tensor, vocab: torch.Tensor | None = None) -> State:
        return self.State(((),) * memory.shape[0])

    def decode_step(self, prev: torch.Tensor | None, state: State) -> tuple[torch.Tensor, State]:
        added = [()] * len(state.prefixes) if prev is None else [(int(i),) for i in prev]
        prefixes = tuple((*p, *a) for p, a in zip(state.prefixes, added, strict=True))
        probs = torch.tensor([self.table.get(p, [0.0, 0.0, 1.0]) for p in prefixes], device="cpu")
        return probs.log(), self.State(prefixes)


def test_both_beam_searches_rank_finished_hypotheses_by_log_prob_per_token():
    # analysis.decoding over a model's DecoderSession
    dec = decode_steps(Scripted(UNEVEN), "x", beam=2, top_k=3)
    assert dec.output_tokens == ("a",) and dec.output_ids == (0, 2) and dec.ended
    assert [b.tokens for b in dec.steps[1].beams] == [("a",)]  # "$" ended: the beam shrank to 1
    # networks.marian_decode over the network's batched state
    hyps = beam_search(_ScriptedNetwork(UNEVEN), torch.zeros(1, 1, 1, device="cpu"), 10, width=2)
    assert [h.ids for h in hyps] == [(0, 2), (2,)]
    assert hyps[0].log_prob == pytest.approx(np.log(0.36), abs=1e-6)
    assert [h.score for h in hyps] == pytest.approx([np.log(0.36) / 2, np.log(0.4)], abs=1e-6)
