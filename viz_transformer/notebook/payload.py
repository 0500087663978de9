"""What the notebook widgets send to the browser: a trace's tokens and shapes, block maxima of
every head, and the one layer or head a view draws, as small JSON with binary buffers.

The widget keeps the ``Trace`` in Python and sends only what is drawn, so a long input never
travels whole (``[layers, heads, n, n]`` is 48 MB of float32 at 512 tokens, 6 layers, 8 heads):

- ``header``: tokens, the kinds with their ``[layers, heads, queries, keys]`` shapes, notes;
- ``grid``: every head of one kind as block maxima of at most ``GRID_SIZE`` cells a side, each
  map quantised to uint8 against its own largest weight (``scale``);
- ``lines``: the head view's lines, weights ``>= min_weight`` of every head of one layer within a
  window of ``LINE_TOKENS`` query rows (uint16 positions in the window, uint8 weights x 255);
- ``focus``: one head's map, block maxima of at most ``FOCUS_SIZE`` a side (the model view).

A lazy kind (``records.lazy``) computes each head where its queries and keys are; only the
reduced cells reach the host. Nothing here imports a widget library.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from viz_transformer.figures.head_view import HEAD_COLOURS, HEAD_VIEW_MIN
from viz_transformer.records.kinds import KIND_TITLES, KINDS, AttentionKind
from viz_transformer.records.lazy import drawn
from viz_transformer.records.trace import Patterns, Trace

GRID_SIZE = 40  # cells a side of a head's thumbnail (block maxima beyond)
FOCUS_SIZE = 256  # cells a side of the model view's selected head
LINE_TOKENS = 512  # query rows (and keys) of the head view's window


def first_kind(trace: Trace, kind: AttentionKind | None = None) -> AttentionKind:
    """``kind`` when the trace has it, the trace's first kind when None.

    Raises:
        ValueError: the trace has no map at all, or none of ``kind`` (the message says why and
            which kinds it has).
    """
    have = trace.kinds
    if not have:
        raise ValueError(f"The trace of {trace.model_name} holds no attention map to show.")
    if kind is None:
        return have[0]
    if kind not in KINDS:
        raise ValueError(f"Unknown attention kind {kind!r}; use one of {', '.join(have)}.")
    if kind not in have:
        why = trace.notes.get(kind, f"{trace.model_name} has no {KIND_TITLES[kind].lower()}.")
        raise ValueError(f"{why} Use one of: {', '.join(have)}.")
    return kind


def checked(trace: object, kind: object, layer: object, head: object) -> AttentionKind:
    """The arguments of ``vt.head_view`` / ``vt.model_view``, each checked where the user
    passes it, so a wrong type gets a message naming the argument rather than an error from
    deep inside numpy.

    Returns:
        the kind to show (``first_kind``).

    Raises:
        TypeError: ``trace`` is not a ``Trace``; ValueError: ``kind`` is not one the trace has,
            or ``layer`` / ``head`` is not an int in range (``layer must be an int from 0 to
            5, got '1'``).
    """
    if not isinstance(trace, Trace):
        raise TypeError(
            f"trace must be a Trace from vt.trace(model, text), got {type(trace).__name__} "
            f"{trace!r:.60}"
        )
    if kind is not None and not isinstance(kind, str):
        raise ValueError(f"kind must be None or one of {', '.join(KINDS)}, got {kind!r}")
    chosen = first_kind(trace, kind)
    n_layers, n_heads = trace.get(chosen).shape[:2]
    for name, value, count in (("layer", layer, n_layers), ("head", head, n_heads)):
        whole = isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)
        if not (whole and 0 <= value < count):
            raise ValueError(
                f"{name} must be an int from 0 to {count - 1} ({chosen} has {count} "
                f"{name}s), got {value!r}"
            )
    return chosen


def title(model_name: str) -> str:
    """A model's name as a view shows it: a model loaded from a local folder (``hf:/home/...``,
    ``paper:./runs/x``) by its folder's name only, so a shared notebook or screenshot does not
    carry the machine's paths; a hub id (``hf:org/name``) as it is."""
    family, sep, rest = model_name.partition(":")
    if sep and rest and (Path(rest).expanduser().is_absolute() or Path(rest).is_dir()):
        return f"{family}:{Path(rest).name}"
    return model_name


