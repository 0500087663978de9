"""A Hugging Face model's generation rules (forced first and last tokens, suppressed ids) apply
to outputs only, never to the decoder start: greedy decoding, in a batch and step by step,
produces what ``generate`` produces under the same rules, on a tiny random BART."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import viz_transformer as vt
from viz_transformer.models.hf.generation import greedy_ids
from viz_transformer.models.hf.spec import MAX_NEW_TOKENS
from viz_transformer.testing.hf import BUILDERS

TEXTS = ["the cat sat", "a small bird sings in the tree"]


@pytest.fixture(scope="module")
def bart(tmp_path_factory: pytest.TempPathFactory) -> vt.LoadedModel:
    """The tiny BART with a forced first token, a suppressed token and a forced end at the
    length limit (its random weights never end the output earlier)."""
    model = vt.load_model(f"hf:{BUILDERS['bart'](tmp_path_factory.mktemp('bart'))}")
    free = generate(model, TEXTS[0])
    assert len(free) == MAX_NEW_TOKENS - 1  # ended by the forced end only
    config = model.module.generation_config
    config.forced_bos_token_id = model.encode_text("tree")[1]  # a word, not what it would say
    config.suppress_tokens = [free[1]]  # what it says second
    assert config.forced_eos_token_id in model.eos_ids() and config.forced_bos_token_id != free[0]
    return model


def generate(model: vt.LoadedModel, text: str) -> list[int]:
    """``generate``'s greedy output ids after the decoder start, cut before the end."""
    src = torch.tensor([model.encode_text(text)], device=model.device)
    with torch.no_grad():
        seq = model.module.generate(
            input_ids=src, attention_mask=torch.ones_like(src), do_sample=False, num_beams=1,
            max_new_tokens=MAX_NEW_TOKENS,
        )[0].tolist()  # fmt: skip
    assert seq[0] == model.module.generation_config.decoder_start_token_id
    out = seq[1:]
    return out[:-1] if out[-1] in model.eos_ids() else out


def test_greedy_outputs_follow_the_rules_as_generate_does(bart) -> None:
    want = [generate(bart, t) for t in TEXTS]
    config = bart.module.generation_config
    assert all(w[0] == config.forced_bos_token_id and config.suppress_tokens[0] not in w
               for w in want)  # fmt: skip
    sources = [bart.encode_text(t) for t in TEXTS]
    assert greedy_ids(bart.module, sources, bart.eos_ids()) == want  # in one batch
    session = bart.decoder_session(TEXTS[1])  # step by step
    outputs: list[int] = []
    while len(outputs) < session.max_new:
        step = session.score(outputs)
        best = int(np.argmax(step.logprobs))
        if not outputs:  # a forced token has probability 1
            assert step.logprobs[best] == pytest.approx(0.0)
        if best in session.eos_ids:
            break
        outputs.append(best)
    assert outputs == want[1]
