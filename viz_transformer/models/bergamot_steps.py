"""Step-by-step decoding of a Bergamot translator: the source encoded once, then each output
prefix scored, from its parent's SSRU state when the parent was scored at the previous step.

Marian's decoder has no self-attention (its SSRU cells are recurrent), so a step returns the
newest cross-attention row alone; tokens outside the shortlist get log-probability ``-inf``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from viz_transformer.models.bergamot_spec import DECODER_NOTE
from viz_transformer.models.prefix_states import PrefixStates
from viz_transformer.models.results import DecoderSession, StepScores, newest_rows
from viz_transformer.networks.hooks import collect
from viz_transformer.networks.marian import BergamotTransformer, DecoderState

START_TOKEN = "<s>"  # label of decoder position 0, whose input is a zero vector (no BOS exists)


def decoder_session(
    module: BergamotTransformer,
    prepared: tuple[torch.Tensor, torch.Tensor | None, int],
    src_tokens: tuple[str, ...],
    pieces: Callable[[list[int]], tuple[str, ...]],
    use_cache: bool = True,
) -> DecoderSession:
    """Score output prefixes of one encoded source step by step.

    Each ``score(outputs)`` runs the decoder over the zero start vector then ``outputs`` and
    returns the newest cross-attention row. With ``use_cache``, a prefix whose parent (the
    prefix without its last token) was scored at the previous step runs one ``decode_step`` from
    the parent's state (SSRU cells; the source keys and values are computed once per session);
    other prefixes run whole. Without it, every step runs the whole prefix and projects the
    source again.

    Args:
        module: the network, in eval mode.
        prepared: the encoder output ``(1, S, d)``, the shortlist's ids ``(n,)`` or None, and
            the most output tokens (``BergamotModel._prepare``).
        src_tokens: display strings of the source ids.
        pieces: display strings of output ids.
        use_cache: step from the parent's state where there is one.

    Returns:
        The session the step-by-step decoders (greedy, beam, sampling) drive.
    """
    memory, vocab, max_new = prepared
    names = module.pattern_hook_names()["cross"]
    with torch.inference_mode():
        first = module.start(memory, vocab)
    states: PrefixStates[DecoderState] = PrefixStates()

    def score(outputs: Sequence[int]) -> StepScores:
        parent = states.parent(outputs) if use_cache else None
        out = torch.tensor([list(outputs)], dtype=torch.long, device=memory.device)  # (1, n)
        with torch.inference_mode(), collect(module, names) as cache:
            if parent is not None:
                logits, state = module.decode_step(out[:, -1], parent)  # (1, vocab)
            elif use_cache:
                all_logits, state = module.decode_prefix(out, first)  # (1, n + 1, vocab)
                logits = all_logits[:, -1]
            else:
                logits = module.decode(memory, out, vocab)[:, -1]
        if use_cache:
            states.put(outputs, state)
        logprobs = F.log_softmax(logits[0].float(), dim=-1).cpu().numpy()
        return StepScores(logprobs, None, newest_rows(cache, names))

    return DecoderSession(
        src_tokens=src_tokens,
        start_tokens=(START_TOKEN,),
        eos_ids=frozenset({module.cfg.eos_id}),
        max_new=max_new,
        score=score,
        tokens=lambda ids: pieces(list(ids)),
        notes={"decoder": DECODER_NOTE},
    )
