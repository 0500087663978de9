"""The notebook widgets' traits and messages without a kernel: what a click (a front-end update)
does in Python, what setting a trait in Python sends, and that only what is drawn travels."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import traitlets

import viz_transformer as vt
from viz_transformer.notebook import payload
from viz_transformer.testing.paper import tiny_paper_model

pytestmark = pytest.mark.needs("notebook")


@pytest.fixture(scope="module")
def trace() -> vt.Trace:
    model = tiny_paper_model(n_heads=4, max_len=12)
    return vt.trace(model, "alpha beta gamma")


class Wire:
    """Stands in for the comm: records each message a widget sends to the browser."""

    def __init__(self, widget) -> None:
        self.sent: list[dict] = []
        widget.comm.send = lambda data, buffers=None, **kw: self.sent.append(
            {**data, "bytes": sum(len(b) for b in buffers or [])}
        )

    def updates(self) -> list[dict]:
        """The states sent as updates (ipywidgets also echoes a click back: ``echo_update``)."""
        return [m["state"] for m in self.sent if m.get("method") == "update"]

    def keys(self) -> list[set[str]]:
        return [set(state) for state in self.updates()]


def click(widget, **state) -> None:
    """What the browser's ``model.set(...); model.save_changes()`` does in Python."""
    widget.set_state(state)


def test_a_click_sets_the_traits_and_observers_fire(trace):
    view = vt.head_view(trace)
    seen = []
    view.observe(lambda c: seen.append((c["name"], c["new"])), names=["layer", "head"])
    wire = Wire(view)
    click(view, layer=1, head=3)
    assert view.selected == ("encoder", 1, 3) and ("layer", 1) in seen and ("head", 3) in seen
    assert wire.keys() == [{"lines"}]  # the new layer's lines
    assert wire.updates()[0]["lines"]["layer"] == 1
    click(view, head=0)  # the same layer: its lines are in the browser already
    assert wire.keys() == [{"lines"}]


def test_setting_in_python_redraws(trace):
    view = vt.model_view(trace, "cross")
    wire = Wire(view)
    view.head = 2
    assert wire.keys() == [{"head"}, {"focus"}]
    assert (view.focus["layer"], view.focus["head"]) == (0, 2)
    view.kind = "decoder"
    sent = set().union(*wire.keys()[2:])
    assert {"kind", "grid", "focus"} <= sent and view.grid["kind"] == "decoder"


def test_a_kind_with_fewer_layers_keeps_the_selection_inside_it(trace):
    view = vt.head_view(trace, "encoder", layer=1, head=3)
    view.query = len(trace.src_tokens) - 1
    click(view, kind="cross")
    last = min(len(trace.src_tokens), len(trace.tgt_tokens)) - 1
    assert view.selected == ("cross", 1, 3) and view.query == last
    assert view.lines["kind"] == "cross" and view.start == 0


def test_bad_selections_name_the_sizes(trace):
    with pytest.raises(ValueError, match=r"layer must be an int from 0 to 1 \(encoder has 2 "):
        vt.head_view(trace, layer=2)
    view = vt.head_view(trace)
    with pytest.raises(traitlets.TraitError, match=r"head 4 does not exist: encoder has 4 heads"):
        view.head = 4
    with pytest.raises(traitlets.TraitError, match="Unknown attention kind 'self'"):
        view.kind = "self"
    assert view.selected == ("encoder", 0, 0)
    view.query = -7
    assert view.query == -1


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (
            {"layer": "1"},
            ValueError,
            "layer must be an int from 0 to 1 (encoder has 2 layers), got '1'",
        ),
        (
            {"layer": 1.0},
            ValueError,
            "layer must be an int from 0 to 1 (encoder has 2 layers), got 1.0",
        ),
        ({"layer": True}, ValueError, "layer must be an int from 0 to 1"),
        ({"head": -1}, ValueError, "head must be an int from 0 to 3 (encoder has 4 heads), got -1"),
        ({"head": 4}, ValueError, "head must be an int from 0 to 3 (encoder has 4 heads), got 4"),
        ({"kind": 0}, ValueError, "kind must be None or one of encoder, decoder, cross, got 0"),
    ],
)
def test_every_argument_is_checked_where_it_is_passed(trace, args, error, message):
    for make in (vt.head_view, vt.model_view):
        with pytest.raises(error) as info:
            make(trace, **args)
        assert str(info.value) == message or str(info.value).startswith(message)


