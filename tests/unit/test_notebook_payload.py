"""What the notebook widgets send for a long input, in the unit tier: block maxima of every
head, the head view's window of rows, the quantisation to bytes and the sentence pair split, on
lazy patterns of random queries and keys (no model)."""

from __future__ import annotations

import numpy as np

from viz_transformer.notebook import payload
from viz_transformer.records.lazy import LazyPatterns, block_reduce
from viz_transformer.records.trace import Trace
from viz_transformer.testing.payloads import grid_maps, line_weights


def peaked(n: int, layers: int, heads: int, seed: int = 0) -> LazyPatterns:
    """Lazy patterns of ``n`` tokens whose queries and keys are drawn wide (peaked maps)."""
    gen = np.random.default_rng(seed)
    q = [gen.normal(0, 2, (heads, n, 8)).astype(np.float32) for _ in range(layers)]
    k = [gen.normal(0, 2, (heads, n, 8)).astype(np.float32) for _ in range(layers)]
    return LazyPatterns(q, k, causal=False, device="cpu")


def long_trace(n: int, layers: int = 2, heads: int = 2) -> Trace:
    words = tuple(f"w{i}" for i in range(n))
    return Trace("long", words, (), (), peaked(n, layers, heads), None, None)


def test_a_long_input_sends_block_maxima_and_one_window(monkeypatch):
    trace = long_trace(1100)
    arr = trace.encoder

    def whole(*args, **kwargs):
        raise AssertionError("the whole [layers, heads, n, n] array was made")

    monkeypatch.setattr(LazyPatterns, "materialise", whole)
    g = payload.grid(trace, "encoder")
    assert (g["rows"], g["cols"], g["block"]) == (40, 40, [28, 28])  # 28 = ceil(1100 / 40)
    expected = np.stack([block_reduce(arr.head(1, h), payload.GRID_SIZE)[0] for h in range(2)])
    np.testing.assert_allclose(grid_maps(g)[1], expected, atol=expected.max() / 255)
    lines = payload.lines(trace, "encoder", 0, start=700)
    assert (lines["q0"], lines["k0"], lines["nq"], lines["nk"]) == (588, 588, 512, 512)
    window = arr.head(0, 1)[588:1100, 588:1100]
    np.testing.assert_array_equal(line_weights(lines, 1) > 0, window >= payload.HEAD_VIEW_MIN)
    f = payload.focus(trace, "encoder", 1, 0)
    assert (f["rows"], f["block"]) == (220, [5, 5])


def test_the_head_views_window():
    assert payload.window(100, 100, True, 0, 512) == (0, 0)  # all of it
    assert payload.window(1000, 1000, True, 300, 512) == (300, 300)
    assert payload.window(1000, 1000, True, 900, 512) == (488, 488)  # the last full window
    assert payload.window(1000, 2000, False, 400, 512) == (400, 800)  # cross: the same fraction
    assert payload.window(1000, 300, False, 400, 512) == (400, 0)  # every key fits
    assert payload.window(1000, 600, False, 400, 512) == (400, 88)  # ends at the last key


def test_quantised_keeps_the_largest_weight_and_blank_maps():
    cells, top = payload.quantised(np.array([[0.5, 0.25], [0.0, np.nan]], np.float32))
    assert top == 0.5 and list(cells) == [255, 128, 0, 0]
    assert payload.quantised(np.zeros((2, 2), np.float32)) == (bytes(4), 0.0)


def test_a_sentence_pair_is_split_where_the_tokenizer_marks_it():
    bert = ("[CLS]", "the", "cat", "[SEP]", "a", "dog", "[SEP]")
    assert payload.segments(bert) == [0, 0, 0, 0, 1, 1, 1]
    roberta = ("<s>", "Hi", "</s>", "</s>", "Yo", "</s>")
    assert payload.segments(roberta) == [0, 0, 0, 1, 1, 1]
    assert payload.segments(("[CLS]", "one", "sentence", "[SEP]")) is None
    assert payload.segments(("I", "am", "</s>")) is None  # a translator's source: no pair
    n = len(bert)
    trace = Trace("pair", bert, (), (), np.full((1, 1, n, n), 1 / n, np.float32), None, None)
    assert payload.header(trace)["segments"] == {"src": [0, 0, 0, 0, 1, 1, 1]}
