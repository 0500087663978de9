"""Exports round-trip: JSON and NPZ hold exactly the arrays and tokens of the view."""

from __future__ import annotations

import io
import json

import numpy as np

import viz_transformer as vt
from viz_transformer.records.export import to_json, to_npz, trace_arrays, trace_meta


def test_json_and_npz_round_trip_a_trace(tiny):
    tr = vt.trace(tiny, "alpha beta gamma")
    arrays, meta = trace_arrays(tr), trace_meta(tr)
    assert set(arrays) == {"encoder", "decoder", "cross"}
    data = json.loads(to_json(arrays, meta))
    assert data["src_tokens"] == list(tr.src_tokens)
    np.testing.assert_allclose(np.array(data["cross"]), tr.cross, rtol=1e-6)
    npz = np.load(io.BytesIO(to_npz(arrays, meta)))
    np.testing.assert_array_equal(npz["encoder"], tr.encoder)
    assert json.loads(str(npz["meta"]))["tgt_tokens"] == list(tr.tgt_tokens)


def test_nan_becomes_null_in_json():
    data = json.loads(to_json({"x": np.array([1.0, np.nan])}, {}))
    assert data["x"] == [1.0, None]