def test_a_trace_of_the_wrong_type_is_named_and_numpy_ints_are_fine(trace):
    with pytest.raises(TypeError, match=r"trace must be a Trace from vt.trace.*got str 'text'"):
        vt.head_view("text")
    view = vt.model_view(trace, layer=np.int64(1), head=np.int32(3))
    assert view.selected == ("encoder", 1, 3) and type(view.layer) is int


def test_a_folder_model_is_titled_by_its_folder_name_only(tmp_path):
    folder = tmp_path / "my-bert"
    folder.mkdir()
    assert payload.title(f"hf:{folder}") == "hf:my-bert"
    assert payload.title("paper:runs/x") == "paper:runs/x"  # not a folder here: left as it is
    assert payload.title("hf:Helsinki-NLP/opus-mt-en-de") == "hf:Helsinki-NLP/opus-mt-en-de"
    assert payload.title("paper-en-pt") == "paper-en-pt"


def test_on_select_follows_clicks_and_python(trace):
    view = vt.model_view(trace)
    calls = []
    observer = view.on_select(lambda *sel: calls.append(sel))
    click(view, layer=1, head=1)
    view.head = 2
    assert calls[-1] == ("encoder", 1, 2) and ("encoder", 1, 1) in calls
    view.unobserve(observer, names=["kind", "layer", "head"])
    view.head = 0
    assert calls[-1] == ("encoder", 1, 2)


def test_the_state_holds_what_is_drawn_and_the_javascript_ships_inside(trace):
    from viz_transformer.notebook.widgets import STATIC
    from viz_transformer.testing.jupyter import state_bytes

    view = vt.head_view(trace)
    state = view.get_state()
    assert "export default" in state["_esm"] and ".vt-root" in state["_css"]
    assert Path(STATIC, "widget.js").read_text() == state["_esm"]
    for name in ("widget.js", "widget.css"):
        text = Path(STATIC, name).read_text()
        assert not re.search(r"https?://|import\s*\(|from\s+['\"]", text), name  # no network
    arr = np.asarray(trace.encoder)
    assert state_bytes(view) < len(state["_esm"]) + len(state["_css"]) + 40 * arr[0].nbytes
    assert {"lines", "grid", "header"} <= set(state) and state["focus"] == {}
    assert payload.header(trace) == view.header


def test_a_long_input_pages_its_lines_and_never_sends_the_whole_array():
    from viz_transformer.records.lazy import LazyPatterns
    from viz_transformer.testing.jupyter import state_bytes

    gen = np.random.default_rng(0)
    q, k = ([gen.normal(0, 2, (2, 700, 8)).astype(np.float32)] for _ in range(2))
    words = tuple(f"w{i}" for i in range(700))
    trace = vt.Trace("long", words, (), (), LazyPatterns(q, k, causal=False), None, None)
    view = vt.head_view(trace)
    assert (view.lines["q0"], view.lines["nq"]) == (0, payload.LINE_TOKENS)
    assert state_bytes(view) < 700 * 700 * 4  # less than one head's float32 map
    wire = Wire(view)
    click(view, start=400)  # "later" in the view: the last full window
    assert wire.keys() == [{"lines"}] and view.lines["q0"] == 700 - payload.LINE_TOKENS


def test_a_cut_input_is_said_in_the_header_and_warned(trace):
    from dataclasses import replace

    from viz_transformer.records.trace import truncation_note

    cut = replace(trace, messages=(truncation_note(2049, 256), "Heads ablated (zero): L0H1."))
    assert payload.cuts(cut) == {"src": "first 256 of 2,049 tokens: the model reads at most 256"}
    from viz_transformer.notebook import TruncatedInputWarning

    with pytest.warns(TruncatedInputWarning, match="input's first 256 of 2,049 tokens"):
        view = vt.head_view(cut)
    assert view.header["cut"] == payload.cuts(cut)
    assert payload.cuts(trace) == {}


