"""Why a head attends where it does: one head's pre-softmax scores as the model computed them, and
one score taken apart three ways, each summing to it (Eq. 1: ``score = q · k / sqrt(d_k)``):

- ``"dimension"``: one part per dimension of q · k, or per rotary frequency pair (the rotated q and
  k, the only ones whose product is the score);
- ``"input"``: at layer 0 of a model that adds positions to its embeddings, content and position
  on each side (content.content, content.position, position.content, position.position, bias);
- ``"component"``: in a pre-norm model the block input is a sum (embeddings, every earlier head's
  output, every MLP's output); with each token's norm scale held at its value in the run, the
  score is a sum over (query-side component, key-side component) pairs (the components:
  ``components.residual_components``).

Pure functions of the ``KindCapture`` the model's adapter fills from its hook points
(``walkthrough.capture``); no forward pass is written a second time here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd

from viz_transformer import settings
from viz_transformer.analysis.components import residual_components
from viz_transformer.analysis.rope import pair_angles, rotate
from viz_transformer.analysis.walkthrough import capture
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.qkv import KindCapture, Needs, rows_of

SplitBy = Literal["dimension", "input", "component"]
SPLITS: tuple[SplitBy, ...] = ("dimension", "input", "component")
BIAS = "bias"  # the side's part that no token brings: norm bias and projection bias
POSITION_NOTE = (
    "position.position depends on the positions alone: any two sentences give it the same value "
    "at the same query and key positions."
)


def position_note(cap: KindCapture) -> str:
    """The line under the input split: position.position depends on the positions alone (with
    a pre-norm model's held norm scales, which the tokens set, as the one exception)."""
    held = ", up to each token's norm scale, which is held at its value in this run and which the "
    return POSITION_NOTE if cap.resid is None else f"{POSITION_NOTE[:-1]}{held}content sets."


def _scale(cap: KindCapture) -> float:
    """The factor the model multiplies q · k by: 1/sqrt(d_k), or 1 without the scale."""
    return 1 / math.sqrt(cap.d_k) if cap.scaled else 1.0


def _qk(
    cap: KindCapture, layer: int, head: int, queries: Sequence[int], keys: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """q ``[len(queries), d_k]`` and k ``[len(keys), d_k]`` of ``head`` at those positions, as
    the model's hook points recorded them (after rotary positions; grouped-query heads read
    their shared key head), float64."""
    if "q" not in cap.captured or "k" not in cap.captured:
        raise ValueError(
            f"{cap.model_name} runs its attention outside our attention function, so its queries "
            "and keys were not recorded; the Attention maps page shows its weights."
        )
    q = rows_of(cap.captured["q"], layer, list(queries))[head]
    k = rows_of(cap.captured["k"], layer, list(keys))[cap.kv_head(head)]
    return q.astype(np.float64), k.astype(np.float64)


def head_scores(
    cap: KindCapture,
    layer: int,
    head: int,
    queries: range | None = None,
    keys: range | None = None,
) -> np.ndarray:
    """Pre-softmax scores of one head, ``[len(queries), len(keys)]`` float64 (None: every
    position): q · k times the model's scale, ``-inf`` where the decoder masks a later key
    (section 3.2.3); their softmax over every key is the head's weights. Only the window is
    made (a whole head of 32,768 tokens: 8 GiB), at most ``settings.MAX_MATERIALISE`` scores.

    Raises:
        ValueError: a layer or head out of range, a window outside the map or too large, or a
            model whose q and k are not recorded.
    """
    n_q, n_k = len(cap.query_tokens), len(cap.key_tokens)
    rows, cols = queries or range(n_q), keys or range(n_k)
    for query, key in ((rows[0], cols[0]), (rows[-1], cols[-1])):  # the window's two corners
        cap.check(layer, head, query=query, key=key)
    if len(rows) * len(cols) > settings.MAX_MATERIALISE:
        raise ValueError(
            f"{len(rows):,} x {len(cols):,} scores exceed VT_MAX_MATERIALISE "
            f"({settings.MAX_MATERIALISE:,}): pass queries= and keys= ranges (a window)."
        )
    q, k = _qk(cap, layer, head, rows, cols)
    scores = (q @ k.T) * _scale(cap)  # (len(rows), len(cols))
    if cap.kind == "decoder":  # query i sees keys 0..i
        scores[np.asarray(cols)[None, :] > np.asarray(rows)[:, None]] = -np.inf
    return scores


def attention_scores(
    model: LoadedModel,
    text: str,
    kind: AttentionKind,
    layer: int,
    head: int,
    target: str | None = None,
    queries: range | None = None,
    keys: range | None = None,
) -> np.ndarray:
    """``head_scores`` of ``text`` (greedy output, or ``target`` forced) in the window
    ``queries`` x ``keys`` (None: every position); the pass keeps one layer's q and k.

    Raises:
        ValueError: a model, kind or text the Q, K, V capture cannot read, or an index or window
            out of range; the message says what to do.
    """
    cap = capture(model, text, kind, target, reads(layer, "dimension"))
    return head_scores(cap, layer, head, queries, keys)


def _frame(score: float, parts: pd.DataFrame) -> pd.DataFrame:
    """``parts`` plus a last row ``rest``: the score minus their sum (~0 where exact)."""
    rest = pd.DataFrame({"part": ["rest"], "value": [score - float(parts["value"].sum())]})
    return pd.concat([parts, rest], ignore_index=True)


def _by_dimension(cap: KindCapture, layer: int, head: int, query: int, key: int) -> pd.DataFrame:
    """q_i k_i times the scale per dimension; rotary: per frequency pair (i, i + d_k/2)."""
    q, k = _qk(cap, layer, head, [query], [key])
    terms = q[0] * k[0] * _scale(cap)  # (d_k,)
    if cap.rotary is None:
        return pd.DataFrame({"part": [f"d{i}" for i in range(len(terms))], "value": terms})
    half = len(terms) // 2
    cos, sin = cap.rotary
    if len(cos) > 1:
        angle = np.abs(pair_angles(cos[:2].astype(np.float64), sin[:2].astype(np.float64))[1])
        wavelength = 2 * np.pi / np.where(angle > 0, angle, np.nan)
    else:  # one position: its angle per step is not in the table
        wavelength = np.full(half, np.nan)
    return pd.DataFrame(
        {
            "part": [f"f{i}" for i in range(half)],
            "value": terms[:half] + terms[half:],
            "wavelength": wavelength,
        }
    )


def _held_norm(
    cap: KindCapture, layer: int, parts: dict[str, np.ndarray], stream: np.ndarray
) -> dict[str, np.ndarray]:
    """Each part ``(d,)`` through the block's pre-attention norm with the scale it has on
    ``stream`` (the block input those parts sum to), plus ``BIAS``: the norm's bias (zeros for
    RMSNorm or no norm). LayerNorm centres each part on its own, since centring is linear."""
    d = stream.shape[-1]
    if cap.resid is None or cap.norm == "none":
        return {**parts, BIAS: np.zeros(d)}
    gain = cap.weights["norm"][layer].astype(np.float64)
    if cap.norm == "layer":
        scale = gain / math.sqrt(stream.var() + cap.norm_eps)
        out = {n: (p - p.mean()) * scale for n, p in parts.items()}
        return {**out, BIAS: cap.weights["norm_bias"][layer].astype(np.float64)}
    scale = gain / math.sqrt(np.mean(stream**2) + cap.norm_eps)
    return {**{n: p * scale for n, p in parts.items()}, BIAS: np.zeros(d)}


def _project(
    cap: KindCapture, layer: int, head: int, side: str, parts: dict[str, np.ndarray], pos: int
) -> np.ndarray:
    """``[C, d_k]``: each part of the attention input through this head's W^Q (``side`` "q") or
    W^K ("k"), the projection's bias added to ``BIAS``, rotated by ``pos`` for rotary models."""
    index = head if side == "q" else cap.kv_head(head)
    cols = slice(index * cap.d_k, (index + 1) * cap.d_k)
    w = cap.weights[f"w_{side}"][layer][:, cols].astype(np.float64)  # (d, d_k)
    out = np.stack(list(parts.values())) @ w  # (C, d_k)
    out[list(parts).index(BIAS)] += cap.weights[f"b_{side}"][layer][cols]
    if cap.rotary is not None:
        cos, sin = (t[pos].astype(np.float64) for t in cap.rotary)
        out = rotate(out, cos, sin)
    return out


def _pairs(
    cap: KindCapture,
    layer: int,
    head: int,
    sides: tuple[dict[str, np.ndarray], dict[str, np.ndarray]],
    query: int,
    key: int,
) -> pd.DataFrame:
    """One row per (query-side part, key-side part): their projections' product times the scale;
    the sides' parts, norm bias included (``BIAS``), sum to the attention inputs."""
    q_parts, k_parts = sides
    qs = _project(cap, layer, head, "q", q_parts, query)  # (Cq, d_k)
    ks = _project(cap, layer, head, "k", k_parts, key)  # (Ck, d_k)
    values = (qs @ ks.T) * _scale(cap)  # (Cq, Ck)
    q_names = np.repeat(np.array(list(q_parts), dtype=object), len(k_parts))
    k_names = np.tile(np.array(list(k_parts), dtype=object), len(q_parts))
    return pd.DataFrame(
        {
            "part": q_names + "." + k_names,
            "value": values.reshape(-1),
            "query_part": q_names,
            "key_part": k_names,
        }
    )


def _input_parts(
    cap: KindCapture, layer: int, at: list[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Content, position and the layer-0 stream they sum to (before a pre-norm model's norm, or
    the attention input itself), each ``[len(at), d]`` at positions ``at``.

    Raises:
        ValueError: a layer, kind or model where the input is not content + position.
    """
    if cap.rotary is not None:
        raise ValueError(
            f"{cap.model_name} adds no positions to its input: it rotates q and k by their "
            "positions (RoPE). Split by dimension: each frequency pair's share carries position."
        )
    if layer != 0:
        raise ValueError(
            f"At layer {layer} the input is the residual stream, no longer token + position; "
            "choose layer 0, or split by component (pre-norm models)."
        )
    if cap.kind == "cross":
        raise ValueError(
            "Cross-attention's keys are the encoder's output, not embeddings + positions; pick "
            "the encoder's or the decoder's self-attention."
        )
    if cap.embed is not None and cap.pos is not None:
        return cap.embed[at], cap.pos[at], np.asarray(cap.x_q[0])[at]
    if cap.inputs is not None and cap.resid is not None:
        return cap.inputs[0][at], cap.inputs[1][at], rows_of(cap.resid, 0, at)
    raise ValueError(
        f"{cap.model_name} does not hand its input over as embedding + position (BERT "
        "normalises their sum before layer 0); split by dimension instead."
    )


def _by_input(cap: KindCapture, layer: int, head: int, query: int, key: int) -> pd.DataFrame:
    parts = _input_parts(cap, layer, [query, key])
    content, position, stream = (a.astype(np.float64) for a in parts)
    sides = tuple(
        _held_norm(cap, 0, {"content": content[i], "position": position[i]}, stream[i])
        for i in range(2)
    )
    return _pairs(cap, layer, head, sides, query, key)  # type: ignore[arg-type]


def _by_component(cap: KindCapture, layer: int, head: int, query: int, key: int) -> pd.DataFrame:
    if cap.kind == "cross":
        raise ValueError("Split cross-attention by dimension: its keys come from the encoder.")
    names, parts = residual_components(cap, layer, [query, key])  # (C, 2, d)
    streams = rows_of(cap.resid, layer, [query, key]).astype(np.float64)  # (2, d)
    sides = tuple(
        _held_norm(cap, layer, dict(zip(names, parts[:, i], strict=True)), streams[i])
        for i in range(2)
    )
    return _pairs(cap, layer, head, sides, query, key)  # type: ignore[arg-type]


def split_score(
    cap: KindCapture, layer: int, head: int, query: int, key: int, by: SplitBy = "dimension"
) -> pd.DataFrame:
    """One score taken apart (see the module docstring).

    Returns:
        One row per part (``part``, ``value``; ``wavelength`` in positions for rotary pairs;
        ``query_part``, ``key_part`` for input and component pairs), then ``rest``: the score
        minus the parts' sum, ~0 (float rounding) since every split is exact.

    Raises:
        ValueError: an index out of range, a masked pair, or a split the model or layer does
            not have, with the reason.
    """
    cap.check(layer, head, query=query, key=key)
    masked = cap.kind == "decoder" and key > query
    q, k = _qk(cap, layer, head, [query], [key])  # the one score, not the head's T x T
    score = -np.inf if masked else q[0] @ k[0] * _scale(cap)
    if np.isneginf(score):
        raise ValueError(
            f"Key {key} comes after query {query}: the decoder masks it (score -inf, weight 0). "
            "Pick a key at or before the query."
        )
    split = {"dimension": _by_dimension, "input": _by_input, "component": _by_component}
    if by not in split:
        raise ValueError(f"unknown split {by!r}; use one of {', '.join(SPLITS)}.")
    return _frame(float(score), split[by](cap, layer, head, query, key))


def score_parts(
    model: LoadedModel,
    text: str,
    kind: AttentionKind,
    layer: int,
    head: int,
    query: int,
    key: int,
    by: SplitBy = "dimension",
    target: str | None = None,
) -> pd.DataFrame:
    """``split_score`` of the score of ``query`` on ``key`` for ``text`` (see the module
    docstring); the values sum to ``attention_scores(...)[query, key]``. The pass captures only
    what the split reads (``reads``): no pattern, and of the earlier layers the two positions."""
    cap = capture(model, text, kind, target, reads(layer, by, (query, key)))
    return split_score(cap, layer, head, query, key, by)


def reads(layer: int, by: SplitBy, positions: tuple[int, int] | None = None) -> Needs:
    """What the split of a score at ``layer`` reads: that layer's queries and keys; the input
    split layer 0's block input; the component split every block input up to this layer's and
    every earlier layer's heads' outputs, at the query's and the key's ``positions`` (None:
    every position, which grows with the layers)."""
    needs = Needs.at([layer], "q", "k")
    rows = None if positions is None else frozenset(positions)
    if by == "component":  # the block inputs up to this layer's; layer 0 keeps one z
        earlier = {"z": frozenset(range(max(1, layer))), "resid": frozenset(range(layer + 1))}
        return Needs({**needs.layers, **earlier}, rows)
    if by == "input":
        return Needs({**needs.layers, "resid": frozenset({0})}, rows)
    return needs


def marginals(pairs: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Query-side and key-side totals of an input or component split (``rest`` left out),
    largest magnitude first: which parts make this head look at that key."""
    rows = pairs[pairs["part"] != "rest"]
    out = []
    for side in ("query_part", "key_part"):
        total = rows.groupby(side, sort=False)["value"].sum()
        out.append(total.reindex(total.abs().sort_values(ascending=False).index))
    return out[0], out[1]
