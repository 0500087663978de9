"""Step-by-step decoding: the decoder is auto-regressive (section 3.1), so at step t it reads the
start symbol plus the t outputs so far ("outputs (shifted right)", Figure 1) while the encoder ran
once. Greedy and beam search over a model's ``DecoderSession``, one frozen ``Step`` per output
token, and the alignment of the model's own output with a reference (teacher forcing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from viz_transformer.models.base import LoadedModel
from viz_transformer.models.results import DecoderSession, StepScores
from viz_transformer.records.trace import Trace
from viz_transformer.text.after import labels_after
from viz_transformer.text.checks import check_text

Ids = tuple[int, ...]
MAX_BEAM = 16  # each step scores every live beam again: keep the work bounded


@dataclass(frozen=True)
class Beam:
    """One live hypothesis when a step starts."""

    tokens: tuple[str, ...]  # its outputs so far
    log_prob: float  # sum of the log-probabilities of those outputs
    on_path: bool  # True: a prefix of the final output, the beam whose attention is shown


@dataclass(frozen=True)
class Step:
    """What the decoder computes at one step, for the prefix of the final output.

    Attributes:
        index: t, counted from 0; the decoder has produced t outputs before this step.
        input_tokens: the decoder input: ``<s>`` (or a prompt) then the t outputs, ``T`` tokens.
        self_row: ``[layers, heads, T]`` masked self-attention of the newest position (read-only),
            or None for a decoder without self-attention.
        cross_row: ``[layers, heads, S]`` its attention over the source (read-only), or None.
        top_tokens: the ``k`` most likely next tokens, best first; top_probs: ``(k,)`` their
            probabilities (softmax of the output layer, section 3.4).
        chosen: the token the search appends (the argmax when greedy); chosen_id its id.
        beams: the live hypotheses when the step starts, best first (one when greedy).
    """

    index: int
    input_tokens: tuple[str, ...]
    self_row: np.ndarray | None
    cross_row: np.ndarray | None
    top_tokens: tuple[str, ...]
    top_probs: np.ndarray
    chosen: str
    chosen_prob: float
    beams: tuple[Beam, ...]
    top_ids: tuple[int, ...] = ()  # ids of top_tokens (two pieces may print alike)
    chosen_id: int = -1


@dataclass(frozen=True)
class Decoding:
    """A whole step-by-step decoding of one source."""

    model_name: str
    src_tokens: tuple[str, ...]  # empty for a decoder-only model
    start_tokens: tuple[str, ...]  # ``<s>``, or the prompt of a decoder-only model
    steps: tuple[Step, ...]
    output_tokens: tuple[str, ...]  # the chosen tokens without the end symbol
    output_ids: tuple[int, ...]  # the chosen ids, one per step (the end symbol included)
    ended: bool  # False: cut by ``max_steps`` before the end symbol
    beam: int
    notes: dict[str, str] = field(default_factory=dict)  # kind -> why a row is missing


@dataclass(frozen=True)
class Alignment:
    """The model's own output and a reference, token by token (teacher forcing)."""

    model: tuple[str, ...]
    reference: tuple[str, ...]
    diverges_at: int | None  # first position that differs (one running out counts); None: equal


def decoded(
    model_name: str, session: DecoderSession, steps: Sequence[Step], out: Sequence[int], beam: int
) -> Decoding:
    """The ``Decoding`` of ``session`` whose ``steps`` chose ``out`` (one id per step): ended
    when the last is an end symbol, which the output tokens leave out."""
    ended = bool(out) and out[-1] in session.eos_ids
    return Decoding(
        model_name=model_name,
        src_tokens=session.src_tokens,
        start_tokens=session.start_tokens,
        steps=tuple(steps),
        output_tokens=session.tokens(out[:-1] if ended else out),
        output_ids=tuple(out),
        ended=ended,
        beam=beam,
        notes=dict(session.notes),
    )


def make_step(
    session: DecoderSession,
    index: int,
    prefix: list[int],
    scores: StepScores,
    chosen: int,
    top_k: int,
    beams: tuple[Beam, ...],
) -> Step:
    """One decoding step's record: the decoder input ``prefix``, its newest attention rows, the
    ``top_k`` next tokens and the ``chosen`` one (greedy, beam or sampled)."""
    top = np.argsort(-scores.logprobs, kind="stable")[:top_k]
    last = prefix[-1] if prefix else None  # the candidates follow it ("##" judged against it)
    return Step(
        index=index,
        input_tokens=(*session.start_tokens, *session.tokens(prefix)),
        self_row=_frozen(scores.self_row),
        cross_row=_frozen(scores.cross_row),
        top_tokens=labels_after(session.tokens, [last] * len(top), top.tolist()),
        top_probs=_frozen(np.exp(scores.logprobs[top])),
        chosen=labels_after(session.tokens, [last], [chosen])[0],
        chosen_prob=float(np.exp(scores.logprobs[chosen])),
        beams=beams,
        top_ids=tuple(top.tolist()),
        chosen_id=chosen,
    )


def _frozen(arr: np.ndarray | None) -> np.ndarray | None:
    if arr is None:
        return None
    arr = np.array(arr, dtype=np.float32)  # a copy: the caller's array stays writable
    arr.flags.writeable = False
    return arr


