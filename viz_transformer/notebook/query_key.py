"""The head view's query-key panel: why the selected query attends where it does, as the score
``q . k / sqrt(d_k)`` of its strongest keys taken apart by dimension (``vt.score_parts``'s
split, on one capture of one layer's queries and keys), sent as a small float32 matrix. The
query's weights are one row of the trace (a long input's lazy head computes that row alone)."""

from __future__ import annotations

from typing import Any

import numpy as np

from viz_transformer.records.lazy import drawn
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
    weights), split by dimension of q and k; ``cache`` keeps the last capture (one layer of one
    kind: ``why.reads``).

    Returns:
        ``{"kind", "layer", "head", "query", "keys": [positions], "weights", "scores",
        "parts": [names], "values": float32 bytes [keys, parts]}``; or ``{"error": why}`` when
        the model cannot be taken apart (the message of the analysis).
    """
    from viz_transformer.analysis.walkthrough import capture
    from viz_transformer.analysis.why import reads, split_score

    try:
        if cache.get("at") != (kind, layer):
            target = trace.output_text if trace.forced else None
            cache.clear()  # one layer's queries and keys at a time, whatever the widget visits
            cache["capture"] = capture(model, text, kind, target, reads(layer, "dimension"))
            cache["at"] = (kind, layer)
        pattern = trace.get(kind)
        n_keys = pattern.shape[-1]
        row = drawn(pattern, layer, head, np.array([query]), np.arange(n_keys))[0][0]
        keys = [int(k) for k in np.argsort(-row, kind="stable")[:QK_KEYS] if row[k] > 0]
        cap = cache["capture"]
        frames = [split_score(cap, layer, head, query, k, "dimension") for k in keys]
    except (ValueError, KeyError, IndexError) as err:
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