def test_the_static_snapshot_draws_the_current_view_and_a_png_decodes(trace):
    import zlib

    from viz_transformer.notebook import export

    view = vt.head_view(trace, "encoder", 1, 2)
    svg = view.snapshot()
    assert svg.startswith("<svg") and f'id="{view.uid}"' in svg and "layer 1, head 2" in svg
    lines = view.lines["heads"]
    expected = sum(
        int(((np.frombuffer(h["i"], "<u2") < export.SNAP_ROWS)
             & (np.frombuffer(h["j"], "<u2") < export.SNAP_ROWS)
             & ((np.frombuffer(h["w"], np.uint8) >= export.OTHERS_MIN * 255) | (n == 2))).sum())
        for n, h in enumerate(lines)
    )  # fmt: skip
    assert svg.count("<line ") == expected > 0
    view.hidden = [0, 1, 3]  # only head 2's lines remain
    only = len(np.frombuffer(lines[2]["w"], np.uint8))
    assert view.snapshot().count("<line ") == only
    cells = bytes(range(6))
    raw = export.png(cells, 2, 3)
    idat = raw[raw.index(b"IDAT") + 4 : raw.index(b"IEND") - 8]
    rows = zlib.decompress(idat)
    assert len(rows) == 2 * (1 + 3 * 3) and rows[1:4] == bytes([255, 255, 255])


def test_save_writes_an_offline_page_with_every_layer(trace, tmp_path):
    view = vt.model_view(trace, "cross", 1, 2)
    page = view.save(tmp_path / "view.html").read_text()
    assert "export default" in page and ".vt-root" in page  # the widget inlined
    assert not re.search(r"(src|href)=['\"]https?://", page)  # nothing fetched
    n_layers, n_heads = trace.cross.shape[:2]
    # every head's map, and the state it opens on
    assert page.count('"kind":"cross","layer":') == n_layers * n_heads + 1


def test_the_query_key_panel_splits_the_selected_querys_strongest_keys():
    model = tiny_paper_model(n_heads=4, max_len=12)
    text = "alpha beta gamma"
    tr = vt.trace(model, text)
    view = vt.head_view(tr, "encoder", 1, 2, model=model, text=text)
    assert view.qk == {}  # no query selected: no panel
    click(view, query=1)
    qk = view.explained()
    row = np.asarray(tr.encoder[1, 2][1])
    assert qk["keys"] == list(np.argsort(-row, kind="stable")[: len(qk["keys"])])
    values = np.frombuffer(qk["values"], np.float32).reshape(len(qk["keys"]), -1)
    for r, key in enumerate(qk["keys"]):
        parts = vt.score_parts(model, text, "encoder", 1, 2, 1, key, by="dimension")
        assert list(parts.part) == qk["parts"]
        np.testing.assert_allclose(values[r], parts.value.to_numpy(), atol=1e-5)
    click(view, query=-1)
    assert view.qk == {}
    with pytest.raises(ValueError, match="model and text go together"):
        vt.head_view(tr, model=model)


def test_the_query_key_panel_is_computed_off_the_kernels_thread(monkeypatch):
    """A click returns at once with the panel marked pending; the numbers follow from the
    widget's own thread, and a selection the reader left is never drawn."""
    import threading

    from viz_transformer.notebook import query_key

    model = tiny_paper_model(n_heads=4, max_len=12)
    text = "alpha beta gamma"
    tr = vt.trace(model, text)
    view = vt.head_view(tr, "encoder", 1, 2, model=model, text=text)
    gate, threads = threading.Event(), []
    real = query_key.parts

    def slow(*args, **kwargs):
        threads.append(threading.current_thread().name)
        assert gate.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(query_key, "parts", slow)
    click(view, query=1)  # returns while the panel is still being computed
    assert view.qk == {"kind": "encoder", "layer": 1, "head": 2, "query": 1, "pending": True}
    click(view, query=2)  # the reader moves on: query 1's panel must not land
    gate.set()
    qk = view.explained()
    assert qk["query"] == 2 and "pending" not in qk and len(qk["keys"]) > 0
    assert threads and all(name.startswith("vt-query-key") for name in threads)