def _search(
    session: DecoderSession, width: int, max_new: int
) -> tuple[Ids, list[list[tuple[Ids, float]]], dict[Ids, StepScores]]:
    """Beam search by Marian's rules: the beam shrinks by one for every hypothesis that ends, and
    finished hypotheses rank by log-probability / length. Width 1 is greedy decoding.

    Returns:
        the best output ids, the live beams (ids, log-prob) when each step starts, and the
        decoder's scores of every prefix it ran.
    """
    scored: dict[Ids, StepScores] = {}
    live: list[tuple[Ids, float]] = [((), 0.0)]
    history: list[list[tuple[Ids, float]]] = []
    finished: list[tuple[Ids, float]] = []
    for step in range(max_new):
        history.append(live)
        k = width - len(finished)
        candidates = []
        for prefix, total in live:
            scored[prefix] = scores = session.score(prefix)
            top = np.argsort(-scores.logprobs, kind="stable")[:k]
            for i in top[np.isfinite(scores.logprobs[top])]:
                candidates.append(((*prefix, int(i)), total + float(scores.logprobs[i])))
        candidates = sorted(candidates, key=lambda c: -c[1])[:k]
        live = []
        for ids, total in candidates:
            ends = ids[-1] in session.eos_ids or step == max_new - 1
            (finished if ends else live).append((ids, total))
        if not live:
            break
    best = max(finished, key=lambda f: f[1] / len(f[0]))[0]
    return best, history, scored


def decode_steps(
    model: LoadedModel, text: str, max_steps: int = 40, beam: int = 1, top_k: int = 5
) -> Decoding:
    """Decode ``text`` one token at a time and record every step (section 3.1).

    The encoder runs once; each step feeds the decoder the start symbol plus the outputs so far.
    The models keep the previous step's keys and values (a key/value cache, or Bergamot's
    recurrent state) and run only the newest token; a step's rows still equal the matching rows
    of the teacher-forced trace.

    Args:
        model: a handle from ``vt.load_model`` with a decoder.
        text: the source sentence (the prompt of a decoder-only model).
        max_steps: the most output tokens; the model's own limit applies too.
        beam: beam width; 1 is greedy. With more, the steps follow the final best hypothesis.
        top_k: how many most likely next tokens each step keeps.

    Returns:
        A ``Decoding`` with one ``Step`` per output token (the end symbol included).

    Raises:
        ValueError: no decoder, bad input, or options out of range, with what to do instead.
    """
    if not 1 <= beam <= MAX_BEAM:
        raise ValueError(f"beam width {beam} is out of range; pick 1 (greedy) to {MAX_BEAM}.")
    if max_steps < 1 or top_k < 1:
        raise ValueError("max_steps and top_k count tokens: use 1 or more.")
    session = model.decoder_session(check_text(text))
    best, history, scored = _search(session, beam, min(max_steps, session.max_new))
    steps = []
    for t, chosen in enumerate(best):
        prefix = best[:t]
        scores = scored[prefix]
        beams = tuple(Beam(session.tokens(ids), total, ids == prefix) for ids, total in history[t])
        steps.append(make_step(session, t, prefix, scores, chosen, top_k, beams))
    return decoded(model.name, session, steps, best, beam)


def reference_tokens(forced: Trace, start_len: int) -> tuple[str, ...]:
    """The reference as the model tokenised it: the forced decoder inputs after the start.

    Args:
        forced: ``vt.trace(model, text, target=reference)``, one parallel pass under the mask.
        start_len: ``len(Decoding.start_tokens)``: 1 (``<s>``), or the prompt's length.
    """
    return forced.tgt_tokens[start_len:]


def align(model_tokens: Sequence[str], reference: Sequence[str]) -> Alignment:
    """Where the model's own output first leaves the reference.

    Position i is decoder step i: the step that predicts output i. When one sequence is a
    prefix of the other, they diverge where the shorter one ends (one side stops, the other
    goes on).
    """
    model_tokens, reference = tuple(model_tokens), tuple(reference)
    same = 0
    while same < min(len(model_tokens), len(reference)) and (model_tokens[same] == reference[same]):
        same += 1
    equal = same == len(model_tokens) == len(reference)
    return Alignment(model_tokens, reference, None if equal else same)


def step_arrays(step: Step) -> dict[str, np.ndarray]:
    """The arrays behind one step's view, for download: rows ``[layers, heads, keys]``."""
    arrays = {"self_row": step.self_row, "cross_row": step.cross_row, "top_probs": step.top_probs}
    return {k: a for k, a in arrays.items() if a is not None}


def step_meta(decoding: Decoding, step: Step) -> dict[str, object]:
    """Tokens and choices of one step, JSON-ready."""
    return {
        "model": decoding.model_name,
        "step": step.index,
        "beam": decoding.beam,
        "src_tokens": list(decoding.src_tokens),
        "input_tokens": list(step.input_tokens),
        "top_tokens": list(step.top_tokens),
        "chosen": step.chosen,
        "beams": [{"tokens": list(b.tokens), "log_prob": b.log_prob} for b in step.beams],
        "layout": "[layers, heads, key]",
    }
