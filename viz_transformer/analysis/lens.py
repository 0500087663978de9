"""The logit lens (nostalgebraist 2020): each decoder layer's residual stream read through the
model's final norm and output layer, as if the decoder stopped there."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from viz_transformer.analysis.heads import ticking
from viz_transformer.analysis.stepping import decoding, part
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.progress import OnFraction, StopToken, with_stop
from viz_transformer.text.after import labels_after
from viz_transformer.text.checks import check_text

LENS_CELLS = 2**24  # logits unembedded at a time (64 MB of float32)


@dataclass(frozen=True)
class Lens:
    """Top tokens of every decoder layer at every decoder position.

    Attributes:
        inputs: the decoder input at each position (start symbol first; a decoder-only model:
            the prompt's tokens, then its greedy continuation); each position predicts the next.
        tokens: ``[layers][positions]`` the most likely next token after that layer.
        probs: float32 ``[layers, positions]`` its probability.
        output: the model's own next token at each position (the last layer's top token).
    """

    inputs: tuple[str, ...]
    tokens: tuple[tuple[str, ...], ...]
    probs: np.ndarray
    output: tuple[str, ...]


def logit_lens(
    model: LoadedModel,
    text: str,
    target: str | None = None,
    progress: OnFraction | None = None,
    stop: StopToken | None = None,
) -> Lens:
    """Run ``text`` with its greedy output (or ``target``) forced and read each decoder layer.

    Args:
        model: a model with a decoder (``lens_points``); text, target: as for ``vt.trace``.
        progress: called with the fraction done after each greedy step, from inside the
            model's layers at most every ``heads.TICK_S`` s, and with 1 at the end.
        stop: once set (from any thread), the work ends at its next progress point with
            ``records.progress.Cancelled``, leaving the model without hooks.

    Returns:
        a ``Lens`` of ``len(lens_points())`` layers by the decoder positions.

    Raises:
        ValueError: the model has no decoder output layer, or bad text.
    """
    text = check_text(text)
    names = model.lens_points()
    target = None if target is None else check_text(target, "target")
    kept: dict[str, torch.Tensor] = {}
    progress = with_stop(progress, stop)

    def keep(x: torch.Tensor, name: str) -> None:
        kept[name] = x[0].detach()  # (T, d_model)

    with ticking(model, progress) as report:
        # the greedy decode is most of the time (smollm2, 200 tokens: 6.8 s in all)
        with decoding(model, report, 0.0, 0.7):
            out_ids = model.reference_ids(text, target)
        with model.hooked(dict.fromkeys(names, keep)):
            model.forced_logprobs(text, out_ids)
    top_p, top_id = _top(model, [kept[n] for n in names], part(report, 0.8, 1.0))  # (L, T) each
    n_inputs = top_id.shape[1]
    # before the output: the start symbol or, decoder-only, the prompt
    prompt_ids, prompt = model.source_ids(text) if model.spec.decoder_only else ([], ())
    n_start = max(0, n_inputs - len(prompt_ids) - len(out_ids))  # the start symbol: no id
    before = [*(None,) * n_start, *prompt_ids, *out_ids][:n_inputs]
    tokens = tuple(labels_after(model.output_tokens, before, row.tolist()) for row in top_id)
    inputs = model.output_tokens(out_ids)
    if prompt_ids and out_ids:  # the first output piece, shown after the prompt's last
        inputs = model.output_tokens([prompt_ids[-1], *out_ids])[1:]
    return Lens(
        inputs=(*("<s>",) * n_start, *prompt, *inputs)[:n_inputs],
        tokens=tokens,
        probs=top_p.astype(np.float32),
        output=tokens[-1],
    )


def _top(
    model: LoadedModel, streams: list[torch.Tensor], progress: OnFraction | None
) -> tuple[np.ndarray, np.ndarray]:
    """The most likely next token's probability and id after each layer, ``[L, T]`` each, from
    each layer's residual stream ``(T, d_model)``: ``LENS_CELLS`` logits at a time (smollm2's 30
    layers x 300 positions x 49,152 ids at once took 1.8 GB; one layer of Llama 3 at 32,768
    tokens would be 15.7 GiB of float32), ``progress`` after each layer."""
    top_p, top_id = [], []
    with torch.no_grad():
        rows = max(1, LENS_CELLS // model.unembed(streams[0][:1]).shape[-1])  # of the vocabulary
        for i, stream in enumerate(streams):
            p_id = [
                model.unembed(stream[r : r + rows]).float().softmax(-1).max(-1)
                for r in range(0, len(stream), rows)
            ]
            top_p.append(torch.cat([p for p, _ in p_id]).cpu().numpy())
            top_id.append(torch.cat([ids for _, ids in p_id]).cpu().numpy())
            if progress is not None:
                progress((i + 1) / len(streams))
    return np.stack(top_p), np.stack(top_id)
