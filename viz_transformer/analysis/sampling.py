"""Sampling the next token, one step at a time: temperature, top-k and top-p (nucleus) filtering
applied in the order transformers applies them, drawn from a seeded generator so a decoding is
reproducible; temperature 0 is greedy decoding. Each step runs only the newest token against the
key/value cache of the previous one (``LoadedModel.decoder_session``), and the steps are the same
``decoding.Step`` records the beam search produces, so the decoder page draws them alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from viz_transformer.analysis.decoding import Beam, Decoding, Step, decoded, make_step
from viz_transformer.models.base import LoadedModel
from viz_transformer.text.checks import check_text


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen.

    Attributes:
        temperature: divides the logits; 0 picks the most likely token (greedy, the default).
        top_k: keep only the k most likely tokens; 0 keeps every token.
        top_p: keep the smallest set of most likely tokens whose probability reaches top_p.
        seed: seeds the generator; the same seed gives the same output.
    """

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def check(self) -> Sampling:
        """This, once its values are in range.

        Raises:
            ValueError: a negative temperature or top-k, or a top-p outside (0, 1].
        """
        if self.temperature < 0 or self.top_k < 0:
            raise ValueError("Temperature and top-k must be 0 or more (0: greedy / keep all).")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top-p {self.top_p} must lie in (0, 1]; 1 keeps every token.")
        return self


def next_token_probs(logprobs: np.ndarray, sampling: Sampling) -> np.ndarray:
    """The distribution the next token is drawn from: ``softmax(logits / temperature)`` with every
    token outside the top-k, then outside the top-p nucleus, set to 0 and the rest renormalised.

    Args:
        logprobs: ``(vocab,)`` log-softmax of the model (``-inf`` for forbidden tokens).
        sampling: the options; temperature 0 puts all the mass on the argmax.
    """
    logprobs = np.asarray(logprobs, dtype=np.float64)
    if sampling.temperature == 0:
        probs = np.zeros_like(logprobs)
        probs[int(np.argmax(logprobs))] = 1.0
        return probs
    scaled = logprobs / sampling.temperature
    order = np.argsort(-scaled, kind="stable")
    keep = np.isfinite(scaled[order])
    if sampling.top_k:
        keep[sampling.top_k :] = False
    probs = np.exp(scaled[order] - scaled[order[0]]) * keep
    probs /= probs.sum()
    if sampling.top_p < 1:  # drop the tail whose mass stays within 1 - top_p (transformers' rule)
        tail = np.cumsum(probs[::-1])[::-1] - probs  # mass strictly after each token
        keep &= ~(tail + probs <= 1 - sampling.top_p)
        keep[0] = True
        probs = probs * keep
        probs /= probs.sum()
    out = np.zeros_like(probs)
    out[order] = probs
    return out


def sample_steps(
    model: LoadedModel,
    text: str,
    max_steps: int = 40,
    sampling: Sampling | None = None,
    top_k: int = 5,
    chat: bool = False,
) -> Decoding:
    """Decode ``text`` one sampled token at a time, recording each step like ``decode_steps``.

    Args:
        model: a handle from ``vt.load_model`` with a decoder.
        text: the prompt (or source sentence).
        max_steps: the most output tokens; the model's own limit applies too.
        sampling: temperature, top-k, top-p and seed; default greedy.
        top_k: how many most likely next tokens each step shows (not the sampling top-k).
        chat: wrap ``text`` as a user message in the model's chat template first.

    Raises:
        ValueError: no decoder, no chat template, bad input or options, with the fix.
    """
    sampling = (sampling or Sampling()).check()
    text = check_text(text)
    session = model.decoder_session(model.chat_prompt(text) if chat else text)
    rng = np.random.default_rng(sampling.seed)
    out: list[int] = []
    steps: list[Step] = []
    total = 0.0
    for t in range(min(max_steps, session.max_new)):
        scores = session.score(out)
        probs = next_token_probs(scores.logprobs, sampling)
        chosen = (
            int(rng.choice(len(probs), p=probs)) if sampling.temperature else int(probs.argmax())
        )
        beams = (Beam(session.tokens(out), total, True),)
        steps.append(make_step(session, t, out, scores, chosen, top_k, beams))
        total += float(scores.logprobs[chosen])
        out.append(chosen)
        if chosen in session.eos_ids:
            break
    return decoded(model.name, session, steps, out, beam=1)
