"""The data behind a view as downloadable bytes: JSON (arrays as nested lists) and NPZ."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from viz_transformer.records.trace import Trace


def trace_arrays(trace: Trace) -> dict[str, np.ndarray]:
    """The attention arrays of ``trace`` that exist, by kind."""
    return {k: trace.get(k) for k in trace.kinds}


def trace_meta(trace: Trace) -> dict[str, Any]:
    """Tokens and flags of ``trace``, JSON-ready."""
    return {
        "model": trace.model_name,
        "src_tokens": list(trace.src_tokens),
        "tgt_tokens": list(trace.tgt_tokens),
        "pred_tokens": list(trace.pred_tokens),
        "output_text": trace.output_text,
        "forced": trace.forced,
        "scaled": trace.scaled,
        "layout": "[layers, heads, query, key]",
    }


def to_json(arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> bytes:
    """One JSON object: ``meta`` plus every array as nested lists (NaN written as null)."""
    data = dict(meta)
    for name, arr in arrays.items():
        a = np.asarray(arr, dtype=np.float64)
        data[name] = np.where(np.isfinite(a), a, None).tolist() if a.size else []
    return json.dumps(data, ensure_ascii=False).encode()


def to_npz(arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> bytes:
    """A compressed NPZ holding every array, and ``meta`` as a JSON string under ``meta``."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **dict(arrays), meta=np.array(json.dumps(meta, ensure_ascii=False)))
    return buf.getvalue()
