"""Hugging Face encoder-decoder models decode greedily through the shared batched loop
(``hf.generation.greedy_ids``): each source's output equals ``generate``'s for it alone, in a
batch of sources of very different lengths too."""

from __future__ import annotations

import pytest
import torch

from viz_transformer.models.hf.generation import greedy_ids
from viz_transformer.models.hf.heads import CONTINUATION
from viz_transformer.models.hf.spec import MAX_NEW_TOKENS

TEXTS = ["the", "the cat sat on the mat and the dog ran to the red house in the tree", "a bird"]


def _generate(model, src_ids: list[int], eos: int) -> list[int]:
    src = torch.tensor([src_ids], device=model.device)
    with torch.no_grad():
        seq = model.module.generate(
            input_ids=src, attention_mask=torch.ones_like(src), eos_token_id=eos,
            max_new_tokens=MAX_NEW_TOKENS, do_sample=False, num_beams=1,
        )[0].tolist()  # fmt: skip
    out = seq[1:]
    return out[: _end(out, eos)]


@pytest.mark.parametrize("family", ["marian", "bart", "t5"])
def test_a_batch_equals_generate_one_by_one(load_tiny, family):
    model = load_tiny(family)
    sources = [model.encode_text(t) for t in TEXTS]
    assert len({len(s) for s in sources}) == len(sources)
    together = greedy_ids(model.module, sources, model.eos_ids())
    assert together == [model.greedy_ids(s) for s in sources]
    eos = min(model.eos_ids())
    assert together == [_generate(model, s, eos) for s in sources]
    assert model.greedy_outputs(TEXTS) == [model.trace(t).output_text for t in TEXTS]


def test_rows_that_end_leave_the_batch_and_the_others_go_on(load_tiny):
    # random weights seldom produce </s>: end instead at an id that one output produces early
    # and the others not, so that rows leave the batch at different steps (tiny T5's outputs
    # differ by source; those of the tiny Marian and BART hardly do)
    model = load_tiny("t5")
    sources = [model.encode_text(t) for t in TEXTS]
    outs = greedy_ids(model.module, sources, model.eos_ids())
    eos = max({t for out in outs for t in out}, key=lambda t: len({_end(o, t) for o in outs}))
    together = greedy_ids(model.module, sources, {eos})
    assert len({len(out) for out in together}) > 1
    assert together == [_generate(model, s, eos) for s in sources]


def _end(out: list[int], eos: int) -> int:
    return out.index(eos) if eos in out else len(out)


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_a_decoder_only_continuation_is_generates(load_tiny, family):
    model = load_tiny(family)
    ids = model.encode_text(TEXTS[1])
    src = torch.tensor([ids], device=model.device)
    with torch.no_grad():
        seq = model.module.generate(
            input_ids=src, attention_mask=torch.ones_like(src), max_new_tokens=CONTINUATION,
            do_sample=False, num_beams=1,
        )[0, len(ids) :].tolist()  # fmt: skip
    eos = model.eos_ids()
    want = seq[: next((i for i, t in enumerate(seq) if t in eos), len(seq))] or seq[:1]
    assert model.reference_ids(TEXTS[1]) == want


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_greedy_ids_of_a_decoder_only_model_is_generates_with_its_cache(load_tiny, family):
    """``HFModel.greedy_ids`` (the one greedy decoder: a decoder-only model continues its input
    with the key/value cache, as the retrieval heads run it) gives ``generate``'s ids, reports
    each step through ``stepping`` and stops at ``max_new``."""
    model = load_tiny(family)
    ids = model.encode_text(TEXTS[1])
    src = torch.tensor([ids], device=model.device)
    with torch.no_grad():
        seq = model.module.generate(
            input_ids=src, attention_mask=torch.ones_like(src), max_new_tokens=12,
            do_sample=False, num_beams=1,
        )[0, len(ids) :].tolist()  # fmt: skip
    eos = model.eos_ids()
    want = seq[: next((i for i, t in enumerate(seq) if t in eos), len(seq))]
    steps: list[tuple[int, int]] = []
    with model.stepping(lambda done, most: steps.append((done, most))):
        got = model.greedy_ids(ids, 12)
    assert got == want and steps[0] == (1, 12) and len(steps) in (len(got), len(got) + 1)
    assert model.greedy_ids(ids, 3) == want[:3]
