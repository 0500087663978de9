"""The head view's query-key panel: why the selected query attends where it does, as the score
``q . k / sqrt(d_k)`` of its strongest keys taken apart by dimension (``vt.score_parts``'s
split, on one capture of the model's queries and keys), sent as a small float32 matrix."""

from __future__ import annotations

from typing import Any

import numpy as np

from viz_transformer.records.trace import Trace

QK_KEYS = 8  # the strongest keys of the selected query that the panel takes apart


def parts(
    model: Any,
    text: str,
    trace: Trace,
    kind: str,
    layer: int,
    head: int,
    query: int,
    cache: dict[str, Any],
) -> dict[str, Any]:
    """The score of ``query`` on each of its ``QK_KEYS`` strongest keys (by the trace's
    weights), split by dimension of q and k; ``cache`` keeps the capture per kind.

    Returns:
        ``{"kind", "layer", "head", "query", "keys": [positions], "weights", "scores",
        "parts": [names], "values": float32 bytes [keys, parts]}``; or ``{"error": why}`` when
        the model cannot be taken apart (the message of the analysis).
    """
    from viz_transformer.analysis.walkthrough import capture
    from viz_transformer.analysis.why import split_score

    try:
        if kind not in cache:
            target = trace.output_text if trace.forced else None
            cache[kind] = capture(model, text, kind, target)
        row = np.asarray(trace.get(kind)[layer, head][query], dtype=np.float32)
        keys = [int(k) for k in np.argsort(-row, kind="stable")[:QK_KEYS] if row[k] > 0]
        frames = [split_score(cache[kind], layer, head, query, k, "dimension") for k in keys]
    except (ValueError, KeyError) as err:
        return {"kind": kind, "layer": layer, "head": head, "query": query, "error": str(err)}
    names = [str(p) for p in frames[0]["part"]] if frames else []
    values = np.array([f["value"].to_numpy() for f in frames], np.float32).reshape(len(keys), -1)
    return {
        "kind": kind,
        "layer": layer,
        "head": head,
        "query": query,
        "keys": keys,
        "weights": [float(row[k]) for k in keys],
        "scores": [float(v.sum()) for v in values],
        "parts": names,
        "values": values.tobytes(),
    }
