"""The step-by-step decoder's token rules (``hf.generation.constrain``), in the unit tier, against
transformers' own logits processors, the ones ``generate`` applies: suppressed and banned ids,
ids suppressed at the first step only, a forced first token and the forced end at the length
limit, at the step each applies and at no other. The next token is the argmax that follows."""

from __future__ import annotations

import pytest
import torch
from transformers import GenerationConfig
from transformers.generation.logits_process import (
    ForcedBOSTokenLogitsProcessor,
    ForcedEOSTokenLogitsProcessor,
    LogitsProcessorList,
    NoBadWordsLogitsProcessor,
    SuppressTokensAtBeginLogitsProcessor,
    SuppressTokensLogitsProcessor,
)

from viz_transformer.models.hf.generation import constrain
from viz_transformer.models.hf.spec import MAX_NEW_TOKENS

VOCAB, START, EOS = 12, 0, 2
RULES = {
    "suppress_tokens": [5],
    "begin_suppress_tokens": [7],
    "bad_words_ids": [[9]],
    "forced_bos_token_id": 4,
    "forced_eos_token_id": EOS,
}


def reference(config: GenerationConfig, prefix: int) -> LogitsProcessorList:
    """What ``generate`` applies for ``config`` (``GenerationMixin._get_logits_processor``) when
    the decoder input holds ``prefix`` ids before the outputs: an encoder-decoder's start id
    (1), or a decoder-only model's prompt."""
    begin = prefix if prefix > 1 or config.forced_bos_token_id is None else prefix + 1
    rules = [
        SuppressTokensLogitsProcessor(config.suppress_tokens),
        NoBadWordsLogitsProcessor(config.bad_words_ids, eos_token_id=EOS),
        ForcedEOSTokenLogitsProcessor(prefix + MAX_NEW_TOKENS, config.forced_eos_token_id),
        SuppressTokensAtBeginLogitsProcessor(config.begin_suppress_tokens, begin),
    ]
    if config.forced_bos_token_id is not None:
        rules.append(ForcedBOSTokenLogitsProcessor(config.forced_bos_token_id))
    return LogitsProcessorList(rules)


@pytest.mark.parametrize("forced_bos", [4, None], ids=["forced-first", "free-first"])
@pytest.mark.parametrize("prefix", [1, 5], ids=["encoder-decoder", "decoder-only"])
@pytest.mark.parametrize("n_out", [0, 1, 2, MAX_NEW_TOKENS - 2, MAX_NEW_TOKENS - 1])
def test_each_rule_applies_at_its_step_as_generate_applies_it(forced_bos, prefix, n_out):
    config = GenerationConfig(**{**RULES, "forced_bos_token_id": forced_bos})
    gen = torch.Generator().manual_seed(n_out)
    logits = torch.randn(3, VOCAB, generator=gen, device="cpu")
    logits[:, [5, 7, 9]] += 10.0  # the ruled ids would win without their rules
    seen = torch.full((3, prefix + n_out), 3, dtype=torch.long, device="cpu")
    seen[:, 0] = START
    expected = reference(config, prefix)(seen, logits.clone())
    got = constrain(config, logits, n_out, prefix)
    assert torch.equal(torch.isinf(got), torch.isinf(expected))
    assert torch.equal(got.argmax(-1), expected.argmax(-1))
    allowed = ~torch.isinf(expected)
    if allowed.sum() > 3:  # not a forced step: the other logits are left as they are
        assert torch.equal(got[allowed], logits[allowed])


def test_the_rules_that_force_a_token_leave_only_that_token():
    config = GenerationConfig(**RULES)
    logits = torch.zeros(1, VOCAB, device="cpu")
    assert constrain(config, logits, 0, 1).argmax().item() == 4  # the forced first token
    assert constrain(config, logits, MAX_NEW_TOKENS - 1, 1).argmax().item() == EOS
    # after a forced first token, the first free step is the one whose ids are suppressed
    assert torch.isinf(constrain(config, logits, 1, 1)[0, [5, 7, 9]]).all()
    assert not torch.isinf(constrain(config, logits, 2, 1)[0, 7])
    # a decoder-only prompt: no forced first token, the first-step rule on its first output
    assert constrain(config, logits, 0, 5).argmax().item() != 4
    assert torch.isinf(constrain(config, logits, 0, 5)[0, [5, 7, 9]]).all()
    assert not torch.isinf(constrain(config, logits, 1, 5)[0, 7])
