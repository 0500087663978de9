"""Corpus statistics: the batched formulas against the definitions row by row, the weighted
summary, the shard store's refusals and atomic writes, and ``vt.corpus_stats`` of a tiny model
against each sentence's trace."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import viz_transformer as vt
from viz_transformer.analysis.corpus.shards import Manifest, ShardStore
from viz_transformer.analysis.corpus.stats import (
    CHUNK_SENTENCES,
    STATS,
    head_summary,
    pattern_stats,
)
from viz_transformer.testing.paper import tiny_paper_model


def reference(P: np.ndarray) -> list[float]:
    """The docstring's definitions for one pattern [q, k], one row at a time."""
    q, k = P.shape

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else math.nan

    entropy = mean([-sum(p * math.log(p) for p in row if p > 0) for row in P])
    return [
        entropy,
        mean([float(row.max()) for row in P]),
        mean([float(row[0]) for row in P]),
        mean([float(P[i, i - 1]) for i in range(q) if i >= 1 and i - 1 < k]),
        mean([float(P[i, i]) for i in range(q) if i < k]),
    ]


def softmax_rows(rng: np.random.Generator, q: int, k: int) -> np.ndarray:
    x = np.exp(rng.normal(size=(q, k)) * 3)
    x[:, rng.random(k) < 0.2] = 0.0  # some exact zeros: 0 log 0 = 0
    x[:, 0] += 1e-3
    return x / x.sum(-1, keepdims=True)


def test_batched_statistics_equal_the_definitions_whatever_the_padding_holds() -> None:
    rng = np.random.default_rng(0)
    # q > k, q < k, a single row; more than CHUNK_SENTENCES sentences: two crops computed apart
    shapes = [(1, 1), (7, 3), (3, 9), (12, 12), (2, 1), (4, 4), (1, 5), (6, 2), (2, 2), (5, 7)]
    L, H, Q, K = 2, 3, 12, 12
    padded = rng.random((L, len(shapes), H, Q, K)).astype(np.float32) * 5  # garbage padding
    pats = {}
    for b, (q, k) in enumerate(shapes):
        for layer in range(L):
            for h in range(H):
                pats[b, layer, h] = softmax_rows(rng, q, k).astype(np.float32)
                padded[layer, b, h, :q, :k] = pats[b, layer, h]
    assert len(shapes) > CHUNK_SENTENCES
    q_lens = np.array([s[0] for s in shapes])
    k_lens = np.array([s[1] for s in shapes])
    got = pattern_stats(padded, q_lens, k_lens)
    assert got.shape == (len(shapes), L, H, len(STATS))
    for (b, layer, h), P in pats.items():
        want = reference(P.astype(np.float64))
        np.testing.assert_allclose(got[b, layer, h], want, atol=1e-6, equal_nan=True)
    assert np.isnan(got[0, :, :, 3]).all()  # one row: no previous token
    assert not np.isnan(got[1, :, :, 3]).any()


def test_head_summary_weights_each_sentence_by_its_rows_and_skips_nan() -> None:
    df = pd.DataFrame({
        "sentence_id": [0, 1, 0, 1], "kind": ["encoder"] * 4, "layer": [0, 0, 0, 0],
        "head": [0, 0, 1, 1], "n_rows": [1, 3, 2, 2],
        "entropy": [1.0, 2.0, 0.5, 0.5], "max_weight": [1.0, 0.0, 1.0, 1.0],
        "first_token": [0.0, 1.0, 0.2, 0.4], "prev_token": [np.nan, 0.5, 0.1, 0.3],
        "diagonal": [1.0, 0.0, 0.0, 0.0],
    })  # fmt: skip
    s = head_summary(df).set_index("head")
    assert list(s["n_rows"]) == [4, 4]
    assert s.loc[0, "entropy"] == pytest.approx((1 * 1.0 + 3 * 2.0) / 4)
    assert s.loc[0, "prev_token"] == pytest.approx(0.5)  # the NaN sentence is left out
    assert s.loc[1, "first_token"] == pytest.approx(0.3)


def manifest(model: str = "m", corpus: str = "c", n: int = 5) -> Manifest:
    return Manifest(model, "h" + model, corpus, n, 2)


def test_the_store_refuses_another_model_or_corpus_and_writes_whole_shards(tmp_path) -> None:
    store = ShardStore(tmp_path / "out")
    m = store.open(manifest())
    assert m.n_shards == 3 and store.missing(m) == [0, 1, 2]
    rows = pd.DataFrame({"sentence_id": [0, 1], "entropy": [0.1, 0.2]})
    store.write(1, rows)
    (store.folder / ".shard-000002.parquet.1.1.tmp").write_bytes(b"half")  # a killed writer
    assert store.missing(store.open(manifest())) == [0, 2]
    assert not list(store.folder.glob(".*.tmp"))
    pd.testing.assert_frame_equal(store.read()[0], rows)
    for other in (manifest(model="x"), manifest(corpus="y")):
        with pytest.raises(ValueError, match="holds another"):
            store.open(other)
    assert store.path(1).is_file()  # nothing computed is lost
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        ShardStore(tmp_path / "file").open(manifest())


def test_the_table_of_a_tiny_model_is_each_sentences_trace_row_by_row(tmp_path) -> None:
    # 3 encoder layers, 1 decoder layer, 2 heads: a layer or head column built along the wrong
    # axis puts another head's statistics on the row
    model = tiny_paper_model(0, max_len=8, n_encoder_layers=3, n_decoder_layers=1)
    texts = ["alpha beta gamma", "delta", "epsilon zeta eta theta"]
    df = vt.corpus_stats(model, texts, tmp_path / "s", batch_size=2)
    want = []
    for sid, text in enumerate(texts):
        tr = vt.trace(model, text)
        for kind in vt.KINDS:
            arr = tr.get(kind)
            for layer, head in np.ndindex(arr.shape[:2]):
                P = np.asarray(arr[layer, head], np.float64)
                want.append((sid, kind, layer, head, P.shape[0], *reference(P)))
    want_df = pd.DataFrame(want, columns=["sentence_id", "kind", "layer", "head", "n_rows", *STATS])
    want_df = want_df.sort_values(["sentence_id", "kind", "layer", "head"], ignore_index=True)
    assert len(df) == len(want_df) == 3 * 2 * (3 + 1 + 1)
    keys = ["sentence_id", "kind", "layer", "head", "n_rows"]
    assert df[keys].astype(str).equals(want_df[keys].astype(str))
    np.testing.assert_allclose(df[list(STATS)], want_df[list(STATS)], atol=1e-5, equal_nan=True)
