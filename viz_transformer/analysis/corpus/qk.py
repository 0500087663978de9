"""The joint query/key view of one head over a corpus (AttentionViz, Yeh et al., 2023).

Every query and key vector of one kind, layer and head, for the tokens of a sample of sentences,
projected together to 2-D, so a head's queries sit near the keys they attend to. Both are scaled
by d_k^-1/4 (so q . k is the score of Eq. 1) before the projection: PCA by default, UMAP where
``umap-learn`` is installed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
import torch

from viz_transformer.models.base import LoadedModel
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.progress import OnFraction, StopToken, with_stop

Projection = Literal["PCA", "UMAP"]
MAX_POINTS = 3000  # queries plus keys: a scatter stays readable and the projection quick


def projections() -> list[Projection]:
    """The projections this machine offers: PCA always, UMAP when ``umap-learn`` is installed."""
    return ["PCA", "UMAP"] if importlib.util.find_spec("umap") is not None else ["PCA"]


def project(x: np.ndarray, method: Projection = "PCA", seed: int = 0) -> np.ndarray:
    """``x`` ``[n, d]`` to ``[n, 2]``: the first two principal components, or UMAP's layout."""
    if method == "UMAP":
        import umap  # optional: umap-learn

        return umap.UMAP(n_components=2, random_state=seed).fit_transform(x).astype(np.float32)
    centred = x - x.mean(0, keepdims=True)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    out = centred @ vt[:2].T  # (n, <=2)
    return np.pad(out, ((0, 0), (0, 2 - out.shape[1]))).astype(np.float32)


def _one(
    model: LoadedModel, text: str, kind: AttentionKind, layer: int, head: int
) -> tuple[np.ndarray, np.ndarray, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Query and key vectors ``[q, d_k]``, ``[k, d_k]`` of one head in the trace of ``text``."""
    names = {p: model.hook_name(kind, layer, p) for p in ("hook_q", "hook_k")}
    seen: dict[str, torch.Tensor] = {}

    def keep(x: torch.Tensor, name: str) -> None:
        seen[name] = x[0, head].detach()  # the last call is the whole pass the trace records

    with model.hooked(dict.fromkeys(names.values(), keep)):
        tr = model.trace(text)
    q, k = (seen[names[p]].to("cpu", torch.float32).numpy() for p in ("hook_q", "hook_k"))
    return q, k, tr.tokens_for(kind)


def qk_points(
    model: LoadedModel,
    sentences: Sequence[str],
    kind: AttentionKind,
    layer: int,
    head: int,
    method: Projection = "PCA",
    max_points: int = MAX_POINTS,
    progress: OnFraction | None = None,
    stop: StopToken | None = None,
) -> pd.DataFrame:
    """Queries and keys of one head over the first sentences, up to ``max_points`` in all;
    ``progress`` is called with the fraction done after each sentence, and ``stop`` (once set)
    ends the work there with ``records.progress.Cancelled``.

    Returns:
        One row per vector: ``x, y`` (the projection), ``role`` (query or key), ``position``,
        ``token``, ``sentence_id``, ``sentence``.

    Raises:
        ValueError: a model without query and key hook points, or no sentence.
    """
    try:
        d_k = model.head_scale().d_k
        model.hook_name(kind, layer, "hook_q")
    except NotImplementedError:
        raise ValueError(f"{model.name} does not expose its queries and keys here.") from None
    rows, vectors = [], []
    progress = with_stop(progress, stop)
    for sid, text in enumerate(sentences):
        if len(vectors) >= max_points:
            break
        q, k, (q_tok, k_tok) = _one(model, text, kind, layer, head)
        for role, vecs, toks in (("query", q, q_tok), ("key", k, k_tok)):
            for pos, (vec, tok) in enumerate(zip(vecs, toks, strict=True)):
                vectors.append(vec * d_k**-0.25)
                rows.append((role, pos, tok, sid, text))
        if progress is not None:  # the sentences run out, or the points fill up, first
            progress(min(1.0, max((sid + 1) / len(sentences), len(vectors) / max_points)))
    if not rows:
        raise ValueError("No sentence to project; pick a corpus with at least one.")
    df = pd.DataFrame(rows, columns=["role", "position", "token", "sentence_id", "sentence"])
    xy = project(np.stack(vectors), method)
    return df.assign(x=xy[:, 0], y=xy[:, 1])
