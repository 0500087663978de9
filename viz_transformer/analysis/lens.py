"""The logit lens (nostalgebraist 2020): each decoder layer's residual stream read through the
model's final norm and output layer, as if the decoder stopped there."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from viz_transformer.models.base import LoadedModel
from viz_transformer.text.after import labels_after
from viz_transformer.text.checks import check_text


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


def logit_lens(model: LoadedModel, text: str, target: str | None = None) -> Lens:
    """Run ``text`` with its greedy output (or ``target``) forced and read each decoder layer.

    Args:
        model: a model with a decoder (``lens_points``); text, target: as for ``vt.trace``.

    Returns:
        a ``Lens`` of ``len(lens_points())`` layers by the decoder positions.

    Raises:
        ValueError: the model has no decoder output layer, or bad text.
    """
    text = check_text(text)
    names = model.lens_points()
    out_ids = model.reference_ids(text, None if target is None else check_text(target, "target"))
    kept: dict[str, torch.Tensor] = {}

    def keep(x: torch.Tensor, name: str) -> None:
        kept[name] = x[0].detach()  # (T, d_model)

    with model.hooked(dict.fromkeys(names, keep)):
        model.forced_logprobs(text, out_ids)
    with torch.no_grad():
        stream = torch.stack([kept[n] for n in names])  # (L, T, d_model)
        probs = model.unembed(stream).float().softmax(-1)  # (L, T, vocab)
        top_p, top_id = (t.cpu().numpy() for t in probs.max(-1))  # (L, T) each
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