CUT = re.compile(r"(Target: )?The input has (\d+) tokens and this model reads at most (\d+)")


def cuts(trace: Trace) -> dict[str, str]:
    """What the trace's own messages say was cut (``records.trace.truncation_note``), as the
    view's header says it, by token list: ``{"src": "first 256 of 2,049 tokens: the model
    reads at most 256"}`` (``"tgt"`` for a forced target that was cut)."""
    out = {}
    for message in trace.messages:
        found = CUT.search(message)
        if found:
            side = "tgt" if found.group(1) else "src"
            n, limit = int(found.group(2)), int(found.group(3))
            out[side] = f"first {limit:,} of {n:,} tokens: the model reads at most {limit:,}"
    return out


SEPARATORS = ("[SEP]", "</s>")  # BERT's and RoBERTa's sentence separators


def segments(tokens: tuple[str, ...] | list[str]) -> list[int] | None:
    """Sentence A (0) or B (1) of each token of a sentence pair as a BERT-style tokenizer marks
    it, ``[CLS] A [SEP] B [SEP]`` (RoBERTa: ``<s> A </s></s> B </s>``): A up to and with the
    first separator, B after it; None when the tokens are not a pair (fewer than two separators,
    or the last token not one)."""
    seps = [i for i, tok in enumerate(tokens) if tok in SEPARATORS]
    if len(seps) < 2 or seps[-1] != len(tokens) - 1 or seps[0] == len(tokens) - 2:
        return None
    return [0 if i <= seps[0] else 1 for i in range(len(tokens))]


def header(trace: Trace) -> dict[str, Any]:
    """Tokens, kinds and shapes: what every view needs once.

    Returns:
        ``{"model", "src", "tgt", "kinds": {kind: {"title", "shape", "rows", "cols"}},
        "notes", "cut" (``cuts``), "segments" (``segments`` of a pair), "colours",
        "output"}``; ``rows``/``cols`` name the token
        list (``"src"`` or ``"tgt"``) labelling a kind's queries and keys.
    """
    sides = {"encoder": ("src", "src"), "decoder": ("tgt", "tgt"), "cross": ("tgt", "src")}
    kinds = {}
    for kind in trace.kinds:
        rows, cols = sides[kind]
        shape = [int(n) for n in trace.get(kind).shape]
        kinds[kind] = {"title": KIND_TITLES[kind], "shape": shape, "rows": rows, "cols": cols}
    return {
        "model": title(trace.model_name),
        "src": list(trace.src_tokens),
        "tgt": list(trace.tgt_tokens),
        "kinds": kinds,
        "notes": dict(trace.notes),
        "cut": cuts(trace),
        "segments": {"src": pair} if (pair := segments(trace.src_tokens)) else {},
        "colours": list(HEAD_COLOURS),
        "output": trace.output_text,
    }


def quantised(z: np.ndarray) -> tuple[bytes, float]:
    """A map as uint8 bytes against its largest weight, and that weight (0 for an empty map)."""
    top = float(np.nanmax(z)) if z.size else 0.0
    if not np.isfinite(top) or top <= 0:
        return bytes(z.size), 0.0
    q = np.rint(np.nan_to_num(z, nan=0.0) / top * 255)
    return np.clip(q, 0, 255).astype(np.uint8).tobytes(), top


def _all(arr: Patterns) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(arr.shape[2]), np.arange(arr.shape[3])


