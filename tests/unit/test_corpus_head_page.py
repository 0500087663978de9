"""A head page over a corpus: examples across levels, token pairs and query-key distances, each
checked against its definition written another way on a tiny random paper model."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

import viz_transformer as vt
from viz_transformer.analysis.corpus import head_page
from viz_transformer.figures import corpus_head
from viz_transformer.records.progress import Cancelled, StopToken
from viz_transformer.testing.paper import tiny_paper_model

SENTENCES = ["alpha beta gamma", "delta alpha", "beta beta zeta eta", "theta iota kappa alpha"]


@pytest.fixture(scope="module")
def model():
    return tiny_paper_model(seed=1)


@pytest.fixture(scope="module")
def traces(model):
    return head_page.sample_traces(model, SENTENCES)


def _rows(values: list[float]) -> pd.DataFrame:
    n = len(values)
    base = {"kind": "encoder", "layer": 1, "head": 0, "n_rows": 3}
    mine = pd.DataFrame({**base, "sentence_id": range(n), "entropy": values})
    other = mine.assign(head=1, entropy=[-v for v in values])  # another head, opposite order
    return pd.concat([mine, other], ignore_index=True)


def test_examples_span_strongest_middle_and_weakest():
    values = [0.5, 0.9, np.nan, 0.1, 0.7, 0.3, 0.2, 0.8, 0.4, 0.6, 0.0]
    got = head_page.examples_by_level(_rows(values), "encoder", 1, 0, "entropy")
    assert list(got["level"]) == ["strongest"] * 3 + ["middle"] * 3 + ["weakest"] * 3
    assert list(got["value"]) == [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.2, 0.1, 0.0]
    assert list(got["sentence_id"]) == [1, 7, 4, 9, 0, 8, 6, 3, 10]  # NaN (sentence 2) left out


def test_ties_keep_the_lower_sentence_first():
    got = head_page.examples_by_level(_rows([0.5, 0.9, 0.5, 0.5]), "encoder", 1, 0, "entropy", 1)
    assert list(got["sentence_id"]) == [1, 0, 3] and list(got["value"]) == [0.9, 0.5, 0.5]


def test_a_small_corpus_shows_each_sentence_once():
    got = head_page.examples_by_level(_rows([0.3, 0.1, 0.2]), "encoder", 1, 0, "entropy")
    assert sorted(got["sentence_id"]) == [0, 1, 2] and list(got["value"]) == [0.3, 0.2, 0.1]
    with pytest.raises(ValueError, match="Unknown statistic"):
        head_page.examples_by_level(_rows([0.3]), "encoder", 1, 0, "nope")


def test_sample_ids_spread_over_the_corpus():
    assert head_page.sample_ids(5, 48) == [0, 1, 2, 3, 4]
    ids = head_page.sample_ids(1000, 48)
    assert len(ids) == 48 and ids[0] == 0 and ids[-1] == 999
    assert max(np.diff(ids)) - min(np.diff(ids)) <= 1  # evenly spaced


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_pairs_and_distances_follow_their_definitions(model, traces, kind):
    layer, head = 1, 1
    got = head_page.head_pass(traces, kind, layer, head)
    want_pairs: Counter[tuple[str, str]] = Counter()
    want_offsets: Counter[int] = Counter()
    rows = 0
    for text in SENTENCES:
        tr = vt.trace(model, text)
        P = np.asarray(tr.get(kind)[layer][head], dtype=np.float64)
        q_tok, k_tok = tr.tokens_for(kind)
        long = pd.DataFrame({"a": np.repeat(q_tok, len(k_tok)), "b": np.tile(k_tok, len(q_tok)),
                             "w": P.ravel()})  # fmt: skip
        for (a, b), w in long.groupby(["a", "b"])["w"].sum().items():
            want_pairs[(a, b)] += w
        for d in range(-(P.shape[1] - 1), P.shape[0]):  # offset i - j is diagonal -d
            want_offsets[d] += np.diagonal(P, offset=-d).sum()
        rows += P.shape[0]
    assert got.sentences == len(SENTENCES) and got.rows == rows
    pairs = {(a, b): w for a, b, w in got.pairs[["query", "key", "weight"]].itertuples(index=False)}
    assert pairs.keys() == want_pairs.keys()
    for pair, w in want_pairs.items():
        assert pairs[pair] == pytest.approx(w, rel=1e-9, abs=1e-12)
    assert got.pairs["share"].sum() == pytest.approx(1.0)
    assert got.pairs["weight"].is_monotonic_decreasing
    offsets = {int(o): m for o, m in zip(got.offsets, got.mass, strict=True)}
    for d, w in want_offsets.items():
        assert offsets.get(d, 0.0) == pytest.approx(w / rows, abs=1e-12)
    assert got.mass.sum() == pytest.approx(1.0)
    assert set(offsets) == {d for d, w in want_offsets.items() if w > 0}
    if kind == "decoder":  # causal: no attention to a later key
        assert got.offsets.min() == 0


def test_the_sample_is_traced_once_with_progress_and_can_stop(model):
    seen = []
    got = head_page.sample_traces(model, SENTENCES[:2], lambda d, t: seen.append((d, t)))
    assert seen == [(1, 2), (2, 2)]
    assert [t.src_tokens for t in got] == [vt.trace(model, s).src_tokens for s in SENTENCES[:2]]

    stop, seen = StopToken(), []

    def press_stop(done: int, total: int) -> None:
        seen.append(done)
        stop.set()  # a Stop pressed while the first sentence was traced

    with pytest.raises(Cancelled):
        head_page.sample_traces(model, SENTENCES, press_stop, stop)
    assert seen == [1]  # the other sentences were never traced


def test_the_picked_head_is_marked_among_all():
    summary = pd.DataFrame({"kind": ["encoder"] * 4, "layer": [0, 0, 1, 1], "head": [0, 1, 0, 1],
                            "entropy": [0.1, 0.2, 0.3, 0.4]})  # fmt: skip
    got = head_page.heads_beside(summary, "encoder", 1, 0)
    assert list(got["picked"]) == [False, False, True, False]
    with pytest.raises(ValueError, match="layer 2 head 0"):
        head_page.heads_beside(summary, "encoder", 2, 0)


def test_figures_draw_the_numbers_they_are_given(traces):
    got = head_page.head_pass(traces, "cross", 1, 0)
    fig = corpus_head.pairs_figure(got.pairs, "pairs", top=5)
    np.testing.assert_allclose(fig.data[0].x, got.pairs["share"].head(5).to_numpy()[::-1])
    assert fig.data[0].y[-1] == f"{got.pairs['query'][0]} → {got.pairs['key'][0]}"  # top on top
    fig = corpus_head.distance_figure(got.offsets, got.mass, "distances")
    np.testing.assert_array_equal(fig.data[0].x, got.offsets)
    summary = pd.DataFrame({"kind": ["encoder"] * 3, "layer": [0, 0, 1], "head": [0, 1, 0],
                            "entropy": [0.1, 0.2, 0.3], "diagonal": [0.5, 0.6, 0.7]})  # fmt: skip
    beside = head_page.heads_beside(summary, "encoder", 0, 1)
    fig = corpus_head.heads_strip_figure(beside, ("entropy", "diagonal"), "heads")
    marked = [t for t in fig.data if t.name == "this head"]
    assert [list(t.y) for t in marked] == [[0.2], [0.6]]
    assert [list(map(str, t.customdata[0])) for t in marked] == [["encoder", "0", "1"]] * 2
