"""Positional-encoding analysis on tiny Hugging Face models: BERT's learned table, Marian's
sinusoid, Llama's rotary positions (none added to the inputs)."""

from __future__ import annotations

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.analysis import positional as pa
from viz_transformer.networks.positional import sinusoidal_table
from viz_transformer.testing.hf import BUILDERS


@pytest.fixture(scope="module")
def hf_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {f: vt.load_model(f"hf:{BUILDERS[f](root / f)}") for f in ("bert", "marian", "llama")}


def test_hf_inputs_learned_sinusoidal_and_rotary(hf_models):
    bert = pa.input_vectors(hf_models["bert"])
    np.testing.assert_array_equal(bert.positions, hf_models["bert"].position_table())
    assert bert.scale == 1.0
    marian = pa.input_vectors(hf_models["marian"])
    rows = len(marian.positions)
    np.testing.assert_allclose(marian.positions, sinusoidal_table(rows, 16, "split"), atol=1e-5)
    llama = pa.input_vectors(hf_models["llama"])
    assert llama.positions is None and len(llama.token_norms) > 0
    per = pa.sentence_norms(hf_models["llama"], "the cat")
    assert np.isnan(per["position_norm"]).all()
    per = pa.sentence_norms(hf_models["bert"], "the cat sat")
    assert per["tokens"][0] == "[CLS]"
    expected = np.linalg.norm(bert.positions[: len(per["tokens"])], axis=1)
    np.testing.assert_allclose(per["position_norm"], expected, rtol=1e-6)