def grid(trace: Trace, kind: AttentionKind, size: int = GRID_SIZE) -> dict[str, Any]:
    """Every head of ``kind`` as block maxima of at most ``size x size`` cells.

    Returns:
        ``{"kind", "layers", "heads", "rows", "cols", "block": [bq, bk], "scale": [layers *
        heads floats], "maps": bytes}``: map ``(layer, head)`` is ``rows * cols`` uint8 cells
        (row-major) at offset ``(layer * heads + head) * rows * cols``; weight = cell / 255 *
        its scale.
    """
    arr = trace.get(first_kind(trace, kind))
    rows, cols = _all(arr)
    n_layers, n_heads = arr.shape[:2]
    chunks, scales, shape = [], [], (0, 0, 1, 1)
    for layer in range(n_layers):
        for head in range(n_heads):
            z, bq, bk = drawn(arr, layer, head, rows, cols, size, "max")
            cells, top = quantised(np.asarray(z, dtype=np.float32))
            chunks.append(cells)
            scales.append(top)
            shape = (*z.shape, bq, bk)
    return {
        "kind": kind,
        "layers": n_layers,
        "heads": n_heads,
        "rows": shape[0],
        "cols": shape[1],
        "block": [shape[2], shape[3]],
        "scale": scales,
        "maps": b"".join(chunks),
    }


def window(n_q: int, n_k: int, self_attention: bool, start: int, size: int) -> tuple[int, int]:
    """The first query row and first key of the head view's window (at most ``size`` each):
    self-attention shows the same positions on both sides; cross-attention the keys at the
    same fraction of the source."""
    q0 = max(0, min(start, max(0, n_q - size)))
    if n_k <= size:
        return q0, 0
    k0 = q0 if self_attention else round(q0 * n_k / max(1, n_q))
    return q0, max(0, min(k0, n_k - size))


def lines(
    trace: Trace,
    kind: AttentionKind,
    layer: int,
    start: int = 0,
    size: int = LINE_TOKENS,
    min_weight: float = HEAD_VIEW_MIN,
) -> dict[str, Any]:
    """The head view's lines: every head of ``layer``'s weights of at least ``min_weight``
    between the window's queries and keys.

    Returns:
        ``{"kind", "layer", "q0", "k0", "nq", "nk", "min", "heads": [{"i", "j", "w"}]}``: per
        head, uint16 query and key positions within the window and uint8 weights (x 255).
    """
    arr = trace.get(first_kind(trace, kind))
    n_layers, n_heads, n_q, n_k = arr.shape
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer {layer} does not exist: {kind} has {n_layers} layers (from 0).")
    q0, k0 = window(n_q, n_k, kind != "cross", start, size)
    rows, cols = np.arange(q0, min(n_q, q0 + size)), np.arange(k0, min(n_k, k0 + size))
    heads = []
    for head in range(n_heads):
        z = np.asarray(drawn(arr, layer, head, rows, cols)[0], dtype=np.float32)
        i, j = np.nonzero(z >= min_weight)
        w = np.clip(np.rint(z[i, j] * 255), 0, 255).astype(np.uint8)
        heads.append(
            {"i": i.astype("<u2").tobytes(), "j": j.astype("<u2").tobytes(), "w": w.tobytes()}
        )
    return {
        "kind": kind,
        "layer": layer,
        "q0": q0,
        "k0": k0,
        "nq": len(rows),
        "nk": len(cols),
        "min": min_weight,
        "heads": heads,
    }


def focus(
    trace: Trace, kind: AttentionKind, layer: int, head: int, size: int = FOCUS_SIZE
) -> dict[str, Any]:
    """One head's map as block maxima of at most ``size x size`` cells (the model view).

    Returns:
        ``{"kind", "layer", "head", "rows", "cols", "block": [bq, bk], "scale", "map": bytes}``.
    """
    arr = trace.get(first_kind(trace, kind))
    n_layers, n_heads = arr.shape[:2]
    if not (0 <= layer < n_layers and 0 <= head < n_heads):
        raise ValueError(
            f"layer {layer}, head {head} does not exist: {kind} has {n_layers} layers and "
            f"{n_heads} heads (counted from 0)."
        )
    z, bq, bk = drawn(arr, layer, head, *_all(arr), size, "max")
    cells, top = quantised(np.asarray(z, dtype=np.float32))
    return {
        "kind": kind,
        "layer": layer,
        "head": head,
        "rows": int(z.shape[0]),
        "cols": int(z.shape[1]),
        "block": [bq, bk],
        "scale": top,
        "map": cells,
    }
